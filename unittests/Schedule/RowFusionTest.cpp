// OPT=5 row fusion: a chain of reductions over the same trailing axes, with the element-wise work
// between them, becomes one row kernel (EXPAND-ed reduces). Checked here: which programs fuse and
// into how many kernels, the AST's shape (verifier, text round trip), the values against closed
// forms and against OPT=2 on the CPU and in the interpreter, the backward passes, and the cases
// that must not fuse (other axes, long rows, devices without a row-kernel lowering).
#include "KernelTestUtil.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Schedule/Verifier.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>

using namespace lazyjit;
using lazyjit::testing::AtOpt;

namespace {

std::vector<double> values(const std::vector<int64_t> &shape, uint64_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> v;
  uint64_t s = seed;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v.push_back(static_cast<double>(static_cast<int64_t>(s >> 40) % 2000) / 300.0 - 3.0);
  }
  return v;
}

Tensor input(const std::vector<int64_t> &shape, uint64_t seed, const std::string &dev = "CPU") {
  Tensor t = Tensor::fromValues(values(shape, seed), Shape(shape.begin(), shape.end()), {dtypes::float32, dev});
  t.realize();
  return t;
}

std::vector<ScheduleItem> kernelsOf(const Tensor &t) {
  std::vector<ScheduleItem> out;
  for (auto &si : schedule(t.lazydata()))
    if (si.isKernel()) out.push_back(std::move(si));
  return out;
}

int countOps(const KernelOp &ast, Op op) {
  int n = 0;
  for (const KernelOp *x : ast.lazyops()) n += x->op == op;
  return n;
}

void checkClose(const std::vector<float> &got, const std::vector<double> &want, double tol = 1e-5) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element ", i);
    CHECK(std::fabs(got[i] - want[i]) <= tol * std::max(1.0, std::fabs(want[i])));
  }
}

// Row-wise closed forms over the last axis of a [rows, n] array.
std::vector<double> rowwise(const std::vector<double> &x, int64_t n,
                            const std::function<void(const double *, double *, int64_t)> &f) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r * n < x.size(); ++r) f(&x[r * n], &out[r * n], n);
  return out;
}

void softmaxRow(const double *x, double *y, int64_t n) {
  double m = -INFINITY, s = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  for (int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
  for (int64_t i = 0; i < n; ++i) y[i] = std::exp(x[i] - m) / s;
}

void logSoftmaxRow(const double *x, double *y, int64_t n) {
  double m = -INFINITY, s = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  for (int64_t i = 0; i < n; ++i) s += std::exp(x[i] - m);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] - m - std::log(s);
}

void layernormRow(const double *x, double *y, int64_t n) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) / std::sqrt(var + 1e-5);
}

struct RowCase {
  std::string name;
  std::function<Tensor(const Tensor &)> op;
  std::function<void(const double *, double *, int64_t)> closedForm;
  int reduces;   // distinct reduces in the fused kernel
  int kernelsAt4; // the reference's kernel count (OPT=4)
};

const std::vector<RowCase> &rowCases() {
  static const std::vector<RowCase> cases = {
      {"softmax", [](const Tensor &x) { return x.softmax(); }, softmaxRow, 2, 4},
      {"log_softmax", [](const Tensor &x) { return x.logSoftmax(); }, logSoftmaxRow, 2, 3},
      {"layernorm", [](const Tensor &x) { return x.layernorm(); }, layernormRow, 2, 3},
  };
  return cases;
}

} // namespace

TEST_CASE("RowFusion: softmax, log_softmax and layernorm over the last axis are one kernel at OPT=5") {
  for (const auto &c : rowCases()) {
    CAPTURE(c.name);
    std::vector<int64_t> shape{37, 53};
    {
      AtOpt opt(4);
      CHECK(kernelsOf(c.op(input(shape, 1))).size() == static_cast<size_t>(c.kernelsAt4));
    }
    AtOpt opt(5);
    Tensor x = input(shape, 1);
    auto ks = kernelsOf(c.op(x));
    REQUIRE(ks.size() == 1);
    const KernelOp &ast = *ks[0].ast;
    CHECK_NOTHROW(verifyAst(ast));
    CHECK(countOps(ast, Op::Expand) >= 1);
    // structurally equal reduces count once (the max appears under the sum and in the output)
    std::vector<const KernelOp *> distinct;
    for (const KernelOp *r : ast.lazyops())
      if (isReduceOp(r->op) && std::none_of(distinct.begin(), distinct.end(), [&](const KernelOp *d) { return *d == *r; }))
        distinct.push_back(r);
    CHECK(distinct.size() == static_cast<size_t>(c.reduces));
    // the textual form round-trips
    KernelOpRef parsed = parseAst(printAst(ast), "<row kernel>");
    CHECK(*parsed == ast);
    CHECK(ks[0].inputs.size() == 1); // the row is read from x alone
    checkClose(c.op(x).toVector<float>(), rowwise(values(shape, 1), shape[1], c.closedForm));
  }
}

TEST_CASE("RowFusion: the fused kernels agree with OPT=2 on the CPU and with the interpreter") {
  for (const auto &c : rowCases()) {
    CAPTURE(c.name);
    for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{{3, 4, 17}, {1, 9}, {64}, {5, 1, 1, 33}, {4, 3, 20}}) {
      CAPTURE(renderShape(Shape(shape.begin(), shape.end())));
      std::vector<float> ref;
      {
        AtOpt opt(2);
        ref = c.op(input(shape, 7)).toVector<float>();
      }
      AtOpt opt(5);
      Tensor x = input(shape, 7);
      CHECK(kernelsOf(c.op(x)).size() == 1);
      std::vector<double> want(ref.begin(), ref.end());
      checkClose(c.op(x).toVector<float>(), want);
      checkClose(c.op(input(shape, 7, "INTERP")).toVector<float>(), want);
    }
  }
}

TEST_CASE("RowFusion: a reduce of row-fused values is one kernel whose final pass accumulates") {
  // log-sum-exp over the rows, a weighted sum of softmax over everything, and cross-entropy
  std::vector<int64_t> shape{24, 40};
  std::vector<double> xv = values(shape, 31), wv = values(shape, 32);
  auto lse = [](const Tensor &x) {
    Tensor m = x.max(std::vector<int64_t>{-1}, true);
    return (x - m).exp().sum(std::vector<int64_t>{-1}, true).log() + m;
  };
  auto weighted = [](const Tensor &x, const Tensor &w) { return (x.softmax() * w).sum(); };
  std::vector<float> lse2, w2, ce2;
  size_t lseKernels2, wKernels2, ceKernels2;
  Tensor labels = Tensor::fromValues({3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4}, Shape{24},
                                     {dtypes::int32, "CPU"});
  {
    AtOpt opt(2);
    Tensor x = input(shape, 31), w = input(shape, 32);
    lseKernels2 = kernelsOf(lse(x)).size();
    wKernels2 = kernelsOf(weighted(x, w)).size();
    ceKernels2 = kernelsOf(x.sparseCategoricalCrossentropy(labels)).size();
    lse2 = lse(x).toVector<float>();
    w2 = weighted(x, w).toVector<float>();
    ce2 = x.sparseCategoricalCrossentropy(labels).toVector<float>();
  }
  AtOpt opt(5);
  Tensor x = input(shape, 31), w = input(shape, 32);
  // log-sum-exp: `+ m` reads the max as well, so it is realized at both levels (two kernels); at
  // OPT=5 the sum's kernel computes the max of its row itself instead of loading it
  CHECK(lseKernels2 == 2);
  auto lk = kernelsOf(lse(x));
  REQUIRE(lk.size() == 2);
  CHECK(countOps(*lk[1].ast, Op::Expand) == 1);
  CHECK(wKernels2 == 4);
  auto wk = kernelsOf(weighted(x, w));
  REQUIRE(wk.size() == 1);
  CHECK_NOTHROW(verifyAst(*wk[0].ast));
  KernelSignature sig = describeKernel(wk[0].ast, TargetSpec::host(), CompileOptions{});
  CHECK(sig.kernelSummary.find("axes 24:reduce 40:row") != std::string::npos);
  // cross-entropy: the max and the sum of log_softmax go into the final reduce's kernel
  CHECK(ceKernels2 == 6);
  CHECK(kernelsOf(x.sparseCategoricalCrossentropy(labels)).size() == 4);
  // values: against OPT=2 and the closed forms
  std::vector<double> want(lse2.begin(), lse2.end());
  checkClose(lse(x).toVector<float>(), want);
  std::vector<double> sm = rowwise(xv, shape[1], softmaxRow);
  double ws = 0;
  for (size_t i = 0; i < sm.size(); ++i) ws += sm[i] * static_cast<float>(wv[i]);
  checkClose(weighted(x, w).toVector<float>(), {ws}, 1e-5);
  checkClose(w2, {ws}, 1e-5);
  checkClose(x.sparseCategoricalCrossentropy(labels).toVector<float>(), std::vector<double>(ce2.begin(), ce2.end()));
  checkClose(weighted(input(shape, 31, "INTERP"), input(shape, 32, "INTERP")).toVector<float>(), {ws}, 1e-5);
}

TEST_CASE("RowFusion: vector passes (rows of whole vectors, several row axes) agree with the scalar lowering") {
  // rows that are a multiple of the vector width take the vector passes (unrolled partial
  // results, the scratch array read back as vectors, prefetches of the next row); NOOPT lowers
  // the same kernel with scalar loops
  struct Case {
    std::vector<int64_t> shape;
    std::function<Tensor(const Tensor &)> op;
  };
  std::vector<Case> cases = {
      {{6, 64}, [](const Tensor &x) { return x.softmax(); }},
      {{5, 128}, [](const Tensor &x) { return x.logSoftmax(); }},
      {{7, 96}, [](const Tensor &x) { return x.layernorm(); }},
      {{4, 3, 32}, [](const Tensor &x) { return x.layernorm({-2, -1}); }},
      {{2, 3, 48}, [](const Tensor &x) { return x.softmax(); }},
      {{256}, [](const Tensor &x) { return x.softmax(); }},
      // rows that end in a partial vector: vector passes, then a scalar tail
      {{5, 1000}, [](const Tensor &x) { return x.softmax(); }},
      {{3, 50}, [](const Tensor &x) { return x.logSoftmax(); }},
      {{4, 33}, [](const Tensor &x) { return x.layernorm(); }},
      {{2, 3, 40}, [](const Tensor &x) { return x.softmax(); }},
  };
  for (const auto &c : cases) {
    CAPTURE(renderShape(Shape(c.shape.begin(), c.shape.end())));
    std::vector<float> scalar, vector, ref;
    {
      AtOpt opt(2);
      ref = c.op(input(c.shape, 5)).toVector<float>();
    }
    {
      Config cfg = config();
      cfg.opt = 5;
      cfg.noopt = true;
      ScopedConfig scope(cfg);
      scalar = c.op(input(c.shape, 5)).toVector<float>();
    }
    AtOpt opt(5);
    Tensor x = input(c.shape, 5);
    auto ks = kernelsOf(c.op(x));
    REQUIRE(ks.size() == 1);
    KernelSignature sig = describeKernel(ks[0].ast, TargetSpec::host(), CompileOptions{});
    CHECK(sig.kernelSummary.find("row stores") != std::string::npos);
    vector = c.op(x).toVector<float>();
    std::vector<double> want(ref.begin(), ref.end());
    checkClose(vector, want, 2e-6);
    checkClose(scalar, want, 2e-6);
  }
}

TEST_CASE("RowFusion: the inline exp2 of row kernels is within 2 ulp over the whole range") {
  // (x - max) spans 0 down to -300: results from 1 through the subnormals to 0, plus inf and NaN
  std::vector<double> v;
  for (int i = 0; i < 4 * 64; ++i) v.push_back(-300.0 * (i % 64) / 63.0 + (i / 64) * 0.37);
  v[70] = -INFINITY;
  v[140] = NAN;
  AtOpt opt(5);
  Tensor x = Tensor::fromValues(v, Shape{4, 64});
  Tensor e = (x - x.max(std::vector<int64_t>{-1}, true)).exp();
  REQUIRE(kernelsOf(e).size() == 1);
  std::vector<float> got = e.toVector<float>();
  for (int r = 0; r < 4; ++r) {
    float m = -INFINITY;
    bool nan = false;
    for (int i = 0; i < 64; ++i) {
      nan = nan || std::isnan(static_cast<float>(v[r * 64 + i]));
      m = std::max(m, static_cast<float>(v[r * 64 + i]));
    }
    for (int i = 0; i < 64; ++i) {
      size_t at = static_cast<size_t>(r * 64 + i);
      INFO("row ", r, " element ", i, " x=", v[at]);
      if (nan) {
        CHECK(std::isnan(got[at])); // max propagates NaN through the row
        continue;
      }
      // exp is exp2 of x * log2(e) in float32 (mlops.Exp): the same argument, then exp2 exactly
      float arg = (static_cast<float>(v[at]) - m) * static_cast<float>(1.4426950408889634);
      double want = std::exp2(static_cast<double>(arg));
      CHECK(std::fabs(got[at] - want) <= 3e-7 * want + 1.5e-45);
    }
  }
}

TEST_CASE("RowFusion: what does not fuse keeps the kernels of OPT=2, the level OPT=5 builds on") {
  auto both = [](const std::function<Tensor()> &program) {
    size_t at4, at5;
    {
      AtOpt opt(2);
      at4 = kernelsOf(program()).size();
    }
    {
      AtOpt opt(5);
      at5 = kernelsOf(program()).size();
    }
    return std::make_pair(at4, at5);
  };
  SUBCASE("a reduce over a leading axis") {
    auto [a, b] = both([] { return input({40, 30}, 3).softmax(0); });
    CHECK(a == 4);
    CHECK(b == a);
  }
  SUBCASE("rows longer than kMaxRowKernelElements") {
    auto [a, b] = both([] { return input({2, kMaxRowKernelElements + 1}, 3).softmax(); });
    CHECK(a == 4);
    CHECK(b == a);
  }
  SUBCASE("rows shorter than kMinRowKernelElements (a 2x2 pooling window)") {
    auto [a, b] = both([] { return input({64, kMinRowKernelElements - 1}, 3).softmax(); });
    CHECK(a == 4);
    CHECK(b == a);
  }
  SUBCASE("a broadcast of a reduce over all axes") {
    // x - x.max() reduces to a (1, 1) buffer: the row would be the whole tensor, one thread
    auto [a, b] = both([] {
      Tensor x = input({16, 16}, 3);
      return x - x.max(std::nullopt, true);
    });
    CHECK(b == 1);
    CHECK(a == 2);
  }
  SUBCASE("the reference's fusions at OPT=5 where no row op appears") {
    auto [a, b] = both([] {
      Tensor x = input({8, 16}, 3), w = input({16, 4}, 5);
      return (x.matmul(w) + 1.0).relu().sum(std::vector<int64_t>{1});
    });
    CHECK(b == a);
  }
}

TEST_CASE("RowFusion: the values of the row values' own kernels are unchanged when they are realized too") {
  // the max and the sum are realized for the user and also recomputed inside the fused kernel
  AtOpt opt(5);
  Tensor x = input({6, 10}, 11);
  Tensor m = x.max(std::vector<int64_t>{-1}, true);
  Tensor y = (x - m).exp();
  Tensor s = y.sum(std::vector<int64_t>{-1}, true);
  Tensor out = y / s;
  std::vector<double> want = rowwise(values({6, 10}, 11), 10, softmaxRow);
  checkClose(out.toVector<float>(), want);
  std::vector<float> mv = m.toVector<float>();
  std::vector<double> xv = values({6, 10}, 11);
  for (int r = 0; r < 6; ++r) CHECK(mv[r] == static_cast<float>(*std::max_element(xv.begin() + r * 10, xv.begin() + r * 10 + 10)));
}

TEST_CASE("RowFusion: backward passes fuse too and give OPT=2's gradients") {
  struct Grad {
    std::vector<float> g;
    size_t kernels = 0;
  };
  std::vector<int64_t> shape{12, 24};
  for (const auto &c : rowCases()) {
    CAPTURE(c.name);
    auto run = [&](int level) {
      AtOpt opt(level);
      Tensor x = input(shape, 21).setRequiresGrad(true);
      Tensor w = input(shape, 22);
      Tensor loss = (c.op(x) * w).sum();
      loss.backward();
      Grad out;
      out.kernels = kernelsOf(*x.grad()).size();
      out.g = x.grad()->toVector<float>();
      return out;
    };
    Grad at2 = run(2), at4 = run(4), at5 = run(5);
    MESSAGE(c.name, " backward kernels: OPT=4 ", at4.kernels, ", OPT=5 ", at5.kernels);
    CHECK(at5.kernels == 1);
    CHECK(at4.kernels > 1);
    std::vector<double> want(at2.g.begin(), at2.g.end());
    checkClose(at5.g, want, 1e-4);
  }
}

TEST_CASE("RowFusion: the scheduler fuses by the options it is given, not by the configuration") {
  auto count = [](const Tensor &t, const GraphOptions &o) {
    SeenSet seen;
    size_t n = 0;
    for (const auto &si : schedule(t.lazydata(), seen, o)) n += si.isKernel();
    return n;
  };
  {
    AtOpt opt(2);
    Tensor x = input({8, 32}, 1);
    CHECK(count(x.softmax(), GraphOptions::forLevel(5)) == 1);
    CHECK(count(x.softmax(), GraphOptions::forLevel(2)) == 4);
  }
  AtOpt opt(5);
  Tensor x = input({8, 32}, 1);
  CHECK(count(x.softmax(), GraphOptions::forLevel(2)) == 4);
  CHECK(count(x.softmax(), GraphOptions::forLevel(5)) == 1);
  CHECK(kernelsOf(x.softmax()).size() == 1); // the Tensor layer's overload passes the configured OPT
}

TEST_CASE("Graph options: each Tensor op is built under the configuration current at that op") {
  // the reference reads OPT at each op: an elementwise source built at OPT=0 is merged into a
  // consumer built at OPT=2, and one built at OPT=2 is not merged into a consumer built at OPT=0,
  // whatever the level the graph is scheduled at
  auto kernels = [](const Tensor &t, int level) {
    SeenSet seen;
    size_t n = 0;
    for (const auto &si : schedule(t.lazydata(), seen, GraphOptions::forLevel(level))) n += si.isKernel();
    return n;
  };
  Tensor x = input({8, 32}, 3);
  // (x + 1) built at one level, then * 2 at another: the consumer's level decides the merge
  auto build = [&](int first, int second) {
    Tensor a = [&] {
      AtOpt opt(first);
      return x.add(1);
    }();
    AtOpt opt(second);
    return a.mul(2);
  };
  Tensor lateMerge = build(0, 2), noMerge = build(2, 0);
  for (int level : {0, 2}) {
    CAPTURE(level);
    CHECK(kernels(lateMerge, level) == 1);
    CHECK(kernels(noMerge, level) == 2);
  }
  // and the values do not depend on it
  for (const Tensor &t : {lateMerge, noMerge}) {
    std::vector<float> got = t.toVector<float>(), want = x.toVector<float>();
    for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx((want[i] + 1) * 2));
  }
  // a knob only the first op reads: a sum built under a low split threshold is two reduces even
  // when the op after it (and the schedule) run under the default
  auto sumAt = [&](int64_t threshold) {
    Config c = config();
    c.reduceSplitThreshold = threshold;
    ScopedConfig scope(c);
    return x.sum();
  };
  Tensor split = sumAt(16).add(1), whole = sumAt(32768).add(1);
  CHECK(kernels(split, 2) == 2);
  CHECK(kernels(whole, 2) == 1);
  CHECK(split.item<float>() == doctest::Approx(whole.item<float>()));
}

TEST_CASE("Graph options: backward builds the gradient under the configuration current at backward") {
  auto gradKernels = [](int forwardLevel, int backwardLevel) {
    Tensor x = input({8, 32}, 5).setRequiresGrad(true);
    Tensor loss = [&] {
      AtOpt opt(forwardLevel);
      return x.mul(x).relu().sum();
    }();
    {
      AtOpt opt(backwardLevel);
      loss.backward();
    }
    SeenSet seen;
    size_t n = 0;
    for (const auto &si : schedule(x.grad()->lazydata(), seen, GraphOptions::forLevel(2))) n += si.isKernel();
    return n;
  };
  // OPT=0 merges no elementwise ops: the gradient built at backward time takes more kernels,
  // whatever the level the forward was built at
  CHECK(gradKernels(2, 0) > gradKernels(2, 2));
  CHECK(gradKernels(0, 0) > gradKernels(0, 2));
}

TEST_CASE("RowFusion: the verifier states the row kernel's rules") {
  auto load = [](const Shape &shape) {
    return (KernelOp::make(Op::Load, {}, MemBuffer{1, dtypes::float32, ShapeTracker::fromShape(shape)}));
  };
  auto reduce = [](KernelOpRef src, const Shape &to) { return (KernelOp::make(Op::Sum, {std::move(src)}, to)); };
  auto expand = [](KernelOpRef src, const Shape &to) { return (KernelOp::make(Op::Expand, {std::move(src)}, to)); };
  auto add = [](KernelOpRef a, KernelOpRef b) { return (KernelOp::make(Op::Add, {std::move(a), std::move(b)}, {})); };
  auto store = [](KernelOpRef src, const Shape &shape) {
    return KernelOp::make(Op::Store, {std::move(src)}, MemBuffer{0, dtypes::float32, ShapeTracker::fromShape(shape)});
  };
  Shape full{4, 8}, row{4, 1}, col{1, 8};
  // x + expand(sum(x)) and x + expand(sum over rows) + expand(sum over columns)
  CHECK_NOTHROW(verifyAst(*store(add(load(full), expand(reduce(load(full), row), full)), full)));
  CHECK_THROWS_WITH_AS(
      verifyAst(*store(add(expand(reduce(load(full), row), full), expand(reduce(load(full), col), full)), full)),
      doctest::Contains("a row kernel has one row shape"), Error);
  // a reduce of a row value: its input is not the kernel's shape
  CHECK_THROWS_WITH_AS(
      verifyAst(*store(add(load(full), expand(reduce(reduce(load(full), row), Shape{1, 1}), full)), full)),
      doctest::Contains("its reduces go from the one to the other"), Error);
  // an EXPAND to its own shape, and one that is not a broadcast
  // a reduce outside the EXPANDs must reduce the row axes: its final pass accumulates whole rows
  CHECK_NOTHROW(verifyAst(*store((KernelOp::make(Op::Sum, {add(load(full), expand(reduce(load(full), row), full))}, Shape{1, 1})), Shape{1, 1})));
  CHECK_THROWS_WITH_AS(
      verifyAst(*store((KernelOp::make(Op::Sum, {add(load(full), expand(reduce(load(full), row), full))}, col)), col)),
      doctest::Contains("keeps dim 1, a row axis of the row kernel"), Error);
  CHECK_THROWS_WITH_AS(verifyAst(*store(expand(load(full), full), full)),
                       doctest::Contains("MovementOps.EXPAND of (4, 8) to itself"), Error);
  CHECK_THROWS_WITH_AS(verifyAst(*store(expand(load(Shape{4, 2}), full), full)),
                       doctest::Contains("dim 1 is neither kept nor 1"), Error);
  // other movement ops stay forbidden
  CHECK_THROWS_WITH_AS(verifyAst(*store((KernelOp::make(Op::Reshape, {load(full)}, full)), full)),
                       doctest::Contains("movement op MovementOps.RESHAPE inside a kernel AST"), Error);
}

TEST_CASE("RowFusion: a row kernel is refused by OptOps, with the reason, and runs a block per row on NVPTX") {
  AtOpt opt(5);
  auto ks = kernelsOf(input({4, 8}, 1).softmax());
  REQUIRE(ks.size() == 1);
  KernelSignature gpu = describeKernel(ks[0].ast, TargetSpec::nvptx("sm_90"), CompileOptions{});
  CHECK(gpu.globalSize == std::vector<int64_t>{4});
  CHECK(gpu.localSize == std::vector<int64_t>{8});
  CompileOptions o;
  o.applyOpts = std::vector<Opt>{Opt{OptOp::Upcast, 0, 4}};
  CHECK_THROWS_WITH_AS(describeKernel(ks[0].ast, TargetSpec::host(), o), doctest::Contains("takes no OptOps"),
                       UnsupportedError);
  KernelSignature sig = describeKernel(ks[0].ast, TargetSpec::host(), CompileOptions{});
  CHECK(sig.kernelSummary.find("axes 4:global 8:row") != std::string::npos);
}

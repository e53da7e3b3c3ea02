// Every CPU kernel optimization against the unoptimized kernel (NOOPT, the `--noopt` path) on
// random inputs: matmul register tiles and loop swaps, conv with padding (masked vector loads),
// column reductions, odd sizes that force narrow or padded vectors (PADTO), broadcast operands,
// and a conv layer's gradients (dot products along a reduce axis, gathers through view stacks). Each program
// also checks that the optimizations it targets were applied, so the comparison is not vacuous.
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <set>

using namespace lazyjit;

namespace {

struct Case {
  const char *name;
  std::function<Tensor()> build;
  std::vector<OptOp> expect; // options the optimized kernel must apply (in some kernel)
};

std::vector<float> runWith(bool noopt, const std::function<Tensor()> &build, std::vector<Opt> *opts) {
  Config c = config();
  c.noopt = noopt;
  ScopedConfig scope(c);
  Tensor t = build();
  if (opts)
    for (const auto &si : schedule(t.lazydata()))
      if (si.isKernel()) {
        auto sig = describeKernel(si.ast, TargetSpec::host(), CompileOptions::from(config()));
        opts->insert(opts->end(), sig.opts.begin(), sig.opts.end());
      }
  // (realized first: a cast fused into the kernel would store float32, not the dtype's values)
  t.realize();
  return t.cast(dtypes::float32).toVector<float>();
}

// Uniform in [-0.5, 0.5), of dtype `dt` (rounded to it from float32).
Tensor rnd(Shape s, uint64_t seed, DType dt = dtypes::float32) {
  Tensor::manualSeed(seed);
  Tensor t = Tensor::rand(s).sub(0.5);
  if (dt != dtypes::float32) t = t.cast(dt);
  t.realize();
  return t;
}

// Every program below with inputs of `dt`, optimized against NOOPT: equal within `tol` relative to
// max(1, |value|). In float16 and bfloat16 the kernels compute in float32 lanes as NOOPT's do, in
// another order: rounded to the dtype, the results may be neighbours (`tol` is an ulp at 1).
void checkOptimizedCases(DType dt, float tol) {
  Tensor a = rnd({64, 48}, 1, dt), b = rnd({48, 96}, 2, dt), c = rnd({96}, 3, dt);
  Tensor odd1 = rnd({13, 7}, 4, dt), odd2 = rnd({7, 20}, 5, dt);
  Tensor img = rnd({2, 5, 9, 12}, 6, dt), w = rnd({8, 5, 3, 3}, 7, dt);
  Tensor col = rnd({33, 40}, 8, dt), big = rnd({3, 64, 64}, 9, dt);
  Tensor lin = rnd({96, 48}, 10, dt), odd3 = rnd({13, 48}, 16, dt);
  Tensor img20 = rnd({2, 3, 24, 24}, 17, dt), w5 = rnd({6, 3, 5, 5}, 18, dt), cols25 = rnd({48, 25}, 19, dt);
  Tensor gx = rnd({2, 8, 10, 10}, 20, dt), gw = rnd({16, 8, 3, 3}, 21, dt);
  Tensor mask = rnd({64, 96}, 22).gt(0);
  Tensor sq = rnd({96, 96}, 23, dt), t4 = rnd({2, 16, 8, 12}, 24, dt);
  Tensor dw = rnd({8, 1, 3, 3}, 25, dt), dwx = rnd({2, 8, 12, 16}, 26, dt);
  Tensor a64 = a.cast(dtypes::float64);
  a64.realize();
  Tensor runs = rnd({6, 40, 12}, 27, dt);
  // a conv layer's input or weight gradient (relu keeps the output gradient a real buffer)
  auto convGrad = [&](bool input) {
    Tensor x = gx.detach().setRequiresGrad(true), w = gw.detach().setRequiresGrad(true);
    x.conv2d(w).relu().sum().backward();
    return input ? *x.grad() : *w.grad();
  };
  std::vector<Case> cases = {
      {"matmul 64x48 @ 48x96", [&] { return a.matmul(b); }, {OptOp::Upcast, OptOp::Swap}},
      {"matmul + bias + relu", [&] { return a.matmul(b).add(c).relu(); }, {OptOp::Upcast}},
      {"odd matmul 13x7 @ 7x20", [&] { return odd1.matmul(odd2); }, {OptOp::Upcast}},
      {"batched matmul", [&] { return big.matmul(big.transpose(1, 2)); }, {}},
      {"conv2d 3x3 pad 1", [&] { return img.conv2d(w, std::nullopt, 1, {1}, {1}, {1}); }, {OptOp::Upcast}},
      {"conv2d stride 2 no pad", [&] { return img.conv2d(w, std::nullopt, 1, {2}, {1}, {0}); }, {}},
      {"column sum", [&] { return col.sum(std::vector<int64_t>{0}); }, {OptOp::Upcast}},
      {"column max", [&] { return col.max(std::vector<int64_t>{0}, true); }, {OptOp::Upcast}},
      {"max pool", [&] { return img.maxPool2d({2, 2}); }, {}},
      {"avg pool 3 stride 1", [&] { return img.avgPool2d({3, 3}, std::vector<int64_t>{1, 1}); }, {}},
      {"broadcast outer product sum", [&] { return c.reshape({96, 1}).mul(c.reshape({1, 96})).sum(std::vector<int64_t>{1}); }, {}},
      {"softmax rows", [&] { return col.softmax(); }, {}},
      {"x @ w.T (nn.Linear's form): dot-product tiles", [&] { return a.matmul(lin.transpose(0, 1)).add(c).relu(); },
       {OptOp::Upcast}},
      {"x @ w.T with odd rows", [&] { return odd3.matmul(lin.transpose(0, 1)); }, {}},
      // a buffer read after the reduce that varies along both output axes (the relu mask of a
      // linear layer's input gradient) does not stop the register tile
      {"matmul * mask", [&] { return a.matmul(b).mul(mask); }, {OptOp::Upcast}},
      {"x @ w.T * mask", [&] { return a.matmul(lin.transpose(0, 1)).mul(mask); }, {OptOp::Upcast}},
      // odd vector axes: padded (PADTO) on AVX-512, narrower vectors elsewhere
      {"conv2d 5x5 with a 20-wide output", [&] { return img20.conv2d(w5); }, {}},
      {"matmul with 25 columns", [&] { return a.matmul(cols25); }, {}},
      {"conv weight gradient (dot products along ow)", [&] { return convGrad(false); }, {}},
      {"conv input gradient (col2im: gathers through a view stack)", [&] { return convGrad(true); }, {}},
      // transposes: tiles of the output's contiguous axis x the axis the input reads contiguously
      {"transpose 64x48 (8 x 8 tiles)", [&] { return a.transpose(0, 1).contiguous(); }, {OptOp::Upcast}},
      {"batched transpose", [&] { return big.transpose(1, 2).contiguous(); }, {OptOp::Upcast}},
      {"x.T + x", [&] { return sq.transpose(0, 1).add(sq); }, {OptOp::Upcast}},
      // square tiles of floats transpose the input's rows in registers (CPULowerer::transposedLoad)
      {"transpose in float64", [&] { return a64.transpose(0, 1).contiguous().cast(dtypes::float32); }, {OptOp::Upcast}},
      {"x.T * a column broadcast along the rows", [&] { return sq.transpose(0, 1).mul(c.reshape({96, 1})); },
       {OptOp::Upcast}},
      {"x.T of a padded input (a masked view: the scalar tile)", [&] { return a.pad2d({0, 8}).transpose(0, 1).contiguous(); },
       {OptOp::Upcast}},
      {"NCHW -> NHWC with 12 columns (8 x 4 tiles)", [&] { return t4.permute({0, 2, 3, 1}).contiguous(); },
       {OptOp::Upcast}},
      {"odd transpose 13x7 (no tile)", [&] { return odd1.transpose(0, 1).contiguous(); }, {}},
      // an int buffer (argmax's indices) keeps the vector lowering out: the column tile unrolled
      {"argmax over columns", [&] { return col.argmax(0).cast(dtypes::float32); }, {OptOp::Upcast}},
      {"argmax over rows", [&] { return col.argmax(1).cast(dtypes::float32); }, {}},
      // a reduce shorter than a vector along its contiguous axis: the output's axis is the vector
      {"depthwise conv 3x3 pad 1", [&] { return dwx.conv2d(dw, std::nullopt, 8, {1}, {1}, {1}); }, {OptOp::Upcast}},
      // a reduce over (0, 2) of [N, C, L]: runs of L read for 8 outputs back to back
      {"sum over axes 0 and 2", [&] { return runs.sum(std::vector<int64_t>{0, 2}); }, {OptOp::Upcast, OptOp::Unroll}},
      {"max over axes 0 and 2", [&] { return runs.max(std::vector<int64_t>{0, 2}); }, {OptOp::Upcast, OptOp::Unroll}},
  };
  for (const auto &cs : cases) {
    CAPTURE(cs.name);
    std::vector<Opt> applied;
    std::vector<float> ref = runWith(true, cs.build, nullptr);
    std::vector<float> opt = runWith(false, cs.build, &applied);
    REQUIRE(ref.size() == opt.size());
    for (OptOp want : cs.expect) {
      bool found = false;
      for (const auto &o : applied) found = found || o.op == want;
      CHECK_MESSAGE(found, "expected the optimization to be applied");
    }
    for (size_t i = 0; i < ref.size(); ++i) {
      if (std::fabs(ref[i] - opt[i]) > tol * std::max(1.0f, std::fabs(ref[i]))) {
        FAIL_CHECK("element ", i, ": noopt=", ref[i], " opt=", opt[i]);
        break;
      }
    }
  }
}

} // namespace

TEST_CASE("CPU optimizations: optimized kernels equal the unoptimized ones on random inputs") {
  checkOptimizedCases(dtypes::float32, 1e-4f);
}

TEST_CASE("CPU optimizations: the same programs in float16 and bfloat16 (half vectors) equal NOOPT's") {
  checkOptimizedCases(dtypes::float16, 1.0f / 1024);
  checkOptimizedCases(dtypes::bfloat16, 1.0f / 128);
}

TEST_CASE("CPU optimizations: a matmul kernel is tiled and its options are reported") {
  Tensor a = Tensor::empty({256, 256}), b = Tensor::empty({256, 256});
  auto sched = schedule(a.matmul(b).lazydata());
  REQUIRE(sched.back().isKernel());
  KernelSignature sig = describeKernel(sched.back().ast, TargetSpec::host(), CompileOptions::from(config()));
  REQUIRE(sig.opts.size() >= 2);
  CHECK(sig.opts[0].op == OptOp::Upcast);
  CHECK(sig.opts[1].op == OptOp::Upcast);
  CHECK(sig.kernelSummary.find("opts [UPCAST(") != std::string::npos);
  CHECK(sig.kernelSummary.find(":upcast") != std::string::npos);
  CompileOptions noopt;
  noopt.noopt = true;
  KernelSignature plain = describeKernel(sched.back().ast, TargetSpec::host(), noopt);
  CHECK(plain.opts.empty());
  CHECK(plain.name == "r_256_256_256");
}

TEST_CASE("CPU optimizations: a matmul times a mask of its output's shape keeps its register tile") {
  // only the reduce's inputs decide the tile; the mask is read once per output element. Both the
  // x @ W form (vector along the output) and the x @ W.T form (dot products) tile two axes.
  Tensor a = Tensor::empty({256, 256}), b = Tensor::empty({256, 256}), m = Tensor::empty({256, 256});
  for (bool transposed : {false, true}) {
    CAPTURE(transposed);
    Tensor y = (transposed ? a.matmul(b.transpose(0, 1)) : a.matmul(b)).mul(m);
    auto sched = schedule(y.lazydata());
    REQUIRE(sched.back().isKernel());
    KernelSignature sig = describeKernel(sched.back().ast, TargetSpec::host(), CompileOptions::from(config()));
    std::set<int64_t> upcastAxes;
    for (const auto &o : sig.opts)
      if (o.op == OptOp::Upcast) upcastAxes.insert(o.axis);
    CHECK(upcastAxes.size() >= 2);
  }
}

namespace {

// The LLVM IR of the last kernel of `t`'s schedule, which must write its output with streaming
// stores.
std::string streamedKernelIR(const Tensor &t) {
  auto sched = schedule(t.lazydata());
  REQUIRE(sched.back().isKernel());
  KernelSignature sig = describeKernel(sched.back().ast, TargetSpec::host(), CompileOptions::from(config()));
  CHECK(sig.kernelSummary.find("stores streaming") != std::string::npos);
  return emitKernelText(sched.back().ast, TargetSpec::host(), CompileOptions::from(config()), IRStage::LLVM);
}

} // namespace

TEST_CASE("CPU optimizations: large element-wise outputs are written with streaming stores") {
  // 4 Mi float32 outputs (16 MiB) stream; the values equal the unoptimized kernel's
  const int64_t n = int64_t(4) << 20;
  Tensor a = rnd({4096, 1024}, 11), b = rnd({4096, 1024}, 12), c = rnd({4096, 1}, 13);
  auto build = [&] { return a.mul(b).add(c).relu().mul(0.5); };
  std::vector<float> ref = runWith(true, build, nullptr);
  std::vector<float> opt = runWith(false, build, nullptr);
  REQUIRE(ref.size() == opt.size());
  size_t bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) bad += ref[i] != opt[i];
  CHECK(bad == 0);

  std::string ir = streamedKernelIR(build());
  CHECK(ir.find("!nontemporal") != std::string::npos);
  CHECK(ir.find("align 64, !nontemporal") != std::string::npos);
  CHECK(ir.find("sfence") != std::string::npos);

  // below the threshold, or without whole cache lines per vector, the stores stay ordinary
  Tensor small = rnd({4096}, 14);
  auto smallSched = schedule(small.mul(2.0).lazydata());
  KernelSignature smallSig = describeKernel(smallSched.back().ast, TargetSpec::host(), CompileOptions::from(config()));
  CHECK(smallSig.kernelSummary.find("stores streaming") == std::string::npos);
  Tensor odd = rnd({n + 8}, 15);
  auto oddBuild = [&] { return odd.mul(3.0).add(1.0); };
  auto oddSched = schedule(oddBuild().lazydata());
  KernelSignature oddSig = describeKernel(oddSched.back().ast, TargetSpec::host(), CompileOptions::from(config()));
  CHECK(oddSig.kernelSummary.find("stores streaming") == std::string::npos);
  std::vector<float> oddRef = runWith(true, oddBuild, nullptr), oddOpt = runWith(false, oddBuild, nullptr);
  CHECK(oddRef == oddOpt);
}

TEST_CASE("CPU optimizations: a streamed concatenation branches around each input's rows") {
  // cat along axis 0 reads each input under a guard that does not vary across a vector's lanes
  // (the row's side of the seam): the vector load sits behind a branch on it, not under a mask,
  // so no masked load runs with every lane off at an address outside its buffer (a microcode
  // assist per vector: 36 ms for this cat, against 0.8 ms). Along axis 1 the seam falls between
  // vectors as well. The values equal the unoptimized kernel's and the inputs'.
  const int64_t rows = 2048, cols = 1024; // 16 MiB of float32 output: streamed, upcast by 16 lanes
  Tensor x = rnd({rows, cols}, 31), y = rnd({rows, cols}, 32);
  for (int64_t dim : {0, 1}) {
    CAPTURE(dim);
    auto build = [&] { return x.cat({y}, dim); };
    std::vector<float> ref = runWith(true, build, nullptr);
    std::vector<float> opt = runWith(false, build, nullptr);
    CHECK(ref == opt);
    std::vector<float> xs = x.toVector<float>(), ys = y.toVector<float>();
    REQUIRE(opt.size() == xs.size() + ys.size());
    size_t bad = 0;
    for (int64_t r = 0; r < (dim == 0 ? 2 * rows : rows); ++r)
      for (int64_t c = 0; c < (dim == 0 ? cols : 2 * cols); ++c) {
        bool first = dim == 0 ? r < rows : c < cols;
        int64_t sr = dim == 0 && !first ? r - rows : r, sc = dim == 1 && !first ? c - cols : c;
        float want = (first ? xs : ys)[static_cast<size_t>(sr * cols + sc)];
        bad += opt[static_cast<size_t>(r * (dim == 0 ? cols : 2 * cols) + c)] != want;
      }
    CHECK(bad == 0);
    std::string ir = streamedKernelIR(build());
    CHECK(ir.find("llvm.masked.load") == std::string::npos);
    CHECK(ir.find("label %load, label %load.cont") != std::string::npos);
  }
}

TEST_CASE("CPU optimizations: streaming kernels with exp2/log2/sin call glibc's vector math") {
  const int64_t rows = 2048, cols = 2048; // 16 MiB of float32 output
  Tensor x = rnd({rows, cols}, 21), m = rnd({rows, 1}, 22);
  auto build = [&] { return x.sub(m).exp().add(x.abs().add(0.5).log()).add(x.sin()); };
  std::vector<float> ref = runWith(true, build, nullptr);
  std::vector<float> opt = runWith(false, build, nullptr);
  REQUIRE(ref.size() == opt.size());
  size_t bad = 0;
  for (size_t i = 0; i < ref.size(); ++i)
    bad += std::fabs(ref[i] - opt[i]) > 1e-5f * std::max(1.0f, std::fabs(ref[i]));
  CHECK(bad == 0);

  auto sched = schedule(build().lazydata());
  REQUIRE(sched.back().isKernel());
  KernelSignature sig = describeKernel(sched.back().ast, TargetSpec::host(), CompileOptions::from(config()));
  CHECK(sig.kernelSummary.find("stores streaming") != std::string::npos);

  // AVX-512: one 16-lane call per function; AVX2: the 16 lanes of a cache line in two 8-lane calls
  TargetSpec skx = TargetSpec::host();
  skx.cpu = "skylake-avx512";
  skx.features = "+avx2,+fma,+f16c,+avx512f,+avx512vl,+avx512bw,+avx512dq";
  std::string zmm = emitKernelText(sched.back().ast, skx, CompileOptions::from(config()), IRStage::LLVM);
  auto count = [](const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
  };
  CHECK(count(zmm, "@_ZGVeN16v_exp2f(<16 x float> %") == 1);
  CHECK(count(zmm, "@_ZGVeN16v_log2f(<16 x float> %") == 1);
  CHECK(count(zmm, "@_ZGVeN16v_sinf(<16 x float> %") == 1);
  TargetSpec hsw = TargetSpec::host();
  hsw.cpu = "haswell";
  hsw.features = "+avx2,+fma,+f16c";
  std::string ymm = emitKernelText(sched.back().ast, hsw, CompileOptions::from(config()), IRStage::LLVM);
  CHECK(count(ymm, "@_ZGVdN8v_exp2f(<8 x float> %") == 2);
  CHECK(count(ymm, "@_ZGVdN8v_sinf(<8 x float> %") == 2);
  CHECK(ymm.find("!nontemporal") != std::string::npos);
}

TEST_CASE("CPU optimizations: CodeGen follows the options it is given, not the configuration") {
  Tensor a = Tensor::empty({256, 256}), b = Tensor::empty({256, 256});
  auto sched = schedule(a.matmul(b).lazydata());
  REQUIRE(sched.back().isKernel());
  Config c = config();
  c.noopt = true;
  c.bounds = true;
  c.mergeView = false;
  ScopedConfig scope(c);
  // the configuration reaches CodeGen only through CompileOptions::from
  CompileOptions fromConfig = CompileOptions::from(config());
  CHECK(fromConfig.noopt);
  CHECK(fromConfig.bounds);
  CHECK_FALSE(fromConfig.mergeView);
  CompileOptions mergeOnly = fromConfig;
  mergeOnly.mergeView = true; // MERGE_VIEW is part of the program's identity
  CHECK(describeKernel(sched.back().ast, TargetSpec::host(), mergeOnly).symbol !=
        describeKernel(sched.back().ast, TargetSpec::host(), fromConfig).symbol);
  // and it reaches the Kernel's own reshapes (dropping the 1 axis, merging the contiguous ones):
  // without merging each adds a view
  auto ones = schedule(Tensor::empty({4, 1, 8}).mul(2).lazydata());
  REQUIRE(ones.back().isKernel());
  for (bool merge : {true, false}) {
    CAPTURE(merge);
    CompileOptions o;
    o.noopt = true;
    o.mergeView = merge;
    Kernel k = buildKernel(ones.back().ast, TargetSpec::host(), o);
    CHECK((k.sts[0].views.size() == 1) == merge);
    CHECK(kernelName(*ones.back().ast, merge) == k.name());
  }
  KernelSignature configured = describeKernel(sched.back().ast, TargetSpec::host(), fromConfig);
  CHECK(configured.opts.empty());
  CHECK(configured.boundsChecked);
  // explicit options win over NOOPT and LAZYJIT_BOUNDS set in the configuration
  KernelSignature explicitOpts = describeKernel(sched.back().ast, TargetSpec::host(), CompileOptions{});
  CHECK_FALSE(explicitOpts.opts.empty());
  CHECK_FALSE(explicitOpts.boundsChecked);
  CHECK(explicitOpts.symbol != configured.symbol);
}

TEST_CASE("Kernel symbols: programs whose AST hashes collide get their own symbols and both run") {
  // KernelOp::hash is a hash-table hash: these two cast kernels hash alike. A symbol derived from it
  // named both programs alike, and linking the second into the process's JIT threw "Duplicate
  // definition of symbol".
  Tensor a = rnd({64, 2048}, 31), b = rnd({64, 3072}, 32);
  Tensor ca = a.cast(dtypes::float64), cb = b.cast(dtypes::float64);
  auto sa = schedule(ca.lazydata()), sb = schedule(cb.lazydata());
  REQUIRE(sa.back().isKernel());
  REQUIRE(sb.back().isKernel());
  CompileOptions o = CompileOptions::from(config());
  CHECK(describeKernel(sa.back().ast, TargetSpec::host(), o).symbol !=
        describeKernel(sb.back().ast, TargetSpec::host(), o).symbol);
  std::vector<double> va, vb;
  REQUIRE_NOTHROW(va = ca.toVector<double>());
  REQUIRE_NOTHROW(vb = cb.toVector<double>());
  std::vector<float> fa = a.toVector<float>(), fb = b.toVector<float>();
  REQUIRE(va.size() == fa.size());
  REQUIRE(vb.size() == fb.size());
  CHECK(va.front() == static_cast<double>(fa.front()));
  CHECK(va.back() == static_cast<double>(fa.back()));
  CHECK(vb.back() == static_cast<double>(fb.back()));
}

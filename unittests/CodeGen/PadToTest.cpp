// PADTO (Kernel::padTo) and what builds on it: every padded kernel equals the unpadded one on
// random inputs and touches nothing outside its buffers (KernelRunner's guard zones), for odd sizes
// on output and reduce axes; a reduce axis pads only SUMs of ops that keep 0 at 0; padded lanes
// are masked off at the store.
#include "KernelTestUtil.h"
#include "KernelRunner.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <set>

using namespace lazyjit;
using lazyjit::testing::lastKernel;
using lazyjit::testing::KernelRun;
using lazyjit::testing::KernelRunner;

namespace {

// The AST of the last kernel that computes `t` (inputs are empty buffers: only the AST is used).

Tensor empty(Shape s) { return Tensor::empty(std::move(s)); }

void checkSame(const KernelRun &ref, const KernelRun &opt) {
  REQUIRE(ref.bufs.size() == opt.bufs.size());
  CHECK(opt.guardsIntact);
  for (size_t b = 0; b < ref.bufs.size(); ++b) {
    REQUIRE(ref.bufs[b].size() == opt.bufs[b].size());
    for (size_t i = 0; i < ref.bufs[b].size(); ++i) {
      float x = ref.bufs[b][i], y = opt.bufs[b][i];
      if (std::fabs(x - y) > 1e-4f * std::max(1.0f, std::fabs(x))) {
        FAIL_CHECK("buffer ", b, " element ", i, ": noopt=", x, " opt=", y);
        return;
      }
    }
  }
}

struct Program {
  const char *name;
  std::function<Tensor()> build;
};

// Kernels with odd sizes on output and reduce axes, broadcast operands and padded (masked) inputs.
std::vector<Program> oddPrograms() {
  return {
      {"matmul 13x7 @ 7x20", [] { return empty({13, 7}).matmul(empty({7, 20})); }},
      {"x @ w.T 5x25 @ 25x3", [] { return empty({5, 25}).matmul(empty({3, 25}).transpose(0, 1)); }},
      {"column sum 11x6 + bias", [] { return empty({11, 6}).sum(std::vector<int64_t>{0}).add(empty({6})); }},
      {"conv2d 3x5x5 pad 1 stride 1", [] {
         return empty({2, 3, 7, 5}).conv2d(empty({5, 3, 3, 3}), std::nullopt, 1, {1}, {1}, {1});
       }},
      {"sum of a product over a padded input", [] {
         return empty({3, 5}).pad2d({1, 2, 0, 1}).mul(empty({4, 8})).sum(std::vector<int64_t>{1});
       }},
      {"elementwise 7x3 with broadcast", [] { return empty({7, 3}).mul(empty({1, 3})).add(empty({7, 1})); }},
      {"row max 5x16 (refuses padding; dot-product lanes of a MAX)", [] {
         return empty({5, 16}).max(std::vector<int64_t>{1});
       }},
      {"weight gradient of a 3x3 conv over 6x6", [] {
         // sum over n, oh, ow of x[n, ci, oh+kh, ow+kw] * dy[n, co, oh, ow]
         Tensor x = Tensor::empty({2, 3, 8, 8}, {std::nullopt, std::nullopt, true});
         Tensor w = Tensor::empty({4, 3, 3, 3}, {std::nullopt, std::nullopt, true});
         x.conv2d(w).relu().sum().backward();
         return *w.grad();
       }},
  };
}

} // namespace

TEST_CASE("PADTO: every padded axis of odd-sized kernels equals NOOPT and stays inside its buffers") {
  KernelRunner runner;
  CompileOptions noopt;
  noopt.noopt = true;
  int checked = 0;
  for (const auto &p : oddPrograms()) {
    CAPTURE(p.name);
    KernelOpRef ast = lastKernel(p.build());
    KernelRun ref = runner.run(ast, noopt, 7);
    REQUIRE(ref.guardsIntact);
    Kernel k(ast);
    int fr = k.firstReduce();
    for (int64_t axis = 0; axis < static_cast<int64_t>(k.shapeLen()); ++axis)
      for (int64_t amt : {4, 8, 16, 32}) {
        // pad, then upcast (output axis) or unroll (reduce axis) by the padded multiple; and pad alone
        // (unrolling a reduce axis by 8 or more, last, makes it the vector of a dot product)
        std::vector<std::vector<Opt>> lists = {{{OptOp::PadTo, axis, amt}}};
        if (axis < fr) lists.push_back({{OptOp::PadTo, axis, amt}, {OptOp::Upcast, axis, amt}});
        else lists.push_back({{OptOp::PadTo, axis, amt}, {OptOp::Unroll, axis - fr, amt}});
        if (axis >= fr && k.fullShape()[axis].asInt() % amt == 0)
          lists.push_back({{OptOp::Unroll, axis - fr, amt}});
        for (const auto &opts : lists) {
          CAPTURE(opts[0].str());
          CAPTURE(opts.size());
          CompileOptions o;
          o.applyOpts = opts;
          KernelRun got;
          try {
            got = runner.run(ast, o, 7);
          } catch (const UnsupportedError &) {
            continue; // the axis needs no padding, or padding is refused (checked below)
          }
          checkSame(ref, got);
          ++checked;
        }
      }
  }
  MESSAGE(checked, " padded kernels compared");
  CHECK(checked > 40);
}

TEST_CASE("PADTO: a reduce axis is padded only for a SUM of ops that keep 0 at 0") {
  Tensor a = empty({6, 5}), b = empty({6, 5});
  auto padReduce = [](const Tensor &t) {
    Kernel k(lastKernel(t));
    k.applyOpt({OptOp::PadTo, k.firstReduce(), 8});
    return k.fullShape();
  };
  // sum(a*b) over 5 -> 8: zeros in, zeros summed
  Shape s = padReduce(a.mul(b).sum(std::vector<int64_t>{1}));
  CHECK(s.back() == SInt(8));
  CHECK_THROWS_WITH_AS(padReduce(a.max(std::vector<int64_t>{1})), doctest::Contains("keep 0 at 0"), UnsupportedError);
  CHECK_THROWS_WITH_AS(padReduce(a.exp().sum(std::vector<int64_t>{1})), doctest::Contains("keep 0 at 0"),
                       UnsupportedError);
  CHECK_THROWS_WITH_AS(padReduce(a.div(b).sum(std::vector<int64_t>{1})), doctest::Contains("keep 0 at 0"),
                       UnsupportedError);
  // no padding needed, more than double the work, an upcast axis
  Kernel k(lastKernel(a.mul(b).sum(std::vector<int64_t>{1})));
  CHECK_THROWS_WITH_AS(k.applyOpt({OptOp::PadTo, 0, 2}), doctest::Contains("needs no padding"), UnsupportedError);
  CHECK_THROWS_WITH_AS(k.applyOpt({OptOp::PadTo, 1, 16}), doctest::Contains("more than doubles"), UnsupportedError);
  k.applyOpt({OptOp::Upcast, 0, 2});
  CHECK_THROWS_WITH_AS(k.applyOpt({OptOp::PadTo, 2, 4}), doctest::Contains("upcast axis"), UnsupportedError);
}

TEST_CASE("PADTO: the padded lanes of a vector axis are masked off at the store") {
  // 13x25 outputs: the 25-wide axis is padded to 32 and upcast as one vector
  KernelOpRef ast = lastKernel(empty({13, 7}).matmul(empty({7, 25})));
  CompileOptions o;
  o.applyOpts = std::vector<Opt>{{OptOp::PadTo, 1, 32}, {OptOp::Upcast, 1, 32}};
  KernelSignature sig = describeKernel(ast, TargetSpec::host(), o);
  CHECK(sig.name == "r_13_7_32");
  std::string ir = emitKernelText(ast, TargetSpec::host(), o, IRStage::LLVM);
  CHECK(ir.find("call void @llvm.masked.store.v32f32") != std::string::npos);
  CHECK(ir.find("@llvm.masked.load.v32f32") != std::string::npos);
  // the weight is read contiguously along the axis; the broadcast row vector is not masked
  KernelRunner runner;
  CompileOptions noopt;
  noopt.noopt = true;
  checkSame(runner.run(ast, noopt, 3), runner.run(ast, o, 3));
}

namespace {

struct CNNKernels {
  size_t compared = 0;
  bool padded = false, gathered = false, scattered = false;
};

// The layers of examples/fashion_mnist.cpp at batch 3: forward, input and weight gradients, each
// kernel run with the heuristics and with NOOPT (KernelRunner: buffers with guard zones).
CNNKernels checkCNNKernels() {
  struct Layer {
    int64_t cin, hw, cout, k;
  };
  KernelRunner runner;
  CompileOptions noopt;
  noopt.noopt = true;
  std::set<std::string> seen;
  CNNKernels r;
  for (Layer l : {Layer{1, 28, 32, 5}, Layer{32, 24, 32, 5}, Layer{32, 10, 64, 3}, Layer{64, 8, 64, 3}}) {
    Tensor x = Tensor::rand({3, l.cin, l.hw, l.hw}, {std::nullopt, std::nullopt, true});
    Tensor w = Tensor::rand({l.cout, l.cin, l.k, l.k}, {std::nullopt, std::nullopt, true});
    x.realize();
    w.realize();
    Tensor loss = x.conv2d(w).relu().sum();
    loss.backward();
    for (const Tensor &g : {*x.grad(), *w.grad()})
      for (const auto &si : schedule(g.lazydata())) {
        if (!si.isKernel() || !seen.insert(printAst(*si.ast)).second) continue;
        CAPTURE(kernelName(*si.ast, true));
        KernelRun got = runner.run(si.ast, {}, 11);
        checkSame(runner.run(si.ast, noopt, 11), got);
        for (const auto &o : got.applied) r.padded = r.padded || o.op == OptOp::PadTo;
        Kernel k = buildKernel(si.ast, TargetSpec::host(), CompileOptions::from(config()));
        r.scattered = r.scattered || k.scatterOutput;
        r.gathered = r.gathered || (k.upcasted > 0 && kernelName(*si.ast, true).find("_6_6") != std::string::npos &&
                                    kernelName(*si.ast, true).rfind("r_3_32_24_24", 0) == 0);
      }
  }
  r.compared = seen.size();
  MESSAGE(seen.size(), " kernels compared");
  return r;
}

bool hostHasAVX512() { return TargetSpec::host().features.find("+avx512f") != std::string::npos; }

} // namespace

TEST_CASE("CPU heuristics: the CNN's training kernels equal NOOPT and stay inside their buffers") {
  // (PADTO of 20/25/5/3-wide vector axes, gathers through the col2im view stack)
  CNNKernels r = checkCNNKernels();
  CHECK(r.compared >= 12);
  if (hostHasAVX512()) {
    CHECK(r.padded);
    CHECK(r.gathered);
  }
}

TEST_CASE("CPU heuristics: the CNN's training kernels at OPT=5 (direct convolution gradients) equal NOOPT") {
  // the input gradients as transposed convolutions over the padded gradient, the weight gradients
  // over the gradient written out channels-last (TensorConv.cpp): channel-vector tiles, scattered
  // stores, and on AVX2 a tile of 5 rows
  Config cfg = config();
  cfg.opt = 5;
  ScopedConfig scope(cfg);
  CNNKernels r = checkCNNKernels();
  CHECK(r.compared >= 12);
  if (!hostHasAVX512()) CHECK(r.scattered);
}

TEST_CASE("Dot-product vector mode: a last unrolled reduce axis of 8+ lanes is summed per output at the end") {
  KernelRunner runner;
  CompileOptions noopt;
  noopt.noopt = true;
  // x @ w.T with a 25-long reduce: padded to 32 lanes of partial sums, a 2x3 register tile
  KernelOpRef dot = lastKernel(empty({4, 25}).matmul(empty({3, 25}).transpose(0, 1)));
  CompileOptions o;
  o.applyOpts = std::vector<Opt>{{OptOp::Upcast, 1, 3}, {OptOp::Upcast, 0, 2}, {OptOp::PadTo, 1, 32},
                                 {OptOp::Unroll, 0, 32}};
  std::string ir = emitKernelText(dot, TargetSpec::host(), o, IRStage::LLVM);
  CHECK(ir.find("fmul reassoc nsz arcp contract afn <32 x float>") != std::string::npos);
  CHECK(ir.find("@llvm.vector.reduce.fadd.v32f32(float -0.000000e+00") != std::string::npos);
  checkSame(runner.run(dot, noopt, 5), runner.run(dot, o, 5));
  // a MAX reduce cannot be padded, but its 16 lanes reduce with IEEE maximum (NaN propagates)
  KernelOpRef mx = lastKernel(empty({5, 16}).max(std::vector<int64_t>{1}));
  o.applyOpts = std::vector<Opt>{{OptOp::Unroll, 0, 16}};
  CHECK(emitKernelText(mx, TargetSpec::host(), o, IRStage::LLVM).find("@llvm.vector.reduce.fmaximum.v16f32") !=
        std::string::npos);
  checkSame(runner.run(mx, noopt, 5), runner.run(mx, o, 5));
  // the heuristics pick it for a conv's weight gradient, whose output vector axis (kw) is 3 wide
  Tensor x = Tensor::empty({2, 16, 8, 8}, {std::nullopt, std::nullopt, true});
  Tensor w = Tensor::empty({8, 16, 3, 3}, {std::nullopt, std::nullopt, true});
  x.conv2d(w).relu().sum().backward();
  KernelOpRef wgrad = lastKernel(*w.grad());
  KernelRun got = runner.run(wgrad, {}, 5);
  checkSame(runner.run(wgrad, noopt, 5), got);
  if (TargetSpec::host().features.find("+avx512f") != std::string::npos) {
    REQUIRE(!got.applied.empty());
    CHECK(got.applied.back().op == OptOp::Unroll);
    CHECK(got.applied.back().amt >= 8);
  }
}

// Row kernels (OPT=5) lowered for the CPU on random inputs: the vector passes, the scratch array,
// the scalar tails and both inline exp2 forms (vscalefps on AVX-512, the two-factor scaling on
// AVX2) against the plain scalar passes of NOOPT, inside their buffers (KernelRunner's guards).
#include "KernelRunner.h"
#include "KernelTestUtil.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>

using namespace lazyjit;
using lazyjit::testing::KernelRun;
using lazyjit::testing::KernelRunner;
using lazyjit::testing::lastKernel;

TEST_CASE("Row kernels: vector and scalar lowerings agree on AVX-512 and AVX2 targets") {
  Config c = config();
  c.opt = 5;
  ScopedConfig scope(c);
  struct Case {
    const char *name;
    std::function<Tensor()> build;
  };
  auto empty = [](Shape s) { return Tensor::empty(std::move(s)); };
  std::vector<Case> cases = {
      {"softmax 6x64", [&] { return empty({6, 64}).softmax(); }},
      {"softmax 3x1000 (a scalar tail)", [&] { return empty({3, 1000}).softmax(); }},
      {"log_softmax 5x40", [&] { return empty({5, 40}).logSoftmax(); }},
      {"layernorm 4x96", [&] { return empty({4, 96}).layernorm(); }},
      {"layernorm over two axes 2x3x32", [&] { return empty({2, 3, 32}).layernorm({-2, -1}); }},
      {"sum of softmax * w (a reduce over the rows)", [&] {
         return (empty({8, 48}).softmax() * empty({8, 48})).sum();
       }},
  };
  KernelRunner runner;
  CompileOptions noopt;
  noopt.noopt = true;
  TargetSpec avx2 = KernelRunner::hostWithoutAVX512();
  for (const auto &cs : cases) {
    CAPTURE(cs.name);
    KernelOpRef ast = lastKernel(cs.build());
    bool rowKernel = false;
    for (const KernelOp *x : ast->lazyops()) rowKernel = rowKernel || x->op == Op::Expand;
    REQUIRE(rowKernel);
    KernelRun ref = runner.run(ast, noopt, 11);
    REQUIRE(ref.guardsIntact);
    for (const TargetSpec *target : std::vector<const TargetSpec *>{nullptr, &avx2}) {
      CAPTURE(target ? "AVX2" : "host");
      KernelRun got = runner.run(ast, CompileOptions{}, 11, nullptr, target);
      CHECK(got.guardsIntact);
      REQUIRE(got.bufs.size() == ref.bufs.size());
      for (size_t i = 0; i < ref.bufs[0].size(); ++i) {
        float x = ref.bufs[0][i], y = got.bufs[0][i];
        if (!(std::fabs(x - y) <= 2e-6f * std::max(1.0f, std::fabs(x)))) {
          FAIL_CHECK("element ", i, ": noopt=", x, " optimized=", y);
          break;
        }
      }
    }
  }
}

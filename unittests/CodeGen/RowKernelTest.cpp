// Row kernels (OPT=5) lowered for the CPU on random inputs: the vector passes, the scratch array,
// the scalar tails and both inline exp2 forms (vscalefps on AVX-512, the two-factor scaling on
// AVX2) against the plain scalar passes of NOOPT, inside their buffers (KernelRunner's guards).
#include "KernelRunner.h"
#include "HardRows.h"
#include "KernelTestUtil.h"
#include "TestSkip.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace lazyjit;
using lazyjit::testing::KernelRun;
using lazyjit::testing::KernelRunner;
using lazyjit::testing::lastKernel;

namespace {

// The elements of an optimized kernel's output that differ from NOOPT's by more than float
// rounding (2e-6 relative, absolute below 1); the first is reported.
size_t disagreeing(const std::vector<float> &noopt, const std::vector<float> &optimized) {
  size_t bad = 0;
  for (size_t i = 0; i < noopt.size(); ++i) {
    float x = noopt[i], y = optimized[i];
    if (!(std::fabs(x - y) <= 2e-6f * std::max(1.0f, std::fabs(x))) && bad++ == 0)
      FAIL_CHECK("element ", i, ": noopt=", x, " optimized=", y);
  }
  return bad;
}

Config atOpt5() {
  Config c = config();
  c.opt = 5;
  return c;
}

// A row kernel to compile: the program's last kernel, and (pipelined rows) the chunks its range is
// run in and whether its rows are pipelined.
struct RowCase {
  const char *name;
  std::function<Tensor()> build;
  std::vector<int64_t> cuts = {};
  bool pipelined = false;
};

Tensor empty(Shape s) { return Tensor::empty(std::move(s)); }

} // namespace

TEST_CASE("Row kernels: vector and scalar lowerings agree on AVX-512 and AVX2 targets") {
  ScopedConfig scope(atOpt5());
  std::vector<RowCase> cases = {
      {"softmax 6x64", [] { return empty({6, 64}).softmax(); }},
      {"softmax 3x1000 (a scalar tail)", [] { return empty({3, 1000}).softmax(); }},
      {"log_softmax 5x40", [] { return empty({5, 40}).logSoftmax(); }},
      {"layernorm 4x96", [] { return empty({4, 96}).layernorm(); }},
      {"layernorm over two axes 2x3x32", [] { return empty({2, 3, 32}).layernorm({-2, -1}); }},
      {"sum of softmax * w (a reduce over the rows)", [] {
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
      CHECK(disagreeing(ref.bufs[0], got.bufs[0]) == 0);
    }
  }
}


TEST_CASE("Row kernels: layernorm's variance comes from the first pass's moments, as exact as three kernels") {
  // (1003: a scalar tail after the vector passes on AVX2 as on AVX-512 hosts)
  for (int64_t cols : {int64_t(4096), int64_t(1000), int64_t(1003), int64_t(48)}) {
    CAPTURE(cols);
    std::vector<float> x = testing::hardRows(cols);
    int64_t rows = static_cast<int64_t>(x.size()) / cols;
    std::vector<double> exact = testing::layernormExact(x, rows, cols, 1e-5);
    auto run = [&](int opt) {
      Config c = config();
      c.opt = opt;
      ScopedConfig scope(c);
      return Tensor::fromVector(x, {rows, cols}).layernorm().toVector<float>();
    };
    {
      // the kernel folds the variance's pass into the mean's: 2 passes over each row, not 3
      Config c = config();
      c.opt = 5;
      ScopedConfig scope(c);
      KernelOpRef ast = lastKernel(Tensor::fromVector(x, {rows, cols}).layernorm());
      Kernel k = buildKernel(ast, TargetSpec::host(), CompileOptions{});
      REQUIRE(k.rowKernel);
      REQUIRE(k.rowMoments.size() == 1);
      CHECK(k.rowMoments[0].reduce->op == Op::Sum);
      CHECK(k.rowMoments[0].center->op == Op::Expand);
    }
    std::vector<float> fused = run(5), kernels = run(2);
    REQUIRE(fused.size() == exact.size());
    for (int64_t r = 0; r < rows; ++r) {
      CAPTURE(r);
      // differences within the row, (x_j - x_0) * rstd: the variance's error without the mean's
      // rounding, an offset of every element that sums in different orders round differently
      // (row 1, 1e4 + U(-1, 1) over 1003 columns: 1.6e-3 for three kernels, 8e-5 for the same
      // kernels with LAZYJIT_BOUNDS, whose sums run in another order; one ulp of its mean is 1.7e-3
      // of the output), as NVPTXEmulatorTest's layernorm test does
      double errFused = 0, errKernels = 0;
      size_t r0 = static_cast<size_t>(r * cols);
      for (int64_t c = 0; c < cols; ++c) {
        size_t i = r0 + static_cast<size_t>(c);
        double want = exact[i] - exact[r0];
        errFused = std::max(errFused, std::fabs((fused[i] - fused[r0]) - want));
        errKernels = std::max(errKernels, std::fabs((kernels[i] - kernels[r0]) - want));
      }
      // no worse than the reference's three kernels (two-pass variance) on the same rows
      CHECK(errFused <= std::max(2 * errKernels, 1e-5));
      // a row without variance: only the mean's rounding (1/cols inexact) shows, as in three kernels
      if (r == 3) CHECK(errFused <= errKernels);
    }
  }
}

TEST_CASE("Row kernels: var and std read each row once, as exact as two kernels") {
  for (int64_t cols : {int64_t(4096), int64_t(1003)}) {
    CAPTURE(cols);
    std::vector<float> x = testing::hardRows(cols);
    int64_t rows = static_cast<int64_t>(x.size()) / cols;
    std::vector<double> var = testing::varianceExact(x, rows, cols);
    for (bool isStd : {false, true}) {
      CAPTURE(isStd);
      auto build = [&] {
        Tensor t = Tensor::fromVector(x, {rows, cols});
        return isStd ? t.std(std::vector<int64_t>{-1}) : t.var(std::vector<int64_t>{-1});
      };
      auto run = [&](int opt) {
        Config c = config();
        c.opt = opt;
        ScopedConfig scope(c);
        return build().toVector<float>();
      };
      {
        Config c = config();
        c.opt = 5;
        ScopedConfig scope(c);
        KernelOpRef ast = lastKernel(build());
        Kernel k = buildKernel(ast, TargetSpec::host(), CompileOptions{});
        REQUIRE(k.rowKernel);
        REQUIRE(k.rowMoments.size() == 1);
        CHECK(k.rowMoments[0].reduce == k.reduceop); // the kernel's own reduce: no final pass
      }
      std::vector<float> fused = run(5), kernels = run(2);
      REQUIRE(fused.size() == var.size());
      for (size_t r = 0; r < var.size(); ++r) {
        CAPTURE(r);
        double want = isStd ? std::sqrt(var[r]) : var[r];
        double errFused = std::fabs(fused[r] - want), errKernels = std::fabs(kernels[r] - want);
        // the squared deviations are taken from the row's float32 mean, whatever computes them: a
        // mean off by d adds n d^2 / (n - 1) to the variance, and sums in another order (the
        // reference kernels with LAZYJIT_BOUNDS) round it differently. Allowed: 2 ulps of the mean
        // (row 1, 1e4 + U(-1, 1): 3.8e-6 of a variance of 0.33; the rows near 0: nothing)
        float m = static_cast<float>(testing::rowMeanExact(x, static_cast<int64_t>(r), cols));
        double d = 2.0 * (std::nextafter(std::fabs(m), INFINITY) - std::fabs(m));
        double fromMean = d * d * static_cast<double>(cols) / static_cast<double>(cols - 1);
        if (isStd) fromMean = want > 0 ? fromMean / (2 * want) : std::sqrt(fromMean);
        CHECK(errFused <= std::max({2 * errKernels, 1e-6 * std::max(1.0, want), fromMean}));
      }
    }
  }
}

TEST_CASE("Row kernels: a variance folded into the mean's pass over two row axes") {
  // layernorm over two axes: vector passes over the last, a loop over the first
  // (test/lit/CodeGen/row-moments-scalar.ast: the moments kept by a scalar pass)
  Config c = config();
  c.opt = 5;
  ScopedConfig scope(c);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> x(3 * 5 * 64);
  for (float &v : x) v = u(rng);
  Tensor y = Tensor::fromVector(x, {3, 5, 64}).layernorm({-2, -1});
  REQUIRE(buildKernel(lastKernel(y), TargetSpec::host(), CompileOptions{}).rowMoments.size() == 1);
  std::vector<float> got = y.toVector<float>();
  std::vector<double> exact = testing::layernormExact(x, 3, 5 * 64, 1e-5);
  for (size_t i = 0; i < x.size(); ++i) CHECK(std::fabs(got[i] - exact[i]) <= 2e-5 * std::max(1.0, std::fabs(exact[i])));
}

TEST_CASE("Row kernels: two variances from one pass's moments, and a sum of squared deviations over all rows") {
  // layernorm(x) + layernorm(2x) in one kernel: two folded reduces share the first pass (their
  // moments at different offsets of the carried values, one count); and the squared deviations
  // from each row's mean summed over every row: the kernel's own reduce, folded, accumulated
  // across the rows by the loop over the reduced outer axis
  Config c = config();
  c.opt = 5;
  ScopedConfig scope(c);
  int64_t cols = 1003;
  std::vector<float> x = testing::hardRows(cols), x2(x.size());
  for (size_t i = 0; i < x.size(); ++i) x2[i] = 2 * x[i];
  int64_t rows = static_cast<int64_t>(x.size()) / cols;
  Tensor t = Tensor::fromVector(x, {rows, cols});
  Tensor y = t.layernorm() + (t * 2).layernorm();
  Tensor d = t - t.mean(std::vector<int64_t>{-1}, true);
  Tensor s = (d * d).sum();
  {
    Kernel ky = buildKernel(testing::lastKernel(y), TargetSpec::host(), CompileOptions{});
    REQUIRE(ky.rowMoments.size() == 2);
    Kernel ks = buildKernel(testing::lastKernel(s), TargetSpec::host(), CompileOptions{});
    REQUIRE(ks.rowMoments.size() == 1);
    CHECK(ks.rowMoments[0].reduce == ks.reduceop);
    CHECK(ks.firstReduce() < ks.rowStart); // (the rows are reduced too)
  }
  std::vector<double> a = testing::layernormExact(x, rows, cols, 1e-5), b = testing::layernormExact(x2, rows, cols, 1e-5);
  std::vector<float> got = y.toVector<float>();
  for (int64_t r = 0; r < rows; ++r) {
    CAPTURE(r);
    // differences within the row: the variances' error, without the means' rounding
    size_t r0 = static_cast<size_t>(r * cols);
    double err = 0;
    for (int64_t j = 0; j < cols; ++j) {
      size_t i = r0 + static_cast<size_t>(j);
      err = std::max(err, std::fabs((got[i] - got[r0]) - (a[i] + b[i] - a[r0] - b[r0])));
    }
    CHECK(err <= 1e-4);
  }
  std::vector<double> var = testing::varianceExact(x, rows, cols);
  double want = 0;
  for (double v : var) want += v * static_cast<double>(cols - 1);
  CHECK(std::fabs(s.item<float>() - want) <= 1e-6 * want);
}

TEST_CASE("Row kernels: pipelined rows write every row once, from its own values, in any split across threads") {
  // Outputs of 16 MiB or more whose rows are whole cache lines are written with streaming stores
  // (16 floats per store on AVX-512, 8 on AVX2: two stores a line), and then rows are pipelined:
  // each row's output pass runs inside the next row's last pass, and
  // the thread's last row is written after its loop. The launcher gives each thread a chunk of the
  // outer axis; a chunk's first row has no pending row, a chunk of one row no next row. Each case
  // runs over the whole range and in the chunks `cuts` makes, against the scalar passes of NOOPT.
  TargetSpec host = TargetSpec::host();
  ScopedConfig scope(atOpt5());
  std::vector<RowCase> cases = {
      {"softmax 4096x1024", [] { return empty({4096, 1024}).softmax(); }, {1, 2, 5, 2047, 4095}, true},
      {"log_softmax 4099x1024 (three passes, an odd count of rows)", [] { return empty({4099, 1024}).logSoftmax(); },
       {3, 2050}, true},
      {"layernorm 4096x1024 (one pass with moments, then the output)", [] { return empty({4096, 1024}).layernorm(); },
       {1, 4000}, true},
      {"softmax over the last axis of 2x2048x1024 (two outer axes)", [] { return empty({2, 2048, 1024}).softmax(); },
       {1}, true},
      {"softmax 256x16384 (two copies of a row's scratch: half the stack budget)",
       [] { return empty({256, 16384}).softmax(); }, {100}, true},
      {"softmax 256x16400 (two copies would be more: not pipelined)", [] { return empty({256, 16400}).softmax(); },
       {100}, false},
  };
  KernelRunner runner;
  CompileOptions noopt;
  noopt.noopt = true;
  for (const auto &cs : cases) {
    CAPTURE(cs.name);
    KernelOpRef ast = lastKernel(cs.build());
    Kernel k = buildKernel(ast, host, CompileOptions{});
    REQUIRE(k.rowKernel);
    CHECK(k.streamingStores);
    CHECK(k.rowPipelined == cs.pipelined);
    KernelRun ref = runner.run(ast, noopt, 7);
    for (bool split : {false, true}) {
      CAPTURE(split);
      runner.cuts = split ? cs.cuts : std::vector<int64_t>{};
      KernelRun got = runner.run(ast, CompileOptions{}, 7);
      runner.cuts.clear();
      CHECK(got.guardsIntact);
      REQUIRE(got.bufs[0].size() == ref.bufs[0].size());
      CHECK(disagreeing(ref.bufs[0], got.bufs[0]) == 0);
    }
  }
  // rows of 1032 floats are whole 8-lane vectors but end in half a cache line: not streamed
  Kernel half = buildKernel(lastKernel(empty({4096, 1032}).softmax()), host, CompileOptions{});
  REQUIRE(half.rowKernel);
  CHECK_FALSE(half.streamingStores);
  CHECK_FALSE(half.rowPipelined);
}

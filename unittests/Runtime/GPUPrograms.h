// Tensor programs at GPU scale, checked against the reference interpreter: kernels that take the
// GPU paths the small random programs rarely reach (grouped and row-wise reductions, matvec,
// register-tiled matmul, padding, grids with merged or oversized axes, every dtype, math special
// values). CUDADeviceTest runs them on a GPU; the NVPTX emulator test runs them on the host.
#pragma once

#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace lazyjit::gpuprograms {

/// Deterministic values in [-2, 2) with a few exact zeros and ones.
inline std::vector<double> values(int64_t n, uint64_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  uint64_t s = seed;
  for (auto &x : v) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<double>(static_cast<int64_t>(s >> 40) % 512 - 256) / 128.0;
  }
  return v;
}

inline Tensor input(const Shape &shape, const std::string &dev, DType dt = dtypes::float32, uint64_t seed = 1) {
  return Tensor::fromValues(values(prodInt(shape), seed), shape, {dt, dev});
}

struct Case {
  std::string name;
  std::function<Tensor(const std::string &)> build;
  double tol = 2e-3;
};

/// Builds `c` on `device` and in the interpreter from the same inputs and compares the values.
inline void checkAgainstInterpreter(const std::string &device, const Case &c) {
  INFO(c.name, " on ", device);
  std::vector<double> got = c.build(device).toVector<double>(), want = c.build("INTERP").toVector<double>();
  REQUIRE(got.size() == want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 5; ++i) {
    bool same = (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i] ||
                std::fabs(got[i] - want[i]) <= c.tol * std::max(1.0, std::fabs(want[i]));
    if (!same) {
      ++bad;
      FAIL_CHECK("element ", i, ": ", device, "=", got[i], " interpreter=", want[i]);
    }
  }
}

inline std::vector<int64_t> ax(int64_t a) { return {a}; }

inline std::vector<Case> elementwiseCases() {
  std::vector<Case> cs = {
      {"add 256x256", [](const std::string &d) { return input({256, 256}, d) + input({256, 256}, d, dtypes::float32, 2); }},
      {"broadcast 333x1 * 1x77", [](const std::string &d) { return input({333, 1}, d) * input({1, 77}, d, dtypes::float32, 3); }},
      {"pad 300x500", [](const std::string &d) { return input({300, 500}, d).pad({SIntPair(1, 1), SIntPair(2, 0)}, 0.5) * 2.0; }},
      {"stack (masked upcast)", [](const std::string &d) { return Tensor::stack({input({40, 50}, d), input({40, 50}, d, dtypes::float32, 9)}, 1) + 1.0; }},
      {"transpose 3x70000 (grid y > 65535)", [](const std::string &d) { return input({3, 70000}, d).permute({1, 0}).contiguous(); }},
      {"4-d permute (merged grid dims)", [](const std::string &d) { return input({2, 3, 5, 7}, d).permute({3, 1, 0, 2}).contiguous(); }},
      {"6-d permute", [](const std::string &d) { return input({2, 3, 4, 5, 6, 7}, d).permute({5, 3, 1, 4, 2, 0}).contiguous(); }},
      {"symbolic 4-d permute (a symbolic axis in a merged grid dim)",
       [](const std::string &d) {
         SInt n = variable("n", 1, 64)->bind(10);
         Tensor a = input({64, 3, 5, 7}, d, dtypes::int32).shrink({SIntPair(0, n), std::nullopt, std::nullopt, std::nullopt});
         return a.permute({3, 1, 0, 2}).contiguous().mul(3).sum(std::vector<int64_t>{2});
       },
       0},
      {"flip + strided slice", [](const std::string &d) { return input({64, 130}, d).flip({1}).getitem({Index::all(), Index::range(std::nullopt, std::nullopt, 3)}) * 3.0; }},
  };
  for (DType dt : {dtypes::float16, dtypes::bfloat16, dtypes::float64, dtypes::int8, dtypes::uint16, dtypes::int32,
                   dtypes::int64, dtypes::uint64, dtypes::boolean})
    cs.push_back({"add " + std::string(dt.name()) + " 97x65",
                  [dt](const std::string &d) { return (input({97, 65}, d, dt) + input({97, 65}, d, dt, 5)).cast(dtypes::float64); },
                  2e-2});
  return cs;
}

inline std::vector<Case> reductionCases() {
  return {
      {"sum(1) 16x1024 (GROUPTOP 256)", [](const std::string &d) { return input({16, 1024}, d).sum(ax(1)); }},
      {"sum(1) 100x640 (GROUPTOP 16)", [](const std::string &d) { return input({100, 640}, d).sum(ax(1)); }},
      {"max(1) 4096x256 (a block per row)", [](const std::string &d) { return input({4096, 256}, d).max(ax(1)); }},
      {"softmax 512x768", [](const std::string &d) { return input({512, 768}, d).softmax(); }},
      {"softmax 3000x512", [](const std::string &d) { return input({3000, 512}, d).softmax(); }},
      {"layernorm 256x768", [](const std::string &d) { return input({256, 768}, d).layernorm(); }},
      {"sum(0) 1000x33 (column)", [](const std::string &d) { return input({1000, 33}, d).sum(ax(0)); }},
      {"sum 2^18 (reduce split)", [](const std::string &d) { return input({1 << 18}, d).sum(); }, 1e-2},
      {"sum 1024 (one block)", [](const std::string &d) { return input({1024}, d).sum(); }},
      {"matvec 1x256 @ 256x256", [](const std::string &d) { return input({1, 256}, d).matmul(input({256, 256}, d, dtypes::float32, 4)); }},
      {"matmul 64x64", [](const std::string &d) { return input({64, 64}, d).matmul(input({64, 64}, d, dtypes::float32, 6)); }},
      {"matmul 33x65 @ 65x17", [](const std::string &d) { return input({33, 65}, d).matmul(input({65, 17}, d, dtypes::float32, 8)); }},
      {"matmul float64 64x48 @ 48x40", [](const std::string &d) { return input({64, 48}, d, dtypes::float64).matmul(input({48, 40}, d, dtypes::float64, 7)); }, 1e-9},
      {"int32 sum(1) 300x300", [](const std::string &d) { return input({300, 300}, d, dtypes::int32).sum(ax(1)); }, 0},
      {"bool max(1) 64x512", [](const std::string &d) { return (input({64, 512}, d) > 0).max(ax(1)); }, 0},
      {"half sum(1) 32x2048", [](const std::string &d) { return input({32, 2048}, d, dtypes::float16).sum(ax(1)); }, 3e-2},
      {"conv2d", [](const std::string &d) { return input({2, 3, 17, 17}, d).conv2d(input({8, 3, 3, 3}, d, dtypes::float32, 11)); }},
  };
}

/// Whether one of the kernels of `t`'s schedule on its device is a row kernel (an EXPAND inside a
/// kernel); testing::kernelCount counts them.
inline bool hasRowKernel(const Tensor &t) {
  for (const auto &si : schedule(t.lazydata()))
    if (si.isKernel())
      for (const KernelOp *x : si.ast->uniqueOps())
        if (x->op == Op::Expand) return true;
  return false;
}

/// Programs that OPT=5 fuses into row kernels (on the GPU: a block per row): rows shorter than a
/// block and not a multiple of it, rows a block steps through several times, rows of several axes,
/// strided rows, int, half and double rows.
inline std::vector<Case> rowKernelCases() {
  return {
      {"softmax 8x37 (a block of 64 threads, 27 idle)", [](const std::string &d) { return input({8, 37}, d).softmax(); }},
      {"layernorm 4x1024 (4 steps per thread)", [](const std::string &d) { return input({4, 1024}, d).layernorm(); }},
      {"log_softmax 300x768", [](const std::string &d) { return input({300, 768}, d).logSoftmax(); }},
      {"layernorm over two axes 6x5x7", [](const std::string &d) { return input({6, 5, 7}, d).layernorm({1, 2}); }},
      {"softmax of a transposed input (strided rows) 24x37", [](const std::string &d) { return input({37, 24}, d).permute({1, 0}).softmax(); }},
      {"int32 x - max(x) 40x300", [](const std::string &d) {
         Tensor x = input({40, 300}, d, dtypes::int32);
         return x - x.max(ax(1), true);
       }, 0},
      {"half softmax 16x200", [](const std::string &d) { return input({16, 200}, d, dtypes::float16).softmax(); }, 3e-2},
      {"float64 layernorm 3x513", [](const std::string &d) { return input({3, 513}, d, dtypes::float64).layernorm(); }, 1e-9},
  };
}

/// Losses that sum row values over the batch: where the device allows it (the CPU), one kernel
/// computes the rows and the sum (on the GPU that would be a block per output element); on CUDA
/// they keep the reference's kernels.
inline std::vector<Case> rowReduceCases() {
  return {
      {"cross-entropy: sum(log_softmax(x) * y) over 16x10", [](const std::string &d) {
         return (input({16, 10}, d).logSoftmax() * input({16, 10}, d, dtypes::float32, 4)).sum();
       }},
      {"log-sum-exp over 3x50x20, summed over the batch", [](const std::string &d) {
         Tensor x = input({3, 50, 20}, d);
         return (x - x.max(ax(2), true)).exp().sum(ax(2), true).log().sum(ax(1));
       }},
      {"float64 mean of layernorm over 5x300", [](const std::string &d) {
         return input({5, 300}, d, dtypes::float64).layernorm().abs().mean();
       }, 1e-9},
  };
}

/// The row programs on `device` (at the caller's OPT=5): each forms a row kernel there, not the
/// reference's kernels, and gives the interpreter's values; so do the reduce-of-rows programs,
/// however the device schedules them.
inline void checkRowCases(const std::string &device) {
  for (const auto &rc : rowKernelCases()) {
    CAPTURE(rc.name);
    CHECK(hasRowKernel(rc.build(device)));
    checkAgainstInterpreter(device, rc);
  }
  for (const auto &rc : rowReduceCases()) checkAgainstInterpreter(device, rc);
}

inline std::vector<Case> mathCases() {
  return {
      {"sin float32", [](const std::string &d) { return input({4096}, d).mul(40).sin(); }},
      {"sin float64", [](const std::string &d) { return input({4096}, d, dtypes::float64).mul(40).sin(); }, 1e-9},
      {"exp float64", [](const std::string &d) { return input({4096}, d, dtypes::float64).mul(20).exp(); }, 1e-9},
      {"log float64", [](const std::string &d) { return input({4096}, d, dtypes::float64).abs().log(); }, 1e-9},
      {"log float32", [](const std::string &d) { return input({4096}, d).abs().add(1e-3).log(); }},
      {"exp float32", [](const std::string &d) { return input({4096}, d).mul(10).exp(); }},
      {"sqrt, reciprocal", [](const std::string &d) { return input({4096}, d).abs().sqrt() + input({4096}, d, dtypes::float32, 3).reciprocal(); }},
      {"gelu float16", [](const std::string &d) { return input({4096}, d, dtypes::float16).gelu(); }, 2e-2},
  };
}

/// Checks the IEEE special values of log2, sqrt, exp2 and sin on `device` for `dt`.
inline void checkSpecialValues(const std::string &device, DType dt) {
  CAPTURE(dt.name());
  const double inf = std::numeric_limits<double>::infinity();
  auto x = [&] { return Tensor::fromValues({0.0, -0.0, -1.0, inf, -inf, NAN, 1.0, 8.0}, {8}, {dt, device}); };
  auto lg = x().log2().toVector<double>(), sq = x().sqrt().toVector<double>(), ex = x().exp2().toVector<double>(),
       sn = x().sin().toVector<double>();
  CHECK(lg[0] == -inf);
  CHECK(lg[1] == -inf);
  CHECK(std::isnan(lg[2]));
  CHECK(lg[3] == inf);
  CHECK(std::isnan(lg[4]));
  CHECK(std::isnan(lg[5]));
  CHECK(lg[6] == 0);
  CHECK(lg[7] == 3);
  CHECK(std::isnan(sq[2]));
  CHECK(sq[3] == inf);
  CHECK(sq[7] == doctest::Approx(std::sqrt(8.0)).epsilon(1e-3));
  CHECK(ex[4] == 0);
  CHECK(ex[3] == inf);
  CHECK(ex[0] == 1);
  CHECK(std::isnan(ex[5]));
  CHECK(std::isnan(sn[3]));
  CHECK(sn[0] == 0);
}

} // namespace lazyjit::gpuprograms

// float16 and bfloat16 kernels in vectors on the CPU: their buffers are read as vectors of their
// own type and widened to float32 lanes, the registers the scalar path computes in, and rounded as
// they are stored (LowerValues.h). Row kernels (OPT=5) take the vector passes too. Checked against
// the same kernels lowered in scalars (NOOPT), to within one unit in the last place of the type
// (sums in another order may round to a neighbour), and against closed forms computed in double
// from the same inputs; the matmuls and convolutions are in PackedPanelTest.cpp.
#include "KernelTestUtil.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>

using namespace lazyjit;
using lazyjit::testing::AtOpt;

namespace {

struct RowCase {
  const char *name;
  std::function<Tensor(const Tensor &)> op;
  // the exact result for one row of doubles
  std::function<std::vector<double>(const std::vector<double> &)> exact;
  // the size below which an output's error is measured against this instead of itself: the
  // rounding of a row value (the mean) moves every output by an ulp of the row's scale
  double scale;
};

std::vector<double> softmaxRow(const std::vector<double> &x) {
  double m = *std::max_element(x.begin(), x.end()), s = 0;
  for (double v : x) s += std::exp(v - m);
  std::vector<double> y;
  for (double v : x) y.push_back(std::exp(v - m) / s);
  return y;
}

std::vector<double> logSoftmaxRow(const std::vector<double> &x) {
  double m = *std::max_element(x.begin(), x.end()), s = 0;
  for (double v : x) s += std::exp(v - m);
  std::vector<double> y;
  for (double v : x) y.push_back(v - m - std::log(s));
  return y;
}

std::vector<double> layernormRow(const std::vector<double> &x) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size());
  std::vector<double> y;
  for (double v : x) y.push_back((v - mean) / std::sqrt(var + 1e-5));
  return y;
}

// Deterministic inputs in [-3, 3), rounded to `dt` by the cast that makes them.
Tensor halfInput(int64_t rows, int64_t cols, DType dt, uint64_t seed) {
  std::vector<double> v;
  uint64_t s = seed;
  for (int64_t i = 0; i < rows * cols; ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v.push_back(static_cast<double>(static_cast<int64_t>(s >> 40) % 2000) / 333.0 - 3.0);
  }
  Tensor t = Tensor::fromValues(v, {rows, cols}).cast(dt);
  t.realize();
  return t;
}

// One unit in the last place of `dt` at `x` (10 bits of mantissa for float16, 7 for bfloat16;
// float16's subnormals below 2^-14).
double ulp(double x, DType dt) {
  int bits = dt == dtypes::float16 ? 10 : 7;
  int e = std::max(std::ilogb(std::fabs(x) > 0 ? std::fabs(x) : 1e-30), dt == dtypes::float16 ? -14 : -126);
  return std::ldexp(1.0, e - bits);
}

} // namespace

TEST_CASE("Half vectors: row kernels in float16 and bfloat16 take the vector passes and round once") {
  std::vector<RowCase> cases = {
      {"softmax", [](const Tensor &x) { return x.softmax(); }, softmaxRow, 0.0},
      {"log_softmax", [](const Tensor &x) { return x.logSoftmax(); }, logSoftmaxRow, 1.0},
      {"layernorm", [](const Tensor &x) { return x.layernorm(); }, layernormRow, 1.0},
  };
  for (DType dt : {dtypes::float16, dtypes::bfloat16})
    for (const auto &c : cases)
      // rows of whole vectors, and rows that end in a scalar tail
      for (int64_t cols : {int64_t(256), int64_t(100)}) {
        std::string name = fmt::format("{} {} rows of {}", dt.name(), c.name, cols);
        CAPTURE(name);
        const int64_t rows = 6;
        Tensor x = halfInput(rows, cols, dt, 11 + static_cast<uint64_t>(cols));
        std::vector<double> in = x.cast(dtypes::float64).toVector<double>(), scalar;
        {
          AtOpt opt(5, true); // the same row kernel, lowered in scalars
          scalar = c.op(x).cast(dtypes::float64).toVector<double>();
        }
        AtOpt opt(5);
        Tensor y = c.op(x);
        KernelSignature sig = describeKernel(testing::lastKernel(y), TargetSpec::host(), CompileOptions::from(config()));
        CAPTURE(sig.kernelSummary);
        CHECK(sig.kernelSummary.find("row stores") != std::string::npos);
        REQUIRE(y.dtype() == dt);
        std::vector<double> got = y.cast(dtypes::float64).toVector<double>();
        size_t bad = 0, far = 0, first = 0;
        for (int64_t r = 0; r < rows; ++r) {
          std::vector<double> row(in.begin() + r * cols, in.begin() + (r + 1) * cols);
          std::vector<double> want = c.exact(row);
          for (int64_t i = 0; i < cols; ++i) {
            size_t at = static_cast<size_t>(r * cols + i);
            double w = want[static_cast<size_t>(i)];
            // the vector passes sum in another order than the scalar ones: the rounded results
            // may be neighbours, no further apart
            if (std::fabs(got[at] - scalar[at]) > ulp(scalar[at], dt) && bad++ == 0) first = at;
            // and both are the exact value but for the roundings of the row values to the type
            // (the reduces' results are float16 / bfloat16 values, as at OPT=2)
            far += std::fabs(got[at] - w) > 4 * ulp(std::max(std::fabs(w), c.scale), dt);
          }
        }
        CHECK_MESSAGE(bad == 0, bad, " elements differ from the scalar lowering's by more than an ulp, the first at ",
                      first, ": ", got[first], " vs ", scalar[first]);
        CHECK_MESSAGE(far == 0, far, " elements more than 4 ulp from the exact value");
      }
}

TEST_CASE("Half vectors: a large float16 softmax streams its rows and pipelines them, as float32 does") {
  // (described, not run: 32 MiB of float16)
  AtOpt opt(5);
  Tensor x = Tensor::empty({4096, 4096}, {dtypes::float16});
  KernelSignature sig =
      describeKernel(testing::lastKernel(x.softmax()), TargetSpec::host(), CompileOptions::from(config()));
  CAPTURE(sig.kernelSummary);
  CHECK(sig.kernelSummary.find("stores streaming") != std::string::npos);
  CHECK(sig.kernelSummary.find("rows pipelined") != std::string::npos);
  // the lanes are float32 registers: as many as float32's
  Tensor xf = Tensor::empty({4096, 4096});
  KernelSignature f32 =
      describeKernel(testing::lastKernel(xf.softmax()), TargetSpec::host(), CompileOptions::from(config()));
  auto lanesOf = [](const std::string &s) {
    size_t at = s.find("row stores ");
    return at == std::string::npos ? std::string() : s.substr(at, s.find('\n', at) - at);
  };
  CHECK(!lanesOf(sig.kernelSummary).empty());
  CHECK(lanesOf(sig.kernelSummary) == lanesOf(f32.kernelSummary));
}

TEST_CASE("Half vectors: element-wise and reduce kernels in float16 and bfloat16 round as the scalar path does") {
  // a 256 x 256 transpose plus itself (an 8 x 8 tile transposed in registers) and a scaled column
  // sum (a vector along the output), each in a vector loop: NOOPT lowers the same kernels in scalars
  for (DType dt : {dtypes::float16, dtypes::bfloat16}) {
    CAPTURE(dt.name());
    Tensor x = halfInput(256, 256, dt, 3);
    std::vector<std::function<Tensor()>> progs = {
        [&] { return x.transpose(0, 1) + x * 1.37; },
        [&] { return (x * 0.71).sum(std::vector<int64_t>{0}) * 1.37; },
    };
    for (size_t p = 0; p < progs.size(); ++p) {
      CAPTURE(p);
      {
        AtOpt opt(2);
        std::string loops =
            emitKernelText(testing::lastKernel(progs[p]()), TargetSpec::host(), CompileOptions::from(config()), IRStage::Loops);
        CAPTURE(loops);
        CHECK(loops.find("vector: axis") != std::string::npos);
        CHECK(loops.find(fmt::format("store buffer 0: <", dt.name())) != std::string::npos);
      }
      std::vector<double> ref, got;
      {
        AtOpt opt(2, true);
        ref = progs[p]().cast(dtypes::float64).toVector<double>();
      }
      {
        AtOpt opt(2);
        got = progs[p]().cast(dtypes::float64).toVector<double>();
      }
      REQUIRE(got.size() == ref.size());
      size_t bad = 0;
      for (size_t i = 0; i < ref.size(); ++i)
        // sums in another order may round to the neighbouring value; nothing further
        bad += std::fabs(got[i] - ref[i]) > ulp(ref[i], dt);
      CHECK(bad == 0);
    }
  }
}

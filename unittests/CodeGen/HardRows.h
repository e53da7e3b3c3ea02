// Rows that break one-pass variance formulas, and layernorm's and the variance's closed forms in
// double precision: the tests of Kernel::rowMoments on the CPU (RowKernelTest.cpp) and through the
// NVPTX emulator (NVPTXEmulatorTest.cpp).
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace lazyjit::testing {

// the mean of row `r` in double precision
inline double rowMeanExact(const std::vector<float> &x, int64_t r, int64_t cols) {
  double mean = 0;
  for (int64_t c = 0; c < cols; ++c) mean += x[static_cast<size_t>(r * cols + c)];
  return mean / static_cast<double>(cols);
}

// layernorm of each row in double precision: the closed form the kernels approximate
inline std::vector<double> layernormExact(const std::vector<float> &x, int64_t rows, int64_t cols, double eps) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    double mean = rowMeanExact(x, r, cols), var = 0;
    for (int64_t c = 0; c < cols; ++c) {
      double d = x[static_cast<size_t>(r * cols + c)] - mean;
      var += d * d;
    }
    var /= static_cast<double>(cols);
    for (int64_t c = 0; c < cols; ++c)
      out[static_cast<size_t>(r * cols + c)] = (x[static_cast<size_t>(r * cols + c)] - mean) / std::sqrt(var + eps);
  }
  return out;
}

// rows a one-pass variance gets wrong when it sums squares or shifts by an unlucky element
inline std::vector<float> hardRows(int64_t cols) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x;
  for (int r = 0; r < 6; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      float v = u(rng);
      if (r == 1) v += 1e4f;                  // a large mean: sum(x^2) - n mean^2 cancels
      if (r == 2 && c == 0) v = 1e3f;         // an outlier first element (the shift of shifted sums)
      if (r == 3) v = 3.0f;                   // no variance
      if (r == 4) v *= 1e3f;                  // a wide spread
      if (r == 5 && c == cols - 1) v = -5e3f; // an outlier last element (in the scalar tail)
      x.push_back(v);
    }
  return x;
}


/// The variance of each row with Bessel's correction (Tensor::var's default), in double precision.
inline std::vector<double> varianceExact(const std::vector<float> &x, int64_t rows, int64_t cols) {
  std::vector<double> var(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double mean = rowMeanExact(x, r, cols), ss = 0;
    for (int64_t c = 0; c < cols; ++c) ss += std::pow(x[static_cast<size_t>(r * cols + c)] - mean, 2);
    var[static_cast<size_t>(r)] = ss / static_cast<double>(cols - 1);
  }
  return var;
}

} // namespace lazyjit::testing

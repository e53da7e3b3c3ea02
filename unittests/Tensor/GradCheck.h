// The gradient-check harness of GradCheckTest.cpp and GradCheckNNTest.cpp: for a case f with
// inputs x_1..x_k (float64, requires_grad true) the loss is L = (f(x_1..x_k) * W).sum() with fixed
// random weights W; backward() gives the analytic gradients, and each element of each input is
// checked against (L(x + h e) - L(x - h e)) / 2h, with the inputs rebuilt from host values for
// every evaluation. Inputs are chosen away from the points where a function is not
// differentiable (relu and abs at 0, ties of max, the edges of the domains of log, sqrt, acosh,
// atanh): a central difference across a kink matches neither side.
#pragma once

#include "lazyjit/NN/Layers.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Function.h"
#include "TensorTestUtil.h"

#include <numeric>
#include <stdexcept>

namespace lazyjit::testing {

const DType f64 = dtypes::float64;
const DType f32 = dtypes::float32;

struct GradInput {
  Ints shape;
  Vals values;
  DType dtype = dtypes::float64;
};

/// Builds the case's output from its inputs, creating any constant operands (index tensors,
/// conditions) on `dev`.
using GradFn = std::function<Tensor(const std::vector<Tensor> &, const std::string &)>;

struct GradCase {
  std::string name;
  std::vector<GradInput> inputs;
  GradFn fn;
  /// For a primitive: the Function that must have computed the output.
  std::string gradFn = "";
  /// Finite-difference step. 2^-10 for float32 inputs keeps x +- h exactly representable.
  double h = 1e-6;
  /// Check only this many elements per input by differences (spread over the input, the first
  /// and last included); 0 checks every element.
  size_t maxProbes = 0;
};

// ---- inputs ---------------------------------------------------------------------------------------

/// `n` values in [lo, hi) (float32-representable), each at least `margin` from every point in
/// `avoid` (kinks, domain edges, ...).
inline Vals vals(size_t n, uint64_t seed, double lo, double hi, const Vals &avoid = {}, double margin = 0.1) {
  auto nearAny = [&](double x) {
    return std::any_of(avoid.begin(), avoid.end(), [&](double a) { return std::fabs(x - a) < margin; });
  };
  Vals v = randVals(n, seed, lo, hi);
  for (auto &x : v) {
    for (int tries = 0; tries < 8 && nearAny(x); ++tries)
      x = static_cast<float>(x + 2.5 * margin <= hi ? x + 2.5 * margin : x - 2.5 * margin);
    if (nearAny(x)) throw std::logic_error("GradCheck inputs: no value far enough from the points to avoid");
  }
  return v;
}

inline GradInput in(const Ints &shape, uint64_t seed, double lo = -2, double hi = 2, const Vals &avoid = {},
             double margin = 0.1) {
  return {shape, vals(static_cast<size_t>(numelOf(shape)), seed, lo, hi, avoid, margin)};
}

inline GradInput given(const Ints &shape, Vals v, DType dt = dtypes::float64) { return {shape, std::move(v), dt}; }

/// An int32 tensor of `values` on `dev` (index tensors, labels).
inline Tensor ints(const Vals &values, const Ints &shape, const std::string &dev) {
  return Tensor::fromValues(values, toShape(shape), {dtypes::int32, dev, false});
}
inline Tensor bools(const Vals &values, const Ints &shape, const std::string &dev) {
  return Tensor::fromValues(values, toShape(shape), {dtypes::boolean, dev, false});
}
inline Tensor consts(const Vals &values, const Ints &shape, const std::string &dev) {
  return Tensor::fromValues(values, toShape(shape), {f64, dev, false});
}

using Axes = std::vector<int64_t>;
using Pads = std::vector<std::optional<SIntPair>>;
inline Pads pads(std::initializer_list<std::pair<int64_t, int64_t>> ps) {
  Pads out;
  for (auto [a, b] : ps) out.emplace_back(SIntPair(a, b));
  return out;
}

// ---- the check ------------------------------------------------------------------------------------

inline Tensor buildInput(const GradInput &gi, const Vals &values, const std::string &dev, bool requiresGrad) {
  return Tensor::fromValues(values, toShape(gi.shape), {gi.dtype, dev, requiresGrad});
}

/// The loss (out * W).sum() in float64, with fixed random weights W in [-1, 1).
inline Tensor lossOf(const Tensor &out, const std::string &dev) {
  Ints shape = out.intShape();
  Vals w = randVals(static_cast<size_t>(numelOf(shape)), 99991, -1, 1);
  return out.cast(f64).mul(consts(w, shape, dev)).sum();
}

/// L at host values `x`, with no graph recorded.
inline double evalLoss(const GradCase &c, const std::vector<Vals> &x, const std::string &dev) {
  Tensor::NoGradGuard ng;
  std::vector<Tensor> xs;
  for (size_t i = 0; i < c.inputs.size(); ++i) xs.push_back(buildInput(c.inputs[i], x[i], dev, false));
  return lossOf(c.fn(xs, dev), dev).item<double>();
}

inline std::vector<size_t> probes(size_t n, size_t maxProbes) {
  std::vector<size_t> out;
  if (maxProbes < 2 || n <= maxProbes) {
    for (size_t j = 0; j < n; ++j) out.push_back(j);
    return out;
  }
  for (size_t k = 0; k < maxProbes; ++k) out.push_back(k * (n - 1) / (maxProbes - 1));
  return out;
}

/// |analytic - numeric| <= atol + rtol * |numeric|. In float64 the numeric error is the
/// truncation h^2 f'''(x) / 6 (about 1e-13 for these inputs) plus the rounding of L over 2h
/// (1e-16 * |L| / 1e-6, up to 5e-8 for the long cumsums). The largest difference seen, 2e-7
/// relative, is pow's general path: it takes the sign of the base through float32 (the
/// reference's sign()), whose gradient is float32 rounding noise instead of 0. 1e-6 covers that
/// and is far below what a wrong formula gives.
constexpr Tol kGradTol{1e-6, 1e-6};
/// With a float32 input or output the analytic side is rounded to float32 (2^-24 relative) and
/// the differences are exact (x +- 2^-10 is representable and the cases are linear in the cast).
constexpr Tol kGradTolF32{1e-5, 1e-6};

/// The analytic gradients of a case and how many elements differ from the numeric ones.
struct GradReport {
  std::vector<Vals> analytic;
  std::vector<size_t> bad; ///< per input
  std::string detail;
};

inline GradReport compareGrads(const GradCase &c, const std::string &dev) {
  GradReport r;
  std::vector<Vals> x;
  for (const auto &gi : c.inputs) {
    REQUIRE(gi.values.size() == static_cast<size_t>(numelOf(gi.shape)));
    x.push_back(gi.values);
  }
  // analytic: backward() from the loss
  std::vector<Tensor> xs;
  for (size_t i = 0; i < c.inputs.size(); ++i) xs.push_back(buildInput(c.inputs[i], x[i], dev, true));
  Tensor out = c.fn(xs, dev);
  if (!c.gradFn.empty()) {
    REQUIRE(out.gradFn() != nullptr);
    CHECK(std::string(out.gradFn()->name()) == c.gradFn);
  }
  bool lowPrecision = out.dtype() != f64;
  Tensor loss = lossOf(out, dev);
  out = Tensor();
  loss.backward();
  for (size_t i = 0; i < xs.size(); ++i) {
    CAPTURE(i);
    std::optional<Tensor> g = xs[i].grad();
    REQUIRE_MESSAGE(g.has_value(), "input " << i << " got no gradient");
    CHECK(fmtInts(g->intShape()) == fmtInts(c.inputs[i].shape));
    CHECK(g->dtype().name() == c.inputs[i].dtype.name());
    lowPrecision = lowPrecision || c.inputs[i].dtype != f64;
    r.analytic.push_back(g->toVector<double>());
  }
  Tol tol = lowPrecision ? kGradTolF32 : kGradTol;
  // numeric: central differences, one element at a time
  std::ostringstream msg;
  msg.precision(12);
  for (size_t i = 0; i < x.size(); ++i) {
    size_t bad = 0;
    for (size_t j : probes(x[i].size(), c.maxProbes)) {
      double v = x[i][j];
      x[i][j] = v + c.h;
      double lp = evalLoss(c, x, dev);
      x[i][j] = v - c.h;
      double lm = evalLoss(c, x, dev);
      x[i][j] = v;
      double numeric = (lp - lm) / (2 * c.h);
      if (closeTo(r.analytic[i][j], numeric, tol)) continue;
      if (bad++ < 6)
        msg << "  input " << i << " [" << j << "] at " << v << ": analytic " << r.analytic[i][j]
            << ", numeric " << numeric << "\n";
    }
    r.bad.push_back(bad);
  }
  r.detail = msg.str();
  return r;
}

inline void checkGrad(const GradCase &c, const std::string &dev) {
  CAPTURE(c.name);
  CAPTURE(dev);
  GradReport r = compareGrads(c, dev);
  size_t bad = std::accumulate(r.bad.begin(), r.bad.end(), size_t{0});
  CHECK_MESSAGE(bad == 0, c.name << " on " << dev << ": " << bad
                                 << " gradient elements differ from finite differences:\n"
                                 << r.detail);
}

inline void runAll(const std::vector<GradCase> &cases) {
  for (const std::string &dev : devices())
    for (const auto &c : cases) checkGrad(c, dev);
}

// ---- the cases ------------------------------------------------------------------------------------

#define FN(...)                                                                                    \
  [](const std::vector<Tensor> &x, const std::string &dev) -> Tensor {                             \
    (void)x;                                                                                       \
    (void)dev;                                                                                     \
    __VA_ARGS__                                                                                    \
  }

/// x +- 2^-10 stays float32-representable for float32 values in [0.5, 1.9].
constexpr double kH32 = 0x1.0p-10;

} // namespace lazyjit::testing

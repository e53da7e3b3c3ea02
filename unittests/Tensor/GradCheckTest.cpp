// Gradient checks: every differentiable primitive (the mlops of lib/Tensor/MLOps.cpp) and every
// differentiable Tensor function, by central finite differences in float64 on both devices.
//
// For a case f with inputs x_1..x_k (float64, requires_grad true) the loss is
// L = (f(x_1..x_k) * W).sum() with fixed random weights W; backward() gives the analytic
// gradients, and each element of each input is checked against (L(x + h e) - L(x - h e)) / 2h,
// with the inputs rebuilt from host values for every evaluation. Inputs are chosen away from the
// points where a function is not differentiable (relu and abs at 0, ties of max, the edges of the
// domains of log, sqrt, acosh, atanh): a central difference across a kink matches neither side.
//
// Not gradient-checked, because they are piecewise constant (their gradient is 0 where it exists
// and finite differences only see their jumps): trunc, floor, ceil, sign, the comparisons
// (lt, gt, le, ge, eq, ne), argmax and argmin. Max with ties is checked against the reference's
// closed form (the gradient is split evenly between tied maxima), not by differences, because the
// function has a kink there.
#include "lazyjit/NN/Layers.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Function.h"
#include "TensorTestUtil.h"

#include <stdexcept>

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

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
Vals vals(size_t n, uint64_t seed, double lo, double hi, const Vals &avoid = {}, double margin = 0.1) {
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

GradInput in(const Ints &shape, uint64_t seed, double lo = -2, double hi = 2, const Vals &avoid = {},
             double margin = 0.1) {
  return {shape, vals(static_cast<size_t>(numelOf(shape)), seed, lo, hi, avoid, margin)};
}

GradInput given(const Ints &shape, Vals v, DType dt = dtypes::float64) { return {shape, std::move(v), dt}; }

/// An int32 tensor of `values` on `dev` (index tensors, labels).
Tensor ints(const Vals &values, const Ints &shape, const std::string &dev) {
  return Tensor::fromValues(values, toShape(shape), {dtypes::int32, dev, false});
}
Tensor bools(const Vals &values, const Ints &shape, const std::string &dev) {
  return Tensor::fromValues(values, toShape(shape), {dtypes::boolean, dev, false});
}
Tensor consts(const Vals &values, const Ints &shape, const std::string &dev) {
  return Tensor::fromValues(values, toShape(shape), {f64, dev, false});
}

using Axes = std::vector<int64_t>;
using Pads = std::vector<std::optional<SIntPair>>;
Pads pads(std::initializer_list<std::pair<int64_t, int64_t>> ps) {
  Pads out;
  for (auto [a, b] : ps) out.emplace_back(SIntPair(a, b));
  return out;
}

// ---- the check ------------------------------------------------------------------------------------

Tensor buildInput(const GradInput &gi, const Vals &values, const std::string &dev, bool requiresGrad) {
  return Tensor::fromValues(values, toShape(gi.shape), {gi.dtype, dev, requiresGrad});
}

/// The loss (out * W).sum() in float64, with fixed random weights W in [-1, 1).
Tensor lossOf(const Tensor &out, const std::string &dev) {
  Ints shape = out.intShape();
  Vals w = randVals(static_cast<size_t>(numelOf(shape)), 99991, -1, 1);
  return out.cast(f64).mul(consts(w, shape, dev)).sum();
}

/// L at host values `x`, with no graph recorded.
double evalLoss(const GradCase &c, const std::vector<Vals> &x, const std::string &dev) {
  Tensor::NoGradGuard ng;
  std::vector<Tensor> xs;
  for (size_t i = 0; i < c.inputs.size(); ++i) xs.push_back(buildInput(c.inputs[i], x[i], dev, false));
  return lossOf(c.fn(xs, dev), dev).item<double>();
}

std::vector<size_t> probes(size_t n, size_t maxProbes) {
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

GradReport compareGrads(const GradCase &c, const std::string &dev) {
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

void checkGrad(const GradCase &c, const std::string &dev) {
  CAPTURE(c.name);
  CAPTURE(dev);
  GradReport r = compareGrads(c, dev);
  size_t bad = std::accumulate(r.bad.begin(), r.bad.end(), size_t{0});
  CHECK_MESSAGE(bad == 0, c.name << " on " << dev << ": " << bad
                                 << " gradient elements differ from finite differences:\n"
                                 << r.detail);
}

void runAll(const std::vector<GradCase> &cases) {
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

/// Each primitive on its own, so the output's Function is the one checked.
std::vector<GradCase> primitiveCases() {
  return {
      {"Contiguous", {in({3, 4}, 1)}, FN(return x[0].permute({1, 0}).contiguous();), "Contiguous"},
      {"ContiguousBackward", {in({3, 4}, 2)}, FN(return x[0].contiguousBackward();), "ContiguousBackward"},
      {"Cast float64 -> float32", {in({3, 4}, 3, 0.5, 1.9)}, FN(return x[0].cast(f32);), "Cast", kH32},
      {"Cast float32 -> float64", {given({3, 4}, vals(12, 4, 0.5, 1.9), f32)}, FN(return x[0].cast(f64);),
       "Cast", kH32},
      {"Zero (x * 0)", {in({3, 4}, 5)}, FN(return x[0].mul(0);), "Zero"},
      {"Neg", {in({3, 4}, 6)}, FN(return x[0].neg();), "Neg"},
      {"Sin", {in({3, 4}, 7, -4, 4)}, FN(return x[0].sin();), "Sin"},
      {"Relu", {in({3, 4}, 8, -2, 2, {0})}, FN(return x[0].relu();), "Relu"},
      {"Log", {in({3, 4}, 9, 0.2, 4)}, FN(return x[0].log();), "Log"},
      {"Exp", {in({3, 4}, 10)}, FN(return x[0].exp();), "Exp"},
      {"Sqrt", {in({3, 4}, 11, 0.2, 4)}, FN(return x[0].sqrt();), "Sqrt"},
      {"Sigmoid", {in({3, 4}, 12, -4, 4)}, FN(return x[0].sigmoid();), "Sigmoid"},
      {"Add", {in({3, 4}, 13), in({3, 4}, 14)}, FN(return x[0].add(x[1]);), "Add"},
      {"Sub", {in({3, 4}, 15), in({3, 4}, 16)}, FN(return x[0].sub(x[1]);), "Sub"},
      {"Mul", {in({3, 4}, 17), in({3, 4}, 18)}, FN(return x[0].mul(x[1]);), "Mul"},
      {"Div", {in({3, 4}, 19), in({3, 4}, 20, -2, 2, {0}, 0.4)}, FN(return x[0].div(x[1]);), "Div"},
      {"Where (both branches)", {in({3, 4}, 21), in({3, 4}, 22)},
       FN(return bools({1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0}, {3, 4}, dev).where(x[0], x[1]);), "Where"},
      {"Sum (one axis, keepdim)", {in({3, 4}, 23)}, FN(return x[0].sum(Axes{1}, true);), "Sum"},
      {"Sum (all, keepdim)", {in({2, 3, 2}, 24)}, FN(return x[0].sum(std::nullopt, true);), "Sum"},
      {"Max (no ties, one axis)", {in({3, 4}, 25)}, FN(return x[0].max(Axes{1}, true);), "Max"},
      {"Max (no ties, two axes)", {in({2, 3, 2}, 26)}, FN(return x[0].max(Axes{0, 2}, true);), "Max"},
      {"Expand", {in({3, 1, 2}, 27)}, FN(return x[0].expand({3, 4, 2});), "Expand"},
      {"Reshape", {in({3, 4}, 28)}, FN(return x[0].reshape({2, 6});), "Reshape"},
      {"Permute", {in({2, 3, 4}, 29)}, FN(return x[0].permute({2, 0, 1});), "Permute"},
      {"Pad", {in({2, 3}, 30)}, FN(return x[0].pad(pads({{1, 2}, {0, 1}}));), "Pad"},
      {"Shrink", {in({4, 5}, 31)}, FN(return x[0].shrink(pads({{1, 3}, {0, 4}}));), "Shrink"},
      {"Flip", {in({3, 4}, 32)}, FN(return x[0].flip({0, 1});), "Flip"},
  };
}

std::vector<GradCase> unaryCases() {
  return {
      {"neg", {in({2, 5}, 101)}, FN(return x[0].neg();)},
      {"log", {in({2, 5}, 102, 0.2, 4)}, FN(return x[0].log();)},
      {"log2", {in({2, 5}, 103, 0.2, 4)}, FN(return x[0].log2();)},
      {"exp", {in({2, 5}, 104)}, FN(return x[0].exp();)},
      {"exp2", {in({2, 5}, 105)}, FN(return x[0].exp2();)},
      {"relu", {in({2, 5}, 106, -2, 2, {0})}, FN(return x[0].relu();)},
      {"sigmoid", {in({2, 5}, 107, -4, 4)}, FN(return x[0].sigmoid();)},
      {"sin", {in({2, 5}, 108, -4, 4)}, FN(return x[0].sin();)},
      {"cos", {in({2, 5}, 109, -4, 4)}, FN(return x[0].cos();)},
      {"tan", {in({2, 5}, 110, -1.2, 1.2)}, FN(return x[0].tan();)},
      {"sqrt", {in({2, 5}, 111, 0.2, 4)}, FN(return x[0].sqrt();)},
      {"rsqrt", {in({2, 5}, 112, 0.3, 4)}, FN(return x[0].rsqrt();)},
      {"square", {in({2, 5}, 113)}, FN(return x[0].square();)},
      {"clip", {in({2, 5}, 114, -2, 2, {-1, 0.5})}, FN(return x[0].clip(-1, 0.5);)},
      {"abs", {in({2, 5}, 115, -2, 2, {0})}, FN(return x[0].abs();)},
      {"reciprocal", {in({2, 5}, 116, -2, 2, {0}, 0.4)}, FN(return x[0].reciprocal();)},
      {"elu", {in({2, 5}, 117, -3, 2, {0})}, FN(return x[0].elu();)},
      {"elu (alpha 0.5)", {in({2, 5}, 118, -3, 2, {0})}, FN(return x[0].elu(0.5);)},
      {"celu", {in({2, 5}, 119, -3, 2, {0})}, FN(return x[0].celu(1.5);)},
      {"swish", {in({2, 5}, 120, -4, 4)}, FN(return x[0].swish();)},
      {"silu", {in({2, 5}, 121, -4, 4)}, FN(return x[0].silu();)},
      {"relu6", {in({2, 5}, 122, -2, 8, {0, 6})}, FN(return x[0].relu6();)},
      {"hardswish", {in({2, 5}, 123, -4, 4, {-3, 3})}, FN(return x[0].hardswish();)},
      {"tanh", {in({2, 5}, 124, -3, 3)}, FN(return x[0].tanh();)},
      {"sinh", {in({2, 5}, 125)}, FN(return x[0].sinh();)},
      {"cosh", {in({2, 5}, 126)}, FN(return x[0].cosh();)},
      {"atanh", {in({2, 5}, 127, -0.9, 0.9)}, FN(return x[0].atanh();)},
      {"asinh", {in({2, 5}, 128, -3, 3)}, FN(return x[0].asinh();)},
      {"acosh", {in({2, 5}, 129, 1.2, 4)}, FN(return x[0].acosh();)},
      {"hardtanh", {in({2, 5}, 130, -2, 2, {-1, 1})}, FN(return x[0].hardtanh();)},
      {"hardtanh (-0.5, 1.5)", {in({2, 5}, 131, -2, 2, {-0.5, 1.5})}, FN(return x[0].hardtanh(-0.5, 1.5);)},
      {"gelu", {in({2, 5}, 132, -3, 3)}, FN(return x[0].gelu();)},
      {"quickGelu", {in({2, 5}, 133, -3, 3)}, FN(return x[0].quickGelu();)},
      {"leakyrelu", {in({2, 5}, 134, -2, 2, {0})}, FN(return x[0].leakyrelu(0.2);)},
      {"mish", {in({2, 5}, 135, -3, 3)}, FN(return x[0].mish();)},
      {"softplus", {in({2, 5}, 136, -3, 3)}, FN(return x[0].softplus();)},
      {"softplus (beta 2)", {in({2, 5}, 137, -3, 3)}, FN(return x[0].softplus(2);)},
      {"softsign", {in({2, 5}, 138, -3, 3, {0})}, FN(return x[0].softsign();)},
      {"cast float32 -> float64 -> float32", {given({2, 5}, vals(10, 139, 0.5, 1.9), f32)},
       FN(return x[0].cast(f64).cast(f32);), "Cast", kH32},
  };
}

std::vector<GradCase> binaryCases() {
  return {
      {"add: tensor + tensor", {in({2, 3}, 201), in({2, 3}, 202)}, FN(return x[0].add(x[1]);)},
      {"add: broadcast (2, 3) + (3)", {in({2, 3}, 203), in({3}, 204)}, FN(return x[0] + x[1];)},
      {"add: broadcast (2, 1) + (1, 3)", {in({2, 1}, 205), in({1, 3}, 206)}, FN(return x[0] + x[1];)},
      {"add: tensor + 0-d tensor", {in({2, 3}, 207), in({}, 208)}, FN(return x[0] + x[1];)},
      {"add: tensor + scalar", {in({2, 3}, 209)}, FN(return x[0] + 1.5;)},
      {"add: scalar + tensor", {in({2, 3}, 210)}, FN(return 1.5 + x[0];)},
      {"add: reverse tensor operand", {in({2, 3}, 211), in({3}, 212)}, FN(return x[0].add(x[1], true);)},
      {"sub: tensor - tensor", {in({2, 3}, 213), in({2, 3}, 214)}, FN(return x[0] - x[1];)},
      {"sub: broadcast (3) - (2, 3)", {in({3}, 215), in({2, 3}, 216)}, FN(return x[0] - x[1];)},
      {"sub: tensor - scalar", {in({2, 3}, 217)}, FN(return x[0] - 2.5;)},
      {"sub: scalar - tensor", {in({2, 3}, 218)}, FN(return 2.5 - x[0];)},
      {"sub: reverse tensor operand", {in({2, 3}, 219), in({2, 1}, 220)}, FN(return x[0].sub(x[1], true);)},
      {"mul: tensor * tensor", {in({2, 3}, 221), in({2, 3}, 222)}, FN(return x[0] * x[1];)},
      {"mul: broadcast (2, 1, 3) * (4, 1)", {in({2, 1, 3}, 223), in({4, 1}, 224)}, FN(return x[0] * x[1];)},
      {"mul: tensor * scalar", {in({2, 3}, 225)}, FN(return x[0] * 2.5;)},
      {"mul: scalar * tensor", {in({2, 3}, 226)}, FN(return -0.75 * x[0];)},
      {"mul: tensor * -1", {in({2, 3}, 227)}, FN(return x[0] * -1;)},
      {"mul: tensor * 1 (plus a sin, so it has a graph)", {in({2, 3}, 228)}, FN(return (x[0] * 1).sin();)},
      {"mul: tensor * itself", {in({2, 3}, 229)}, FN(return x[0] * x[0];)},
      {"div: tensor / tensor", {in({2, 3}, 230), in({2, 3}, 231, -2, 2, {0}, 0.4)}, FN(return x[0] / x[1];)},
      {"div: broadcast (2, 3) / (3)", {in({2, 3}, 232), in({3}, 233, -2, 2, {0}, 0.4)}, FN(return x[0] / x[1];)},
      {"div: tensor / scalar", {in({2, 3}, 234)}, FN(return x[0] / 2.5;)},
      {"div: scalar / tensor", {in({2, 3}, 235, -2, 2, {0}, 0.4)}, FN(return 2.5 / x[0];)},
      {"div: reverse tensor operand", {in({2, 3}, 236, -2, 2, {0}, 0.4), in({3}, 237)},
       FN(return x[0].div(x[1], true);)},
      {"pow: x ** 2", {in({2, 3}, 238)}, FN(return x[0].pow(2);)},
      {"pow: x ** 3", {in({2, 3}, 239)}, FN(return x[0].pow(3);)},
      {"pow: x ** 0.5", {in({2, 3}, 240, 0.2, 3)}, FN(return x[0].pow(0.5);)},
      {"pow: x ** 2.5", {in({2, 3}, 241, 0.2, 3)}, FN(return x[0].pow(2.5);)},
      {"pow: x ** -1.5", {in({2, 3}, 242, 0.2, 3)}, FN(return x[0].pow(-1.5);)},
      {"pow: x ** -2", {in({2, 3}, 243, -2, 2, {0}, 0.4)}, FN(return x[0].pow(-2);)},
      {"pow: negative x ** 5 (odd integer, general path)", {in({2, 3}, 244, -2, -0.3)}, FN(return x[0].pow(5);)},
      {"pow: mixed-sign x ** 4 (even integer, general path)", {in({2, 3}, 245, -2, 2, {0}, 0.3)},
       FN(return x[0].pow(4);)},
      {"pow: 2 ** x", {in({2, 3}, 246)}, FN(return x[0].pow(2, true);)},
      {"pow: 0.5 ** x", {in({2, 3}, 247)}, FN(return x[0].pow(0.5, true);)},
      {"pow: tensor ** tensor (positive base)", {in({2, 3}, 248, 0.3, 3), in({2, 3}, 249)},
       FN(return x[0].pow(x[1]);)},
      {"pow: broadcast tensor ** tensor", {in({2, 3}, 250, 0.3, 3), in({3}, 251)}, FN(return x[0].pow(x[1]);)},
      {"pow: tensor ** 0-d tensor", {in({2, 3}, 252, 0.3, 3), in({}, 253)}, FN(return x[0].pow(x[1]);)},
      {"pow: reverse tensor operand", {in({2, 3}, 254), in({2, 3}, 255, 0.3, 3)},
       FN(return x[0].pow(x[1], true);)},
      {"maximum: tensor, tensor", {in({2, 3}, 256), in({2, 3}, 257)}, FN(return x[0].maximum(x[1]);)},
      {"maximum: broadcast", {in({2, 3}, 258), in({3}, 259)}, FN(return x[0].maximum(x[1]);)},
      {"maximum: scalar", {in({2, 3}, 260, -2, 2, {0.25})}, FN(return x[0].maximum(0.25);)},
      {"minimum: tensor, tensor", {in({2, 3}, 261), in({2, 3}, 262)}, FN(return x[0].minimum(x[1]);)},
      {"minimum: broadcast", {in({2, 1}, 263), in({2, 3}, 264)}, FN(return x[0].minimum(x[1]);)},
      {"minimum: scalar", {in({2, 3}, 265, -2, 2, {-0.5})}, FN(return x[0].minimum(-0.5);)},
      {"where: broadcast branches", {in({3}, 266), in({2, 1}, 267)},
       FN(return bools({1, 0, 1, 0, 0, 1}, {2, 3}, dev).where(x[0], x[1]);)},
      {"where: tensor, scalar", {in({2, 3}, 268)}, FN(return bools({1, 0, 1, 0, 0, 1}, {2, 3}, dev).where(x[0], 0.5);)},
      {"where: scalar, tensor", {in({2, 3}, 269)}, FN(return bools({1, 0, 1, 0, 0, 1}, {2, 3}, dev).where(-1.0, x[0]);)},
      {"where: condition computed from a detached input", {in({2, 3}, 270), in({2, 3}, 271)},
       FN(return x[0].detach().gt(0).where(x[0].exp(), x[1].sin());)},
  };
}

std::vector<GradCase> reduceCases() {
  return {
      {"sum: all", {in({2, 3, 4}, 301)}, FN(return x[0].sum();)},
      {"sum: axis 0", {in({2, 3, 4}, 302)}, FN(return x[0].sum(Axes{0});)},
      {"sum: axis 1 keepdim", {in({2, 3, 4}, 303)}, FN(return x[0].sum(Axes{1}, true);)},
      {"sum: axes (0, 2)", {in({2, 3, 4}, 304)}, FN(return x[0].sum(Axes{0, 2});)},
      {"sum: axis -1 keepdim", {in({2, 3, 4}, 305)}, FN(return x[0].sum(Axes{-1}, true);)},
      {"max: all", {in({2, 3, 4}, 306)}, FN(return x[0].max();)},
      {"max: axis -1", {in({2, 3, 4}, 307)}, FN(return x[0].max(Axes{-1});)},
      {"max: axes (0, 2) keepdim", {in({2, 3, 4}, 308)}, FN(return x[0].max(Axes{0, 2}, true);)},
      {"min: all", {in({2, 3, 4}, 309)}, FN(return x[0].min();)},
      {"min: axis 1", {in({2, 3, 4}, 310)}, FN(return x[0].min(Axes{1});)},
      {"min: axis 0 keepdim", {in({2, 3, 4}, 311)}, FN(return x[0].min(Axes{0}, true);)},
      {"mean: all", {in({2, 3, 4}, 312)}, FN(return x[0].mean();)},
      {"mean: axes (0, 2) keepdim", {in({2, 3, 4}, 313)}, FN(return x[0].mean(Axes{0, 2}, true);)},
      {"mean: axis -1", {in({2, 3, 4}, 314)}, FN(return x[0].mean(Axes{-1});)},
      {"var: all", {in({2, 3, 4}, 315)}, FN(return x[0].var();)},
      {"var: axis 1", {in({2, 3, 4}, 316)}, FN(return x[0].var(Axes{1});)},
      {"var: axes (0, 2) keepdim, correction 0", {in({2, 3, 4}, 317)}, FN(return x[0].var(Axes{0, 2}, true, 0);)},
      {"std: all", {in({2, 3, 4}, 318)}, FN(return x[0].std();)},
      {"std: axis -1 keepdim", {in({2, 3, 4}, 319)}, FN(return x[0].std(Axes{-1}, true);)},
      {"std: axis 0, correction 0", {in({2, 3, 4}, 320)}, FN(return x[0].std(Axes{0}, false, 0);)},
      {"softmax: last axis", {in({3, 4}, 321)}, FN(return x[0].softmax();)},
      {"softmax: axis 0", {in({3, 4}, 322)}, FN(return x[0].softmax(0);)},
      {"softmax: middle axis of 3", {in({2, 3, 2}, 323)}, FN(return x[0].softmax(1);)},
      {"logSoftmax: last axis", {in({3, 4}, 324)}, FN(return x[0].logSoftmax();)},
      {"logSoftmax: axis 0", {in({3, 4}, 325)}, FN(return x[0].logSoftmax(0);)},
      {"cumsum: axis 0", {in({4, 3}, 326)}, FN(return x[0].cumsum(0);)},
      {"cumsum: axis -1", {in({3, 5}, 327)}, FN(return x[0].cumsum(-1);)},
      {"cumsum: 1-d", {in({6}, 328)}, FN(return x[0].cumsum();)},
      // n > 512 takes the two-stage path (blocks of 256, then a cumsum of the block sums); the
      // full gradient is also checked against its closed form in a test of its own below
      {"cumsum: 600 elements (two-stage)", {in({600}, 329)}, FN(return x[0].cumsum();), "", 1e-6, 24},
      {"cumsum: (2, 530) along axis 1 (two-stage)", {in({2, 530}, 330)}, FN(return x[0].cumsum(1);), "", 1e-6,
       12},
      {"cumsum: (520, 2) along axis 0 (two-stage)", {in({520, 2}, 331)}, FN(return x[0].cumsum(0);), "", 1e-6,
       12},
      {"einsum: ij,jk->ik", {in({2, 3}, 332), in({3, 2}, 333)},
       FN(return Tensor::einsum("ij,jk->ik", {x[0], x[1]});)},
      {"einsum: bij,bkj->bik", {in({2, 2, 3}, 334), in({2, 2, 3}, 335)},
       FN(return Tensor::einsum("bij,bkj->bik", {x[0], x[1]});)},
      {"einsum: i,j->ij (outer)", {in({3}, 336), in({4}, 337)}, FN(return Tensor::einsum("i,j->ij", {x[0], x[1]});)},
      {"einsum: ijk->kj (sum and permute)", {in({2, 3, 4}, 338)}, FN(return Tensor::einsum("ijk->kj", {x[0]});)},
      {"einsum: ij,ij->", {in({2, 3}, 339), in({2, 3}, 340)}, FN(return Tensor::einsum("ij,ij->", {x[0], x[1]});)},
      {"einsum: three operands", {in({2, 3}, 341), in({3}, 342), in({3, 2}, 343)},
       FN(return Tensor::einsum("ij,j,jk->ik", {x[0], x[1], x[2]});)},
  };
}

std::vector<GradCase> movementCases() {
  return {
      {"reshape with -1", {in({2, 6}, 401)}, FN(return x[0].reshape({3, -1, 2});)},
      {"expand with -1", {in({3, 1}, 402)}, FN(return x[0].expand({-1, 4});)},
      {"expand a new leading size-1 dim", {in({1, 3}, 403)}, FN(return x[0].expand({4, 3});)},
      {"permute with a negative axis", {in({2, 3, 4}, 404)}, FN(return x[0].permute({-1, 0, 1});)},
      {"flip one axis", {in({2, 3, 4}, 405)}, FN(return x[0].flip({-1});)},
      {"flip two axes", {in({2, 3, 4}, 406)}, FN(return x[0].flip({0, 2});)},
      {"shrink with an unset dim", {in({4, 5}, 407)}, FN(return x[0].shrink({std::nullopt, SIntPair(1, 4)});)},
      {"pad", {in({2, 3}, 408)}, FN(return x[0].pad(pads({{0, 1}, {2, 0}}));)},
      {"pad with a value", {in({2, 3}, 409)}, FN(return x[0].pad(pads({{1, 1}, {0, 2}}), 1.5);)},
      {"pad2d", {in({2, 2, 3}, 410)}, FN(return x[0].pad2d({1, 0, 2, 1});)},
      {"pad2d with a value", {in({2, 3}, 411)}, FN(return x[0].pad2d({0, 2}, -2);)},
      {"slice past both ends", {in({3, 4}, 412)}, FN(return x[0].slice(pads({{-1, 2}, {1, 6}}));)},
      {"slice with a value", {in({3, 4}, 413)}, FN(return x[0].slice(pads({{1, 5}, {-2, 3}}), 0.5);)},
      {"getitem [1]", {in({3, 4, 3}, 414)}, FN(return x[0].getitem({Index::at(1)});)},
      {"getitem [-1, :, 0]", {in({3, 4, 3}, 415)},
       FN(return x[0].getitem({Index::at(-1), Index::all(), Index::at(0)});)},
      {"getitem [:, ::2]", {in({3, 4, 3}, 416)},
       FN(return x[0].getitem({Index::all(), Index::range(std::nullopt, std::nullopt, 2)});)},
      {"getitem [::-1]", {in({3, 4, 3}, 417)},
       FN(return x[0].getitem({Index::range(std::nullopt, std::nullopt, -1)});)},
      {"getitem [::-2, 1:3]", {in({3, 4, 3}, 418)},
       FN(return x[0].getitem({Index::range(std::nullopt, std::nullopt, -2), Index::range(1, 3)});)},
      {"getitem [2:0:-1, -3:, ::3]", {in({3, 4, 3}, 419)},
       FN(return x[0].getitem({Index::range(2, 0, -1), Index::range(-3, std::nullopt),
                               Index::range(std::nullopt, std::nullopt, 3)});)},
      {"getitem [None, ..., 1]", {in({3, 4, 3}, 420)},
       FN(return x[0].getitem({Index::newAxis(), Index::ellipsis(), Index::at(1)});)},
      {"getitem [..., None, ::-3]", {in({3, 4, 4}, 421)},
       FN(return x[0].getitem({Index::ellipsis(), Index::newAxis(), Index::range(std::nullopt, std::nullopt, -3)});)},
      {"getitem [1:, None, ::-2, 2]", {in({3, 4, 3}, 422)},
       FN(return x[0].getitem(
                  {Index::range(1, std::nullopt), Index::newAxis(), Index::range(std::nullopt, std::nullopt, -2),
                   Index::at(2)});)},
      {"getitem [idx] with a repeated and a negative index", {in({3, 4, 3}, 423)},
       FN(return x[0].getitem(ints({2, 0, -1, 2}, {4}, dev));)},
      {"getitem [:, idx2d]", {in({3, 4, 3}, 424)},
       FN(auto idx = [](const Vals &v, const Ints &s, const std::string &d) { return Index::of(ints(v, s, d)); };
          return x[0].getitem({Index::all(), idx({0, 3, 1, 1}, {2, 2}, dev)});)},
      {"getitem [idx0, :, idx2] (non-adjacent tensor indices)", {in({3, 4, 3}, 425)},
       FN(auto idx = [](const Vals &v, const Ints &s, const std::string &d) { return Index::of(ints(v, s, d)); };
          return x[0].getitem({idx({0, 2, 2}, {3}, dev), Index::all(), idx({1, -1, 0}, {3}, dev)});)},
      {"getitem [:, idx1, idx2] (adjacent tensor indices)", {in({3, 4, 3}, 426)},
       FN(auto idx = [](const Vals &v, const Ints &s, const std::string &d) { return Index::of(ints(v, s, d)); };
          return x[0].getitem({Index::all(), idx({3, 0}, {2}, dev), idx({2, 2}, {2}, dev)});)},
      {"getitem [1, idx, ::-1] (int, tensor and a negative step)", {in({3, 4, 3}, 427)},
       FN(auto idx = [](const Vals &v, const Ints &s, const std::string &d) { return Index::of(ints(v, s, d)); };
          return x[0].getitem({Index::at(1), idx({1, 1, 3}, {3}, dev), Index::range(std::nullopt, std::nullopt, -1)});)},
      {"gather dim 0 (repeated indices)", {in({3, 4}, 428)},
       FN(return x[0].gather(ints({2, 0, 1, 2, 0, 0, 2, 1}, {2, 4}, dev), 0);)},
      {"gather dim 1", {in({3, 4}, 429)}, FN(return x[0].gather(ints({3, 0, 1, 1, 2, 3}, {3, 2}, dev), 1);)},
      {"gather dim -1 of 3-d", {in({2, 2, 3}, 430)},
       FN(return x[0].gather(ints({2, 2, 0, 1, 0, 0, 1, 2}, {2, 2, 2}, dev), -1);)},
      {"cat dim 0", {in({2, 3}, 431), in({1, 3}, 432), in({3, 3}, 433)}, FN(return x[0].cat({x[1], x[2]}, 0);)},
      {"cat dim 1", {in({2, 1}, 434), in({2, 3}, 435)}, FN(return x[0].cat({x[1]}, 1);)},
      {"cat dim -1 of 3-d", {in({2, 2, 1}, 436), in({2, 2, 2}, 437)}, FN(return x[0].cat({x[1]}, -1);)},
      {"stack dim 0", {in({2, 3}, 438), in({2, 3}, 439), in({2, 3}, 440)},
       FN(return Tensor::stack({x[0], x[1], x[2]}, 0);)},
      {"stack dim -1", {in({2, 3}, 441), in({2, 3}, 442)}, FN(return Tensor::stack({x[0], x[1]}, -1);)},
      {"repeat", {in({2, 3}, 443)}, FN(return x[0].repeat({2, 1, 2});)},
      {"squeeze all", {in({1, 3, 1, 2}, 444)}, FN(return x[0].squeeze();)},
      {"squeeze dim", {in({1, 3, 1, 2}, 445)}, FN(return x[0].squeeze(2);)},
      {"unsqueeze", {in({3, 2}, 446)}, FN(return x[0].unsqueeze(1);)},
      {"unsqueeze -1", {in({3, 2}, 447)}, FN(return x[0].unsqueeze(-1);)},
      {"transpose", {in({3, 2}, 448)}, FN(return x[0].transpose();)},
      {"transpose (0, 2)", {in({2, 3, 4}, 449)}, FN(return x[0].transpose(0, 2);)},
      {"T", {in({3, 2}, 450)}, FN(return x[0].T();)},
      {"flatten", {in({2, 3, 2}, 451)}, FN(return x[0].flatten();)},
      {"flatten(1)", {in({2, 3, 2}, 452)}, FN(return x[0].flatten(1);)},
      {"chunk", {in({2, 5}, 453)}, FN(return x[0].chunk(2, 1)[1];)},
      {"triu", {in({3, 4}, 454)}, FN(return x[0].triu();)},
      {"triu k=1", {in({3, 4}, 455)}, FN(return x[0].triu(1);)},
      {"tril", {in({3, 4}, 456)}, FN(return x[0].tril();)},
      {"tril k=-1", {in({2, 3, 3}, 457)}, FN(return x[0].tril(-1);)},
  };
}

std::vector<GradCase> nnCases() {
  return {
      {"avgPool2d 2x2", {in({1, 2, 4, 4}, 501)}, FN(return x[0].avgPool2d();)},
      {"avgPool2d 3x2 stride (1, 2)", {in({1, 2, 4, 4}, 502)},
       FN(return x[0].avgPool2d({3, 2}, std::vector<int64_t>{1, 2});)},
      {"avgPool2d 2x2 stride 1 dilation 2", {in({1, 1, 5, 5}, 503)},
       FN(return x[0].avgPool2d({2, 2}, std::vector<int64_t>{1, 1}, {2});)},
      {"maxPool2d 2x2", {in({1, 2, 4, 4}, 504)}, FN(return x[0].maxPool2d();)},
      {"maxPool2d 3x3 stride 2 (overlapping)", {in({1, 1, 5, 5}, 505)},
       FN(return x[0].maxPool2d({3, 3}, std::vector<int64_t>{2, 2});)},
      {"maxPool2d 2x2 stride 1 dilation 2", {in({1, 1, 5, 5}, 506)},
       FN(return x[0].maxPool2d({2, 2}, std::vector<int64_t>{1, 1}, {2});)},
      {"conv2d with bias", {in({1, 2, 4, 4}, 507), in({2, 2, 3, 3}, 508), in({2}, 509)},
       FN(return x[0].conv2d(x[1], x[2]);)},
      {"conv2d stride 2 padding 1", {in({1, 2, 5, 5}, 510), in({2, 2, 3, 3}, 511)},
       FN(return x[0].conv2d(x[1], std::nullopt, 1, {2}, {1}, {1});)},
      {"conv2d dilation 2", {in({1, 1, 5, 5}, 512), in({2, 1, 2, 2}, 513), in({2}, 514)},
       FN(return x[0].conv2d(x[1], x[2], 1, {1}, {2});)},
      {"conv2d groups 2", {in({2, 4, 3, 3}, 515), in({4, 2, 2, 2}, 516), in({4}, 517)},
       FN(return x[0].conv2d(x[1], x[2], 2);)},
      {"conv2d asymmetric padding, stride (2, 1)", {in({1, 1, 4, 3}, 518), in({2, 1, 2, 3}, 519)},
       FN(return x[0].conv2d(x[1], std::nullopt, 1, {2, 1}, {1}, {1, 0, 2, 1});)},
      {"conv2d 1-d (N, C, L)", {in({2, 2, 5}, 520), in({3, 2, 2}, 521), in({3}, 522)},
       FN(return x[0].conv2d(x[1], x[2]);)},
      {"convTranspose2d with bias", {in({1, 2, 3, 3}, 523), in({2, 2, 2, 2}, 524), in({2}, 525)},
       FN(return x[0].convTranspose2d(x[1], x[2]);)},
      {"convTranspose2d stride 2 padding 1 output padding 1", {in({1, 2, 3, 3}, 526), in({2, 1, 3, 3}, 527)},
       FN(return x[0].convTranspose2d(x[1], std::nullopt, 1, {2}, {1}, {1}, {1});)},
      {"convTranspose2d groups 2", {in({1, 4, 2, 2}, 528), in({4, 1, 2, 2}, 529), in({2}, 530)},
       FN(return x[0].convTranspose2d(x[1], x[2], 2);)},
      {"convTranspose2d dilation 2", {in({1, 1, 3, 3}, 531), in({1, 2, 2, 2}, 532)},
       FN(return x[0].convTranspose2d(x[1], std::nullopt, 1, {1}, {2});)},
      {"dot: 1-d . 1-d", {in({4}, 533), in({4}, 534)}, FN(return x[0].dot(x[1]);)},
      {"dot: 1-d . 2-d", {in({3}, 535), in({3, 2}, 536)}, FN(return x[0].dot(x[1]);)},
      {"dot: 2-d . 1-d", {in({2, 3}, 537), in({3}, 538)}, FN(return x[0].dot(x[1]);)},
      {"matmul: 2-d @ 2-d", {in({2, 3}, 539), in({3, 4}, 540)}, FN(return x[0].matmul(x[1]);)},
      {"matmul: batched", {in({2, 2, 3}, 541), in({2, 3, 2}, 542)}, FN(return x[0].matmul(x[1]);)},
      {"matmul: batched @ 2-d (broadcast)", {in({2, 2, 3}, 543), in({3, 2}, 544)}, FN(return x[0].matmul(x[1]);)},
      {"matmul: batch dims 1 and 2 (broadcast)", {in({1, 2, 3}, 545), in({2, 3, 2}, 546)},
       FN(return x[0].matmul(x[1]);)},
      {"matmul: 1-d @ batched", {in({3}, 547), in({2, 3, 2}, 548)}, FN(return x[0].matmul(x[1]);)},
      {"linear with bias", {in({2, 3}, 549), in({3, 4}, 550), in({4}, 551)}, FN(return x[0].linear(x[1], x[2]);)},
      {"linear without bias", {in({2, 3}, 552), in({3, 2}, 553)}, FN(return x[0].linear(x[1]);)},
      {"linear with a 1-d weight", {in({2, 3}, 554), in({3}, 555), in({3}, 556)},
       FN(return x[0].linear(x[1], x[2]);)},
      {"layernorm last axis", {in({3, 4}, 557)}, FN(return x[0].layernorm();)},
      {"layernorm two axes, eps 1e-3", {in({2, 2, 3}, 558)}, FN(return x[0].layernorm({-2, -1}, 1e-3);)},
      {"batchnorm (given mean and invstd)",
       {in({2, 3, 2, 2}, 559), in({3}, 560), in({3}, 561), in({3}, 562), in({3}, 563, 0.5, 2)},
       FN(return x[0].batchnorm(x[1], x[2], x[3], x[4]);)},
      {"batchnorm without affine", {in({2, 2, 2, 1}, 564), in({2}, 565), in({2}, 566, 0.5, 2)},
       FN(return x[0].batchnorm(std::nullopt, std::nullopt, x[1], x[2]);)},
      {"batchnorm with batch statistics (nn::BatchNorm2d, training)", {in({3, 2, 2, 2}, 567), in({2}, 568),
                                                                       in({2}, 569)},
       FN(Tensor::TrainingGuard tg;
          nn::BatchNorm2d bn(2, 1e-5, true, false); // no running statistics (on the default device)
          bn.weight = x[1];
          bn.bias = x[2];
          return bn(x[0]);)},
      {"scaledDotProductAttention", {in({2, 3, 4}, 570), in({2, 3, 4}, 571), in({2, 3, 2}, 572)},
       FN(return x[0].scaledDotProductAttention(x[1], x[2]);)},
      {"scaledDotProductAttention with a float mask (also differentiated)",
       {in({2, 3, 4}, 573), in({2, 2, 4}, 574), in({2, 2, 2}, 575), in({3, 2}, 576)},
       FN(return x[0].scaledDotProductAttention(x[1], x[2], x[3]);)},
      {"scaledDotProductAttention with a bool mask", {in({1, 3, 4}, 577), in({1, 3, 4}, 578), in({1, 3, 2}, 579)},
       FN(return x[0].scaledDotProductAttention(x[1], x[2], bools({1, 0, 1, 0, 1, 1, 1, 0, 0}, {3, 3}, dev));)},
      {"scaledDotProductAttention causal", {in({2, 3, 4}, 580), in({2, 3, 4}, 581), in({2, 3, 2}, 582)},
       FN(return x[0].scaledDotProductAttention(x[1], x[2], std::nullopt, 0, true);)},
      {"binaryCrossentropy (both operands)", {in({2, 3}, 583, 0.05, 0.95), in({2, 3}, 584, 0, 1)},
       FN(return x[0].binaryCrossentropy(x[1]);)},
      {"binaryCrossentropyLogits (both operands)", {in({2, 3}, 585, -3, 3, {0}), in({2, 3}, 586, 0, 1)},
       FN(return x[0].binaryCrossentropyLogits(x[1]);)},
      {"sparseCategoricalCrossentropy", {in({4, 5}, 587)},
       FN(return x[0].sparseCategoricalCrossentropy(ints({1, 4, 0, 4}, {4}, dev));)},
      {"sparseCategoricalCrossentropy with ignored labels", {in({4, 5}, 588)},
       FN(return x[0].sparseCategoricalCrossentropy(ints({1, -1, 3, 2}, {4}, dev));)},
      {"sparseCategoricalCrossentropy ignoreIndex 2, 3-d logits", {in({2, 2, 3}, 589)},
       FN(return x[0].sparseCategoricalCrossentropy(ints({0, 2, 1, 1}, {2, 2}, dev), 2);)},
      {"dropout (training, fixed seed)", {in({3, 4}, 590)},
       FN(Tensor::TrainingGuard tg;
          Tensor::manualSeed(4242);
          return x[0].dropout(0.3);)},
      {"dropout (training, fixed seed) after exp", {in({3, 4}, 591)},
       FN(Tensor::TrainingGuard tg;
          Tensor::manualSeed(777);
          return x[0].exp().dropout(0.5);)},
  };
}

/// The convolutions of nnCases() and a few more, for OPT=5, where a convolution computes its input's
/// gradient as one transposed convolution when its padding is the same on both sides of each
/// dimension, and its weight's as one reduction over the output's gradient written out
/// channels-last when it has one group (ConvGradient, TensorConv.cpp); the other gradients come
/// through the pooling op's graph, as at OPT=2. With 64 or more multiply-adds per input element
/// (output channels per group x the window) a padded input is written out first, so the
/// convolution itself has no padding.
std::vector<GradCase> convCasesAtOpt5() {
  std::vector<GradCase> out;
  for (GradCase c : nnCases()) {
    if (c.name.rfind("conv", 0) != 0) continue;
    c.gradFn = "ConvGradient"; // (every one has a gradient to compute directly)
    out.push_back(std::move(c));
  }
  std::vector<GradCase> more{
      {"conv2d stride 2 padding 1 (one row and column reached by no window)",
       {in({1, 2, 6, 6}, 601), in({3, 2, 3, 3}, 602), in({3}, 603)},
       FN(return x[0].conv2d(x[1], x[2], 1, {2}, {1}, {1});),
       "ConvGradient"},
      {"conv2d stride 2 dilation 2 padding 2", {in({1, 1, 7, 7}, 604), in({2, 1, 2, 2}, 605)},
       FN(return x[0].conv2d(x[1], std::nullopt, 1, {2}, {2}, {2});),
       "ConvGradient"},
      {"conv2d groups 2 stride (2, 1) padding (1, 0)", {in({2, 4, 5, 4}, 606), in({4, 2, 3, 2}, 607)},
       FN(return x[0].conv2d(x[1], std::nullopt, 2, {2, 1}, {1}, {1, 0});),
       "ConvGradient"},
      {"conv2d 3-d (N, C, D, H, W) padding 1", {in({1, 2, 3, 3, 3}, 608), in({2, 2, 2, 2, 2}, 609)},
       FN(return x[0].conv2d(x[1], std::nullopt, 1, {1}, {1}, {1});),
       "ConvGradient"},
      {"conv2d after exp (the input is computed)", {in({1, 2, 4, 4}, 610, -1, 1), in({2, 2, 3, 3}, 611)},
       FN(return x[0].exp().conv2d(x[1]);),
       "ConvGradient"},
      {"conv2d padding 1, 8 output channels (the padded input written out first)",
       {in({1, 2, 4, 4}, 617), in({8, 2, 3, 3}, 618), in({8}, 619)},
       FN(return x[0].conv2d(x[1], x[2], 1, {1}, {1}, {1});),
       "ConvGradient"},
      {"conv2d groups 2, asymmetric padding, 16 output channels (the padded input written out first)",
       {in({1, 4, 4, 3}, 620), in({16, 2, 3, 3}, 621)},
       FN(return x[0].conv2d(x[1], std::nullopt, 2, {1}, {1}, {1, 0, 2, 1});),
       "ConvGradient"},
      {"conv2d groups 2, asymmetric padding (both gradients through the pooling op)",
       {in({1, 4, 4, 3}, 612), in({2, 2, 2, 2}, 613), in({2}, 614)},
       FN(return x[0].conv2d(x[1], x[2], 2, {1}, {1}, {1, 0, 0, 1});)},
      {"conv2d with the weight computed, 3x1 kernel stride (1, 2)", {in({2, 3, 5, 6}, 615), in({4, 3, 3, 1}, 616, -1, 1)},
       FN(return x[0].conv2d(x[1].exp(), std::nullopt, 1, {1, 2});),
       "ConvGradient"},
  };
  for (GradCase &c : more) out.push_back(std::move(c));
  return out;
}

} // namespace

TEST_CASE("GradCheck: every differentiable primitive matches finite differences") { runAll(primitiveCases()); }

TEST_CASE("GradCheck: unary math and activations match finite differences") { runAll(unaryCases()); }

TEST_CASE("GradCheck: binary ops in every operand form, maximum/minimum and where match finite "
          "differences") {
  runAll(binaryCases());
}

TEST_CASE("GradCheck: reductions, softmax, cumsum and einsum match finite differences") { runAll(reduceCases()); }

TEST_CASE("GradCheck: movement, indexing, gather, cat/stack and triangles match finite differences") {
  runAll(movementCases());
}

TEST_CASE("GradCheck: pooling, convolution, matmul, normalization, attention, losses and dropout "
          "match finite differences") {
  runAll(nnCases());
}

TEST_CASE("GradCheck: at OPT=5 convolutions, their input gradients one transposed convolution, match finite "
          "differences") {
  Config cfg = config();
  cfg.opt = 5;
  ScopedConfig scope(cfg);
  runAll(convCasesAtOpt5());
}

TEST_CASE("GradCheck: pow with a reversed tensor operand computes operand ** self") {
  // x.pow(y, true) is y ** x, as x.sub(y, true) is y - x; it used to read y as the scalar 0
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor e = make({2, 3, 0.5}, {3}, dev, f64);
    Tensor b = make({1.5, 2, 4}, {3}, dev, f64);
    expectValues(e.pow(b, true), {3}, {2.25, 8, 2}, {1e-12, 1e-12});
    expectValues(e.pow(b.reshape({3, 1}), true), {3, 3}, {2.25, 3.375, std::sqrt(1.5), 4, 8, std::sqrt(2.0), 16, 64, 2},
                 {1e-12, 1e-12});
  }
}

TEST_CASE("GradCheck: the check fails for a Function whose backward is wrong") {
  // x * x with a backward missing the factor 2: the comparison must see every element differ
  struct BadSquare : Function {
    LazyBufferRef x;
    std::string_view name() const override { return "BadSquare"; }
    LazyBufferRef forward(const std::vector<LazyBufferRef> &in) override {
      x = in[0];
      return x->e(opts, Op::Mul, {x});
    }
    std::vector<LazyBufferRef> backward(const LazyBufferRef &g) override { return {x->e(opts, Op::Mul, {g})}; }
  };
  GradCase bad{"BadSquare", {in({2, 3}, 901, 0.5, 2)},
               FN(return Function::apply(std::make_shared<BadSquare>(), {x[0]});), "BadSquare"};
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    GradReport r = compareGrads(bad, dev);
    REQUIRE(r.bad.size() == 1);
    CHECK(r.bad[0] == 6);
  }
}

TEST_CASE("GradCheck: max splits the gradient evenly between tied maxima (closed form)") {
  // The reference's Max backward: 1 where x equals the max, divided by the number of such places
  const Vals x = {1, 3, 3, 0, /**/ 2, 2, 2, 2, /**/ 5, -1, 5, -1};
  const Vals w = {0.5, -2, 3};
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    {
      Tensor t = make(x, {3, 4}, dev, f64).setRequiresGrad(true);
      t.max(Axes{1}).mul(make(w, {3}, dev, f64)).sum().backward();
      expectValues(*t.grad(), {3, 4}, {0, 0.25, 0.25, 0, -0.5, -0.5, -0.5, -0.5, 1.5, 0, 1.5, 0}, {1e-15, 0});
    }
    {
      // over everything: the two 5s share the gradient
      Tensor t = make(x, {3, 4}, dev, f64).setRequiresGrad(true);
      t.max().mul(3).backward();
      expectValues(*t.grad(), {3, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 1.5, 0, 1.5, 0}, {1e-15, 0});
    }
    {
      // keepdim over axis 0: every column has two or three equal maxima
      Tensor t = make({1, 3, 5, 2, /**/ 1, 0, 5, 2, /**/ -1, 3, 4, 2}, {3, 4}, dev, f64).setRequiresGrad(true);
      t.max(Axes{0}, true).mul(make({1, 2, 3, 4}, {1, 4}, dev, f64)).sum().backward();
      expectValues(*t.grad(), {3, 4}, {0.5, 1, 1.5, 4.0 / 3, 0.5, 0, 1.5, 4.0 / 3, 0, 1, 0, 4.0 / 3}, {1e-15, 0});
    }
    {
      // min is -max(-x): ties of the minimum split the same way
      Tensor t = make(x, {3, 4}, dev, f64).setRequiresGrad(true);
      t.min(Axes{1}).mul(make(w, {3}, dev, f64)).sum().backward();
      expectValues(*t.grad(), {3, 4}, {0, 0, 0, 0.5, -0.5, -0.5, -0.5, -0.5, 0, 1.5, 0, 1.5}, {1e-15, 0});
    }
    {
      // maximum / minimum of two tensors: (x + y) / 2 where they are equal, so half each
      Tensor a = make({1, 2, 3}, {3}, dev, f64).setRequiresGrad(true);
      Tensor b = make({1, 5, 0}, {3}, dev, f64).setRequiresGrad(true);
      a.maximum(b).mul(make({2, 4, 8}, {3}, dev, f64)).sum().backward();
      expectValues(*a.grad(), {3}, {1, 0, 8}, {1e-15, 0});
      expectValues(*b.grad(), {3}, {1, 4, 0}, {1e-15, 0});
      Tensor c = make({1, 2, 3}, {3}, dev, f64).setRequiresGrad(true);
      c.minimum(2).mul(make({2, 4, 8}, {3}, dev, f64)).sum().backward();
      expectValues(*c.grad(), {3}, {2, 2, 0}, {1e-15, 0});
    }
    {
      // maxPool2d: a window with two equal maxima
      Tensor t = make({1, 4, 4, 0, /**/ 2, 3, 7, 7}, {1, 1, 2, 4}, dev, f64).setRequiresGrad(true);
      t.maxPool2d().mul(make({2, 6}, {1, 1, 1, 2}, dev, f64)).sum().backward();
      expectValues(*t.grad(), {1, 1, 2, 4}, {0, 2, 0, 0, 0, 0, 3, 3}, {1e-15, 0});
    }
  }
}

TEST_CASE("GradCheck: the two-stage cumsum passes the reversed cumulative sum of the weights") {
  // d/dx_j sum_i w_i cumsum(x)_i = sum_{i >= j} w_i, for every one of the 600 elements
  const size_t n = 600;
  Vals xv = randVals(n, 951), w = randVals(n, 952, -1, 1);
  Vals expected(n);
  double acc = 0;
  for (size_t j = n; j-- > 0;) expected[j] = acc += w[j];
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor t = make(xv, {static_cast<int64_t>(n)}, dev, f64).setRequiresGrad(true);
    t.cumsum().mul(make(w, {static_cast<int64_t>(n)}, dev, f64)).sum().backward();
    expectValues(*t.grad(), {static_cast<int64_t>(n)}, expected, {1e-12, 1e-12});
  }
}

// Elementwise ops of the Tensor API: broadcasting, the binary ops with the reference's scalar
// shortcuts, comparisons, where, unary math and activations, casts, and the C++ operators.
//
// The evaluation order of subexpressions follows the reference's Python (left operand first),
// because the order in which graph nodes are created can change fusion.
#include "TensorInternals.h"

#include <cmath>

namespace lazyjit {

using TI = TensorInternals;

namespace {
Tensor scalarLike(const Tensor &self, double v) {
  // A Python scalar takes the tensor's dtype (float32 for bool tensors).
  DType dt = self.dtype() == dtypes::boolean ? dtypes::float32 : self.dtype();
  return TensorInternals::scalarOn(v, dt, self.device());
}
} // namespace

std::pair<Tensor, Tensor> TensorInternals::broadcasted(const char *op, const Tensor &self,
                                                       const Operand &yIn, bool reverse) {
  Tensor x = self;
  Tensor y;
  if (!yIn.isTensor()) {
    for (const auto &s : x.shape())
      if (pyEq(s, 0)) return {x, x.fullLike(yIn.value)};
    y = scalarLike(self, yIn.value);
    if (!x.shape().empty()) {
      // A Python scalar broadcasts to self's shape: the reference's Reshape to (1, ..., 1) and
      // Expand, built on its LazyBuffer directly. Neither Function could be kept (the constant
      // requires no gradient), so the graph is the same without building them.
      GraphOptions o = configuredGraphOptions();
      const Shape &xs = x.shape();
      y.impl->lazydata = y.lazydata()->reshape(o, Shape(xs.size(), SInt(1)))->expand(o, xs);
    }
    if (reverse) std::swap(x, y);
    return {x, y};
  } else {
    y = yIn.tensor();
    LAZYJIT_USER_CHECK(y.device() == x.device(), DeviceError,
                       "{}: operands are on different devices: {} on {} and {} on {}", op,
                       describe(x), x.device(), describe(y), y.device());
  }
  if (reverse) std::swap(x, y);
  if (x.shape() == y.shape()) return {x, y};
  checkBroadcast(op, x, y); // before building any node
  Shape xs = x.shape(), ys = y.shape();
  int64_t delta = static_cast<int64_t>(xs.size()) - static_cast<int64_t>(ys.size());
  if (delta > 0) {
    Shape ns(delta, SInt(1));
    ns.insert(ns.end(), ys.begin(), ys.end());
    y = y.reshape(ns);
  } else if (delta < 0) {
    Shape ns(-delta, SInt(1));
    ns.insert(ns.end(), xs.begin(), xs.end());
    x = x.reshape(ns);
  }
  xs = x.shape();
  ys = y.shape();
  if (xs == ys) return {x, y};
  // The reference takes max(x, y) per dim, which turns (0, 3) + (3,) into a failed expand to
  // (1, 3); a size-1 dim takes the other size, so 0 broadcasts as in numpy.
  Shape ret;
  for (size_t i = 0; i < xs.size(); ++i) ret.push_back(pyEq(xs[i], 1) ? ys[i] : xs[i]);
  if (xs != ret) x = x.expand(ret);
  if (ys != ret) y = y.expand(ret);
  return {x, y};
}

void TensorInternals::checkBroadcast(const char *op, const Tensor &x, const Operand &yIn) {
  if (!yIn.isTensor()) return;
  Tensor y = yIn.tensor();
  const Shape &xs = x.shape(), &ys = y.shape();
  size_t n = std::max(xs.size(), ys.size());
  for (size_t i = 0; i < n; ++i) {
    SInt a = i < n - xs.size() ? SInt(1) : xs[i - (n - xs.size())];
    SInt b = i < n - ys.size() ? SInt(1) : ys[i - (n - ys.size())];
    LAZYJIT_USER_CHECK(pyEq(a, b) || pyEq(a, 1) || pyEq(b, 1), ShapeError,
                       "{}: cannot broadcast {} with {}", op, describe(x), describe(y));
  }
}

Operand TensorInternals::toFloat(const Tensor &self, Operand x) {
  if (!x.isTensor()) return x;
  const LazyBufferRef &l = x.impl->lazydata;
  if (l->isUnrealizedContiguousConst() && !x.impl->requiresGrad.value_or(false) &&
      TI::broadcasted("broadcast", self, x).first.shape() == self.shape())
    return Operand(std::get<double>(l->base()->op->arg));
  return x;
}

Operand::Operand(const Tensor &t) : impl(t.impl) {
  LAZYJIT_USER_CHECK(impl != nullptr, Error, "use of an undefined (default-constructed) Tensor");
}
Operand::Operand(Tensor &&t) : impl(std::move(t.impl)) {
  LAZYJIT_USER_CHECK(impl != nullptr, Error, "use of an undefined (default-constructed) Tensor");
}
Tensor Operand::tensor() const { return TensorInternals::fromImpl(impl); }

// ---- binary -----------------------------------------------------------------------------------------

Tensor Tensor::add(Operand xIn, bool reverse) const & {
  Operand x = TI::toFloat(*this, std::move(xIn));
  if (!x.isTensor() && x.value == 0) return *this;
  auto [a, b] = TI::broadcasted("add", *this, x, reverse);
  return mlBinary(Op::Add, a, b);
}

Tensor Tensor::sub(Operand xIn, bool reverse) const & {
  Operand x = TI::toFloat(*this, std::move(xIn));
  if (!x.isTensor() && x.value == 0) return reverse ? neg() : *this;
  auto [a, b] = TI::broadcasted("sub", *this, x, reverse);
  return mlBinary(Op::Sub, a, b);
}

Tensor Tensor::mul(Operand xIn, bool reverse) const & {
  Operand x = TI::toFloat(*this, std::move(xIn));
  if (!x.isTensor() && x.value == 0.0) return mlZero(*this);
  if (!x.isTensor() && x.value == -1.0) return neg();
  if (!x.isTensor() && x.value == 1.0) return *this;
  auto [a, b] = TI::broadcasted("mul", *this, x, reverse);
  return mlBinary(Op::Mul, a, b);
}

Tensor Tensor::div(Operand xIn, bool reverse) const & {
  Operand x = TI::toFloat(*this, std::move(xIn));
  // a float tensor divided by a nonzero scalar becomes a multiply by the reciprocal
  if (x.isTensor() || reverse || x.value == 0 || !dtype().isFloat()) {
    auto [a, b] = TI::broadcasted("div", *this, x, reverse);
    return mlBinary(Op::Div, a, b);
  }
  return mul(1 / x.value);
}

Tensor Tensor::pow(Operand xIn, bool reverse) const & {
  TI::checkBroadcast("pow", *this, xIn);
  Operand x = TI::toFloat(*this, std::move(xIn));
  // A reversed tensor operand is the base: x ** self. Python only reverses for a scalar base
  // (__rpow__), and the reversed formulas below read x as a scalar (a tensor's value is 0 there).
  if (x.isTensor() && reverse) return x.tensor().pow(*this);
  if (!x.isTensor() && !reverse) {
    // simple pow identities
    if (x.value < 0) return reciprocal().pow(-x.value);
    if (x.value == 3.0) return mul(*this).mul(*this);
    if (x.value == 2.0) return mul(*this);
    if (x.value == 1.0) return *this;
    if (x.value == 0.5) return sqrt();
  }
  if (!x.isTensor() && reverse && x.value > 0) return mul(std::log(x.value)).exp();
  // |base| ** x through exp/log; the sign of negative bases is fixed with cos(pi * x) (the
  // oddness of the power), 0 counts as positive, and a negative base with a non-integer power
  // gives nan.
  if (!reverse) {
    Tensor ar = abs().log().mul(x).exp();
    Operand sign = x.isTensor() ? Operand(x.tensor().mul(M_PI).cos()) : Operand(std::cos(x.value * M_PI));
    Tensor baseSign = this->sign().sub(1).div(-2);
    baseSign = baseSign.sub(this->sign().abs().sub(1, true).mul(1.5, true));
    Tensor toNan = x.isTensor()
                       ? x.tensor().sub(x.tensor().trunc()).mul(1e10).abs().clip(0, 1).mul(baseSign)
                       : baseSign.mul(static_cast<double>(x.value != std::trunc(x.value)), true);
    Tensor injectNan = toNan.neg().mul(2).add(1).log().add(1);
    Tensor sb = sign.isTensor() ? sign.tensor().mul(baseSign) : baseSign.mul(sign.value, true);
    return ar.mul(sb.add(baseSign.sub(1, true))).mul(injectNan);
  }
  // reverse with a scalar base x <= 0: x ** self
  Tensor ar = mul(std::log(std::abs(x.value))).exp();
  Tensor sign = mul(M_PI).cos();
  double baseSign = (std::copysign(1.0, x.value) - 1) / -2;
  baseSign = baseSign - 1.5 * (1 - std::abs(static_cast<double>(x.value != 0)));
  Tensor toNan = sub(trunc()).mul(1e10).abs().clip(0, 1).mul(baseSign);
  Tensor injectNan = toNan.neg().mul(2).add(1).log().add(1);
  return ar.mul(sign.mul(baseSign).add(1 - baseSign)).mul(injectNan);
}

Tensor Tensor::xorWith(Operand xIn, bool reverse) const & {
  Operand x = std::move(xIn);
  LAZYJIT_USER_CHECK(dtype().isInt() || dtype().isBool(), DTypeError,
                     "xor: needs integer or bool operands, got {}", describe(*this));
  if (x.isTensor())
    LAZYJIT_USER_CHECK(x.tensor().dtype().isInt() || x.tensor().dtype().isBool(), DTypeError,
                       "xor: needs integer or bool operands, got {}", describe(x.tensor()));
  auto [a, b] = TI::broadcasted("xor", *this, x, reverse);
  return mlBinary(Op::Xor, a, b);
}

namespace {
// Whether an op of `self` and `x` computes in an integer or bool dtype (a scalar takes self's).
bool integerResult(const Tensor &self, const Operand &x) {
  DType dt = x.isTensor() ? promote(self.dtype(), x.tensor().dtype()) : self.dtype();
  return !dt.isFloating();
}
} // namespace

Tensor Tensor::maximum(Operand xIn) const & {
  TI::checkBroadcast("maximum", *this, xIn);
  Operand x = std::move(xIn);
  // The reference's tie rule (self + x) / 2 overflows for integers (maximum(int8 100, 100) is -28);
  // it only serves to split gradients, so integers select directly.
  if (integerResult(*this, x)) return lt(x).where(x, *this);
  // (self<x).detach().where(x, (self>x).detach().where(self, (self+x)/2)), left to right
  Tensor less = lt(x).detach();
  Tensor inner = gt(x).detach().where(*this, add(x).div(2));
  return less.where(x, inner);
}

Tensor Tensor::minimum(Operand xIn) const & {
  TI::checkBroadcast("minimum", *this, xIn);
  Operand x = std::move(xIn);
  // -x is no order reversal for integers (unsigned -0 is 0, -INT_MIN is INT_MIN): the reference's
  // minimum(uint8 0, 3) is 3, so integers select directly.
  if (integerResult(*this, x)) return lt(x).where(*this, x);
  Tensor ns = neg();
  Operand nx = x.isTensor() ? Operand(x.tensor().neg()) : Operand(-x.value);
  return ns.maximum(nx).neg();
}

Tensor Tensor::where(Operand inputIn, Operand otherIn) const & {
  Operand input = std::move(inputIn), other = std::move(otherIn);
  auto [x_, y] = TI::broadcasted("where", *this, input);
  auto [x, z] = TI::broadcasted("where", x_, other);
  auto [y2, z2] = TI::broadcasted("where", y, z);
  LAZYJIT_USER_CHECK(x.shape() == y2.shape(), ShapeError, "where: cannot broadcast {} with {}",
                     describe(x), describe(y2));
  return mlWhere(x, y2, z2);
}

Tensor Tensor::lt(Operand xIn) const & {
  Operand x = std::move(xIn);
  auto [a, b] = TI::broadcasted("lt", *this, x, false);
  return mlBinary(Op::CmpLt, a, b);
}
Tensor Tensor::gt(Operand xIn) const & {
  TI::checkBroadcast("gt", *this, xIn); // self first (the op itself computes x < self)
  Operand x = std::move(xIn);
  auto [a, b] = TI::broadcasted("gt", *this, x, true);
  return mlBinary(Op::CmpLt, a, b);
}
Tensor Tensor::ge(Operand x) const & {
  TI::checkBroadcast("ge", *this, x);
  return lt(std::move(x)).sub(1.0, true);
}
Tensor Tensor::le(Operand x) const & {
  TI::checkBroadcast("le", *this, x);
  return gt(std::move(x)).sub(1.0, true);
}
Tensor Tensor::ne(Operand xIn) const & {
  TI::checkBroadcast("ne", *this, xIn);
  Operand x = std::move(xIn);
  return lt(x).add(gt(x));
}
Tensor Tensor::eq(Operand x) const & {
  TI::checkBroadcast("eq", *this, x);
  return ne(std::move(x)).sub(1.0, true);
}

// ---- unary --------------------------------------------------------------------------------------

Tensor Tensor::neg() const & { return mlNeg(*this); }
Tensor Tensor::log() const & { return mlLog(*this); }
Tensor Tensor::log2() const & { return mlLog(*this).div(std::log(2.0)); }
Tensor Tensor::exp() const & { return mlExp(*this); }
Tensor Tensor::exp2() const & { return mlExp(mul(std::log(2.0))); }
Tensor Tensor::relu() const & { return mlRelu(*this); }
Tensor Tensor::sigmoid() const & { return mlSigmoid(*this); }
Tensor Tensor::sin() const & { return mlSin(*this); }
Tensor Tensor::sqrt() const & { return mlSqrt(*this); }
Tensor Tensor::rsqrt() const & { return div(1, true).sqrt(); }
Tensor Tensor::cos() const & { return sub(M_PI / 2, true).sin(); }
Tensor Tensor::tan() const & { return sin().div(cos()); }
Tensor Tensor::trunc() const & { return cast(dtypes::int32).contiguous().cast(dtype()); }
// The comparisons are detached (the reference's are not, so a backward through its ceil/floor
// trips its assertion that every node gets a gradient); they are constant where defined anyway.
Tensor Tensor::ceil() const & {
  Tensor b = trunc();
  return gt(b).detach().where(b.add(1), b);
}
Tensor Tensor::floor() const & {
  Tensor b = trunc();
  return lt(b).detach().where(b.sub(1), b);
}
Tensor Tensor::square() const & { return mul(*this); }
Tensor Tensor::clip(double lo, double hi) const & { return maximum(lo).minimum(hi); }
Tensor Tensor::abs() const & {
  // relu(x) + relu(-x) wraps for unsigned ints (abs(uint8 5) was 0) and is true for bool false
  if (dtype().isUnsigned() || dtype().isBool()) return *this;
  return relu().add(neg().relu());
}
Tensor Tensor::sign() const & { return toFloat().div(toFloat().abs().add(1e-12)).cast(dtype()); }
Tensor Tensor::reciprocal() const & { return div(1.0, true); }
Tensor Tensor::elu(double alpha) const & {
  return relu().sub(exp().sub(1, true).relu().mul(alpha, true));
}
Tensor Tensor::celu(double alpha) const & {
  return maximum(0).add(div(alpha).exp().sub(1).mul(alpha, true).minimum(0));
}
Tensor Tensor::swish() const & { return mul(sigmoid()); }
Tensor Tensor::silu() const & { return swish(); }
Tensor Tensor::relu6() const & { return relu().sub(sub(6).relu()); }
Tensor Tensor::hardswish() const & { return mul(add(3).relu6()).mul(1.0 / 6); }
Tensor Tensor::tanh() const & { return mul(2.0, true).sigmoid().mul(2.0, true).sub(1.0); }
Tensor Tensor::sinh() const & { return exp().sub(neg().exp()).div(2); }
Tensor Tensor::cosh() const & { return exp().add(neg().exp()).div(2); }
Tensor Tensor::atanh() const & { return add(1, true).div(sub(1, true)).log().div(2); }
Tensor Tensor::asinh() const & { return add(square().add(1).sqrt()).log(); }
Tensor Tensor::acosh() const & { return add(square().sub(1).sqrt()).log(); }
Tensor Tensor::hardtanh(double minVal, double maxVal) const & { return clip(minVal, maxVal); }
Tensor Tensor::gelu() const & {
  Tensor half = mul(0.5, true);
  Tensor inner = mul(0.7978845608).mul(mul(0.044715, true).mul(*this).add(1, true));
  return half.mul(inner.tanh().add(1, true));
}
Tensor Tensor::quickGelu() const & { return mul(mul(1.702).sigmoid()); }
Tensor Tensor::leakyrelu(double negSlope) const & { return relu().sub(mul(-negSlope, true).relu()); }
Tensor Tensor::mish() const & { return mul(softplus().tanh()); }
Tensor Tensor::softplus(double beta) const & {
  return mul(beta).exp().add(1, true).log().mul(1 / beta, true);
}
Tensor Tensor::softsign() const & { return div(abs().add(1, true)); }
Tensor Tensor::erf() const & {
  // non-float inputs give float32 (as the reference's math does); half widths are computed in
  // float32 lanes and rounded once
  if (!dtype().isFloating()) return cast(dtypes::float32).erf();
  if (dtype().isHalfWidth()) return cast(dtypes::float32).erf().cast(dtype());
  if (dtype() == dtypes::float64) {
    // to float64 precision: the Maclaurin series below 2.5 (46 terms; at most 2 digits lost to
    // cancellation), 1 - erfc above, erfc by its continued fraction (60 terms, evaluated from the
    // bottom up): erfc(z) = exp(-z^2) / sqrt(pi) / (z + 1/2 / (z + 1 / (z + 3/2 / (z + ...))))
    Tensor x = *this, x2 = x.mul(x);
    double term = 2 / std::sqrt(M_PI);
    std::vector<double> c;
    for (int n = 0; n <= 45; ++n) {
      c.push_back(term / (2 * n + 1));
      term *= -1.0 / (n + 1);
    }
    Tensor series = x2.mul(c[45]);
    for (int n = 44; n >= 1; --n) series = series.add(c[size_t(n)]).mul(x2);
    series = series.add(c[0]).mul(x);
    Tensor z = x.abs().maximum(2.5); // (the fraction is only used above 2.5)
    Tensor f = z;
    for (int k = 60; k >= 1; --k) f = z.add(f.reciprocal().mul(k / 2.0));
    Tensor erfc = z.mul(z).neg().exp().div(f.mul(std::sqrt(M_PI)));
    Tensor sign = x.gt(0.0).sub(x.lt(0.0));
    return x.abs().lt(2.5).where(series, erfc.sub(1.0, true).mul(sign));
  }
  Tensor x = *this, x2 = x.mul(x);
  // |x| < 0.5: the Maclaurin series 2/sqrt(pi) sum (-1)^n x^(2n+1) / (n! (2n + 1)), n = 0..8
  static const double c[] = {1.1283791670955126,     -0.37612638903183754,    0.11283791670955126,
                             -0.026866170645131252,  0.005223977625442188,    -0.0008548327023450853,
                             0.00012055332981789664, -1.4925650358406252e-05, 1.6462114365889246e-06};
  Tensor small = x2.mul(c[8]);
  for (int i = 7; i >= 1; --i) small = small.add(c[i]).mul(x2);
  small = small.add(c[0]).mul(x);
  // above: 1 - erfc(|x|) with Numerical Recipes' erfcc (fractional error under 1.2e-7), signed
  static const double p[] = {-1.26551223, 1.00002368,  0.37409196, 0.09678418,  -0.18628806,
                             0.27886807,  -1.13520398, 1.48851587, -0.82215223, 0.17087277};
  Tensor z = x.abs();
  Tensor t = z.mul(0.5).add(1.0).reciprocal();
  Tensor poly = t.mul(p[9]);
  for (int i = 8; i >= 1; --i) poly = poly.add(p[i]).mul(t);
  poly = poly.add(p[0]);
  Tensor erfc = t.mul(poly.sub(z.mul(z)).exp());
  // (compares as float 0/1 conditions, no bool casts: an erf fused behind a matmul keeps its
  // vector lanes; a NaN x is NaN on either branch)
  Tensor sign = x.gt(0.0).sub(x.lt(0.0));
  return z.lt(0.5).where(small, erfc.sub(1.0, true).mul(sign));
}
Tensor Tensor::hardsigmoid(double alpha, double beta) const & {
  return mul(alpha).add(beta).clip(0, 1);
}

// ---- casts ------------------------------------------------------------------------------------------

Tensor Tensor::cast(DType dt) const & {
  // The reference routes bfloat16 through uint32 bit tricks for devices without bfloat16; every
  // lazyjit device casts bfloat16 directly, so that detour is dropped.
  return dtype() != dt ? mlCast(*this, dt, false) : *this;
}

Tensor Tensor::toFloat() const & { return cast(dtypes::float32); }
Tensor Tensor::half() const & { return cast(dtypes::float16); }

Tensor Tensor::bitcast(DType dt) const & {
  LAZYJIT_USER_CHECK(dtype().itemsize() == dt.itemsize(), DTypeError,
                     "bitcast: cannot bitcast {} to {}: itemsizes {} and {} differ", describe(*this),
                     dt.name(), dtype().itemsize(), dt.itemsize());
  return dtype() != dt ? mlCast(*this, dt, true) : *this;
}

// ---- operators ----------------------------------------------------------------------------------

Tensor operator-(Tensor a) { return std::move(a).neg(); }
Tensor operator+(Tensor a, Operand b) { return std::move(a).add(std::move(b)); }
Tensor operator-(Tensor a, Operand b) { return std::move(a).sub(std::move(b)); }
Tensor operator*(Tensor a, Operand b) { return std::move(a).mul(std::move(b)); }
Tensor operator/(Tensor a, Operand b) { return std::move(a).div(std::move(b)); }
Tensor operator+(double a, Tensor b) { return std::move(b).add(a, true); }
Tensor operator-(double a, Tensor b) { return std::move(b).sub(a, true); }
Tensor operator*(double a, Tensor b) { return std::move(b).mul(a, true); }
Tensor operator/(double a, Tensor b) { return std::move(b).div(a, true); }
Tensor operator<(Tensor a, Operand b) { return std::move(a).lt(std::move(b)); }
Tensor operator>(Tensor a, Operand b) { return std::move(a).gt(std::move(b)); }
Tensor operator<=(Tensor a, Operand b) { return std::move(a).le(std::move(b)); }
Tensor operator>=(Tensor a, Operand b) { return std::move(a).ge(std::move(b)); }
Tensor operator==(Tensor a, Operand b) { return std::move(a).eq(std::move(b)); }
Tensor operator!=(Tensor a, Operand b) { return std::move(a).ne(std::move(b)); }

} // namespace lazyjit

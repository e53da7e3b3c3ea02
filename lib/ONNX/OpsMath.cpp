// ONNX element-wise ops: unary math and activations, binary and variadic arithmetic, comparisons
// and logic, Clip, Pow and CastLike. Functions the kernels lack (erf, atan, asin, ...) are built
// from series and identities exact to float32 (and computed in float32 for half-width inputs).
//
// Comparisons follow numpy: a NaN compares false (and unequal). The graph's CMPLT is unordered
// (true when either operand is NaN), so `a >= b` is `!(a < b)` directly, while `a < b` also
// checks that neither operand is NaN; `x < x` is exactly isnan(x).
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"


#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace lazyjit::onnx::ops {

namespace {

// ---- tensor helpers -----------------------------------------------------------------------------

Tensor maxOf(const Tensor &a, const Tensor &b) { return rawBinary(Op::Max, a, b); }
Tensor minOf(const Tensor &a, const Tensor &b) {
  if (a.dtype().isBool()) return logicalAnd(a, b);
  if (a.dtype().isFloating()) return maxOf(a.neg(), b.neg()).neg();
  return asBool(a.lt(b)).where(a, b);
}

/// Runs `fn` in float32 for half-width inputs (their intermediates would lose too much).
template <typename Fn> Tensor inFloat(const Tensor &x, Fn fn) {
  LAZYJIT_USER_CHECK(x.dtype().isFloating(), DTypeError, "needs a floating-point input, not {}",
                     x.dtype().name());
  if (!x.dtype().isHalfWidth()) return fn(x);
  return fn(x.cast(dtypes::float32)).cast(x.dtype());
}

Tensor signOf(const Tensor &x) {
  DType dt = x.dtype();
  Tensor pos = x.gt(0.0).cast(dt);
  if (dt.isUnsigned() || dt.isBool()) return pos;
  Tensor r = pos.sub(x.lt(0.0).cast(dt));
  return dt.isFloating() ? isNan(x).where(x, r) : r;
}

/// log(1 + u), accurate for small u (Kahan's trick: the rounding of 1 + u cancels out).
Tensor log1p(const Tensor &u) {
  Tensor w = u.add(1.0);
  Tensor wm1 = w.sub(1.0);
  return equal(wm1, scalarOf(u, 0)).where(u, w.log().mul(u).div(wm1));
}

/// trunc toward zero; floats at least 2^mantissa are integers already (as are inf and NaN, which
/// the int64 round trip would not survive).
Tensor truncOf(const Tensor &x) {
  if (!x.dtype().isFloating()) return x;
  double big = 8388608.0; // 2^23
  if (x.dtype() == dtypes::float64) big = 4503599627370496.0;
  if (x.dtype() == dtypes::float16) big = 2048.0;
  if (x.dtype() == dtypes::bfloat16) big = 128.0;
  Tensor t = x.cast(dtypes::int64).cast(x.dtype());
  return asBool(x.abs().gt(big)).where(x, t); // (also true for NaN)
}
Tensor floorOf(const Tensor &x) {
  if (!x.dtype().isFloating()) return x;
  Tensor t = truncOf(x);
  return asBool(x.lt(t)).where(t.sub(1.0), t);
}
Tensor ceilOf(const Tensor &x) {
  if (!x.dtype().isFloating()) return x;
  Tensor t = truncOf(x);
  return asBool(t.lt(x)).where(t.add(1.0), t);
}
/// Round half to even, exactly: from the floor and the (exact) fraction above it.
Tensor roundOf(const Tensor &x) {
  if (!x.dtype().isFloating()) return x;
  Tensor f = floorOf(x);
  Tensor d = x.sub(f);
  Tensor odd = logicalNot(equal(f.sub(floorOf(f.mul(0.5)).mul(2.0)), scalarOf(x, 0)));
  Tensor up = logicalOr(less(scalarOf(x, 0.5), d), logicalAnd(equal(d, scalarOf(x, 0.5)), odd));
  return up.where(f.add(1.0), f);
}

/// erf (Tensor::erf) of a floating input in its own dtype.
Tensor erfOf(const Tensor &xIn) {
  return inFloat(xIn, [](const Tensor &x) { return x.erf(); });
}

/// atan: |x| > 1 through pi/2 - atan(1/x); the rest halved three times (atan(x) = 2 atan(x / (1 +
/// sqrt(1 + x^2)))) to |x| < 0.1, where its series to x^11 is exact to float64.
Tensor atanOf(const Tensor &xIn) {
  return inFloat(xIn, [](const Tensor &x) {
    Tensor big = asBool(x.abs().gt(1.0));
    Tensor z = big.where(x.reciprocal(), x);
    for (int i = 0; i < 3; ++i) z = z.div(z.mul(z).add(1.0).sqrt().add(1.0));
    Tensor z2 = z.mul(z);
    Tensor s = scalarOf(x, -1.0 / 11);
    for (int k = 4; k >= 0; --k) s = s.mul(z2).add((k % 2 ? -1.0 : 1.0) / (2 * k + 1));
    Tensor r = s.mul(z).mul(8.0);
    return big.where(signOf(x).mul(M_PI / 2).sub(r), r);
  });
}
// (no division by a square root that may be 0: under the kernels' fast-math flags x / sqrt(y)
// becomes x * rsqrt(y), which is NaN at y = 0)
/// asin(x) = 2 atan(x / (1 + sqrt(1 - x^2))), the half-angle form.
Tensor asinOf(const Tensor &xIn) {
  return inFloat(xIn, [](const Tensor &x) {
    Tensor c = x.sub(1.0, true).mul(x.add(1.0)).sqrt();
    return atanOf(x.div(c.add(1.0))).mul(2.0);
  });
}
/// acos(x) = 2 atan(sqrt((1 - x) / (1 + x))), and pi minus that of -x below 0.
Tensor acosOf(const Tensor &xIn) {
  return inFloat(xIn, [](const Tensor &x) {
    Tensor a = x.abs();
    Tensor half = atanOf(a.sub(1.0, true).div(a.add(1.0)).sqrt()).mul(2.0);
    return asBool(x.lt(0.0)).where(half.sub(M_PI, true), half);
  });
}
Tensor asinhOf(const Tensor &xIn) {
  return inFloat(xIn, [](const Tensor &x) {
    Tensor a = x.abs();
    Tensor a2 = a.mul(a);
    return log1p(a.add(a2.div(a2.add(1.0).sqrt().add(1.0)))).mul(signOf(x));
  });
}
Tensor atanhOf(const Tensor &xIn) {
  return inFloat(xIn,
                 [](const Tensor &x) { return log1p(x.mul(2.0).div(x.sub(1.0, true))).mul(0.5); });
}
Tensor acoshOf(const Tensor &xIn) {
  return inFloat(xIn, [](const Tensor &x) { return x.add(x.mul(x).sub(1.0).sqrt()).log(); });
}
Tensor softplusOf(const Tensor &xIn) {
  return inFloat(xIn, [](const Tensor &x) { return x.relu().add(log1p(x.abs().neg().exp())); });
}

// ---- unary ops ----------------------------------------------------------------------------------

#define UNARY(Name, expr)                                                                          \
  OpDef {                                                                                          \
    Name, 1, 1, 1, noCheck, [](const NodeContext &, const Inputs &in) -> Out { return {expr}; }    \
  }
#define UNARY_ATTR(Name, check, expr)                                                              \
  OpDef {                                                                                          \
    Name, 1, 1, 1, check, [](const NodeContext &ctx, const Inputs &in) -> Out {                    \
      const NodeProto &n = ctx.node;                                                               \
      const Tensor &x = in[0];                                                                     \
      return {expr};                                                                               \
    }                                                                                              \
  }

void checkAlpha(const NodeContext &ctx) { floatAttr(ctx.node, "alpha", 0); }
void checkSelu(const NodeContext &ctx) {
  floatAttr(ctx.node, "alpha", 0);
  floatAttr(ctx.node, "gamma", 0);
}
void checkHardSigmoid(const NodeContext &ctx) {
  floatAttr(ctx.node, "alpha", 0);
  floatAttr(ctx.node, "beta", 0);
}
void checkShrink(const NodeContext &ctx) {
  floatAttr(ctx.node, "bias", 0);
  floatAttr(ctx.node, "lambd", 0);
}
void checkIsInf(const NodeContext &ctx) {
  intAttr(ctx.node, "detect_positive", 1);
  intAttr(ctx.node, "detect_negative", 1);
}

Tensor isInf(const NodeProto &n, const Tensor &x) {
  Tensor r = Tensor::zeros(x.shape(), TensorOptions(dtypes::boolean, x.device()));
  if (!x.dtype().isFloating()) return r;
  if (intAttr(n, "detect_positive", 1)) r = logicalOr(r, equal(x, scalarOf(x, INFINITY)));
  if (intAttr(n, "detect_negative", 1)) r = logicalOr(r, equal(x, scalarOf(x, -INFINITY)));
  return r;
}

Tensor elu(const Tensor &x, double alpha) {
  return asBool(x.gt(0.0)).where(x, x.exp().sub(1.0).mul(alpha));
}

Tensor shrink(const NodeProto &n, const Tensor &x) {
  double bias = floatAttr(n, "bias", 0), lambd = floatAttr(n, "lambd", 0.5);
  Tensor zero = scalarOf(x, 0);
  return less(x, scalarOf(x, -lambd))
      .where(x.add(bias), less(scalarOf(x, lambd), x).where(x.sub(bias), zero));
}

/// Clip: bounds in attributes before opset 11, optional inputs from it. A NaN stays NaN.
void checkClip(const NodeContext &ctx) {
  for (std::string_view name : {"min", "max"}) {
    if (ctx.opset < 11)
      floatAttr(ctx.node, name, 0);
    else
      LAZYJIT_USER_CHECK(!findAttr(ctx.node, name), UnsupportedError,
                         "attribute '{}' is not supported from opset 11 (the bounds are inputs)",
                         name);
  }
}
Out runClip(const NodeContext &ctx, const Inputs &in) {
  Tensor y = in[0];
  std::optional<Tensor> lo, hi;
  if (ctx.opset < 11) {
    if (findAttr(ctx.node, "min")) lo = scalarOf(y, floatAttr(ctx.node, "min", 0));
    if (findAttr(ctx.node, "max")) hi = scalarOf(y, floatAttr(ctx.node, "max", 0));
  } else {
    if (has(in, 1)) lo = in[1].cast(y.dtype());
    if (has(in, 2)) hi = in[2].cast(y.dtype());
  }
  if (lo) y = asBool(lo->lt(y)).where(y, *lo);
  if (hi) y = asBool(y.lt(*hi)).where(y, *hi);
  return {y};
}

// ---- binary and variadic ops --------------------------------------------------------------------

#define BINARY(Name, expr)                                                                         \
  OpDef {                                                                                          \
    Name, 2, 2, 1, noCheck, [](const NodeContext &, const Inputs &in) -> Out { return {expr}; }    \
  }

void checkMod(const NodeContext &ctx) { intAttr(ctx.node, "fmod", 0); }
/// Mod: C's fmod (truncated division) with fmod=1, else numpy's mod (the sign of the divisor).
Out runMod(const NodeContext &ctx, const Inputs &in) {
  // (the spec requires fmod=1 for floats, as onnxruntime does: numpy's float mod is not ONNX's)
  LAZYJIT_USER_CHECK(!in[0].dtype().isFloat() || intAttr(ctx.node, "fmod", 0) == 1, Error,
                     "Mod of {} needs the attribute fmod=1 (fmod=0 is for integers)",
                     in[0].dtype().name());
  Tensor r = rawBinary(Op::Mod, in[0], in[1]);
  if (intAttr(ctx.node, "fmod", 0) || in[0].dtype().isUnsigned()) return {r};
  Tensor zero = scalarOf(r, 0);
  Tensor fix = logicalAnd(logicalNot(equal(r, zero)),
                          logicalNot(equal(asBool(r.lt(zero)), asBool(in[1].lt(zero)))));
  return {fix.where(r.add(in[1]), r)};
}

void checkBitShift(const NodeContext &ctx) {
  LAZYJIT_USER_CHECK(findAttr(ctx.node, "direction"), Error,
                     "the required attribute 'direction' is missing");
  checkStringAttr(ctx.node, "direction", {"LEFT", "RIGHT"});
}
/// BitShift of unsigned integers: a multiply or divide by 2^y (0 where y is the width or more),
/// 2^y built exactly from y's bits.
Out runBitShift(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  DType dt = x.dtype();
  LAZYJIT_USER_CHECK(dt.isUnsigned(), DTypeError, "BitShift needs unsigned integers, not {}",
                     dt.name());
  Tensor y = in[1].cast(dt);
  int64_t bits = dt.itemsize() * 8;
  Tensor inRange = asBool(y.lt(double(bits)));
  Tensor one = scalarOf(x, 1), two = scalarOf(x, 2);
  Tensor p = one;
  for (int64_t b = 0; (int64_t(1) << b) < bits; ++b) {
    Tensor bit = equal(rawBinary(Op::Mod, y.div(std::ldexp(1.0, int(b))), two), one);
    p = bit.where(scalarOf(x, std::ldexp(1.0, int(int64_t(1) << b))), one).mul(p);
  }
  Tensor r = stringAttr(ctx.node, "direction", "") == "LEFT" ? x.mul(p) : x.div(p);
  return {inRange.where(r, scalarOf(r, 0))};
}

void checkVariadic(const NodeContext &) {}
template <int Kind> Out runVariadic(const NodeContext &, const Inputs &in) {
  Tensor y = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    if constexpr (Kind == 0) y = maxOf(y, in[i]);
    if constexpr (Kind == 1) y = minOf(y, in[i]);
    if constexpr (Kind == 2 || Kind == 3) y = y.add(in[i]);
  }
  if constexpr (Kind == 3) y = keepDType(y.div(double(in.size())), y.dtype());
  return {y};
}

/// Pow: integer bases are computed in float64 and rounded back (exp(y log x) is exact to well
/// within 0.5 there); a float base takes the exponent in its own dtype, and x^0 is 1.
Out runPow(const NodeContext &, const Inputs &in) {
  const Tensor &x = in[0];
  DType dt = x.dtype();
  if (dt.isFloating()) {
    return {inFloat(x, [&](const Tensor &xf) {
      Tensor y = in[1].cast(xf.dtype());
      Tensor r = xf.pow(y);
      return equal(y, scalarOf(y, 0)).where(scalarOf(r, 1), r);
    })};
  }
  Tensor xf = x.cast(dtypes::float64), yf = in[1].cast(dtypes::float64);
  Tensor r = xf.pow(yf);
  r = equal(yf, scalarOf(yf, 0)).where(scalarOf(r, 1), r);
  return {floorOf(r.abs().add(0.5)).mul(signOf(r)).cast(dt)};
}

Out runCastLike(const NodeContext &, const Inputs &in) { return {in[0].cast(in[1].dtype())}; }

// ---- the table ----------------------------------------------------------------------------------

const OpDef opTable[] = {
    // unary math
    UNARY("Acos", acosOf(in[0])),
    UNARY("Asin", asinOf(in[0])),
    UNARY("Atan", atanOf(in[0])),
    UNARY("Acosh", acoshOf(in[0])),
    UNARY("Asinh", asinhOf(in[0])),
    UNARY("Atanh", atanhOf(in[0])),
    UNARY("Sin", inFloat(in[0], [](const Tensor &x) { return x.sin(); })),
    UNARY("Cos", inFloat(in[0], [](const Tensor &x) { return x.cos(); })),
    UNARY("Tan", inFloat(in[0], [](const Tensor &x) { return x.tan(); })),
    UNARY("Sinh", inFloat(in[0], [](const Tensor &x) { return x.sinh(); })),
    UNARY("Cosh", inFloat(in[0], [](const Tensor &x) { return x.cosh(); })),
    UNARY("Ceil", ceilOf(in[0])),
    UNARY("Floor", floorOf(in[0])),
    UNARY("Round", roundOf(in[0])),
    UNARY("Sign", signOf(in[0])),
    UNARY("Erf", erfOf(in[0])),
    UNARY("IsNaN", isNan(in[0])),
    UNARY_ATTR("IsInf", checkIsInf, isInf(n, x)),
    UNARY("Not", logicalNot(in[0])),
    // activations
    UNARY("Softplus", softplusOf(in[0])),
    UNARY("Softsign", in[0].div(in[0].abs().add(1.0))),
    UNARY("Mish", in[0].mul(softplusOf(in[0]).tanh())),
    UNARY_ATTR("Elu", checkAlpha, elu(x, floatAttr(n, "alpha", 1))),
    UNARY_ATTR("Selu", checkSelu,
               elu(x, floatAttr(n, "alpha", 1.67326319217681884765625f))
                   .mul(double(floatAttr(n, "gamma", 1.05070102214813232421875f)))),
    UNARY_ATTR("Celu", checkAlpha,
               [&] {
                 double alpha = floatAttr(n, "alpha", 1);
                 return asBool(x.gt(0.0)).where(x, x.div(alpha).exp().sub(1.0).mul(alpha));
               }()),
    UNARY_ATTR("LeakyRelu", checkAlpha,
               less(x, scalarOf(x, 0)).where(x.mul(double(floatAttr(n, "alpha", 0.01f))), x)),
    UNARY_ATTR("HardSigmoid", checkHardSigmoid,
               x.hardsigmoid(double(floatAttr(n, "alpha", 0.2f)),
                             double(floatAttr(n, "beta", 0.5f)))),
    UNARY("HardSwish", in[0].mul(in[0].mul(1.0 / 6).add(0.5).clip(0, 1))),
    UNARY_ATTR("ThresholdedRelu", checkAlpha,
               less(scalarOf(x, floatAttr(n, "alpha", 1)), x).where(x, scalarOf(x, 0))),
    UNARY_ATTR("Shrink", checkShrink, shrink(n, x)),
    OpDef{"PRelu", 2, 2, 1, noCheck,
          [](const NodeContext &, const Inputs &in)
              -> Out { return {less(in[0], scalarOf(in[0], 0)).where(in[0].mul(in[1]), in[0])}; }},
    OpDef{"Clip", 1, 3, 1, checkClip, runClip},
    // binary and variadic
    OpDef{"Mod", 2, 2, 1, checkMod, runMod},
    OpDef{"BitShift", 2, 2, 1, checkBitShift, runBitShift},
    BINARY("And", logicalAnd(in[0], in[1])),
    BINARY("Or", logicalOr(in[0], in[1])),
    BINARY("Xor", in[0].xorWith(in[1])),
    BINARY("Equal", equal(in[0], in[1])),
    BINARY("Less", less(in[0], in[1])),
    BINARY("Greater", less(in[1], in[0])),
    BINARY("LessOrEqual", lessOrEqual(in[0], in[1])),
    BINARY("GreaterOrEqual", greaterOrEqual(in[0], in[1])),
    OpDef{"Where", 3, 3, 1, noCheck,
          [](const NodeContext &, const Inputs &in) -> Out { return {in[0].where(in[1], in[2])}; }},
    OpDef{"Max", 1, SIZE_MAX, 1, checkVariadic, runVariadic<0>},
    OpDef{"Min", 1, SIZE_MAX, 1, checkVariadic, runVariadic<1>},
    OpDef{"Sum", 1, SIZE_MAX, 1, checkVariadic, runVariadic<2>},
    OpDef{"Mean", 1, SIZE_MAX, 1, checkVariadic, runVariadic<3>},
    OpDef{"Pow", 2, 2, 1, noCheck, runPow},
    OpDef{"CastLike", 2, 2, 1, noCheck, runCastLike},
};

#undef UNARY
#undef UNARY_ATTR
#undef BINARY

} // namespace

std::span<const OpDef> mathOps() { return opTable; }

} // namespace lazyjit::onnx::ops

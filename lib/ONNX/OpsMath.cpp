// ONNX ops: unary and binary math, comparisons and logic, reductions and arg-reductions, and the
// small linear-algebra ops of the same family (Einsum, TopK, Trilu, Det).
//
// Comparisons follow numpy: a NaN compares false (and unequal). The graph's CMPLT is unordered
// (true when either operand is NaN), so `a >= b` is `!(a < b)` directly, while `a < b` also
// checks that neither operand is NaN; `x < x` is exactly isnan(x).
#include "OpUtil.h"

#include "lazyjit/Support/Error.h"
#include "lazyjit/Tensor/Function.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

namespace lazyjit::onnx::ops {

namespace {

// ---- tensor helpers -----------------------------------------------------------------------------

Tensor scalarOf(const Tensor &like, double v, DType dt) {
  return Tensor::scalar(v, TensorOptions(dt, like.device()));
}
Tensor scalarOf(const Tensor &like, double v) { return scalarOf(like, v, like.dtype()); }

/// numpy's broadcast of the inputs' dims.
std::vector<int64_t> broadcastDims(const std::vector<Tensor> &ts) {
  size_t rank = 0;
  for (const Tensor &t : ts) rank = std::max(rank, size_t(t.ndim()));
  std::vector<int64_t> out(rank, 1);
  for (const Tensor &t : ts) {
    std::vector<int64_t> dims = t.intShape();
    size_t off = rank - dims.size();
    for (size_t i = 0; i < dims.size(); ++i) {
      int64_t &o = out[off + i];
      LAZYJIT_USER_CHECK(o == 1 || dims[i] == 1 || dims[i] == o, ShapeError,
                         "cannot broadcast {} with {}", dimsText(dims), dimsText(out));
      if (o == 1) o = dims[i];
    }
  }
  return out;
}

Tensor broadcastTo(const Tensor &t, const std::vector<int64_t> &dims) {
  std::vector<int64_t> td = t.intShape();
  if (td == dims) return t;
  std::vector<int64_t> padded(dims.size() - td.size(), 1);
  padded.insert(padded.end(), td.begin(), td.end());
  return t.reshape(toShape(padded)).expand(toShape(dims));
}

/// A graph binary op the Tensor API does not expose as such (MOD; MAX with IEEE NaN propagation).
/// Inference only: it has no backward.
struct RawBinary : Function {
  Op op;
  explicit RawBinary(Op op) : op(op) {}
  std::string_view name() const override { return op == Op::Mod ? "Mod" : "Maximum"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override { return in[0]->e(opts, op, {in[1]}); }
};
Tensor rawBinary(Op op, const Tensor &a, const Tensor &b) {
  LAZYJIT_USER_CHECK(a.dtype() == b.dtype(), DTypeError,
                     "operands have different dtypes: {} and {}", a.dtype().name(),
                     b.dtype().name());
  std::vector<int64_t> dims = broadcastDims({a, b});
  return Function::apply(std::make_shared<RawBinary>(op),
                         {broadcastTo(a, dims), broadcastTo(b, dims)});
}

/// Tensor's comparisons return 0/1 in their operands' dtype.
Tensor asBool(const Tensor &t) { return t.cast(dtypes::boolean); }
// (where, not add/mul: those turn a constant bool operand into a float32 scalar)
Tensor logicalNot(const Tensor &b) { return b.neg(); }
Tensor logicalAnd(const Tensor &a, const Tensor &b) { return a.where(b, a); }
Tensor logicalOr(const Tensor &a, const Tensor &b) { return a.where(a, b); }

Tensor isNan(const Tensor &x) {
  if (!x.dtype().isFloating())
    return Tensor::zeros(x.shape(), TensorOptions(dtypes::boolean, x.device()));
  return asBool(x.lt(x));
}
/// a < b, false where either is NaN.
Tensor less(const Tensor &a, const Tensor &b) {
  Tensor r = asBool(a.lt(b));
  if (!a.dtype().isFloating()) return r;
  return logicalAnd(r, logicalNot(logicalOr(isNan(a), isNan(b))));
}
Tensor greaterOrEqual(const Tensor &a, const Tensor &b) { return logicalNot(asBool(a.lt(b))); }
Tensor lessOrEqual(const Tensor &a, const Tensor &b) { return logicalNot(asBool(b.lt(a))); }
Tensor equal(const Tensor &a, const Tensor &b) {
  return logicalNot(logicalOr(asBool(a.lt(b)), asBool(b.lt(a))));
}

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

/// erf: its Maclaurin series below 0.5, 1 - erfc (Numerical Recipes' erfcc, fractional error
/// under 1.2e-7) above.
Tensor erfOf(const Tensor &xIn) {
  return inFloat(xIn, [](const Tensor &x) {
    Tensor x2 = x.mul(x);
    // 2/sqrt(pi) * (-1)^n / (n! (2n + 1)), n = 0..8
    static const double c[] = {
        1.1283791670955126,     -0.37612638903183754,    0.11283791670955126,
        -0.026866170645131252,  0.005223977625442188,    -0.0008548327023450853,
        0.00012055332981789664, -1.4925650358406252e-05, 1.6462114365889246e-06};
    Tensor s = scalarOf(x, c[8]);
    for (int i = 7; i >= 0; --i) s = s.mul(x2).add(c[i]);
    Tensor small = s.mul(x);
    Tensor z = x.abs();
    Tensor t = z.mul(0.5).add(1.0).reciprocal();
    static const double p[] = {-1.26551223, 1.00002368,  0.37409196, 0.09678418,  -0.18628806,
                               0.27886807,  -1.13520398, 1.48851587, -0.82215223, 0.17087277};
    Tensor poly = scalarOf(x, p[9]);
    for (int i = 8; i >= 0; --i) poly = poly.mul(t).add(p[i]);
    Tensor erfc = t.mul(poly.sub(z.mul(z)).exp());
    Tensor large = erfc.sub(1.0, true).mul(signOf(x));
    return less(z, scalarOf(x, 0.5)).where(small, large);
  });
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

// ---- reductions ---------------------------------------------------------------------------------

enum class Reduction { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

/// The opset from which the op takes its axes as an input instead of an attribute.
int64_t axesInputOpset(Reduction r) { return r == Reduction::Sum ? 13 : 18; }

template <Reduction R> void checkReduce(const NodeContext &ctx) {
  intAttr(ctx.node, "keepdims", 1);
  intAttr(ctx.node, "noop_with_empty_axes", 0);
  if (ctx.opset < axesInputOpset(R))
    intsAttr(ctx.node, "axes");
  else
    LAZYJIT_USER_CHECK(!findAttr(ctx.node, "axes"), UnsupportedError,
                       "attribute 'axes' is not supported from opset {} (the axes are an input)",
                       axesInputOpset(R));
}

/// The product over the axes by pairwise halving (exact for integers, no logs).
Tensor prodOver(const Tensor &x, const std::vector<int64_t> &axes) {
  std::vector<int64_t> dims = x.intShape();
  std::vector<int64_t> perm, outDims;
  int64_t n = 1;
  for (int64_t i = 0; i < int64_t(dims.size()); ++i)
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) {
      perm.push_back(i);
      outDims.push_back(dims[size_t(i)]);
    }
  for (int64_t a : axes) {
    perm.push_back(a);
    n *= dims[size_t(a)];
  }
  std::vector<int64_t> flat = outDims;
  flat.push_back(n);
  Tensor y = x.permute(perm).reshape(toShape(flat));
  std::vector<std::optional<SIntPair>> keep(outDims.size(), std::nullopt);
  while (n > 1) {
    if (n % 2) {
      auto arg = keep;
      arg.push_back(SIntPair{SInt(0), SInt(1)});
      y = y.pad(arg, 1.0);
      ++n;
    }
    auto lo = keep, hi = keep;
    lo.push_back(SIntPair{SInt(0), SInt(n / 2)});
    hi.push_back(SIntPair{SInt(n / 2), SInt(n)});
    y = y.shrink(lo).mul(y.shrink(hi));
    n /= 2;
  }
  return y.reshape(toShape(outDims));
}

/// The identity of a reduction over no elements (numpy's, as in ONNX's empty-set tests).
double emptyValue(Reduction r, DType dt) {
  auto lowest = [&]() -> double {
    if (dt.isFloating()) return -INFINITY;
    if (dt.isUnsigned() || dt.isBool()) return 0;
    return -std::ldexp(1.0, dt.itemsize() * 8 - 1);
  };
  switch (r) {
  case Reduction::Sum:
  case Reduction::L1:
  case Reduction::L2:
  case Reduction::SumSquare:
    return 0;
  case Reduction::Prod:
    return 1;
  case Reduction::Mean:
    return NAN;
  case Reduction::Max:
    return lowest();
  case Reduction::Min:
    if (dt.isFloating()) return INFINITY;
    if (dt.isBool()) return 1;
    return std::ldexp(1.0, dt.itemsize() * 8 - (dt.isUnsigned() ? 0 : 1)) - 1;
  case Reduction::LogSum:
  case Reduction::LogSumExp:
    return -INFINITY;
  }
  return 0;
}

template <Reduction R> Out runReduce(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  std::optional<std::vector<int64_t>> axes;
  if (ctx.opset < axesInputOpset(R))
    axes = intsAttr(n, "axes");
  else if (has(in, 1))
    axes = hostInts(in[1], "the axes input");
  if (axes && axes->empty()) axes.reset();
  if (!axes && intAttr(n, "noop_with_empty_axes", 0)) return {x};
  std::vector<int64_t> dims = x.intShape();
  int64_t rank = int64_t(dims.size());
  std::vector<int64_t> ax;
  if (axes)
    for (int64_t a : *axes) ax.push_back(normalizeAxis(a, rank, "axis"));
  else
    for (int64_t i = 0; i < rank; ++i) ax.push_back(i);
  std::sort(ax.begin(), ax.end());
  ax.erase(std::unique(ax.begin(), ax.end()), ax.end());
  bool keep = intAttr(n, "keepdims", 1) != 0;
  std::vector<int64_t> kept = dims, dropped;
  for (int64_t a : ax) kept[size_t(a)] = 1;
  for (int64_t i = 0; i < rank; ++i)
    if (!std::binary_search(ax.begin(), ax.end(), i)) dropped.push_back(dims[size_t(i)]);
  const std::vector<int64_t> &outDims = keep ? kept : dropped;
  if (product(dims, 0, dims.size()) == 0)
    return {Tensor::full(toShape(outDims), emptyValue(R, x.dtype()),
                         TensorOptions(x.dtype(), x.device()))};
  Tensor::Axes axv = ax;
  Tensor y;
  switch (R) {
  case Reduction::Sum:
    y = x.sum(axv, true);
    break;
  case Reduction::Mean:
    y = x.dtype().isFloating()
            ? x.mean(axv, true)
            : keepDType(x.sum(axv, true).div(
                            double(product(dims, 0, dims.size()) / product(kept, 0, kept.size()))),
                        x.dtype());
    break;
  case Reduction::Max:
    y = x.max(axv, true);
    break;
  case Reduction::Min:
    y = x.min(axv, true);
    break;
  case Reduction::Prod:
    y = prodOver(x, ax).reshape(toShape(kept));
    break;
  case Reduction::L1:
    y = x.abs().sum(axv, true);
    break;
  case Reduction::L2:
    y = x.mul(x).sum(axv, true).sqrt();
    break;
  case Reduction::LogSum:
    y = x.sum(axv, true).log();
    break;
  case Reduction::LogSumExp: {
    Tensor m = x.max(axv, true);
    m = asBool(m.abs().lt(INFINITY)).where(m, scalarOf(m, 0)); // (no shift by an infinite max)
    y = x.sub(m).exp().sum(axv, true).log().add(m);
    break;
  }
  case Reduction::SumSquare:
    y = x.mul(x).sum(axv, true);
    break;
  }
  return {y.reshape(toShape(outDims))};
}

// ---- arg-reductions, cumsum, hardmax, log-softmax -----------------------------------------------

/// The int64 index of the first maximum (or minimum) along `axis` (a NaN counts as the extreme,
/// as in numpy), with `keepdim`.
Tensor argExtreme(const Tensor &x, int64_t axis, bool keepdim, bool isMax) {
  std::vector<int64_t> dims = x.intShape();
  int64_t nAxis = dims[size_t(axis)];
  LAZYJIT_USER_CHECK(nAxis > 0, ShapeError, "cannot take the arg{} over the empty axis {} of {}",
                     isMax ? "max" : "min", axis, dimsText(dims));
  Tensor::Axes ax = std::vector<int64_t>{axis};
  Tensor m = isMax ? x.max(ax, true) : x.min(ax, true);
  Tensor hit = equal(x, m);
  if (x.dtype().isFloating()) hit = logicalOr(hit, isNan(x));
  std::vector<int64_t> rs(dims.size() - size_t(axis), 1);
  rs[0] = nAxis;
  // n - i for index i: the largest marks the first hit
  Tensor score = Tensor::arange(double(nAxis), 0, -1, TensorOptions(dtypes::int32, x.device()))
                     .reshape(toShape(rs));
  Tensor best = hit.where(score, scalarOf(score, 0)).max(ax, keepdim);
  return best.cast(dtypes::int64).sub(double(nAxis), true);
}

void checkArg(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", 0);
  intAttr(ctx.node, "keepdims", 1);
  intAttr(ctx.node, "select_last_index", 0);
}
template <bool IsMax> Out runArg(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  int64_t axis = normalizeAxis(intAttr(n, "axis", 0), x.ndim(), "axis");
  bool keep = intAttr(n, "keepdims", 1) != 0;
  if (!intAttr(n, "select_last_index", 0)) return {argExtreme(x, axis, keep, IsMax)};
  Tensor idx = argExtreme(x.flip({axis}), axis, keep, IsMax);
  return {idx.sub(double(x.intShape()[size_t(axis)] - 1), true)};
}

void checkCumSum(const NodeContext &ctx) {
  intAttr(ctx.node, "exclusive", 0);
  intAttr(ctx.node, "reverse", 0);
}
Out runCumSum(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t axis = normalizeAxis(int64_t(hostScalar(in[1], "the axis input")), x.ndim(), "axis");
  int64_t len = x.intShape()[size_t(axis)];
  if (len == 0) return {x};
  bool reverse = intAttr(ctx.node, "reverse", 0) != 0;
  Tensor y = reverse ? x.flip({axis}) : x;
  if (intAttr(ctx.node, "exclusive", 0)) {
    // shifted by one: the sum of the elements before each one
    std::vector<std::optional<SIntPair>> pad(size_t(x.ndim()), std::nullopt);
    pad[size_t(axis)] = SIntPair{SInt(1), SInt(0)};
    std::vector<std::optional<SIntPair>> cut(size_t(x.ndim()), std::nullopt);
    cut[size_t(axis)] = SIntPair{SInt(0), SInt(len)};
    y = y.pad(pad).shrink(cut);
  }
  y = y.cumsum(axis);
  return {reverse ? y.flip({axis}) : y};
}

/// Softmax-like ops before opset 13 work on the 2-D view [prod(dims[:axis]), prod(dims[axis:])].
template <typename Fn> Tensor overAxis(const NodeContext &ctx, const Tensor &x, Fn fn) {
  if (ctx.opset >= 13) return fn(x, normalizeAxis(intAttr(ctx.node, "axis", -1), x.ndim(), "axis"));
  std::vector<int64_t> dims = x.intShape();
  size_t at = size_t(normalizeAxis(intAttr(ctx.node, "axis", 1), int64_t(dims.size()), "axis"));
  Tensor flat = x.reshape(toShape({product(dims, 0, at), product(dims, at, dims.size())}));
  return fn(flat, 1).reshape(x.shape());
}
void checkAxisOpset13(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", ctx.opset < 13 ? 1 : -1);
}
Out runHardmax(const NodeContext &ctx, const Inputs &in) {
  return {overAxis(ctx, in[0], [](const Tensor &x, int64_t axis) {
    std::vector<int64_t> dims = x.intShape();
    std::vector<int64_t> rs(dims.size() - size_t(axis), 1);
    rs[0] = dims[size_t(axis)];
    Tensor iota = Tensor::arange(double(rs[0]), TensorOptions(dtypes::int64, x.device()))
                      .reshape(toShape(rs));
    Tensor hit = equal(iota, argExtreme(x, axis, true, true));
    return hit.where(scalarOf(x, 1), scalarOf(x, 0));
  })};
}
Out runLogSoftmax(const NodeContext &ctx, const Inputs &in) {
  return {overAxis(ctx, in[0], [](const Tensor &x, int64_t axis) { return x.logSoftmax(axis); })};
}

// ---- Einsum -------------------------------------------------------------------------------------

void checkEinsum(const NodeContext &ctx) {
  LAZYJIT_USER_CHECK(findAttr(ctx.node, "equation"), Error,
                     "the required attribute 'equation' is missing");
  std::string eq = stringAttr(ctx.node, "equation", "");
  for (char c : eq)
    LAZYJIT_USER_CHECK(std::isalpha(static_cast<unsigned char>(c)) || c == ',' || c == '.' ||
                           c == '-' || c == '>' || c == ' ',
                       Error, "equation '{}' has the character '{}'", eq, c);
}

/// One operand's subscripts with its ellipsis expanded into the letters 0..9 (right-aligned, so
/// that ellipsis dims broadcast as numpy's do).
std::string expandEllipsis(const std::string &term, int64_t rank, int64_t ellRank) {
  size_t at = term.find("...");
  if (at == std::string::npos) return term;
  std::string ell;
  for (int64_t i = ellRank - (rank - int64_t(term.size()) + 3); i < ellRank; ++i)
    ell += char('0' + i);
  return term.substr(0, at) + ell + term.substr(at + 3);
}

Out runEinsum(const NodeContext &ctx, const Inputs &in) {
  std::string eq;
  for (char c : stringAttr(ctx.node, "equation", ""))
    if (c != ' ') eq += c;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t pos = 0;;) {
    size_t c = lhs.find(',', pos);
    terms.push_back(lhs.substr(pos, c == std::string::npos ? std::string::npos : c - pos));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  LAZYJIT_USER_CHECK(terms.size() == in.size(), ShapeError,
                     "equation '{}' has {} operands, but the node has {} inputs", eq, terms.size(),
                     in.size());
  int64_t ellRank = 0;
  for (size_t k = 0; k < terms.size(); ++k)
    if (terms[k].find("...") != std::string::npos)
      ellRank = std::max(ellRank, in[k].ndim() - int64_t(terms[k].size() - 3));
  LAZYJIT_USER_CHECK(ellRank <= 10, UnsupportedError, "an ellipsis of {} dims", ellRank);
  std::map<char, int64_t> sizes, counts;
  std::vector<std::string> subs;
  std::vector<Tensor> ops;
  for (size_t k = 0; k < terms.size(); ++k) {
    std::string s = expandEllipsis(terms[k], in[k].ndim(), ellRank);
    std::vector<int64_t> dims = in[k].intShape();
    LAZYJIT_USER_CHECK(s.size() == dims.size(), ShapeError, "operand {} ('{}') has rank {}, not {}",
                       k, terms[k], dims.size(), s.size());
    for (char c : s) ++counts[c];
    Tensor t = in[k];
    // a letter repeated within one operand takes its diagonal
    for (size_t i = 0; i < s.size(); ++i) {
      size_t j = s.find(s[i], i + 1);
      while (j != std::string::npos) {
        LAZYJIT_USER_CHECK(dims[i] == dims[j], ShapeError, "'{}' has sizes {} and {} in operand {}",
                           s[i], dims[i], dims[j], k);
        std::vector<int64_t> ri(dims.size(), 1), rj(dims.size(), 1);
        ri[i] = dims[i];
        rj[j] = dims[j];
        TensorOptions o(dtypes::int32, t.device());
        Tensor mask = equal(Tensor::arange(double(dims[i]), o).reshape(toShape(ri)),
                            Tensor::arange(double(dims[j]), o).reshape(toShape(rj)));
        t = mask.where(t, scalarOf(t, 0)).sum(std::vector<int64_t>{int64_t(j)});
        s.erase(j, 1);
        dims.erase(dims.begin() + int64_t(j));
        j = s.find(s[i], i + 1);
      }
    }
    for (size_t i = 0; i < s.size(); ++i) {
      auto [it, fresh] = sizes.emplace(s[i], dims[i]);
      if (!fresh && it->second == 1) it->second = dims[i];
      LAZYJIT_USER_CHECK(fresh || dims[i] == 1 || it->second == dims[i], ShapeError,
                         "'{}' has sizes {} and {}", s[i], it->second, dims[i]);
    }
    subs.push_back(s);
    ops.push_back(t);
  }
  std::string out;
  if (arrow != std::string::npos) {
    std::string term = eq.substr(arrow + 2);
    out = expandEllipsis(term, ellRank + int64_t(term.size()) - 3, ellRank);
  } else {
    // implicit output: the ellipsis dims, then the letters used once, in alphabetical order
    for (auto [c, cnt] : counts)
      if (std::isdigit(static_cast<unsigned char>(c)) || cnt == 1) out += c;
  }
  // every letter an axis of one product, in the order of `all`
  std::string all;
  for (auto [c, size] : sizes) all += c;
  Tensor prod;
  for (size_t k = 0; k < ops.size(); ++k) {
    std::vector<int64_t> perm, rs;
    std::vector<int64_t> dims = ops[k].intShape();
    for (char c : all) {
      size_t p = subs[k].find(c);
      if (p != std::string::npos) perm.push_back(int64_t(p));
    }
    for (char c : all) {
      size_t p = subs[k].find(c);
      rs.push_back(p == std::string::npos ? 1 : dims[p]);
    }
    Tensor t = ops[k].permute(perm).reshape(toShape(rs));
    prod = k == 0 ? t : prod.mul(t);
  }
  std::vector<int64_t> sumAxes, outPerm;
  std::string keptLetters;
  for (size_t i = 0; i < all.size(); ++i) {
    if (out.find(all[i]) == std::string::npos)
      sumAxes.push_back(int64_t(i));
    else
      keptLetters += all[i];
  }
  for (char c : out) {
    LAZYJIT_USER_CHECK(keptLetters.find(c) != std::string::npos, ShapeError,
                       "output subscript '{}' is in no operand", c);
    outPerm.push_back(int64_t(keptLetters.find(c)));
  }
  std::vector<int64_t> fullDims;
  for (char c : all) fullDims.push_back(sizes[c]);
  prod = broadcastTo(prod, fullDims);
  if (!sumAxes.empty()) prod = prod.sum(sumAxes);
  return {prod.permute(outPerm)};
}

// ---- TopK, Trilu, CastLike, Det -----------------------------------------------------------------

void checkTopK(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", -1);
  intAttr(ctx.node, "largest", 1);
  intAttr(ctx.node, "sorted", 1);
  LAZYJIT_USER_CHECK(ctx.opset >= 10, UnsupportedError, "TopK before opset 10 (k as an attribute)");
}
/// TopK of a long axis: the ranks' n^2 comparisons would outweigh a sort, so the indices are found
/// on the host (a NaN sorts as the largest, as in numpy) and the values gathered on the device.
Out topKOnHost(const Tensor &v, int64_t k, bool largest) {
  std::vector<int64_t> dims = v.intShape();
  int64_t n = dims.back(), rows = product(dims, 0, dims.size() - 1);
  std::vector<double> vals = v.cast(dtypes::float64).toVector<double>();
  std::vector<int64_t> idx(static_cast<size_t>(rows * k)), order(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    const double *row = vals.data() + r * n;
    auto key = [&](int64_t i) {
      double x = row[i];
      if (std::isnan(x)) x = INFINITY;
      return largest ? -x : x;
    };
    for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
    auto ahead = [&](int64_t a, int64_t b) {
      bool nanA = std::isnan(row[a]), nanB = std::isnan(row[b]);
      if (nanA != nanB) return largest ? nanA : nanB;
      return key(a) < key(b) || (key(a) == key(b) && a < b);
    };
    std::partial_sort(order.begin(), order.begin() + k, order.end(), ahead);
    std::copy(order.begin(), order.begin() + k, idx.begin() + r * k);
  }
  dims.back() = k;
  Tensor idxT = Tensor::fromVector(idx, toShape(dims), v.device());
  return {v.gather(idxT, -1), idxT};
}

/// TopK by ranks: element i's rank is the count of elements ahead of it (larger, or equal and
/// earlier), and output slot p takes the element of rank p; the result is always sorted.
Out runTopK(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", -1), x.ndim(), "axis");
  int64_t k = int64_t(hostScalar(in[1], "k"));
  std::vector<int64_t> dims = x.intShape();
  int64_t nAxis = dims[size_t(axis)];
  LAZYJIT_USER_CHECK(k >= 0 && k <= nAxis, ShapeError, "k = {} is out of range for axis {} of {}",
                     k, axis, dimsText(dims));
  bool largest = intAttr(ctx.node, "largest", 1) != 0;
  int64_t last = x.ndim() - 1;
  Tensor v = x.transpose(axis, last); // (..., n)
  if (nAxis > 4096 && k > 0) {
    Out r = topKOnHost(v, k, largest);
    return {r[0].transpose(axis, last), r[1].transpose(axis, last)};
  }
  Tensor vi = v.unsqueeze(-1), vj = v.unsqueeze(-2); // element i against element j
  Tensor ahead = largest ? less(vi, vj) : less(vj, vi);
  TensorOptions i32(dtypes::int32, x.device());
  Tensor ii = Tensor::arange(double(nAxis), i32).reshape(toShape({nAxis, 1}));
  Tensor jj = Tensor::arange(double(nAxis), i32).reshape(toShape({1, nAxis}));
  Tensor tieFirst = logicalAnd(equal(vi, vj), asBool(jj.lt(ii)));
  Tensor rank = logicalOr(ahead, tieFirst).cast(dtypes::int32).sum(std::vector<int64_t>{-1});
  Tensor slot = Tensor::arange(double(k), i32).reshape(toShape({1, k}));
  Tensor onehot = equal(rank.unsqueeze(-1), slot); // (..., n, k)
  Tensor values = onehot.where(v.unsqueeze(-1), scalarOf(v, 0)).sum(std::vector<int64_t>{-2});
  Tensor idx = onehot.where(ii.cast(dtypes::int64), scalarOf(ii, 0, dtypes::int64))
                   .sum(std::vector<int64_t>{-2});
  return {values.transpose(axis, last), idx.transpose(axis, last)};
}

void checkTrilu(const NodeContext &ctx) { intAttr(ctx.node, "upper", 1); }
Out runTrilu(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  LAZYJIT_USER_CHECK(x.ndim() >= 2, ShapeError, "Trilu needs a rank >= 2 input, not {}", x.ndim());
  int64_t k = has(in, 1) ? int64_t(hostScalar(in[1], "k")) : 0;
  std::vector<int64_t> dims = x.intShape();
  int64_t r = dims[dims.size() - 2], c = dims.back();
  TensorOptions i64(dtypes::int64, x.device());
  Tensor row = Tensor::arange(double(r), i64).reshape(toShape({r, 1}));
  Tensor col = Tensor::arange(double(c), i64).reshape(toShape({1, c})).sub(double(k));
  // upper keeps j - i >= k, lower j - i <= k
  Tensor keep = intAttr(ctx.node, "upper", 1) ? lessOrEqual(row, col) : greaterOrEqual(row, col);
  return {keep.where(x, scalarOf(x, 0))};
}

Out runCastLike(const NodeContext &, const Inputs &in) { return {in[0].cast(in[1].dtype())}; }

/// Det by Gaussian elimination with partial pivoting, batched over the leading dims.
Out runDet(const NodeContext &, const Inputs &in) {
  const Tensor &x = in[0];
  std::vector<int64_t> dims = x.intShape();
  LAZYJIT_USER_CHECK(dims.size() >= 2 && dims.back() == dims[dims.size() - 2], ShapeError,
                     "Det needs square matrices, not {}", dimsText(dims));
  LAZYJIT_USER_CHECK(x.dtype().isFloating(), DTypeError, "Det needs floats, not {}",
                     x.dtype().name());
  int64_t n = dims.back();
  std::vector<int64_t> batch(dims.begin(), dims.end() - 2);
  Tensor a = x.dtype().isHalfWidth() ? x.cast(dtypes::float32) : x;
  Tensor det = Tensor::ones(toShape(batch), TensorOptions(a.dtype(), a.device()));
  TensorOptions i64(dtypes::int64, x.device());
  Tensor rows = Tensor::arange(double(n), i64);   // (n)
  auto column = [&](const Tensor &m, int64_t j) { // (..., n)
    std::vector<std::optional<SIntPair>> cut(dims.size(), std::nullopt);
    cut.back() = SIntPair{SInt(j), SInt(j + 1)};
    return m.shrink(cut).squeeze(-1);
  };
  auto row = [&](const Tensor &m, int64_t j) { // (..., n)
    std::vector<std::optional<SIntPair>> cut(dims.size(), std::nullopt);
    cut[dims.size() - 2] = SIntPair{SInt(j), SInt(j + 1)};
    return m.shrink(cut).squeeze(-2);
  };
  for (int64_t j = 0; j < n; ++j) {
    Tensor cj = column(a, j);
    Tensor score = asBool(rows.lt(double(j))).where(scalarOf(cj, -1), cj.abs());
    Tensor p = argExtreme(score, int64_t(batch.size()), true, true); // (..., 1)
    Tensor ep = equal(rows, p).cast(a.dtype());                      // (..., n)
    Tensor ej = equal(rows, scalarOf(rows, double(j))).cast(a.dtype());
    Tensor rowP = ep.unsqueeze(-1).mul(a).sum(std::vector<int64_t>{-2});
    a = a.add(ej.sub(ep).unsqueeze(-1).mul(rowP.sub(row(a, j)).unsqueeze(-2)));
    Tensor rowJ = row(a, j);
    std::vector<std::optional<SIntPair>> at(dims.size() - 1, std::nullopt);
    at.back() = SIntPair{SInt(j), SInt(j + 1)};
    Tensor pivot = rowJ.shrink(at).reshape(toShape(batch));
    Tensor swapped = logicalNot(equal(p.reshape(toShape(batch)), scalarOf(p, double(j))));
    det = det.mul(pivot).mul(swapped.where(scalarOf(det, -1), scalarOf(det, 1)));
    if (j + 1 == n) break;
    Tensor zero = scalarOf(pivot, 0);
    Tensor pv = pivot.reshape(toShape([&] {
      std::vector<int64_t> b = batch;
      b.push_back(1);
      return b;
    }()));
    Tensor f = asBool(rows.gt(double(j))).where(column(a, j).div(pv), zero);
    f = equal(pv, zero).where(zero, f);
    a = a.sub(f.unsqueeze(-1).mul(row(a, j).unsqueeze(-2)));
    if (n > 8) a.realize();
  }
  return {det.cast(x.dtype())};
}

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
               x.mul(double(floatAttr(n, "alpha", 0.2f)))
                   .add(double(floatAttr(n, "beta", 0.5f)))
                   .clip(0, 1)),
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
    // Shadowed by Ops.cpp's Pow until that one is removed (it truncates integer bases' logs).
    OpDef{"Pow", 2, 2, 1, noCheck, runPow},
    // reductions
    OpDef{"ReduceSum", 1, 2, 1, checkReduce<Reduction::Sum>, runReduce<Reduction::Sum>},
    OpDef{"ReduceMean", 1, 2, 1, checkReduce<Reduction::Mean>, runReduce<Reduction::Mean>},
    OpDef{"ReduceMax", 1, 2, 1, checkReduce<Reduction::Max>, runReduce<Reduction::Max>},
    OpDef{"ReduceMin", 1, 2, 1, checkReduce<Reduction::Min>, runReduce<Reduction::Min>},
    OpDef{"ReduceProd", 1, 2, 1, checkReduce<Reduction::Prod>, runReduce<Reduction::Prod>},
    OpDef{"ReduceL1", 1, 2, 1, checkReduce<Reduction::L1>, runReduce<Reduction::L1>},
    OpDef{"ReduceL2", 1, 2, 1, checkReduce<Reduction::L2>, runReduce<Reduction::L2>},
    OpDef{"ReduceLogSum", 1, 2, 1, checkReduce<Reduction::LogSum>, runReduce<Reduction::LogSum>},
    OpDef{"ReduceLogSumExp", 1, 2, 1, checkReduce<Reduction::LogSumExp>,
          runReduce<Reduction::LogSumExp>},
    OpDef{"ReduceSumSquare", 1, 2, 1, checkReduce<Reduction::SumSquare>,
          runReduce<Reduction::SumSquare>},
    OpDef{"ArgMax", 1, 1, 1, checkArg, runArg<true>},
    OpDef{"ArgMin", 1, 1, 1, checkArg, runArg<false>},
    OpDef{"CumSum", 2, 2, 1, checkCumSum, runCumSum},
    OpDef{"Hardmax", 1, 1, 1, checkAxisOpset13, runHardmax},
    OpDef{"LogSoftmax", 1, 1, 1, checkAxisOpset13, runLogSoftmax},
    // linear algebra and friends
    OpDef{"Einsum", 1, SIZE_MAX, 1, checkEinsum, runEinsum},
    OpDef{"TopK", 2, 2, 2, checkTopK, runTopK},
    OpDef{"Trilu", 1, 2, 1, checkTrilu, runTrilu},
    OpDef{"CastLike", 2, 2, 1, noCheck, runCastLike},
    OpDef{"Det", 1, 1, 1, noCheck, runDet},
};

#undef UNARY
#undef UNARY_ATTR
#undef BINARY

} // namespace

std::span<const OpDef> mathOps() { return opTable; }

} // namespace lazyjit::onnx::ops

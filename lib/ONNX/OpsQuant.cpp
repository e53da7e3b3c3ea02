// ONNX quantization ops: QuantizeLinear and DequantizeLinear (per tensor or per axis),
// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv. Integer
// products accumulate in int32; requantization rounds half to even and saturates as ONNX Runtime
// does, with the divisions done exactly (quantization rounds right at .5).
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"

#include <fmt/format.h>

namespace lazyjit::onnx::ops {

namespace {

// ---- rounding and saturation --------------------------------------------------------------------

/// `a / b` divided exactly (IEEE division rounded to `a`'s float dtype): the kernels may turn a
/// division into a multiplication by a reciprocal, which is off by an ulp, and quantization rounds
/// right at .5, so the quotient is taken in float64 and rounded once to the result dtype.
Tensor exactDiv(const Tensor &a, const Tensor &b) {
  DType dt = a.dtype();
  return a.cast(dtypes::float64).div(b.cast(dtypes::float64)).cast(dt);
}

/// Rounds half to even, as numpy's rint (ONNX's quantization rounding); `x` is float.
Tensor roundHalfEven(const Tensor &x) {
  DType dt = x.dtype();
  Tensor f = x.floor();
  Tensor frac = x - f;
  Tensor odd = f - (f * 0.5).floor() * 2.0; // 1 where f is odd, else 0
  return f + (frac > 0.5).cast(dt) + (frac == 0.5).cast(dt) * odd;
}

/// The values an integer dtype holds, for saturating.
std::pair<double, double> intRange(DType dt, std::string_view what) {
  if (dt == dtypes::uint8) return {0, 255};
  if (dt == dtypes::int8) return {-128, 127};
  if (dt == dtypes::uint16) return {0, 65535};
  if (dt == dtypes::int16) return {-32768, 32767};
  if (dt == dtypes::int32) return {-2147483648.0, 2147483647.0};
  throw DTypeError(
      fmt::format("{} must be an integer tensor of 8 to 32 bits, not {}", what, dt.name()));
}

/// A quantization parameter (scale or zero point) shaped to broadcast against `x` along `axis`:
/// one value (a scalar or a 1-element tensor) applies to all of x, a 1-D tensor holds one value
/// per index of x's dim `axis`.
Tensor alongAxis(const Tensor &p, const Tensor &x, int64_t axis, std::string_view what) {
  if (p.ndim() == 0) return p;
  if (p.ndim() == 1 && numel(p) == 1) return p.reshape(Shape{});
  LAZYJIT_USER_CHECK(p.ndim() == 1, ShapeError, "{} must be a scalar or 1-D, not {}", what,
                     dimsText(p.intShape()));
  std::vector<int64_t> dims = x.intShape();
  int64_t a = normalizeAxis(axis, int64_t(dims.size()), "axis");
  LAZYJIT_USER_CHECK(p.intShape()[0] == dims[size_t(a)], ShapeError,
                     "{} has {} values, but the input {} has {} along axis {}", what,
                     p.intShape()[0], dimsText(dims), dims[size_t(a)], a);
  std::vector<int64_t> shape(dims.size(), 1);
  shape[size_t(a)] = dims[size_t(a)];
  return p.reshape(toShape(shape));
}

/// round(scaled) + zeroPoint, saturated to `dt` and cast to it (`scaled` is float32).
Tensor saturateRound(const Tensor &scaled, const Tensor &zeroPoint, DType dt) {
  auto [lo, hi] = intRange(dt, "the zero point");
  Tensor q = roundHalfEven(scaled);
  if (zeroPoint.defined()) q = q + zeroPoint.cast(q.dtype());
  return q.clip(lo, hi).cast(dt);
}

// ---- quantization -------------------------------------------------------------------------------

int64_t quantAxis(const NodeContext &ctx) {
  return ctx.opset >= 13 ? intAttr(ctx.node, "axis", 1) : 1;
}
void checkQuantAxis(const NodeContext &ctx) { quantAxis(ctx); }

/// y = saturate(round(x / y_scale) + y_zero_point), in y_zero_point's dtype (uint8 without one).
Out runQuantizeLinear(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  DType outType = has(in, 2) ? in[2].dtype() : dtypes::uint8;
  LAZYJIT_USER_CHECK(outType == dtypes::uint8 || outType == dtypes::int8, DTypeError,
                     "the zero point must be uint8 or int8, not {}", outType.name());
  int64_t axis = quantAxis(ctx);
  Tensor scale = alongAxis(in[1], x, axis, "y_scale");
  Tensor zp = has(in, 2) ? alongAxis(in[2], x, axis, "y_zero_point") : Tensor();
  return {saturateRound(exactDiv(x.cast(dtypes::float32), scale), zp, outType)};
}

/// y = (x - x_zero_point) * x_scale, in x_scale's dtype.
Out runDequantizeLinear(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t axis = quantAxis(ctx);
  Tensor scale = alongAxis(in[1], x, axis, "x_scale");
  Tensor v = x.cast(dtypes::int32);
  if (has(in, 2)) v = v - alongAxis(in[2], x, axis, "x_zero_point").cast(dtypes::int32);
  return {v.cast(scale.dtype()) * scale};
}

/// uint8 quantization with the scale and zero point that map [min(x, 0), max(x, 0)] onto [0, 255].
Out runDynamicQuantizeLinear(const NodeContext &, const Inputs &in) {
  Tensor x = in[0].cast(dtypes::float32);
  Tensor lo = x.min().minimum(0.0), hi = x.max().maximum(0.0);
  // an all-zero input gets scale 1 (as in ONNX Runtime), not a 0 that divides into NaNs
  Tensor scale = (hi == lo).where(Tensor::scalar(1), exactDiv(hi - lo, Tensor::scalar(255)));
  Tensor zp = saturateRound(exactDiv(lo.neg(), scale), Tensor(), dtypes::uint8);
  Tensor y = saturateRound(exactDiv(x, scale), zp, dtypes::uint8);
  return {y, scale, zp};
}

/// A matrix operand's zero point as MatMulInteger takes it: one value, or for `a` one per row
/// (1-D [M], or [..., M, 1]), for `b` one per column ([N] or [..., 1, N]).
Tensor matmulZeroPoint(const Tensor &zp, bool isA) {
  if (numel(zp) == 1) return zp.reshape(Shape{}).cast(dtypes::int32);
  Tensor z = zp.cast(dtypes::int32);
  if (isA && z.ndim() == 1) return z.reshape(toShape({z.intShape()[0], 1}));
  return z;
}

/// The int32 product (a - a_zero_point) @ (b - b_zero_point).
Tensor integerMatmul(const Tensor &a, const Tensor &azp, const Tensor &b, const Tensor &bzp) {
  for (const Tensor *t : {&a, &b})
    LAZYJIT_USER_CHECK(t->dtype() == dtypes::uint8 || t->dtype() == dtypes::int8, DTypeError,
                       "the matrices must be uint8 or int8, not {}", t->dtype().name());
  if (azp.defined() && numel(azp) > 1)
    LAZYJIT_USER_CHECK(a.ndim() >= 2, ShapeError,
                       "a 1-D A {} has no rows for the per-row zero points {}",
                       dimsText(a.intShape()), dimsText(azp.intShape()));
  Tensor ai = a.cast(dtypes::int32), bi = b.cast(dtypes::int32);
  if (azp.defined()) ai = ai - matmulZeroPoint(azp, true);
  if (bzp.defined()) bi = bi - matmulZeroPoint(bzp, false);
  return ai.matmul(bi).cast(dtypes::int32);
}

Out runMatMulInteger(const NodeContext &, const Inputs &in) {
  return {
      integerMatmul(in[0], has(in, 2) ? in[2] : Tensor(), in[1], has(in, 3) ? in[3] : Tensor())};
}

/// A per-row (a) or per-column (b) scale shaped like matmulZeroPoint's zero points.
Tensor matmulScale(const Tensor &s, bool isA) {
  if (numel(s) == 1) return s.reshape(Shape{});
  if (isA && s.ndim() == 1) return s.reshape(toShape({s.intShape()[0], 1}));
  return s;
}

/// Requantizes an int32 accumulator: saturate(round(acc * multiplier) + y_zero_point), the
/// multiplier (x_scale * w_scale / y_scale) in float32 as ONNX Runtime computes it.
Tensor requantize(const Tensor &acc, const Tensor &multiplier, const Tensor &yzp) {
  return saturateRound(acc.cast(dtypes::float32) * multiplier, yzp, yzp.dtype());
}

Out runQLinearMatMul(const NodeContext &, const Inputs &in) {
  Tensor acc = integerMatmul(in[0], in[2], in[3], in[5]);
  Tensor mult = matmulScale(in[1].cast(dtypes::float32), true) *
                matmulScale(in[4].cast(dtypes::float32), false);
  Tensor yScale = in[6].cast(dtypes::float32);
  if (numel(yScale) == 1) yScale = yScale.reshape(Shape{});
  Tensor yzp = in[7];
  if (numel(yzp) == 1) yzp = yzp.reshape(Shape{});
  return {requantize(acc, exactDiv(mult, yScale), yzp)};
}

/// Conv's attributes resolved against the input and weight shapes.
struct ConvParams {
  int64_t group = 1;
  std::vector<int64_t> stride, dilation;
  /// In pad2d order (the last spatial dim's begin and end first), as conv2d takes it.
  std::vector<int64_t> padding;
};

void checkConvAttrs(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  checkStringAttr(n, "auto_pad", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
  intsAttr(n, "dilations");
  intsAttr(n, "kernel_shape");
  intsAttr(n, "pads");
  intsAttr(n, "strides");
  LAZYJIT_USER_CHECK(intAttr(n, "group", 1) >= 1, Error, "attribute 'group' must be >= 1");
}

ConvParams convParams(const NodeProto &n, const Tensor &x, const Tensor &w) {
  std::vector<int64_t> xd = x.intShape(), wd = w.intShape();
  LAZYJIT_USER_CHECK(xd.size() >= 3 && xd.size() == wd.size(), ShapeError,
                     "the input {} and the weights {} must have the same rank, at least 3",
                     dimsText(xd), dimsText(wd));
  size_t nsp = xd.size() - 2;
  auto perDim = [&](std::string_view name, int64_t dflt) {
    std::vector<int64_t> v = intsAttr(n, name).value_or(std::vector<int64_t>(nsp, dflt));
    LAZYJIT_USER_CHECK(v.size() == nsp, ShapeError, "attribute '{}' {} must have {} values", name,
                       dimsText(v), nsp);
    return v;
  };
  ConvParams p;
  p.group = intAttr(n, "group", 1);
  p.stride = perDim("strides", 1);
  p.dilation = perDim("dilations", 1);
  std::vector<int64_t> kernel(wd.begin() + 2, wd.end());
  if (auto k = intsAttr(n, "kernel_shape"))
    LAZYJIT_USER_CHECK(*k == kernel, ShapeError, "kernel_shape {} does not match the weights {}",
                       dimsText(*k), dimsText(wd));
  std::vector<int64_t> begin(nsp, 0), end(nsp, 0);
  std::string autoPad = stringAttr(n, "auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    if (auto pads = intsAttr(n, "pads")) {
      LAZYJIT_USER_CHECK(pads->size() == 2 * nsp, ShapeError, "pads {} must have {} values",
                         dimsText(*pads), 2 * nsp);
      for (size_t i = 0; i < nsp; ++i) {
        begin[i] = (*pads)[i];
        end[i] = (*pads)[i + nsp];
      }
    }
  } else if (autoPad != "VALID") {
    for (size_t i = 0; i < nsp; ++i) {
      int64_t in = xd[i + 2], out = (in + p.stride[i] - 1) / p.stride[i];
      int64_t total =
          std::max<int64_t>(0, (out - 1) * p.stride[i] + (kernel[i] - 1) * p.dilation[i] + 1 - in);
      begin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    }
  }
  for (size_t i = nsp; i-- > 0;) {
    LAZYJIT_USER_CHECK(begin[i] >= 0 && end[i] >= 0, ShapeError, "pads must not be negative");
    p.padding.push_back(begin[i]);
    p.padding.push_back(end[i]);
  }
  return p;
}

/// A per-output-channel weight parameter (zero point or scale) of a convolution, shaped to
/// broadcast against the weights [M, C, k...] (or the output [N, M, ...] when `forOutput`).
Tensor perChannel(const Tensor &p, int64_t rank, bool forOutput) {
  if (numel(p) == 1) return p.reshape(Shape{});
  LAZYJIT_USER_CHECK(p.ndim() == 1, ShapeError, "a per-channel parameter must be 1-D, not {}",
                     dimsText(p.intShape()));
  std::vector<int64_t> shape(size_t(rank), 1);
  shape[forOutput ? 1 : 0] = p.intShape()[0];
  return p.reshape(toShape(shape));
}

/// The int32 convolution of (x - x_zero_point) with (w - w_zero_point), padded with x's zero
/// point (so the padding contributes 0).
Tensor integerConv(const NodeContext &ctx, const Tensor &x, const Tensor &xzp, const Tensor &w,
                   const Tensor &wzp) {
  for (const Tensor *t : {&x, &w})
    LAZYJIT_USER_CHECK(t->dtype() == dtypes::uint8 || t->dtype() == dtypes::int8, DTypeError,
                       "the input and the weights must be uint8 or int8, not {}",
                       t->dtype().name());
  ConvParams p = convParams(ctx.node, x, w);
  Tensor xi = x.cast(dtypes::int32), wi = w.cast(dtypes::int32);
  if (xzp.defined()) {
    LAZYJIT_USER_CHECK(numel(xzp) == 1, ShapeError, "x_zero_point must hold one value, not {}",
                       dimsText(xzp.intShape()));
    xi = xi - xzp.reshape(Shape{}).cast(dtypes::int32);
  }
  if (wzp.defined()) wi = wi - perChannel(wzp, w.ndim(), false).cast(dtypes::int32);
  return xi.conv2d(wi, std::nullopt, p.group, p.stride, p.dilation, p.padding).cast(dtypes::int32);
}

Out runConvInteger(const NodeContext &ctx, const Inputs &in) {
  return {
      integerConv(ctx, in[0], has(in, 2) ? in[2] : Tensor(), in[1], has(in, 3) ? in[3] : Tensor())};
}

Out runQLinearConv(const NodeContext &ctx, const Inputs &in) {
  Tensor acc = integerConv(ctx, in[0], in[2], in[3], in[5]);
  int64_t rank = in[0].ndim();
  if (has(in, 8)) acc = acc + perChannel(in[8].cast(dtypes::int32), rank, true);
  LAZYJIT_USER_CHECK(numel(in[1]) == 1 && numel(in[6]) == 1 && numel(in[7]) == 1, ShapeError,
                     "x_scale, y_scale and y_zero_point must hold one value each");
  Tensor mult = in[1].reshape(Shape{}).cast(dtypes::float32) *
                perChannel(in[4].cast(dtypes::float32), rank, true);
  return {requantize(acc, exactDiv(mult, in[6].reshape(Shape{}).cast(dtypes::float32)),
                     in[7].reshape(Shape{}))};
}

// ---- the table ----------------------------------------------------------------------------------

const OpDef opTable[] = {
    OpDef{"QuantizeLinear", 2, 3, 1, checkQuantAxis, runQuantizeLinear},
    OpDef{"DequantizeLinear", 2, 3, 1, checkQuantAxis, runDequantizeLinear},
    OpDef{"DynamicQuantizeLinear", 1, 1, 3, noCheck, runDynamicQuantizeLinear},
    OpDef{"MatMulInteger", 2, 4, 1, noCheck, runMatMulInteger},
    OpDef{"QLinearMatMul", 8, 8, 1, noCheck, runQLinearMatMul},
    OpDef{"ConvInteger", 2, 4, 1, checkConvAttrs, runConvInteger},
    OpDef{"QLinearConv", 8, 9, 1, checkConvAttrs, runQLinearConv},
};

} // namespace

std::span<const OpDef> quantOps() { return opTable; }

} // namespace lazyjit::onnx::ops

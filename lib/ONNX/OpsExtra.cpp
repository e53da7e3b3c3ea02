// ONNX ops that are more than one Tensor expression: quantization (QuantizeLinear ...
// QLinearConv), recurrent nets (RNN, GRU, LSTM, unrolled over the static sequence length), control
// flow (If, Loop, Scan: conditions and trip counts are read on the host and bodies run through the
// importer's subgraph runner), signal processing (windows, DFT, STFT, MelWeightMatrix) and
// NonMaxSuppression (its output size depends on the data, so it runs on the host).
#include "OpUtil.h"

#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <numbers>
#include <numeric>

namespace lazyjit::onnx::ops {

namespace {

using Slices = std::vector<std::optional<SIntPair>>;

// ---- small tensor helpers -----------------------------------------------------------------------

/// x[begin:end] along `axis`.
Tensor sliceAxis(const Tensor &x, int64_t axis, int64_t begin, int64_t end) {
  Slices arg(size_t(x.ndim()));
  arg[size_t(axis)] = SIntPair(begin, end);
  return x.shrink(arg);
}

/// x[i] along `axis`, with that axis removed.
Tensor takeAt(const Tensor &x, int64_t axis, int64_t i) {
  std::vector<int64_t> dims = x.intShape();
  dims.erase(dims.begin() + axis);
  return sliceAxis(x, axis, i, i + 1).reshape(toShape(dims));
}

int64_t numel(const Tensor &t) {
  std::vector<int64_t> d = t.intShape();
  return product(d, 0, d.size());
}

/// Concatenates many tensors along `dim` in groups of 8, so a long list (a sequence unrolled over
/// hundreds of steps) compiles a few small kernels that repeat instead of one kernel with hundreds
/// of inputs.
Tensor catMany(std::vector<Tensor> parts, int64_t dim) {
  constexpr size_t group = 8;
  while (parts.size() > 1) {
    std::vector<Tensor> next;
    for (size_t i = 0; i < parts.size(); i += group) {
      size_t end = std::min(parts.size(), i + group);
      if (end - i == 1) {
        next.push_back(parts[i]);
        continue;
      }
      std::vector<Tensor> rest(parts.begin() + int64_t(i) + 1, parts.begin() + int64_t(end));
      next.push_back(parts[i].cat(std::move(rest), dim));
    }
    parts = std::move(next);
  }
  return parts.at(0);
}

/// Tensor::stack through catMany.
Tensor stackMany(std::vector<Tensor> parts, int64_t dim) {
  LAZYJIT_INTERNAL_CHECK(!parts.empty(), "onnx: stackMany of no tensors");
  int64_t at = dim < 0 ? dim + parts[0].ndim() + 1 : dim;
  for (Tensor &t : parts) t = t.unsqueeze(at);
  return catMany(std::move(parts), at);
}

/// A one-value integer input read on the host.
int64_t hostInt(const Tensor &t, std::string_view what) {
  LAZYJIT_USER_CHECK(t.dtype().isInt(), DTypeError, "{} must be an integer, not {}", what,
                     t.dtype().name());
  LAZYJIT_USER_CHECK(numel(t) == 1, ShapeError, "{} must hold one value, not {}", what,
                     dimsText(t.intShape()));
  return t.toVector<int64_t>()[0];
}

Tensor hostScalarTensor(int64_t v) { return Tensor::fromVector(std::vector<int64_t>{v}, Shape{}); }

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

// ---- recurrent nets -----------------------------------------------------------------------------

enum class Cell { Rnn, Gru, Lstm };

int64_t gateCount(Cell c) { return c == Cell::Rnn ? 1 : c == Cell::Gru ? 3 : 4; }

/// An activation of the activations attribute, with its alpha and beta.
struct Activation {
  std::string name; // lower case
  float alpha = 0, beta = 0;
};

std::string lower(std::string s) {
  for (char &c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// The activation functions recurrent nets take, and the alpha and beta of those that have them
/// (with the defaults of ONNX's ops of the same name).
struct ActivationParams {
  std::string_view name;
  bool usesAlpha, usesBeta;
  float alpha, beta;
};
constexpr ActivationParams activationParams[] = {
    {"relu", false, false, 0, 0},         {"tanh", false, false, 0, 0},
    {"sigmoid", false, false, 0, 0},      {"softsign", false, false, 0, 0},
    {"softplus", false, false, 0, 0},     {"affine", true, true, 1, 0},
    {"leakyrelu", true, false, 0.01f, 0}, {"thresholdedrelu", true, false, 1, 0},
    {"scaledtanh", true, true, 1, 1},     {"hardsigmoid", true, true, 0.2f, 0.5f},
    {"elu", true, false, 1, 0},
};

/// The activations of each direction in order (f; f, g; or f, g, h), with alpha and beta taken in
/// order from activation_alpha/activation_beta by the functions that use them (the defaults of
/// ONNX's activation ops for the rest), as ONNX Runtime does.
std::vector<Activation> activations(const NodeProto &n, Cell cell, int64_t numDirections) {
  std::vector<std::string> names;
  if (const AttributeProto *a = typedAttr(n, "activations", AttributeType::Strings)) {
    names = a->strings;
  } else {
    std::vector<std::string> dflt = cell == Cell::Rnn ? std::vector<std::string>{"Tanh"}
                                    : cell == Cell::Gru
                                        ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                        : std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"};
    for (int64_t d = 0; d < numDirections; ++d) names.insert(names.end(), dflt.begin(), dflt.end());
  }
  size_t per = size_t(cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 2 : 3);
  if (names.size() == per && numDirections == 2)
    names.insert(names.end(), names.begin(), names.end());
  LAZYJIT_USER_CHECK(names.size() == per * size_t(numDirections), Error,
                     "attribute 'activations' has {} functions; {} direction(s) need {}",
                     names.size(), numDirections, per * size_t(numDirections));
  std::vector<float> alphas = floatsAttr(n, "activation_alpha").value_or(std::vector<float>{});
  std::vector<float> betas = floatsAttr(n, "activation_beta").value_or(std::vector<float>{});
  size_t ai = 0, bi = 0;
  std::vector<Activation> out;
  for (const std::string &name : names) {
    Activation act{lower(name)};
    auto known = std::find_if(std::begin(activationParams), std::end(activationParams),
                              [&](const ActivationParams &p) { return p.name == act.name; });
    if (known == std::end(activationParams))
      throw UnsupportedError(fmt::format("activation '{}' is not supported", name));
    act.alpha = known->usesAlpha && ai < alphas.size() ? alphas[ai++] : known->alpha;
    act.beta = known->usesBeta && bi < betas.size() ? betas[bi++] : known->beta;
    out.push_back(act);
  }
  return out;
}

Tensor activate(const Activation &a, const Tensor &x) {
  const std::string &f = a.name;
  if (f == "relu") return x.relu();
  if (f == "tanh") return x.tanh();
  if (f == "sigmoid") return x.sigmoid();
  if (f == "affine") return x * double(a.alpha) + double(a.beta);
  if (f == "leakyrelu") return x.leakyrelu(a.alpha);
  if (f == "thresholdedrelu") return x * (x > double(a.alpha)).cast(x.dtype());
  if (f == "scaledtanh") return (x * double(a.beta)).tanh() * double(a.alpha);
  if (f == "hardsigmoid") return (x * double(a.alpha) + double(a.beta)).clip(0, 1);
  if (f == "elu") return x.elu(a.alpha);
  if (f == "softsign") return x.softsign();
  return x.softplus(); // "softplus"; activations() admits nothing else
}

int64_t numDirections(const NodeProto &n) {
  return stringAttr(n, "direction", "forward") == "bidirectional" ? 2 : 1;
}

template <Cell C> void checkRecurrent(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  checkStringAttr(n, "direction", {"forward", "reverse", "bidirectional"});
  int64_t layout = intAttr(n, "layout", 0);
  LAZYJIT_USER_CHECK(layout == 0 || layout == 1, UnsupportedError,
                     "attribute 'layout' = {} is not supported (0 or 1)", layout);
  LAZYJIT_USER_CHECK(intAttr(n, "hidden_size", 1) >= 1, Error, "hidden_size must be positive");
  if (typedAttr(n, "clip", AttributeType::Float))
    LAZYJIT_USER_CHECK(floatAttr(n, "clip", 0) > 0, Error, "clip must be positive");
  activations(n, C, numDirections(n));
  if (C == Cell::Gru) intAttr(n, "linear_before_reset", 0);
  if (C == Cell::Lstm) intAttr(n, "input_forget", 0);
}

/// One direction's weights: W [G*H, I], R [G*H, H] and the biases Wb, Rb [G*H] (undefined when
/// the node has none).
struct DirectionWeights {
  Tensor w, r, wb, rb;
};

/// The gate pre-activations, clipped when the node has `clip`.
Tensor clipped(const Tensor &x, std::optional<float> clip) {
  return clip ? x.clip(-double(*clip), double(*clip)) : x;
}

/// A recurrent net unrolled over the sequence: Y [T, D, B, H], Y_h [D, B, H], (LSTM) Y_c.
template <Cell C> Out runRecurrent(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  bool batchFirst = intAttr(n, "layout", 0) == 1;
  std::string direction = stringAttr(n, "direction", "forward");
  int64_t dirs = numDirections(n);
  std::vector<Activation> acts = activations(n, C, dirs);
  size_t per = acts.size() / size_t(dirs);
  std::optional<float> clip;
  if (typedAttr(n, "clip", AttributeType::Float)) clip = floatAttr(n, "clip", 0);
  int64_t g = gateCount(C);

  Tensor x = in[0];
  LAZYJIT_USER_CHECK(x.ndim() == 3, ShapeError, "X must be 3-D, not {}", dimsText(x.intShape()));
  if (batchFirst) x = x.permute({1, 0, 2});
  std::vector<int64_t> xd = x.intShape();
  int64_t T = xd[0], B = xd[1], I = xd[2];
  std::vector<int64_t> rd = in[2].intShape();
  LAZYJIT_USER_CHECK(rd.size() == 3 && rd[0] == dirs && rd[1] % g == 0 && rd[1] / g == rd[2],
                     ShapeError, "R {} must be [{}, {}*hidden_size, hidden_size]", dimsText(rd),
                     dirs, g);
  int64_t H = rd[2];
  LAZYJIT_USER_CHECK(intAttr(n, "hidden_size", H) == H, ShapeError,
                     "hidden_size {} does not match R {}", intAttr(n, "hidden_size", H),
                     dimsText(rd));
  LAZYJIT_USER_CHECK(in[1].intShape() == (std::vector<int64_t>{dirs, g * H, I}), ShapeError,
                     "W {} must be [{}, {}, {}]", dimsText(in[1].intShape()), dirs, g * H, I);
  if (has(in, 3))
    LAZYJIT_USER_CHECK(in[3].intShape() == (std::vector<int64_t>{dirs, 2 * g * H}), ShapeError,
                       "B {} must be [{}, {}]", dimsText(in[3].intShape()), dirs, 2 * g * H);

  // sequence_lens: steps at or past a batch entry's length leave its state alone and output 0
  std::vector<int64_t> lens(size_t(B), T);
  if (has(in, 4)) {
    lens = hostInts(in[4], "sequence_lens");
    LAZYJIT_USER_CHECK(int64_t(lens.size()) == B, ShapeError,
                       "sequence_lens has {} values for a batch of {}", lens.size(), B);
    for (int64_t l : lens)
      LAZYJIT_USER_CHECK(l >= 0 && l <= T, ShapeError,
                         "sequence length {} is out of range for {} steps", l, T);
  }
  bool full = std::all_of(lens.begin(), lens.end(), [&](int64_t l) { return l == T; });

  auto initialState = [&](size_t i, std::string_view what) {
    if (!has(in, i)) return Tensor();
    Tensor s = batchFirst ? in[i].permute({1, 0, 2}) : in[i];
    LAZYJIT_USER_CHECK(s.intShape() == (std::vector<int64_t>{dirs, B, H}), ShapeError,
                       "{} {} does not match {} directions, batch {}, hidden size {}", what,
                       dimsText(in[i].intShape()), dirs, B, H);
    return s;
  };
  Tensor h0 = initialState(5, "initial_h");
  Tensor c0 = C == Cell::Lstm ? initialState(6, "initial_c") : Tensor();
  Tensor peep = C == Cell::Lstm && has(in, 7) ? in[7] : Tensor();
  if (peep.defined())
    LAZYJIT_USER_CHECK(peep.intShape() == (std::vector<int64_t>{dirs, 3 * H}), ShapeError,
                       "P {} must be [{}, {}]", dimsText(peep.intShape()), dirs, 3 * H);

  // where reversed steps read: step t of batch entry b is time len_b - 1 - t (t < len_b)
  Tensor reverseIndex;
  if (!full) {
    std::vector<int32_t> idx;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t b = 0; b < B; ++b)
        idx.push_back(int32_t(t < lens[size_t(b)] ? lens[size_t(b)] - 1 - t : t));
    reverseIndex = Tensor::fromVector(idx, toShape({T, B, 1}));
  }
  auto reverseTime = [&](const Tensor &s) {
    if (full) return s.flip({0});
    std::vector<int64_t> d = s.intShape();
    return s.gather(reverseIndex.expand(toShape(d)), 0);
  };
  auto stepMask = [&](int64_t t) {
    std::vector<bool> m;
    for (int64_t b = 0; b < B; ++b) m.push_back(t < lens[size_t(b)]);
    return Tensor::fromVector(m, toShape({B, 1}));
  };

  std::vector<Tensor> ys, hs, cs;
  DType dt = x.dtype();
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const Activation *f = &acts[size_t(d) * per];
    DirectionWeights wts;
    wts.w = takeAt(in[1], 0, d);
    wts.r = takeAt(in[2], 0, d);
    if (has(in, 3)) {
      Tensor b = takeAt(in[3], 0, d);
      wts.wb = sliceAxis(b, 0, 0, g * H);
      wts.rb = sliceAxis(b, 0, g * H, 2 * g * H);
    }
    // the input projections of every step at once: [T, B, G*H]
    Tensor xw = x.matmul(wts.w.transpose());
    if (wts.wb.defined()) xw = xw + wts.wb;
    if (reverse) xw = reverseTime(xw);
    Tensor h = h0.defined() ? takeAt(h0, 0, d) : Tensor::zeros(toShape({B, H}), TensorOptions(dt));
    Tensor c = c0.defined() ? takeAt(c0, 0, d) : Tensor::zeros(toShape({B, H}), TensorOptions(dt));
    Tensor pi, po, pf;
    if (peep.defined()) {
      Tensor p = takeAt(peep, 0, d);
      pi = sliceAxis(p, 0, 0, H);
      po = sliceAxis(p, 0, H, 2 * H);
      pf = sliceAxis(p, 0, 2 * H, 3 * H);
    }
    auto gate = [&](const Tensor &v, int64_t k) { return sliceAxis(v, 1, k * H, (k + 1) * H); };
    // GRU's candidate gate multiplies r into h before (default) or after R_h
    Tensor rt = wts.r.transpose();
    Tensor rtZR = C == Cell::Gru ? sliceAxis(rt, 1, 0, 2 * H) : rt;
    Tensor rtH = C == Cell::Gru ? sliceAxis(rt, 1, 2 * H, 3 * H) : Tensor();
    bool linearBeforeReset = C == Cell::Gru && intAttr(n, "linear_before_reset", 0) != 0;
    bool inputForget = C == Cell::Lstm && intAttr(n, "input_forget", 0) != 0;

    std::vector<Tensor> steps;
    for (int64_t t = 0; t < T; ++t) {
      Tensor xt = takeAt(xw, 0, t);
      Tensor hNew, cNew;
      if (C == Cell::Rnn) {
        Tensor pre = xt + h.matmul(rtZR);
        if (wts.rb.defined()) pre = pre + wts.rb;
        hNew = activate(f[0], clipped(pre, clip));
      } else if (C == Cell::Gru) {
        Tensor hr = h.matmul(rtZR);
        if (wts.rb.defined()) hr = hr + sliceAxis(wts.rb, 0, 0, 2 * H);
        Tensor z = activate(f[0], clipped(gate(xt, 0) + gate(hr, 0), clip));
        Tensor r = activate(f[0], clipped(gate(xt, 1) + gate(hr, 1), clip));
        Tensor rbH = wts.rb.defined() ? sliceAxis(wts.rb, 0, 2 * H, 3 * H) : Tensor();
        Tensor cand;
        if (linearBeforeReset) {
          Tensor hh = h.matmul(rtH);
          if (rbH.defined()) hh = hh + rbH;
          cand = gate(xt, 2) + r * hh;
        } else {
          cand = gate(xt, 2) + (r * h).matmul(rtH);
          if (rbH.defined()) cand = cand + rbH;
        }
        Tensor hc = activate(f[1], clipped(cand, clip));
        hNew = (1.0 - z) * hc + z * h;
      } else {
        Tensor pre = xt + h.matmul(rt);
        if (wts.rb.defined()) pre = pre + wts.rb;
        Tensor gi = gate(pre, 0), go = gate(pre, 1), gf = gate(pre, 2), gc = gate(pre, 3);
        if (pi.defined()) {
          gi = gi + pi * c;
          gf = gf + pf * c;
        }
        Tensor i = activate(f[0], clipped(gi, clip));
        Tensor fg = inputForget ? 1.0 - i : activate(f[0], clipped(gf, clip));
        Tensor cc = activate(f[1], clipped(gc, clip));
        cNew = fg * c + i * cc;
        if (po.defined()) go = go + po * cNew;
        Tensor o = activate(f[0], clipped(go, clip));
        hNew = o * activate(f[2], cNew);
      }
      if (full) {
        steps.push_back(hNew);
        h = hNew;
        if (C == Cell::Lstm) c = cNew;
      } else {
        Tensor m = stepMask(t);
        steps.push_back(m.where(hNew, Tensor::zeros(toShape({B, H}), TensorOptions(dt))));
        h = m.where(hNew, h);
        if (C == Cell::Lstm) c = m.where(cNew, c);
      }
      // keep the lazy graph of a long sequence shallow
      if ((t + 1) % 32 == 0) {
        h.realize();
        if (C == Cell::Lstm) c.realize();
      }
    }
    Tensor y = T > 0 ? stackMany(steps, 0) : Tensor::zeros(toShape({0, B, H}), TensorOptions(dt));
    if (reverse && T > 0) y = reverseTime(y);
    ys.push_back(y);
    hs.push_back(h);
    cs.push_back(c);
  }
  Tensor y = Tensor::stack(ys, 1), yh = Tensor::stack(hs, 0);
  Tensor yc = C == Cell::Lstm ? Tensor::stack(cs, 0) : Tensor();
  if (batchFirst) {
    y = y.permute({2, 0, 1, 3});
    yh = yh.permute({1, 0, 2});
    if (yc.defined()) yc = yc.permute({1, 0, 2});
  }
  if (C == Cell::Lstm) return {y, yh, yc};
  return {y, yh};
}

// ---- control flow -------------------------------------------------------------------------------

const GraphProto &graphAttr(const NodeProto &n, std::string_view name) {
  const AttributeProto *a = typedAttr(n, name, AttributeType::Graph);
  LAZYJIT_USER_CHECK(a && a->g, Error, "the required graph attribute '{}' is missing", name);
  return *a->g;
}

/// Sequences and optionals are not tensors, which is all the importer has.
void checkTensorOutputs(const GraphProto &g) {
  for (const ValueInfoProto &v : g.output)
    LAZYJIT_USER_CHECK(!v.type || v.type->kind == TypeProto::Kind::Tensor ||
                           v.type->kind == TypeProto::Kind::Unset,
                       UnsupportedError,
                       "subgraph '{}' output '{}' is not a tensor (sequences and optionals are "
                       "not supported)",
                       g.name, v.name);
}

void checkIf(const NodeContext &ctx) {
  for (std::string_view b : {"then_branch", "else_branch"}) {
    const GraphProto &g = graphAttr(ctx.node, b);
    checkTensorOutputs(g);
    LAZYJIT_USER_CHECK(g.output.size() == ctx.node.output.size(), Error,
                       "{} has {} outputs, the node {}", b, g.output.size(),
                       ctx.node.output.size());
  }
}

Out runIf(const NodeContext &ctx, const Inputs &in) {
  bool cond = hostScalar(in[0], "the condition") != 0;
  return ctx.runSubgraph(graphAttr(ctx.node, cond ? "then_branch" : "else_branch"), {});
}

/// A scan output of a body that never ran: empty along `axis`, with the rest of the shape and the
/// dtype the body declares for it (float32 and no other dims when it declares none).
Tensor emptyScanOutput(const ValueInfoProto &v, int64_t axis) {
  std::vector<int64_t> dims;
  DType dt = dtypes::float32;
  if (v.type && v.type->kind == TypeProto::Kind::Tensor) {
    if (std::optional<DType> t = toDType(v.type->elemType)) dt = *t;
    if (v.type->shape)
      for (const Dimension &d : *v.type->shape)
        dims.push_back(d.kind == Dimension::Kind::Value ? d.value : 0);
  }
  axis = std::clamp<int64_t>(axis, 0, int64_t(dims.size()));
  dims.insert(dims.begin() + axis, 0);
  return Tensor::zeros(toShape(dims), TensorOptions(dt));
}

void checkLoop(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  const GraphProto &body = graphAttr(n, "body");
  checkTensorOutputs(body);
  LAZYJIT_USER_CHECK(n.input.size() >= 2, Error, "Loop takes M, cond and the loop-carried values");
  LAZYJIT_USER_CHECK(!n.input[0].empty() || !n.input[1].empty(), UnsupportedError,
                     "a Loop without a trip count or a condition never ends");
  size_t carried = n.input.size() - 2;
  LAZYJIT_USER_CHECK(body.input.size() == carried + 2, Error,
                     "the body takes {} inputs; it must take 2 + {} loop-carried values",
                     body.input.size(), carried);
  LAZYJIT_USER_CHECK(body.output.size() >= carried + 1, Error,
                     "the body has {} outputs; it must have 1 + {} loop-carried values and the "
                     "scan outputs",
                     body.output.size(), carried);
  LAZYJIT_USER_CHECK(n.output.size() <= body.output.size() - 1, Error,
                     "the node has {} outputs, but the body makes only {} values", n.output.size(),
                     body.output.size() - 1);
}

Out runLoop(const NodeContext &ctx, const Inputs &in) {
  const GraphProto &body = graphAttr(ctx.node, "body");
  int64_t trips = has(in, 0) ? hostInt(in[0], "the trip count M") : INT64_MAX;
  bool useCond = has(in, 1);
  bool cond = useCond ? hostScalar(in[1], "the condition") != 0 : true;
  Tensor condT =
      useCond ? in[1].reshape(Shape{}) : Tensor::fromVector(std::vector<bool>{true}, Shape{});
  std::vector<Tensor> carried(in.begin() + 2, in.end());
  size_t numCarried = carried.size(), numScan = body.output.size() - 1 - numCarried;
  std::vector<std::vector<Tensor>> scans(numScan);
  for (int64_t i = 0; i < trips && cond; ++i) {
    std::vector<Tensor> args{hostScalarTensor(i), condT};
    args.insert(args.end(), carried.begin(), carried.end());
    std::vector<Tensor> outs = ctx.runSubgraph(body, args);
    condT = outs[0];
    if (useCond) cond = hostScalar(outs[0], "the body's condition") != 0;
    for (size_t k = 0; k < numCarried; ++k) carried[k] = outs[1 + k];
    for (size_t k = 0; k < numScan; ++k) scans[k].push_back(outs[1 + numCarried + k]);
    if ((i + 1) % 32 == 0)
      for (Tensor &t : carried) t.realize();
  }
  Out out = carried;
  for (size_t k = 0; k < numScan; ++k)
    out.push_back(scans[k].empty() ? emptyScanOutput(body.output[1 + numCarried + k], 0)
                                   : stackMany(scans[k], 0));
  return out;
}

/// Scan's axes and directions of its scan inputs and outputs.
struct ScanSpec {
  std::vector<int64_t> inAxes, inDirs, outAxes, outDirs;
};

/// Runs `body` over `steps` slices of `inputs` (each sliced along its axis, in its direction),
/// threading `states`; returns the final states and the scan outputs stacked along their axes.
Out scanOnce(const NodeContext &ctx, const GraphProto &body, std::vector<Tensor> states,
             const std::vector<Tensor> &inputs, const ScanSpec &s, int64_t steps) {
  size_t numStates = states.size();
  LAZYJIT_USER_CHECK(body.output.size() >= numStates, Error,
                     "the body has {} outputs, fewer than the {} state variables",
                     body.output.size(), numStates);
  size_t numOut = body.output.size() - numStates;
  std::vector<std::vector<Tensor>> elems(numOut);
  for (int64_t t = 0; t < steps; ++t) {
    std::vector<Tensor> args = states;
    for (size_t k = 0; k < inputs.size(); ++k)
      args.push_back(takeAt(inputs[k], s.inAxes[k], s.inDirs[k] ? steps - 1 - t : t));
    std::vector<Tensor> outs = ctx.runSubgraph(body, args);
    for (size_t k = 0; k < numStates; ++k) states[k] = outs[k];
    for (size_t k = 0; k < numOut; ++k) elems[k].push_back(outs[numStates + k]);
    if ((t + 1) % 32 == 0)
      for (Tensor &st : states) st.realize();
  }
  Out out = states;
  for (size_t k = 0; k < numOut; ++k) {
    int64_t axis = k < s.outAxes.size() ? s.outAxes[k] : 0;
    if (elems[k].empty()) {
      out.push_back(emptyScanOutput(body.output[numStates + k], axis < 0 ? 0 : axis));
      continue;
    }
    if (k < s.outDirs.size() && s.outDirs[k]) std::reverse(elems[k].begin(), elems[k].end());
    axis = normalizeAxis(axis, elems[k][0].ndim() + 1, "scan_output_axes value");
    out.push_back(stackMany(elems[k], axis));
  }
  return out;
}

void checkScan(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  const GraphProto &body = graphAttr(n, "body");
  checkTensorOutputs(body);
  int64_t m = requiredIntAttr(n, "num_scan_inputs");
  size_t lead = ctx.opset < 9 ? 1 : 0; // Scan-8's sequence_lens
  LAZYJIT_USER_CHECK(m >= 1 && size_t(m) + lead <= n.input.size(), Error,
                     "num_scan_inputs {} does not fit {} inputs", m, n.input.size());
  size_t states = n.input.size() - lead - size_t(m);
  LAZYJIT_USER_CHECK(body.input.size() == states + size_t(m), Error,
                     "the body takes {} inputs, not {} states + {} scan inputs", body.input.size(),
                     states, m);
  auto directions = [&](std::string_view name, size_t count) {
    if (auto d = intsAttr(n, name)) {
      LAZYJIT_USER_CHECK(d->size() == count, Error, "attribute '{}' must have {} values", name,
                         count);
      for (int64_t v : *d)
        LAZYJIT_USER_CHECK(v == 0 || v == 1, Error, "attribute '{}' values must be 0 or 1", name);
    }
  };
  size_t outs = body.output.size() >= states ? body.output.size() - states : 0;
  if (ctx.opset < 9) {
    directions("directions", size_t(m));
  } else {
    directions("scan_input_directions", size_t(m));
    directions("scan_output_directions", outs);
    std::pair<std::string_view, size_t> axes[] = {{"scan_input_axes", size_t(m)},
                                                  {"scan_output_axes", outs}};
    for (auto [name, count] : axes)
      if (auto a = intsAttr(n, name))
        LAZYJIT_USER_CHECK(a->size() == count, Error, "attribute '{}' must have {} values", name,
                           count);
  }
}

Out runScan(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const GraphProto &body = graphAttr(n, "body");
  size_t m = size_t(intAttr(n, "num_scan_inputs", 1));
  if (ctx.opset >= 9) {
    size_t numStates = in.size() - m;
    std::vector<Tensor> states(in.begin(), in.begin() + numStates),
        inputs(in.begin() + numStates, in.end());
    ScanSpec s;
    s.inAxes = intsAttr(n, "scan_input_axes").value_or(std::vector<int64_t>(m, 0));
    s.inDirs = intsAttr(n, "scan_input_directions").value_or(std::vector<int64_t>(m, 0));
    s.outAxes = intsAttr(n, "scan_output_axes").value_or(std::vector<int64_t>{});
    s.outDirs = intsAttr(n, "scan_output_directions").value_or(std::vector<int64_t>{});
    int64_t steps = -1;
    for (size_t k = 0; k < m; ++k) {
      s.inAxes[k] = normalizeAxis(s.inAxes[k], inputs[k].ndim(), "scan_input_axes value");
      int64_t len = inputs[k].intShape()[size_t(s.inAxes[k])];
      LAZYJIT_USER_CHECK(steps < 0 || len == steps, ShapeError,
                         "scan input {} has {} steps, the first {}", k, len, steps);
      steps = len;
    }
    return scanOnce(ctx, body, states, inputs, s, steps);
  }
  // Scan-8: every input has a batch dim first and scan inputs scan their dim 1; each batch entry
  // is scanned on its own, over its sequence length
  size_t numStates = in.size() - 1 - m;
  std::vector<Tensor> states(in.begin() + 1, in.begin() + 1 + numStates);
  std::vector<Tensor> inputs(in.begin() + 1 + numStates, in.end());
  LAZYJIT_USER_CHECK(inputs[0].ndim() >= 2, ShapeError, "scan inputs must be [batch, steps, ...]");
  int64_t batch = inputs[0].intShape()[0], steps = inputs[0].intShape()[1];
  LAZYJIT_USER_CHECK(batch >= 1, ShapeError, "the batch of scan inputs {} is empty",
                     dimsText(inputs[0].intShape()));
  for (const Tensor &t : in)
    if (t.defined())
      LAZYJIT_USER_CHECK(t.ndim() >= 1 && t.intShape()[0] == batch, ShapeError,
                         "every input must have the batch size {} first, not {}", batch,
                         dimsText(t.intShape()));
  std::vector<int64_t> lens(size_t(batch), steps);
  if (has(in, 0)) lens = hostInts(in[0], "sequence_lens");
  ScanSpec s;
  s.inAxes.assign(m, 0);
  s.inDirs = intsAttr(n, "directions").value_or(std::vector<int64_t>(m, 0));
  std::vector<std::vector<Tensor>> perBatch;
  for (int64_t b = 0; b < batch; ++b) {
    int64_t len = lens[size_t(b)];
    LAZYJIT_USER_CHECK(len >= 0 && len <= steps, ShapeError,
                       "sequence length {} is out of range for {} steps", len, steps);
    std::vector<Tensor> st, xs;
    for (const Tensor &t : states) st.push_back(takeAt(t, 0, b));
    for (const Tensor &t : inputs) xs.push_back(sliceAxis(takeAt(t, 0, b), 0, 0, len));
    Out r = scanOnce(ctx, body, st, xs, s, len);
    for (size_t k = numStates; k < r.size(); ++k) // pad short sequences with zeros
      if (len < steps) {
        Slices pad(size_t(r[k].ndim()));
        pad[0] = SIntPair(0, steps - len);
        r[k] = r[k].pad(pad);
      }
    perBatch.push_back(std::move(r));
  }
  Out out;
  for (size_t k = 0; k < perBatch[0].size(); ++k) {
    std::vector<Tensor> parts;
    for (const Out &r : perBatch) parts.push_back(r[k]);
    out.push_back(stackMany(parts, 0));
  }
  return out;
}

// ---- signal processing --------------------------------------------------------------------------

DType outputDataType(const NodeProto &n) {
  auto to = DataType(intAttr(n, "output_datatype", int64_t(DataType::Float)));
  std::optional<DType> dt = toDType(to);
  LAZYJIT_USER_CHECK(dt, UnsupportedError, "output_datatype {} is not supported", int32_t(to));
  return *dt;
}

void checkWindow(const NodeContext &ctx) {
  outputDataType(ctx.node);
  intAttr(ctx.node, "periodic", 1);
}

/// sum_k (-1)^k a_k cos(2 pi k n / N) for n < size, N = size (periodic) or size - 1.
template <double A0, double A1, double A2> Out runWindow(const NodeContext &ctx, const Inputs &in) {
  double sizeValue = hostScalar(in[0], "the window size");
  LAZYJIT_USER_CHECK(sizeValue >= 0, ShapeError, "the window size {} is negative", sizeValue);
  int64_t size = int64_t(sizeValue);
  bool periodic = intAttr(ctx.node, "periodic", 1) != 0;
  double len = double(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    if (len == 0) { // a symmetric window of one value
      w[size_t(i)] = 1;
      continue;
    }
    double a = 2 * std::numbers::pi * double(i) / len;
    w[size_t(i)] = A0 - A1 * std::cos(a) + A2 * std::cos(2 * a);
  }
  return {Tensor::fromValues(w, toShape({size}), TensorOptions(outputDataType(ctx.node)))};
}

/// The DFT along the last dim of a signal of N values (re, and im when defined), zero-padded or
/// truncated to `length`, keeping the first `bins` frequencies; (re, im) in float64.
std::pair<Tensor, Tensor> dftLastDim(const Tensor &re, const Tensor &im, int64_t length,
                                     int64_t bins, bool inverse) {
  int64_t n = re.intShape().back();
  std::vector<double> c(size_t(n * bins), 0), s(size_t(n * bins), 0);
  for (int64_t i = 0; i < std::min(n, length); ++i)
    for (int64_t k = 0; k < bins; ++k) {
      // the angle's turns reduced exactly first, so sin(pi) terms stay tiny
      double a = 2 * std::numbers::pi * double((i * k) % length) / double(length);
      c[size_t(i * bins + k)] = std::cos(a);
      s[size_t(i * bins + k)] = std::sin(a);
    }
  Tensor cm = Tensor::fromVector(c, toShape({n, bins}));
  Tensor sm = Tensor::fromVector(s, toShape({n, bins}));
  Tensor a = re.cast(dtypes::float64);
  Tensor outRe = a.matmul(cm), outIm = a.matmul(sm);
  // forward: e^{-i}: (a + ib)(cos - i sin); inverse: e^{+i}, scaled by 1 / length
  if (inverse) {
    if (im.defined()) {
      Tensor b = im.cast(dtypes::float64);
      outRe = outRe - b.matmul(sm);
      outIm = outIm + b.matmul(cm);
    }
    return {outRe / double(length), outIm / double(length)};
  }
  outIm = outIm.neg();
  if (im.defined()) {
    Tensor b = im.cast(dtypes::float64);
    outRe = outRe + b.matmul(sm);
    outIm = outIm + b.matmul(cm);
  }
  return {outRe, outIm};
}

/// A signal [..., 1 or 2] split into its real and imaginary parts (undefined when real).
std::pair<Tensor, Tensor> splitComplex(const Tensor &x, std::string_view what) {
  int64_t last = x.ndim() - 1;
  int64_t c = x.intShape().back();
  LAZYJIT_USER_CHECK(c == 1 || c == 2, ShapeError,
                     "{} {} must end in a dim of 1 (real) or 2 (complex)", what,
                     dimsText(x.intShape()));
  return {takeAt(x, last, 0), c == 2 ? takeAt(x, last, 1) : Tensor()};
}

void checkDft(const NodeContext &ctx) {
  if (ctx.opset < 20) intAttr(ctx.node, "axis", 1);
  bool inverse = intAttr(ctx.node, "inverse", 0) != 0,
       onesided = intAttr(ctx.node, "onesided", 0) != 0;
  LAZYJIT_USER_CHECK(!(inverse && onesided), UnsupportedError,
                     "an inverse DFT with onesided = 1 is not supported");
}

Out runDft(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t rank = x.ndim();
  LAZYJIT_USER_CHECK(rank >= 2, ShapeError, "the input {} must be [..., signal, 1 or 2]",
                     dimsText(x.intShape()));
  // from opset 20 the axis is an optional input, -2 (the last signal dim) by default
  int64_t axis = ctx.opset >= 20 ? (has(in, 2) ? hostInt(in[2], "the axis input") : -2)
                                 : intAttr(ctx.node, "axis", 1);
  axis = normalizeAxis(axis, rank, "axis");
  LAZYJIT_USER_CHECK(axis != rank - 1, ShapeError, "axis {} is the real/imaginary dim", axis);
  bool inverse = intAttr(ctx.node, "inverse", 0) != 0,
       onesided = intAttr(ctx.node, "onesided", 0) != 0;
  auto [re, im] = splitComplex(x, "the input");
  LAZYJIT_USER_CHECK(!(onesided && im.defined()), UnsupportedError,
                     "a onesided DFT of a complex signal is not supported");
  // the signal axis last
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank - 1; ++i)
    if (i != axis) perm.push_back(i);
  perm.push_back(axis);
  re = re.permute(perm);
  if (im.defined()) im = im.permute(perm);
  int64_t n = x.intShape()[size_t(axis)];
  int64_t length = n;
  if (has(in, 1)) length = int64_t(hostScalar(in[1], "dft_length"));
  LAZYJIT_USER_CHECK(length >= 1, ShapeError, "dft_length {} must be positive", length);
  int64_t bins = onesided ? length / 2 + 1 : length;
  auto [outRe, outIm] = dftLastDim(re, im, length, bins, inverse);
  Tensor y = Tensor::stack({outRe, outIm}, -1).cast(x.dtype());
  // back to the input's order: the signal axis returns to `axis`
  std::vector<int64_t> inv(static_cast<size_t>(rank));
  for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
  inv[size_t(rank - 1)] = rank - 1;
  return {y.permute(inv)};
}

void checkStft(const NodeContext &ctx) { intAttr(ctx.node, "onesided", 1); }

Out runStft(const NodeContext &ctx, const Inputs &in) {
  const Tensor &signal = in[0];
  LAZYJIT_USER_CHECK(signal.ndim() == 3, ShapeError,
                     "the signal {} must be [batch, length, 1 or 2]", dimsText(signal.intShape()));
  int64_t step = int64_t(hostScalar(in[1], "frame_step"));
  LAZYJIT_USER_CHECK(step >= 1, ShapeError, "frame_step {} must be positive", step);
  int64_t frameLength = -1;
  if (has(in, 2)) {
    LAZYJIT_USER_CHECK(in[2].ndim() == 1, ShapeError, "the window {} must be 1-D",
                       dimsText(in[2].intShape()));
    frameLength = in[2].intShape()[0];
  }
  if (has(in, 3)) {
    int64_t given = int64_t(hostScalar(in[3], "frame_length"));
    LAZYJIT_USER_CHECK(frameLength < 0 || given == frameLength, ShapeError,
                       "frame_length {} does not match the window of {}", given, frameLength);
    frameLength = given;
  }
  LAZYJIT_USER_CHECK(frameLength >= 1, ShapeError,
                     "STFT needs a window or a positive frame_length");
  int64_t length = signal.intShape()[1];
  LAZYJIT_USER_CHECK(length >= frameLength, ShapeError,
                     "the signal of {} values is shorter than a frame of {}", length, frameLength);
  int64_t frames = 1 + (length - frameLength) / step;
  std::vector<int32_t> idx;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t i = 0; i < frameLength; ++i) idx.push_back(int32_t(f * step + i));
  Tensor index = Tensor::fromVector(idx, toShape({frames, frameLength}));
  // [batch, frames, frameLength, 1 or 2]
  Tensor framed = signal.getitem({Index::all(), Index::of(index), Index::all()});
  auto [re, im] = splitComplex(framed, "the signal");
  bool onesided = intAttr(ctx.node, "onesided", 1) != 0;
  LAZYJIT_USER_CHECK(!(onesided && im.defined()), UnsupportedError,
                     "a onesided STFT of a complex signal is not supported");
  if (has(in, 2)) {
    Tensor w = in[2].cast(re.dtype());
    re = re * w;
    if (im.defined()) im = im * w;
  }
  int64_t bins = onesided ? frameLength / 2 + 1 : frameLength;
  auto [outRe, outIm] = dftLastDim(re, im, frameLength, bins, false);
  return {Tensor::stack({outRe, outIm}, -1).cast(signal.dtype())};
}

void checkMel(const NodeContext &ctx) { outputDataType(ctx.node); }

/// Triangular filters over the spectrogram bins, as ONNX's reference computes them (the edge
/// frequencies in float32, the mel points in float64, floored to bins).
Out runMelWeightMatrix(const NodeContext &ctx, const Inputs &in) {
  int64_t mels = int64_t(hostScalar(in[0], "num_mel_bins"));
  int64_t dftLength = int64_t(hostScalar(in[1], "dft_length"));
  int64_t sampleRate = int64_t(hostScalar(in[2], "sample_rate"));
  float lowerHz = float(hostScalar(in[3], "lower_edge_hertz"));
  float upperHz = float(hostScalar(in[4], "upper_edge_hertz"));
  LAZYJIT_USER_CHECK(mels >= 1 && dftLength >= 1 && sampleRate >= 1, ShapeError,
                     "num_mel_bins, dft_length and sample_rate must be positive");
  int64_t specBins = dftLength / 2 + 1;
  auto toMel = [](float hz) { return 2595.0f * std::log10(1.0f + hz / 700.0f); };
  float lowMel = toMel(lowerHz), highMel = toMel(upperHz);
  float melStep = (highMel - lowMel) / float(mels + 2);
  std::vector<int64_t> points;
  for (int64_t i = 0; i < mels + 2; ++i) {
    double mel = double(i) * double(melStep) + double(lowMel);
    double hz = 700 * (std::pow(10.0, mel / 2595) - 1);
    points.push_back(int64_t(std::floor(double(dftLength + 1) * hz / double(sampleRate))));
  }
  std::vector<double> w(size_t(specBins * mels), 0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j >= 0 && j < specBins) w[size_t(j * mels + i)] = v;
  };
  for (int64_t i = 0; i < mels; ++i) {
    int64_t lo = points[size_t(i)], center = points[size_t(i + 1)], hi = points[size_t(i + 2)];
    if (center == lo)
      set(center, i, 1);
    else
      for (int64_t j = lo; j <= center; ++j) set(j, i, double(j - lo) / double(center - lo));
    if (hi > center)
      for (int64_t j = center; j < hi; ++j) set(j, i, double(hi - j) / double(hi - center));
  }
  return {
      Tensor::fromValues(w, toShape({specBins, mels}), TensorOptions(outputDataType(ctx.node)))};
}

// ---- NonMaxSuppression --------------------------------------------------------------------------

void checkNms(const NodeContext &ctx) {
  int64_t cpb = intAttr(ctx.node, "center_point_box", 0);
  LAZYJIT_USER_CHECK(cpb == 0 || cpb == 1, Error, "center_point_box must be 0 or 1, not {}", cpb);
}

struct Box {
  float ymin, xmin, ymax, xmax;
};

/// Whether `a` and `b` overlap by more than `threshold` (IoU), as ONNX Runtime decides it: a box
/// of no area suppresses nothing.
bool suppresses(const Box &a, const Box &b, float threshold) {
  float ixmin = std::max(a.xmin, b.xmin), ixmax = std::min(a.xmax, b.xmax);
  float iymin = std::max(a.ymin, b.ymin), iymax = std::min(a.ymax, b.ymax);
  if (ixmin >= ixmax || iymin >= iymax) return false;
  float areaA = (a.ymax - a.ymin) * (a.xmax - a.xmin),
        areaB = (b.ymax - b.ymin) * (b.xmax - b.xmin);
  if (areaA <= 0 || areaB <= 0) return false;
  float inter = (ixmax - ixmin) * (iymax - iymin);
  return inter / (areaA + areaB - inter) > threshold;
}

Out runNms(const NodeContext &ctx, const Inputs &in) {
  std::vector<int64_t> bd = in[0].intShape(), sd = in[1].intShape();
  LAZYJIT_USER_CHECK(bd.size() == 3 && bd[2] == 4, ShapeError,
                     "boxes {} must be [batches, boxes, 4]", dimsText(bd));
  LAZYJIT_USER_CHECK(sd.size() == 3 && sd[0] == bd[0] && sd[2] == bd[1], ShapeError,
                     "scores {} must be [{}, classes, {}]", dimsText(sd), bd[0], bd[1]);
  int64_t maxOut = has(in, 2) ? int64_t(hostScalar(in[2], "max_output_boxes_per_class")) : 0;
  float iouThreshold = has(in, 3) ? float(hostScalar(in[3], "iou_threshold")) : 0;
  std::optional<float> scoreThreshold;
  if (has(in, 4)) scoreThreshold = float(hostScalar(in[4], "score_threshold"));
  bool centered = intAttr(ctx.node, "center_point_box", 0) == 1;
  std::vector<float> boxes = in[0].toVector<float>(), scores = in[1].toVector<float>();
  int64_t batches = bd[0], numBoxes = bd[1], classes = sd[1];
  auto boxAt = [&](int64_t b, int64_t i) {
    const float *p = &boxes[size_t((b * numBoxes + i) * 4)];
    if (centered) return Box{p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
    return Box{std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]),
               std::max(p[1], p[3])};
  };
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const float *s = &scores[size_t((b * classes + c) * numBoxes)];
      std::vector<int64_t> order;
      for (int64_t i = 0; i < numBoxes; ++i)
        if (!scoreThreshold || s[i] > *scoreThreshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return s[x] > s[y]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if (int64_t(kept.size()) >= maxOut) break;
        Box bi = boxAt(b, i);
        if (std::none_of(kept.begin(), kept.end(),
                         [&](int64_t k) { return suppresses(boxAt(b, k), bi, iouThreshold); }))
          kept.push_back(i);
      }
      for (int64_t i : kept) selected.insert(selected.end(), {b, c, i});
    }
  int64_t rows = int64_t(selected.size() / 3);
  if (rows == 0) return {Tensor::zeros(toShape({0, 3}), TensorOptions(dtypes::int64))};
  return {Tensor::fromVector(selected, toShape({rows, 3}))};
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
    OpDef{"RNN", 3, 6, 2, checkRecurrent<Cell::Rnn>, runRecurrent<Cell::Rnn>},
    OpDef{"GRU", 3, 6, 2, checkRecurrent<Cell::Gru>, runRecurrent<Cell::Gru>},
    OpDef{"LSTM", 3, 8, 3, checkRecurrent<Cell::Lstm>, runRecurrent<Cell::Lstm>},
    OpDef{"If", 1, 1, SIZE_MAX, checkIf, runIf},
    OpDef{"Loop", 2, SIZE_MAX, SIZE_MAX, checkLoop, runLoop},
    OpDef{"Scan", 1, SIZE_MAX, SIZE_MAX, checkScan, runScan},
    OpDef{"HannWindow", 1, 1, 1, checkWindow, runWindow<0.5, 0.5, 0.0>},
    OpDef{"HammingWindow", 1, 1, 1, checkWindow, runWindow<25.0 / 46, 21.0 / 46, 0.0>},
    OpDef{"BlackmanWindow", 1, 1, 1, checkWindow, runWindow<0.42, 0.5, 0.08>},
    OpDef{"DFT", 1, 3, 1, checkDft, runDft},
    OpDef{"STFT", 2, 4, 1, checkStft, runStft},
    OpDef{"MelWeightMatrix", 5, 5, 1, checkMel, runMelWeightMatrix},
    OpDef{"NonMaxSuppression", 2, 5, 1, checkNms, runNms},
};

} // namespace

std::span<const OpDef> extraOps() { return opTable; }

} // namespace lazyjit::onnx::ops

// Default-domain ops newer than ONNX 1.12 that current exporters write: GroupNormalization (opset
// 18 and 21), Gelu (20), RMSNormalization (23), the bitwise ops (18), CenterCropPad (18), Col2Im
// (18) and AffineGrid (20), and ONNX Runtime's SimplifiedLayerNormalization, which its exporters
// put in the default domain.
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"

#include <cmath>
#include <fmt/format.h>

namespace lazyjit::onnx::ops {

namespace {

// ---- GroupNormalization, Gelu -------------------------------------------------------------------

/// The precision a normalization computes its statistics in (`stash_type`, default FLOAT).
void checkStashType(const NodeProto &n) {
  int64_t code = intAttr(n, "stash_type", 1);
  std::optional<DType> dt = toDType(DataType(code));
  LAZYJIT_USER_CHECK(dt && dt->isFloating(), UnsupportedError,
                     "attribute 'stash_type' = {} is not a floating point type", code);
}

void checkGroupNorm(const NodeContext &ctx) {
  int64_t groups = requiredIntAttr(ctx.node, "num_groups");
  LAZYJIT_USER_CHECK(groups > 0, Error, "attribute 'num_groups' = {} must be positive", groups);
  floatAttr(ctx.node, "epsilon", 1e-5f);
  if (ctx.opset >= 21) checkStashType(ctx.node);
}
/// Each group of C / num_groups channels normalized over its channels and spatial dims, then
/// scaled and shifted: per channel from opset 21, per group before (GroupNormalization-18, whose
/// scale and bias are [num_groups]).
Out runGroupNorm(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  std::vector<int64_t> dims = x.intShape();
  LAZYJIT_USER_CHECK(dims.size() >= 2, ShapeError, "X must be [N, C, ...], not {}", dimsText(dims));
  int64_t groups = requiredIntAttr(ctx.node, "num_groups"), c = dims[1];
  LAZYJIT_USER_CHECK(c % groups == 0, ShapeError, "{} channels do not split into {} groups", c,
                     groups);
  int64_t paramSize = ctx.opset >= 21 ? c : groups;
  for (size_t i : {1, 2})
    LAZYJIT_USER_CHECK(in[i].intShape() == std::vector<int64_t>{paramSize}, ShapeError,
                       "{} must be [{}] at opset {}, not {}", i == 1 ? "scale" : "bias", paramSize,
                       ctx.opset, dimsText(in[i].intShape()));
  DType stash = x.dtype().isHalfWidth() ? dtypes::float32 : x.dtype();
  if (ctx.opset >= 21) stash = *toDType(DataType(intAttr(ctx.node, "stash_type", 1)));
  double eps = floatAttr(ctx.node, "epsilon", 1e-5f);
  Tensor xs = x.cast(stash).reshape(toShape({dims[0], groups, -1}));
  std::vector<int64_t> last{2};
  Tensor mean = xs.mean(last, true);
  Tensor invStd = xs.var(last, true, 0).add(eps).rsqrt();
  Tensor y = xs.sub(mean).mul(invStd).reshape(x.shape()).cast(x.dtype());
  auto perC = [&](const Tensor &p) {
    Tensor q = ctx.opset >= 21 ? p
                               : p.reshape(toShape({groups, 1}))
                                     .expand(toShape({groups, c / groups}))
                                     .reshape(toShape({c}));
    return perChannel(q, x.ndim());
  };
  return {y.mul(perC(in[1])).add(perC(in[2]))};
}

void checkRMSNorm(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", -1);
  floatAttr(ctx.node, "epsilon", 1e-5f);
  checkStashType(ctx.node);
}
/// X / sqrt(mean(X^2 over the axes from `axis` on) + epsilon) * scale, stage one in stash_type;
/// also 1 / that root mean square. RMSNormalization (opset 23) and ONNX Runtime's
/// SimplifiedLayerNormalization, which its exporters write in the default domain.
Out runRMSNorm(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", -1), x.ndim(), "axis");
  double eps = floatAttr(ctx.node, "epsilon", 1e-5f);
  DType stash = *toDType(DataType(intAttr(ctx.node, "stash_type", 1)));
  Tensor xs = x.cast(stash);
  Tensor invStd = xs.mul(xs).mean(iota(axis, x.ndim()), true).add(eps).rsqrt();
  Tensor y = xs.mul(invStd).cast(x.dtype()).cast(in[1].dtype()).mul(in[1]);
  return {y, invStd};
}

void checkGelu(const NodeContext &ctx) {
  checkStringAttr(ctx.node, "approximate", {"none", "tanh"});
}
Out runGelu(const NodeContext &ctx, const Inputs &in) {
  if (in[0].dtype().isHalfWidth())
    return {runGelu(ctx, {in[0].cast(dtypes::float32)})[0].cast(in[0].dtype())};
  const Tensor &x = in[0];
  if (stringAttr(ctx.node, "approximate", "none") == "tanh") {
    Tensor inner = x.add(x.mul(x).mul(x).mul(0.044715)).mul(std::sqrt(2.0 / M_PI));
    return {x.mul(0.5).mul(inner.tanh().add(1.0))};
  }
  Tensor erf = findOp("Erf")->run(ctx, {x.mul(M_SQRT1_2)})[0];
  return {x.mul(0.5).mul(erf.add(1.0))};
}

// ---- bitwise ops --------------------------------------------------------------------------------
//
// The graph has XOR but no AND or OR; they follow from a + b = (a ^ b) + 2 (a & b), computed in
// int64 for the narrower types and on the halves a = 2 hi + lo for the 64-bit ones (so no sum
// overflows).

/// a / 2 for an even integer a.
Tensor halfOfEven(const Tensor &a) { return rawBinary(Op::Div, a, scalarOf(a, 2)); }

/// a & b of two int64 (or uint64) tensors whose sum cannot overflow.
Tensor andNoOverflow(const Tensor &a, const Tensor &b) {
  return halfOfEven(a.add(b).sub(a.xorWith(b)));
}
Tensor bitAnd(const Tensor &a, const Tensor &b) {
  DType dt = a.dtype();
  if (dt.isBool()) return logicalAnd(a, b);
  if (dt.itemsize() < 8)
    return andNoOverflow(a.cast(dtypes::int64), b.cast(dtypes::int64)).cast(dt);
  auto lowBit = [](const Tensor &t) {
    Tensor m = rawBinary(Op::Mod, t, scalarOf(t, 2)); // -1, 0 or 1
    return m.mul(m);
  };
  Tensor la = lowBit(a), lb = lowBit(b);
  Tensor hi = andNoOverflow(halfOfEven(a.sub(la)), halfOfEven(b.sub(lb)));
  return hi.mul(int64_t(2)).add(la.mul(lb));
}
/// a | b = (a ^ b) + (a & b): the two have no bit in common, so the sum is exact.
Tensor bitOr(const Tensor &a, const Tensor &b) {
  if (a.dtype().isBool()) return logicalOr(a, b);
  return a.xorWith(b).add(bitAnd(a, b));
}
/// ~a = a ^ (all ones); for unsigned types the all-ones value is 0 - 1 (exact in doubles up to 32
/// bits; uint64's is built as (0 - 1) in the kernel's wrapping arithmetic).
Tensor bitNot(const Tensor &a) {
  DType dt = a.dtype();
  if (dt.isBool()) return logicalNot(a);
  if (!dt.isUnsigned()) return a.xorWith(scalarOf(a, -1));
  if (dt.itemsize() < 8) return a.xorWith(scalarOf(a, std::ldexp(1.0, int(dt.itemsize() * 8)) - 1));
  Tensor ones = rawBinary(Op::Sub, scalarOf(a, 0), scalarOf(a, 1));
  return a.xorWith(ones);
}

void checkIntOperands(const Inputs &in) {
  for (const Tensor &t : in)
    LAZYJIT_USER_CHECK(t.dtype().isInt() || t.dtype().isBool(), DTypeError,
                       "needs integer operands, not {}", t.dtype().name());
  if (in.size() == 2)
    LAZYJIT_USER_CHECK(in[0].dtype() == in[1].dtype(), DTypeError,
                       "operands have different dtypes: {} and {}", in[0].dtype().name(),
                       in[1].dtype().name());
}
template <Tensor (*Fn)(const Tensor &, const Tensor &)>
Out runBitwiseBinary(const NodeContext &, const Inputs &in) {
  checkIntOperands(in);
  std::vector<int64_t> dims = broadcastDims(in);
  return {Fn(broadcastTo(in[0], dims), broadcastTo(in[1], dims))};
}
Tensor bitXor(const Tensor &a, const Tensor &b) { return a.xorWith(b); }
Out runBitwiseNot(const NodeContext &, const Inputs &in) {
  checkIntOperands(in);
  return {bitNot(in[0])};
}

// ---- CenterCropPad ------------------------------------------------------------------------------

void checkCenterCropPad(const NodeContext &ctx) { intsAttr(ctx.node, "axes"); }
/// Each axis of `axes` cropped to or padded with zeros to `shape`'s size, centered: a crop starts
/// at floor((in - out) / 2), a pad puts the extra odd element on the right.
Out runCenterCropPad(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  std::vector<int64_t> dims = x.intShape();
  int64_t rank = int64_t(dims.size());
  std::vector<int64_t> shape = hostInts(in[1], "the shape input");
  std::vector<int64_t> axes = intsAttr(ctx.node, "axes").value_or(iota(0, rank));
  LAZYJIT_USER_CHECK(axes.size() == shape.size(), ShapeError,
                     "the shape input has {} values for {} axes", shape.size(), axes.size());
  std::vector<std::optional<SIntPair>> crop(dims.size()), pad(dims.size());
  bool cropped = false, padded = false;
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = size_t(normalizeAxis(axes[i], rank, "axis"));
    int64_t from = dims[a], to = shape[i];
    LAZYJIT_USER_CHECK(to >= 0, ShapeError, "the shape input {} has a negative size",
                       dimsText(shape));
    if (from > to) {
      int64_t begin = (from - to) / 2;
      crop[a] = SIntPair(begin, begin + to);
      cropped = true;
    } else if (from < to) {
      int64_t left = (to - from) / 2;
      pad[a] = SIntPair(left, to - from - left);
      padded = true;
    }
  }
  Tensor y = cropped ? x.shrink(crop) : x;
  return {padded ? y.pad(pad) : y};
}

// ---- Col2Im -------------------------------------------------------------------------------------

void checkCol2Im(const NodeContext &ctx) {
  for (std::string_view a : {"dilations", "pads", "strides"}) intsAttr(ctx.node, a);
}
/// The column blocks [N, C * prod(block), L] summed back into [N, C, image...]: a transposed
/// convolution of the blocks (as C * prod(block) channels over the grid of block positions) with
/// a one-hot kernel per block element, cropped by the pads.
Out runCol2Im(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  std::vector<int64_t> image = hostInts(in[1], "image_shape");
  std::vector<int64_t> block = hostInts(in[2], "block_shape");
  size_t nd = image.size();
  LAZYJIT_USER_CHECK(nd >= 1 && block.size() == nd, ShapeError,
                     "image_shape {} and block_shape {} must have the same length", dimsText(image),
                     dimsText(block));
  std::vector<int64_t> dil = intsAttr(n, "dilations").value_or(std::vector<int64_t>(nd, 1));
  std::vector<int64_t> str = intsAttr(n, "strides").value_or(std::vector<int64_t>(nd, 1));
  std::vector<int64_t> pads = intsAttr(n, "pads").value_or(std::vector<int64_t>(2 * nd, 0));
  LAZYJIT_USER_CHECK(dil.size() == nd && str.size() == nd && pads.size() == 2 * nd, ShapeError,
                     "dilations, strides and pads need {}, {} and {} values", nd, nd, 2 * nd);
  std::vector<int64_t> dims = x.intShape();
  LAZYJIT_USER_CHECK(dims.size() == 3, ShapeError, "input must be [N, C * prod(block), L], not {}",
                     dimsText(dims));
  int64_t k = product(block, 0, nd);
  LAZYJIT_USER_CHECK(k > 0 && dims[1] % k == 0, ShapeError,
                     "{} channels are not a multiple of the block size {}", dims[1], k);
  int64_t c = dims[1] / k;
  std::vector<int64_t> grid, full;
  for (size_t i = 0; i < nd; ++i) {
    LAZYJIT_USER_CHECK(dil[i] > 0 && str[i] > 0 && pads[i] >= 0 && pads[nd + i] >= 0, ShapeError,
                       "dilations, strides must be positive and pads non-negative");
    int64_t padded = image[i] + pads[i] + pads[nd + i];
    int64_t span = dil[i] * (block[i] - 1) + 1;
    LAZYJIT_USER_CHECK(padded >= span, ShapeError,
                       "a block of {} (dilated) does not fit the padded image dim {}", span,
                       padded);
    grid.push_back((padded - span) / str[i] + 1);
    full.push_back(padded);
  }
  LAZYJIT_USER_CHECK(product(grid, 0, nd) == dims[2], ShapeError,
                     "{} blocks do not match the {} block positions of image {}", dims[2],
                     dimsText(grid), dimsText(image));
  DType dt = x.dtype();
  Tensor xf = dt.isFloating() ? x : x.cast(dtypes::float64);
  std::vector<int64_t> inDims{dims[0], dims[1]};
  inDims.insert(inDims.end(), grid.begin(), grid.end());
  std::vector<int64_t> wDims{k, 1};
  wDims.insert(wDims.end(), block.begin(), block.end());
  std::vector<int64_t> rep(wDims.size(), 1);
  rep[0] = c;
  Tensor w =
      Tensor::eye(k, TensorOptions(xf.dtype(), x.device())).reshape(toShape(wDims)).repeat(rep);
  Tensor y = xf.reshape(toShape(inDims)).convTranspose2d(w, std::nullopt, c, str, dil, {0});
  // the transposed convolution covers (grid - 1) * stride + span of each padded dim
  std::vector<int64_t> got = y.intShape();
  std::vector<std::optional<SIntPair>> fill(nd + 2), crop(nd + 2);
  for (size_t i = 0; i < nd; ++i) {
    fill[2 + i] = SIntPair(0, full[i] - got[2 + i]);
    crop[2 + i] = SIntPair(pads[i], pads[i] + image[i]);
  }
  y = y.pad(fill).shrink(crop);
  return {dt.isFloating() ? y : y.cast(dt)};
}

// ---- AffineGrid ---------------------------------------------------------------------------------

void checkAffineGrid(const NodeContext &ctx) { intAttr(ctx.node, "align_corners", 0); }
/// The positions of `s` evenly spaced points in [-1, 1]: the corner pixels' centers with
/// align_corners, else the centers of `s` equal cells.
Tensor gridCoords(int64_t s, bool alignCorners, const TensorOptions &opts) {
  Tensor i = Tensor::arange(double(s), opts);
  if (alignCorners) return s > 1 ? i.mul(2.0 / double(s - 1)).sub(1.0) : i.mul(0.0);
  return i.mul(2.0).add(1.0).div(double(s)).sub(1.0);
}
/// The grid [N, (D,) H, W, 2 or 3] of theta applied to the homogeneous positions (x, y, (z,) 1),
/// x along W.
Out runAffineGrid(const NodeContext &ctx, const Inputs &in) {
  const Tensor &theta = in[0];
  std::vector<int64_t> size = hostInts(in[1], "the size input");
  std::vector<int64_t> td = theta.intShape();
  LAZYJIT_USER_CHECK(size.size() == 4 || size.size() == 5, ShapeError,
                     "size {} must be [N, C, H, W] or [N, C, D, H, W]", dimsText(size));
  int64_t nd = int64_t(size.size()) - 2;
  LAZYJIT_USER_CHECK(td == (std::vector<int64_t>{size[0], nd, nd + 1}), ShapeError,
                     "theta {} must be [{}, {}, {}] for size {}", dimsText(td), size[0], nd, nd + 1,
                     dimsText(size));
  LAZYJIT_USER_CHECK(theta.dtype().isFloating(), DTypeError, "theta must be float, not {}",
                     theta.dtype().name());
  bool align = intAttr(ctx.node, "align_corners", 0) != 0;
  TensorOptions opts(theta.dtype(), theta.device());
  std::vector<int64_t> spatial(size.begin() + 2, size.end());
  // coordinate j (x, y, z) runs along spatial dim nd - 1 - j
  std::vector<Tensor> coords;
  for (int64_t j = 0; j < nd; ++j) {
    size_t axis = size_t(nd - 1 - j);
    std::vector<int64_t> shape(size_t(nd), 1);
    shape[axis] = spatial[axis];
    coords.push_back(
        gridCoords(spatial[axis], align, opts).reshape(toShape(shape)).expand(toShape(spatial)));
  }
  coords.push_back(Tensor::ones(toShape(spatial), opts));
  int64_t points = product(spatial, 0, spatial.size());
  Tensor base = Tensor::stack(coords, nd).reshape(toShape({1, points, nd + 1}));
  std::vector<int64_t> outDims{size[0]};
  outDims.insert(outDims.end(), spatial.begin(), spatial.end());
  outDims.push_back(nd);
  return {base.matmul(theta.permute({0, 2, 1})).reshape(toShape(outDims))};
}

const OpDef opTable[] = {
    OpDef{"GroupNormalization", 3, 3, 1, checkGroupNorm, runGroupNorm},
    OpDef{"Gelu", 1, 1, 1, checkGelu, runGelu},
    OpDef{"RMSNormalization", 2, 2, 1, checkRMSNorm, runRMSNorm},
    OpDef{"SimplifiedLayerNormalization", 2, 2, 2, checkRMSNorm, runRMSNorm},
    OpDef{"BitwiseAnd", 2, 2, 1, noCheck, runBitwiseBinary<bitAnd>},
    OpDef{"BitwiseOr", 2, 2, 1, noCheck, runBitwiseBinary<bitOr>},
    OpDef{"BitwiseXor", 2, 2, 1, noCheck, runBitwiseBinary<bitXor>},
    OpDef{"BitwiseNot", 1, 1, 1, noCheck, runBitwiseNot},
    OpDef{"CenterCropPad", 2, 2, 1, checkCenterCropPad, runCenterCropPad},
    OpDef{"Col2Im", 3, 3, 1, checkCol2Im, runCol2Im},
    OpDef{"AffineGrid", 2, 2, 1, checkAffineGrid, runAffineGrid},
};

} // namespace

std::span<const OpDef> newOps() { return opTable; }

} // namespace lazyjit::onnx::ops

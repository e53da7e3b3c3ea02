// ONNX ops: slicing, splitting, gathers and scatters, padding, tiling, index generation.
//
// Gathers and scatters are dense: an index tensor is compared against an arange over the indexed
// axis, and the one-hot mask selects (where) and reduces (sum, max, a product tree), so they fuse
// into kernels instead of running index loops on the host. Only ops whose output shape depends on
// data (NonZero, Compress, Unique) read their input on the host.
#include "OpUtil.h"

#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

namespace lazyjit::onnx::ops {

namespace {

using ShrinkArg = std::vector<std::optional<SIntPair>>;

// ---- helpers ------------------------------------------------------------------------------------

/// A 0-d constant of `dt` on `like`'s device (a where() branch must be a tensor: a scalar operand
/// would take the condition's dtype).
Tensor constant(double v, DType dt, const Tensor &like) {
  return Tensor::full({}, v, TensorOptions(dt, like.device()));
}

/// cond ? a : b, elementwise with broadcasting; cond is any 0/1 tensor.
Tensor select(const Tensor &cond, const Tensor &a, const Tensor &b) {
  return cond.cast(dtypes::boolean).where(a, b);
}

/// 0, 1, ..., n-1 (int32) along dim `at` of a rank-`rank` tensor whose other dims are 1.
Tensor iota(int64_t n, int64_t rank, int64_t at, const Tensor &like) {
  LAZYJIT_USER_CHECK(n < (int64_t(1) << 31), ShapeError, "an indexed dim of {} is too large", n);
  std::vector<int64_t> dims(static_cast<size_t>(rank), 1);
  dims[size_t(at)] = n;
  return Tensor::arange(0, double(n), 1, TensorOptions(dtypes::int32, like.device()))
      .reshape(toShape(dims));
}

/// Integer indices into a dim of size `n` with the negative ones counted from the end (int64).
Tensor wrapNegative(const Tensor &idx, int64_t n) {
  LAZYJIT_USER_CHECK(idx.dtype().isInt(), DTypeError, "indices must be integers, not {}",
                     idx.dtype().name());
  Tensor i = idx.cast(dtypes::int64);
  return select(i.lt(0), i.add(double(n)), i);
}

ShrinkArg rangeOn(int64_t rank, int64_t axis, int64_t lo, int64_t hi) {
  ShrinkArg arg(static_cast<size_t>(rank));
  arg[size_t(axis)] = SIntPair(lo, hi);
  return arg;
}

std::vector<int64_t> concat(std::vector<int64_t> a, const std::vector<int64_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
std::vector<int64_t> slice(const std::vector<int64_t> &v, size_t from, size_t to) {
  return std::vector<int64_t>(v.begin() + int64_t(from), v.begin() + int64_t(to));
}

/// Sum over `axis` of `x` where `mask` is set (each output position has at most one set entry, so
/// the sum picks it). Masked-out entries are not multiplied by 0, so an inf or NaN there does not
/// leak.
Tensor maskedPick(const Tensor &mask, const Tensor &x, int64_t axis) {
  if (x.dtype() == dtypes::boolean)
    return maskedPick(mask, x.cast(dtypes::uint8), axis).cast(dtypes::boolean);
  return select(mask, x, constant(0, x.dtype(), x)).sum(std::vector<int64_t>{axis});
}

/// numpy.take: x's slices along `axis` at integer indices `idx` (any shape, negative ones from the
/// end); the result's dims are x's with `axis` replaced by idx's. Indices out of range give 0.
Tensor takeDense(const Tensor &x, int64_t axis, const Tensor &idx) {
  std::vector<int64_t> dims = x.intShape(), idims = idx.intShape();
  int64_t n = dims[size_t(axis)], k = product(idims, 0, idims.size());
  int64_t pre = product(dims, 0, size_t(axis)), post = product(dims, size_t(axis) + 1, dims.size());
  Tensor mask = wrapNegative(idx, n).reshape(toShape({1, k, 1, 1})).eq(iota(n, 4, 2, x));
  Tensor picked = maskedPick(mask, x.reshape(toShape({pre, 1, n, post})), 2);
  std::vector<int64_t> out = concat(concat(slice(dims, 0, size_t(axis)), idims),
                                    slice(dims, size_t(axis) + 1, dims.size()));
  return picked.reshape(toShape(out));
}

/// x's slices along `axis` at in-range host indices, as a concatenation of the contiguous runs in
/// them (ascending, descending or repeated): what Pad's reflect/edge modes, Compress and Unique
/// need, without a mask over the axis. Many short runs go through takeDense instead.
Tensor takeRuns(const Tensor &x, int64_t axis, const std::vector<int64_t> &idx) {
  std::vector<int64_t> dims = x.intShape();
  int64_t rank = x.ndim();
  if (idx.empty()) return x.shrink(rangeOn(rank, axis, 0, 0));
  struct Run {
    int64_t first, len, step;
  };
  std::vector<Run> runs;
  for (size_t i = 0; i < idx.size();) {
    int64_t step = i + 1 < idx.size() ? idx[i + 1] - idx[i] : 1;
    if (step < -1 || step > 1) step = 1;
    size_t j = i + 1;
    while (j < idx.size() && idx[j] - idx[j - 1] == step) ++j;
    runs.push_back({idx[i], int64_t(j - i), step});
    i = j;
  }
  if (runs.size() > 16) {
    Tensor t = Tensor::fromVector(idx, toShape({int64_t(idx.size())}), x.device());
    return takeDense(x, axis, t);
  }
  std::vector<Tensor> pieces;
  for (const Run &r : runs) {
    Tensor p;
    if (r.step == 0) {
      std::vector<int64_t> to = dims;
      to[size_t(axis)] = r.len;
      p = x.shrink(rangeOn(rank, axis, r.first, r.first + 1)).expand(toShape(to));
    } else if (r.step > 0) {
      p = x.shrink(rangeOn(rank, axis, r.first, r.first + r.len));
    } else {
      p = x.shrink(rangeOn(rank, axis, r.first - r.len + 1, r.first + 1)).flip({axis});
    }
    pieces.push_back(p);
  }
  if (pieces.size() == 1) return pieces[0];
  Tensor first = pieces[0];
  pieces.erase(pieces.begin());
  return first.cat(pieces, axis);
}

/// The product over `axis` (kept, as size 1) by a tree of halvings, exact for integers.
Tensor prodAlong(Tensor x, int64_t axis) {
  int64_t rank = x.ndim();
  std::vector<int64_t> dims = x.intShape();
  int64_t n = dims[size_t(axis)];
  if (n == 0) {
    dims[size_t(axis)] = 1;
    return Tensor::ones(toShape(dims), TensorOptions(x.dtype(), x.device()));
  }
  while (n > 1) {
    if (n % 2 != 0) {
      ShrinkArg pad(static_cast<size_t>(rank));
      pad[size_t(axis)] = SIntPair(0, 1);
      x = x.pad(pad, 1);
      ++n;
    }
    int64_t half = n / 2;
    x = x.shrink(rangeOn(rank, axis, 0, half)).mul(x.shrink(rangeOn(rank, axis, half, n)));
    n = half;
  }
  return x;
}

/// Scatter with `reduction`: `mask` has data's shape with a dim K (the updates) inserted at
/// `kAxis`, set where update k lands on a position; `upd` broadcasts to mask's shape. "none" takes
/// the last update that lands on a position, "add"/"mul" accumulate every one (duplicates too),
/// "max"/"min" keep the extreme of the data and the updates.
Tensor scatterDense(const Tensor &data, const Tensor &maskIn, const Tensor &updIn, int64_t kAxis,
                    std::string_view reduction) {
  DType dt = data.dtype();
  if (dt == dtypes::boolean) // add is or, mul is and
    return scatterDense(data.cast(dtypes::uint8), maskIn, updIn.cast(dtypes::uint8), kAxis,
                        reduction)
        .cast(dtypes::boolean);
  Tensor mask = maskIn.cast(dtypes::boolean), upd = updIn.cast(dt);
  std::vector<int64_t> axes{kAxis};
  if (reduction == "add") return data.add(mask.where(upd, constant(0, dt, data)).sum(axes));
  if (reduction == "mul")
    return data.mul(prodAlong(mask.where(upd, constant(1, dt, data)), kAxis).reshape(data.shape()));
  if (reduction == "max" || reduction == "min") {
    // positions an update misses compare the data with itself, so no identity value is needed
    Tensor cand = mask.where(upd, data.unsqueeze(kAxis));
    return reduction == "max" ? data.maximum(cand.max(axes)) : data.minimum(cand.min(axes));
  }
  // none: the last update that lands on a position wins (ONNX leaves duplicates undefined; this
  // is what its reference loop does)
  int64_t k = mask.intShape()[size_t(kAxis)];
  Tensor order = iota(k, mask.ndim(), kAxis, data).cast(dtypes::int64);
  Tensor cand = mask.where(order, constant(-1, dtypes::int64, data));
  Tensor last = cand.max(axes, true);
  Tensor value = cand.eq(last).cast(dtypes::boolean).where(upd, constant(0, dt, data)).sum(axes);
  std::vector<int64_t> hitDims = mask.intShape();
  hitDims.erase(hitDims.begin() + kAxis);
  return select(last.reshape(toShape(hitDims)).ge(0), value, data);
}

/// The row-major linear index of each index tuple idx[..., :] (int64, negative entries counted
/// from the end) into dims, as a tensor of idx's shape without its last dim.
Tensor linearIndex(const Tensor &idx, const std::vector<int64_t> &dims) {
  std::vector<int64_t> idims = idx.intShape();
  int64_t m = int64_t(dims.size());
  LAZYJIT_USER_CHECK(idx.dtype().isInt(), DTypeError, "indices must be integers, not {}",
                     idx.dtype().name());
  std::vector<int64_t> strides(static_cast<size_t>(m), 1);
  for (int64_t i = m - 2; i >= 0; --i)
    strides[size_t(i)] = strides[size_t(i + 1)] * dims[size_t(i + 1)];
  Shape lastDim = toShape({m});
  Tensor i = idx.cast(dtypes::int64);
  Tensor sizes = Tensor::fromVector(dims, lastDim, idx.device());
  i = select(i.lt(0), i.add(sizes), i);
  return i.mul(Tensor::fromVector(strides, lastDim, idx.device())).sum(std::vector<int64_t>{-1});
}

std::string_view reductionOf(const NodeContext &ctx) {
  const AttributeProto *a = typedAttr(ctx.node, "reduction", AttributeType::String);
  return a ? std::string_view(a->s) : std::string_view("none");
}
void checkReduction(const NodeContext &ctx) {
  if (ctx.opset >= 18)
    checkStringAttr(ctx.node, "reduction", {"none", "add", "mul", "max", "min"});
  else if (ctx.opset >= 16)
    checkStringAttr(ctx.node, "reduction", {"none", "add", "mul"});
  else
    checkStringAttr(ctx.node, "reduction", {"none"});
}

// ---- shapes and constants -----------------------------------------------------------------------

void checkShape(const NodeContext &ctx) {
  intAttr(ctx.node, "start", 0);
  intAttr(ctx.node, "end", 0);
}
Out runShape(const NodeContext &ctx, const Inputs &in) {
  std::vector<int64_t> dims = in[0].intShape();
  int64_t rank = int64_t(dims.size());
  auto clampAxis = [&](int64_t a) { return std::clamp(a < 0 ? a + rank : a, int64_t(0), rank); };
  int64_t start = 0, end = rank;
  if (ctx.opset >= 15) {
    start = clampAxis(intAttr(ctx.node, "start", 0));
    end = findAttr(ctx.node, "end") ? clampAxis(intAttr(ctx.node, "end", rank)) : rank;
  }
  std::vector<int64_t> out =
      start < end ? slice(dims, size_t(start), size_t(end)) : std::vector<int64_t>{};
  return {Tensor::fromVector(out, toShape({int64_t(out.size())}))};
}

Out runSize(const NodeContext &, const Inputs &in) {
  std::vector<int64_t> dims = in[0].intShape();
  return {Tensor::fromVector(std::vector<int64_t>{product(dims, 0, dims.size())}, {})};
}

/// ConstantOfShape's value: a one-element tensor (float32 0 when absent).
Tensor fillValue(const NodeContext &ctx) {
  const AttributeProto *a = typedAttr(ctx.node, "value", AttributeType::Tensor);
  if (!a) return Tensor::zeros({});
  LAZYJIT_USER_CHECK(a->t, Error, "attribute 'value' holds no tensor");
  Tensor v = tensorFromProto(*a->t, ctx.storage, ctx.fileName, "attribute 'value'");
  std::vector<int64_t> dims = v.intShape();
  LAZYJIT_USER_CHECK(product(dims, 0, dims.size()) == 1, ShapeError,
                     "attribute 'value' must hold one value, not {}", dimsText(dims));
  return v;
}
void checkConstantOfShape(const NodeContext &ctx) { fillValue(ctx); }
Out runConstantOfShape(const NodeContext &ctx, const Inputs &in) {
  std::vector<int64_t> shape = hostInts(in[0], "the shape input");
  for (int64_t d : shape)
    LAZYJIT_USER_CHECK(d >= 0, ShapeError, "shape {} has a negative dim", dimsText(shape));
  Tensor v = fillValue(ctx);
  return {v.reshape(Shape(shape.size(), SInt(1))).expand(toShape(shape))};
}

Out runRange(const NodeContext &, const Inputs &in) {
  DType dt = in[0].dtype();
  for (size_t i = 1; i < 3; ++i)
    LAZYJIT_USER_CHECK(in[i].dtype() == dt, DTypeError, "input {} is {}, but start is {}", i,
                       in[i].dtype().name(), dt.name());
  if (dt.isInt()) {
    auto read = [&](size_t i, std::string_view what) {
      std::vector<int64_t> dims = in[i].intShape();
      LAZYJIT_USER_CHECK(product(dims, 0, dims.size()) == 1, ShapeError,
                         "{} must hold one value, not {}", what, dimsText(dims));
      return in[i].toVector<int64_t>()[0];
    };
    int64_t start = read(0, "start"), limit = read(1, "limit"), delta = read(2, "delta");
    LAZYJIT_USER_CHECK(delta != 0, Error, "delta must not be 0");
    int64_t n = 0;
    if (delta > 0 && limit > start) n = (limit - start + delta - 1) / delta;
    if (delta < 0 && limit < start) n = (start - limit - delta - 1) / -delta;
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = start + i * delta;
    return {Tensor::fromVector(v, toShape({n})).cast(dt)};
  }
  double start = hostScalar(in[0], "start"), limit = hostScalar(in[1], "limit"),
         delta = hostScalar(in[2], "delta");
  LAZYJIT_USER_CHECK(delta != 0, Error, "delta must not be 0");
  int64_t n = int64_t(std::max(std::ceil((limit - start) / delta), 0.0));
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = start + double(i) * delta;
  return {Tensor::fromValues(v, toShape({n}), TensorOptions(dt))};
}

std::optional<DType> dtypeAttr(const NodeContext &ctx) {
  const AttributeProto *a = typedAttr(ctx.node, "dtype", AttributeType::Int);
  if (!a) return std::nullopt;
  std::optional<DType> dt = toDType(DataType(a->i));
  LAZYJIT_USER_CHECK(dt, UnsupportedError, "attribute 'dtype' = {} is not supported", a->i);
  return dt;
}
void checkEyeLike(const NodeContext &ctx) {
  dtypeAttr(ctx);
  intAttr(ctx.node, "k", 0);
}
Out runEyeLike(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  LAZYJIT_USER_CHECK(x.ndim() == 2, ShapeError, "the input must be 2-D, not rank {}", x.ndim());
  std::vector<int64_t> dims = x.intShape();
  DType dt = dtypeAttr(ctx).value_or(x.dtype());
  int64_t k = intAttr(ctx.node, "k", 0);
  Tensor diff = iota(dims[1], 2, 1, x).sub(iota(dims[0], 2, 0, x));
  return {diff.cast(dtypes::int64).eq(double(k)).cast(dt)};
}

void checkOneHot(const NodeContext &ctx) { intAttr(ctx.node, "axis", -1); }
Out runOneHot(const NodeContext &ctx, const Inputs &in) {
  Tensor idx = in[0];
  int64_t depth = int64_t(hostScalar(in[1], "depth"));
  LAZYJIT_USER_CHECK(depth > 0, ShapeError, "depth must be positive, not {}", depth);
  std::vector<int64_t> vdims = in[2].intShape();
  LAZYJIT_USER_CHECK(product(vdims, 0, vdims.size()) == 2, ShapeError,
                     "values must hold [off_value, on_value], not {}", dimsText(vdims));
  int64_t rank = idx.ndim() + 1;
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", -1), rank, "axis");
  if (!idx.dtype().isInt()) idx = idx.cast(dtypes::int64);
  Tensor mask = wrapNegative(idx, depth).unsqueeze(axis).eq(iota(depth, rank, axis, idx));
  Tensor values = in[2].reshape(toShape({2}));
  Tensor off = values.shrink({SIntPair(0, 1)}).reshape({});
  Tensor on = values.shrink({SIntPair(1, 2)}).reshape({});
  return {select(mask, on, off)};
}

Out runExpand(const NodeContext &, const Inputs &in) {
  std::vector<int64_t> shape = hostInts(in[1], "the shape input");
  std::vector<int64_t> dims = in[0].intShape();
  size_t rank = std::max(shape.size(), dims.size());
  dims.insert(dims.begin(), rank - dims.size(), 1);
  shape.insert(shape.begin(), rank - shape.size(), 1);
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    LAZYJIT_USER_CHECK(dims[i] == shape[i] || dims[i] == 1 || shape[i] == 1, ShapeError,
                       "cannot broadcast the input {} to shape {}", dimsText(in[0].intShape()),
                       dimsText(hostInts(in[1], "the shape input")));
    out[i] = dims[i] == 1 ? shape[i] : dims[i];
  }
  return {in[0].reshape(toShape(dims)).expand(toShape(out))};
}

// ---- slicing, splitting, tiling, padding --------------------------------------------------------

void checkSlice(const NodeContext &ctx) {
  if (ctx.opset >= 10) return;
  LAZYJIT_USER_CHECK(intsAttr(ctx.node, "starts") && intsAttr(ctx.node, "ends"), Error,
                     "the required attributes 'starts' and 'ends' are missing");
  intsAttr(ctx.node, "axes");
}
Out runSlice(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  std::vector<int64_t> dims = x.intShape();
  int64_t rank = int64_t(dims.size());
  std::vector<int64_t> starts, ends;
  std::optional<std::vector<int64_t>> axes, steps;
  if (ctx.opset < 10) {
    starts = *intsAttr(ctx.node, "starts");
    ends = *intsAttr(ctx.node, "ends");
    axes = intsAttr(ctx.node, "axes");
  } else {
    LAZYJIT_USER_CHECK(has(in, 1) && has(in, 2), Error, "the starts and ends inputs are required");
    starts = hostInts(in[1], "the starts input");
    ends = hostInts(in[2], "the ends input");
    if (has(in, 3)) axes = hostInts(in[3], "the axes input");
    if (has(in, 4)) steps = hostInts(in[4], "the steps input");
  }
  size_t n = starts.size();
  if (!axes) {
    axes.emplace(n);
    std::iota(axes->begin(), axes->end(), 0);
  }
  if (!steps) steps.emplace(n, 1);
  LAZYJIT_USER_CHECK(ends.size() == n && axes->size() == n && steps->size() == n, ShapeError,
                     "starts {}, ends {}, axes {} and steps {} differ in length", dimsText(starts),
                     dimsText(ends), dimsText(*axes), dimsText(*steps));
  std::vector<Index> index(static_cast<size_t>(rank), Index::all());
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < n; ++i) {
    size_t a = size_t(normalizeAxis((*axes)[i], rank, "axis"));
    LAZYJIT_USER_CHECK(!seen[a], ShapeError, "axes {} repeat an axis", dimsText(*axes));
    seen[a] = true;
    int64_t step = (*steps)[i], d = dims[a], s = starts[i], e = ends[i];
    LAZYJIT_USER_CHECK(step != 0, Error, "steps {} has a 0", dimsText(*steps));
    if (s < 0) s += d;
    if (e < 0) e += d;
    // out-of-range starts and ends are clamped as the spec and onnxruntime do: a negative step's
    // start into [0, dim - 1], its end into [-1, dim - 1] (numpy takes no element where a start
    // before the front clamps to 0 here and takes one)
    if (d == 0) {
      index[a] = Index::range(0, 0);
    } else if (step > 0) {
      index[a] = Index::range(std::clamp<int64_t>(s, 0, d), std::clamp<int64_t>(e, 0, d), step);
    } else {
      e = std::clamp<int64_t>(e, -1, d - 1);
      index[a] = Index::range(std::clamp<int64_t>(s, 0, d - 1),
                              e < 0 ? std::nullopt : std::optional<int64_t>(e), step);
    }
  }
  return {x.getitem(index)};
}

void checkSplit(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", 0);
  if (ctx.opset < 13) intsAttr(ctx.node, "split");
  if (ctx.opset >= 18) intAttr(ctx.node, "num_outputs", 0);
}
Out runSplit(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  std::vector<int64_t> dims = x.intShape();
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", 0), x.ndim(), "axis");
  int64_t d = dims[size_t(axis)];
  int64_t outputs = int64_t(ctx.node.output.size());
  std::optional<std::vector<int64_t>> split;
  if (ctx.opset < 13)
    split = intsAttr(ctx.node, "split");
  else if (has(in, 1))
    split = hostInts(in[1], "the split input");
  if (!split) {
    int64_t parts = outputs;
    if (ctx.opset >= 18 && findAttr(ctx.node, "num_outputs")) {
      parts = intAttr(ctx.node, "num_outputs", outputs);
      LAZYJIT_USER_CHECK(parts == outputs, Error, "num_outputs is {}, but the node has {} outputs",
                         parts, outputs);
    }
    // opset 18 lets the last part be smaller; before, the parts must be equal
    int64_t size = (d + parts - 1) / parts;
    LAZYJIT_USER_CHECK(ctx.opset >= 18 || d % parts == 0, ShapeError,
                       "dim {} (size {}) of {} does not split into {} equal parts", axis, d,
                       dimsText(dims), parts);
    split.emplace();
    for (int64_t p = 0, left = d; p < parts; ++p, left -= size)
      split->push_back(std::clamp<int64_t>(left, 0, size));
  }
  LAZYJIT_USER_CHECK(int64_t(split->size()) == outputs, Error,
                     "split {} has {} parts, but the node has {} outputs", dimsText(*split),
                     split->size(), outputs);
  int64_t total = 0;
  for (int64_t s : *split) {
    LAZYJIT_USER_CHECK(s >= 0, ShapeError, "split {} has a negative size", dimsText(*split));
    total += s;
  }
  LAZYJIT_USER_CHECK(total == d, ShapeError, "split {} sums to {}, but dim {} of {} is {}",
                     dimsText(*split), total, axis, dimsText(dims), d);
  Out out;
  int64_t at = 0;
  for (int64_t s : *split) {
    out.push_back(x.shrink(rangeOn(x.ndim(), axis, at, at + s)));
    at += s;
  }
  return out;
}

Out runTile(const NodeContext &, const Inputs &in) {
  std::vector<int64_t> repeats = hostInts(in[1], "the repeats input");
  LAZYJIT_USER_CHECK(int64_t(repeats.size()) == in[0].ndim(), ShapeError,
                     "repeats {} must have one entry per dim of the rank-{} input",
                     dimsText(repeats), in[0].ndim());
  for (int64_t r : repeats)
    LAZYJIT_USER_CHECK(r >= 0, ShapeError, "repeats {} has a negative entry", dimsText(repeats));
  return {in[0].repeat(repeats)};
}

void checkPad(const NodeContext &ctx) {
  if (ctx.opset >= 19)
    checkStringAttr(ctx.node, "mode", {"constant", "reflect", "edge", "wrap"});
  else
    checkStringAttr(ctx.node, "mode", {"constant", "reflect", "edge"});
  if (ctx.opset < 11) {
    LAZYJIT_USER_CHECK(intsAttr(ctx.node, "pads") || intsAttr(ctx.node, "paddings"), Error,
                       "the required attribute 'pads' is missing");
    floatAttr(ctx.node, "value", 0);
  }
}
/// The source index along a dim of size n of output position p (p < 0 or p >= n is padding) in
/// the reflect, edge and wrap modes.
int64_t padSource(std::string_view mode, int64_t p, int64_t n) {
  auto mod = [](int64_t a, int64_t b) { return ((a % b) + b) % b; };
  if (mode == "edge") return std::clamp<int64_t>(p, 0, n - 1);
  if (mode == "wrap") return mod(p, n);
  if (n == 1) return 0;
  int64_t m = mod(p, 2 * (n - 1)); // reflect: periodic with period 2 (n - 1), as numpy.pad
  return m < n ? m : 2 * (n - 1) - m;
}
Out runPad(const NodeContext &ctx, const Inputs &in) {
  Tensor x = in[0];
  std::vector<int64_t> dims = x.intShape();
  int64_t rank = int64_t(dims.size());
  std::string mode = stringAttr(ctx.node, "mode", "constant");
  std::vector<int64_t> pads;
  double value = 0;
  std::vector<int64_t> axes(static_cast<size_t>(rank));
  std::iota(axes.begin(), axes.end(), 0);
  if (ctx.opset < 11) {
    std::optional<std::vector<int64_t>> p = intsAttr(ctx.node, "pads");
    pads = p ? *p : *intsAttr(ctx.node, "paddings");
    value = floatAttr(ctx.node, "value", 0);
  } else {
    LAZYJIT_USER_CHECK(has(in, 1), Error, "the pads input is required");
    pads = hostInts(in[1], "the pads input");
    if (has(in, 2)) value = hostScalar(in[2], "the constant_value input");
    if (has(in, 3)) {
      axes = hostInts(in[3], "the axes input");
      for (int64_t &a : axes) a = normalizeAxis(a, rank, "axis");
    }
  }
  LAZYJIT_USER_CHECK(pads.size() == 2 * axes.size(), ShapeError,
                     "pads {} must have 2 entries per padded axis ({})", dimsText(pads),
                     axes.size());
  std::vector<int64_t> lo(static_cast<size_t>(rank), 0), hi(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    lo[size_t(axes[i])] = pads[i];
    hi[size_t(axes[i])] = pads[i + axes.size()];
  }
  for (size_t a = 0; a < size_t(rank); ++a)
    LAZYJIT_USER_CHECK(std::max<int64_t>(0, -lo[a]) + std::max<int64_t>(0, -hi[a]) <= dims[a],
                       ShapeError, "pads {} crop more than dim {} of {}", dimsText(pads), a,
                       dimsText(dims));
  if (mode == "constant") {
    ShrinkArg crop(static_cast<size_t>(rank)), grow(static_cast<size_t>(rank));
    for (size_t a = 0; a < size_t(rank); ++a) {
      crop[a] = SIntPair(std::max<int64_t>(0, -lo[a]), dims[a] - std::max<int64_t>(0, -hi[a]));
      grow[a] = SIntPair(std::max<int64_t>(0, lo[a]), std::max<int64_t>(0, hi[a]));
    }
    Tensor cropped = x.shrink(crop);
    if (x.dtype() == dtypes::boolean && value != 0)
      return {cropped.cast(dtypes::uint8).pad(grow, 1).cast(dtypes::boolean)};
    return {cropped.pad(grow, value)};
  }
  for (int64_t a = 0; a < rank; ++a) {
    int64_t n = dims[size_t(a)];
    if (lo[size_t(a)] == 0 && hi[size_t(a)] == 0) continue;
    std::vector<int64_t> idx;
    for (int64_t p = -lo[size_t(a)]; p < n + hi[size_t(a)]; ++p) {
      LAZYJIT_USER_CHECK(n > 0, ShapeError, "cannot {}-pad dim {} of {}: it is empty", mode, a,
                         dimsText(dims));
      idx.push_back(padSource(mode, p, n));
    }
    x = takeRuns(x, a, idx);
  }
  return {x};
}

/// The `axis` attribute made non-negative; without one, `x` is flattened and the axis is 0
/// (Compress and Unique).
int64_t axisOrFlatten(const NodeProto &n, Tensor &x) {
  if (findAttr(n, "axis")) return normalizeAxis(intAttr(n, "axis", 0), x.ndim(), "axis");
  std::vector<int64_t> dims = x.intShape();
  x = x.reshape(toShape({product(dims, 0, dims.size())}));
  return 0;
}

void checkCompress(const NodeContext &ctx) { intAttr(ctx.node, "axis", 0); }
Out runCompress(const NodeContext &ctx, const Inputs &in) {
  Tensor x = in[0];
  LAZYJIT_USER_CHECK(in[1].ndim() == 1, ShapeError, "the condition must be 1-D, not rank {}",
                     in[1].ndim());
  int64_t axis = axisOrFlatten(ctx.node, x);
  int64_t n = x.intShape()[size_t(axis)];
  std::vector<double> cond = in[1].toVector<double>();
  std::vector<int64_t> idx;
  for (size_t i = 0; i < cond.size(); ++i) {
    if (cond[i] == 0) continue;
    LAZYJIT_USER_CHECK(int64_t(i) < n, ShapeError,
                       "the condition selects entry {}, but the axis has {} entries", i, n);
    idx.push_back(int64_t(i));
  }
  return {takeRuns(x, axis, idx)};
}

void checkReverseSequence(const NodeContext &ctx) {
  int64_t b = intAttr(ctx.node, "batch_axis", 1), t = intAttr(ctx.node, "time_axis", 0);
  LAZYJIT_USER_CHECK((b == 0 || b == 1) && (t == 0 || t == 1) && b != t, Error,
                     "batch_axis {} and time_axis {} must be 0 and 1 in some order", b, t);
}
Out runReverseSequence(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  LAZYJIT_USER_CHECK(x.ndim() >= 2, ShapeError, "the input must have rank 2 or more, not {}",
                     x.ndim());
  int64_t batchAxis = intAttr(ctx.node, "batch_axis", 1),
          timeAxis = intAttr(ctx.node, "time_axis", 0);
  std::vector<int64_t> dims = x.intShape();
  int64_t batch = dims[size_t(batchAxis)], time = dims[size_t(timeAxis)], rank = x.ndim();
  LAZYJIT_USER_CHECK(in[1].intShape() == std::vector<int64_t>{batch}, ShapeError,
                     "sequence_lens {} must hold one length per batch entry ({})",
                     dimsText(in[1].intShape()), batch);
  std::vector<int64_t> lensShape(static_cast<size_t>(rank), 1);
  lensShape[size_t(batchAxis)] = batch;
  Tensor lens = in[1].cast(dtypes::int64).reshape(toShape(lensShape));
  Tensor t = iota(time, rank, timeAxis, x).cast(dtypes::int64);
  // position t of a sequence of length len comes from len - 1 - t, the padding stays
  Tensor src = select(t.lt(lens), lens.sub(1).sub(t), t);
  Tensor mask = src.unsqueeze(timeAxis + 1).eq(iota(time, rank + 1, timeAxis + 1, x));
  return {maskedPick(mask, x.unsqueeze(timeAxis), timeAxis + 1)};
}

Out runNonZero(const NodeContext &, const Inputs &in) {
  std::vector<int64_t> dims = in[0].intShape();
  if (dims.empty()) dims = {1}; // numpy treats a 0-d array as 1-d here
  std::vector<double> v = in[0].toVector<double>();
  std::vector<size_t> hits;
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] != 0) hits.push_back(i);
  size_t rank = dims.size(), nnz = hits.size();
  std::vector<int64_t> out(rank * nnz);
  for (size_t h = 0; h < nnz; ++h) {
    size_t rest = hits[h];
    for (size_t a = rank; a-- > 0;) {
      out[a * nnz + h] = int64_t(rest % size_t(dims[a]));
      rest /= size_t(dims[a]);
    }
  }
  return {Tensor::fromVector(out, toShape({int64_t(rank), int64_t(nnz)}), in[0].device())};
}

void checkUnique(const NodeContext &ctx) {
  intAttr(ctx.node, "sorted", 1);
  intAttr(ctx.node, "axis", 0);
}
/// Unique over rows of `v` (n rows of `width` values each).
template <typename V>
Out uniqueRows(const Tensor &x, int64_t axis, const std::vector<V> &v, int64_t n, int64_t width,
               bool sorted) {
  auto rowLess = [&](int64_t a, int64_t b) {
    return std::lexicographical_compare(v.begin() + a * width, v.begin() + (a + 1) * width,
                                        v.begin() + b * width, v.begin() + (b + 1) * width);
  };
  auto rowEq = [&](int64_t a, int64_t b) {
    return std::equal(v.begin() + a * width, v.begin() + (a + 1) * width, v.begin() + b * width);
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), rowLess);
  // groups of equal rows in sorted order; the first of each (stable) is its first occurrence
  std::vector<int64_t> first, counts, inverse(static_cast<size_t>(n));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || !rowEq(order[i - 1], order[i])) {
      first.push_back(order[i]);
      counts.push_back(0);
    }
    ++counts.back();
    inverse[size_t(order[i])] = int64_t(first.size()) - 1;
  }
  if (!sorted) { // by first occurrence
    std::vector<int64_t> byFirst(first.size());
    std::iota(byFirst.begin(), byFirst.end(), 0);
    std::sort(byFirst.begin(), byFirst.end(),
              [&](int64_t a, int64_t b) { return first[size_t(a)] < first[size_t(b)]; });
    std::vector<int64_t> rank(first.size()), f2, c2;
    for (size_t i = 0; i < byFirst.size(); ++i) {
      rank[size_t(byFirst[i])] = int64_t(i);
      f2.push_back(first[size_t(byFirst[i])]);
      c2.push_back(counts[size_t(byFirst[i])]);
    }
    for (int64_t &i : inverse) i = rank[size_t(i)];
    first = f2;
    counts = c2;
  }
  auto vec = [&](const std::vector<int64_t> &a) {
    return Tensor::fromVector(a, toShape({int64_t(a.size())}), x.device());
  };
  return {takeRuns(x, axis, first), vec(first), vec(inverse), vec(counts)};
}
Out runUnique(const NodeContext &ctx, const Inputs &in) {
  Tensor x = in[0];
  bool sorted = intAttr(ctx.node, "sorted", 1) != 0;
  int64_t axis = axisOrFlatten(ctx.node, x);
  std::vector<int64_t> dims = x.intShape();
  int64_t n = dims[size_t(axis)], width = n == 0 ? 0 : product(dims, 0, dims.size()) / n;
  // rows along the axis, each row's values contiguous
  Tensor rows = x;
  if (axis != 0) {
    std::vector<int64_t> order(dims.size());
    std::iota(order.begin(), order.end(), 0);
    order.erase(order.begin() + axis);
    order.insert(order.begin(), axis);
    rows = x.permute(order);
  }
  if (x.dtype().isInt()) return uniqueRows(x, axis, rows.toVector<int64_t>(), n, width, sorted);
  return uniqueRows(x, axis, rows.toVector<double>(), n, width, sorted);
}

// ---- gathers and scatters -----------------------------------------------------------------------

void checkAxis(const NodeContext &ctx) { intAttr(ctx.node, "axis", 0); }

Out runGather(const NodeContext &ctx, const Inputs &in) {
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", 0), in[0].ndim(), "axis");
  return {takeDense(in[0], axis, in[1])};
}

/// data and idx of one rank, idx's dims no larger than data's except along `axis`.
void checkElementShapes(const Tensor &data, const Tensor &idx, int64_t axis,
                        std::string_view what) {
  std::vector<int64_t> d = data.intShape(), i = idx.intShape();
  bool ok = d.size() == i.size();
  for (size_t a = 0; ok && a < d.size(); ++a) ok = int64_t(a) == axis || i[a] <= d[a];
  LAZYJIT_USER_CHECK(ok, ShapeError, "{} {} do not fit data {} (axis {})", what, dimsText(i),
                     dimsText(d), axis);
}

Out runGatherElements(const NodeContext &ctx, const Inputs &in) {
  const Tensor &data = in[0], &idx = in[1];
  int64_t rank = data.ndim();
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", 0), rank, "axis");
  checkElementShapes(data, idx, axis, "indices");
  std::vector<int64_t> idims = idx.intShape();
  int64_t n = data.intShape()[size_t(axis)];
  ShrinkArg fit(static_cast<size_t>(rank));
  for (int64_t a = 0; a < rank; ++a)
    if (a != axis) fit[size_t(a)] = SIntPair(0, idims[size_t(a)]);
  Tensor mask = wrapNegative(idx, n).unsqueeze(axis + 1).eq(iota(n, rank + 1, axis + 1, data));
  return {maskedPick(mask, data.shrink(fit).unsqueeze(axis), axis + 1)};
}

void checkGatherND(const NodeContext &ctx) { intAttr(ctx.node, "batch_dims", 0); }
Out runGatherND(const NodeContext &ctx, const Inputs &in) {
  const Tensor &data = in[0], &idx = in[1];
  std::vector<int64_t> d = data.intShape(), i = idx.intShape();
  int64_t b = intAttr(ctx.node, "batch_dims", 0);
  LAZYJIT_USER_CHECK(!i.empty(), ShapeError, "indices must have rank 1 or more");
  int64_t m = i.back(), q = int64_t(i.size()), r = int64_t(d.size());
  LAZYJIT_USER_CHECK(b >= 0 && b < q && b < r && m >= 0 && b + m <= r, ShapeError,
                     "indices {} with batch_dims {} do not fit data {}", dimsText(i), b,
                     dimsText(d));
  LAZYJIT_USER_CHECK(slice(i, 0, size_t(b)) == slice(d, 0, size_t(b)), ShapeError,
                     "the batch dims of indices {} and data {} differ", dimsText(i), dimsText(d));
  int64_t batch = product(d, 0, size_t(b)), k = product(i, size_t(b), size_t(q - 1));
  int64_t p = product(d, size_t(b), size_t(b + m)), post = product(d, size_t(b + m), d.size());
  Tensor lin =
      linearIndex(idx.reshape(toShape({batch * k, m})), slice(d, size_t(b), size_t(b + m)));
  Tensor mask = lin.reshape(toShape({batch, k, 1, 1})).eq(iota(p, 4, 2, data));
  Tensor picked = maskedPick(mask, data.reshape(toShape({batch, 1, p, post})), 2);
  return {picked.reshape(
      toShape(concat(slice(i, 0, size_t(q - 1)), slice(d, size_t(b + m), d.size()))))};
}

void checkScatterElements(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", 0);
  checkReduction(ctx);
}
Out runScatterElements(const NodeContext &ctx, const Inputs &in) {
  const Tensor &data = in[0], &idx = in[1], &upd = in[2];
  int64_t rank = data.ndim();
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", 0), rank, "axis");
  checkElementShapes(data, idx, axis, "indices");
  LAZYJIT_USER_CHECK(idx.intShape() == upd.intShape(), ShapeError,
                     "indices {} and updates {} differ in shape", dimsText(idx.intShape()),
                     dimsText(upd.intShape()));
  std::vector<int64_t> d = data.intShape(), i = idx.intShape();
  int64_t n = d[size_t(axis)];
  if (product(i, 0, i.size()) == 0) return {data};
  // indices and updates padded to data's dims off the axis; -1 (after wrapping) hits nothing
  ShrinkArg grow(static_cast<size_t>(rank));
  for (int64_t a = 0; a < rank; ++a)
    if (a != axis) grow[size_t(a)] = SIntPair(0, d[size_t(a)] - i[size_t(a)]);
  Tensor target = wrapNegative(idx, n).pad(grow, -1);
  Tensor mask = target.unsqueeze(axis + 1).eq(iota(n, rank + 1, axis + 1, data));
  Tensor updates = (upd.dtype() == dtypes::boolean ? upd.cast(dtypes::uint8) : upd).pad(grow);
  return {scatterDense(data, mask, updates.unsqueeze(axis + 1), axis, reductionOf(ctx))};
}

Out runScatterND(const NodeContext &ctx, const Inputs &in) {
  const Tensor &data = in[0], &idx = in[1], &upd = in[2];
  std::vector<int64_t> d = data.intShape(), i = idx.intShape();
  LAZYJIT_USER_CHECK(!i.empty(), ShapeError, "indices must have rank 1 or more");
  int64_t m = i.back();
  LAZYJIT_USER_CHECK(m >= 0 && m <= int64_t(d.size()), ShapeError,
                     "index tuples of length {} do not fit data {}", m, dimsText(d));
  std::vector<int64_t> want = concat(slice(i, 0, i.size() - 1), slice(d, size_t(m), d.size()));
  LAZYJIT_USER_CHECK(upd.intShape() == want, ShapeError,
                     "updates {} must have shape {} (indices {}, data {})",
                     dimsText(upd.intShape()), dimsText(want), dimsText(i), dimsText(d));
  int64_t k = product(i, 0, i.size() - 1);
  if (k == 0) return {data};
  int64_t p = product(d, 0, size_t(m)), post = product(d, size_t(m), d.size());
  Tensor lin = linearIndex(idx.reshape(toShape({k, m})), slice(d, 0, size_t(m)));
  Tensor mask = lin.reshape(toShape({k, 1, 1})).eq(iota(p, 3, 1, data));
  Tensor out = scatterDense(data.reshape(toShape({p, post})), mask,
                            upd.reshape(toShape({k, 1, post})), 0, reductionOf(ctx));
  return {out.reshape(data.shape())};
}

const OpDef opTable[] = {
    OpDef{"Shape", 1, 1, 1, checkShape, runShape},
    OpDef{"Size", 1, 1, 1, noCheck, runSize},
    OpDef{"ConstantOfShape", 1, 1, 1, checkConstantOfShape, runConstantOfShape},
    OpDef{"Range", 3, 3, 1, noCheck, runRange},
    OpDef{"EyeLike", 1, 1, 1, checkEyeLike, runEyeLike},
    OpDef{"OneHot", 3, 3, 1, checkOneHot, runOneHot},
    OpDef{"Expand", 2, 2, 1, noCheck, runExpand},
    OpDef{"Slice", 1, 5, 1, checkSlice, runSlice},
    OpDef{"Split", 1, 2, SIZE_MAX, checkSplit, runSplit},
    OpDef{"Tile", 2, 2, 1, noCheck, runTile},
    OpDef{"Pad", 1, 4, 1, checkPad, runPad},
    OpDef{"Compress", 2, 2, 1, checkCompress, runCompress},
    OpDef{"ReverseSequence", 2, 2, 1, checkReverseSequence, runReverseSequence},
    OpDef{"NonZero", 1, 1, 1, noCheck, runNonZero},
    OpDef{"Unique", 1, 1, 4, checkUnique, runUnique},
    OpDef{"Gather", 2, 2, 1, checkAxis, runGather},
    OpDef{"GatherElements", 2, 2, 1, checkAxis, runGatherElements},
    OpDef{"GatherND", 2, 2, 1, checkGatherND, runGatherND},
    OpDef{"ScatterElements", 3, 3, 1, checkScatterElements, runScatterElements},
    OpDef{"Scatter", 3, 3, 1, checkScatterElements, runScatterElements},
    OpDef{"ScatterND", 3, 3, 1, checkReduction, runScatterND},
};

} // namespace

std::span<const OpDef> tensorOps() { return opTable; }

} // namespace lazyjit::onnx::ops

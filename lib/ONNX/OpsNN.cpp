// ONNX ops: convolution, pooling, normalization, resize, losses. Window geometry (auto_pad, pads,
// ceil_mode) is worked out on the host and handed to Tensor's N-d conv2d/pool ops as explicit
// padding; Resize's per-axis sampling (indices and weights) is computed on the host too and applied
// as a gather plus a weighted sum along each axis in turn.
#include "OpUtil.h"

#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <numeric>

namespace lazyjit::onnx::ops {

namespace {

// ---- shared helpers -----------------------------------------------------------------------------

std::vector<int64_t> iota(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

/// The spatial dims of an [N, C, D1, ...] input, checked to have at least `minSpatial` of them.
std::vector<int64_t> spatialDims(const Tensor &x, std::string_view what, size_t minSpatial = 1) {
  std::vector<int64_t> dims = x.intShape();
  LAZYJIT_USER_CHECK(dims.size() >= 2 + minSpatial, ShapeError,
                     "{} must be [N, C, D1, ...] with {} spatial dim(s) or more, not {}", what,
                     minSpatial, dimsText(dims));
  return {dims.begin() + 2, dims.end()};
}

/// An ints attribute of `count` values (one or two per spatial dim), or `dflt` for each when
/// absent.
std::vector<int64_t> perDimAttr(const NodeProto &n, std::string_view name, size_t count,
                                int64_t dflt) {
  std::optional<std::vector<int64_t>> v = intsAttr(n, name);
  if (!v) return std::vector<int64_t>(count, dflt);
  LAZYJIT_USER_CHECK(v->size() == count, ShapeError, "attribute '{}' {} needs {} values, not {}",
                     name, dimsText(*v), count, v->size());
  return *v;
}

/// The values of a float input read on the host.
std::vector<double> hostDoubles(const Tensor &t) {
  return t.cast(dtypes::float64).toVector<double>();
}

int64_t numelOf(const Tensor &t) {
  std::vector<int64_t> d = t.intShape();
  return product(d, 0, d.size());
}

/// ONNX pads [x1_begin, x2_begin, ..., x1_end, x2_end, ...] in pad2d's order (the last dim's
/// (begin, end) first).
std::vector<int64_t> toPad2d(const std::vector<int64_t> &begin, const std::vector<int64_t> &end) {
  std::vector<int64_t> p;
  for (size_t j = begin.size(); j-- > 0;) {
    p.push_back(begin[j]);
    p.push_back(end[j]);
  }
  return p;
}

/// A [1, C, 1, ...] view of a per-channel parameter for a rank-`rank` input (a parameter of more
/// dims, as BatchNormalization's spatial=0 takes, is [C, D1, ...] and becomes [1, C, D1, ...]).
Tensor perChannel(const Tensor &p, int64_t rank) {
  std::vector<int64_t> d = p.intShape();
  if (d.size() != 1) {
    d.insert(d.begin(), 1);
    return p.reshape(toShape(d));
  }
  std::vector<int64_t> s(size_t(rank), 1);
  s[1] = d[0];
  return p.reshape(toShape(s));
}

/// The lowest value of `dt` (the padding a max-pool never picks).
double lowestValue(DType dt) {
  if (dt.isFloating()) return -INFINITY;
  if (dt.isBool() || dt.isUnsigned()) return 0;
  return -std::ldexp(1.0, 8 * dt.itemsize() - 1);
}

void checkAutoPad(const NodeProto &n) {
  checkStringAttr(n, "auto_pad", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
}

/// The (begin, end) padding of each spatial dim for a window op over `in` (Conv, the pools):
/// from auto_pad, else the pads attribute.
std::pair<std::vector<int64_t>, std::vector<int64_t>>
windowPads(const NodeProto &n, const std::vector<int64_t> &in, const std::vector<int64_t> &kernel,
           const std::vector<int64_t> &strides, const std::vector<int64_t> &dilations) {
  size_t nd = in.size();
  for (size_t i = 0; i < nd; ++i)
    LAZYJIT_USER_CHECK(strides[i] > 0 && dilations[i] > 0, ShapeError,
                       "strides {} and dilations {} must be positive", dimsText(strides),
                       dimsText(dilations));
  std::vector<int64_t> begin(nd, 0), end(nd, 0);
  std::string autoPad = stringAttr(n, "auto_pad", "NOTSET");
  if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (size_t i = 0; i < nd; ++i) {
      int64_t out = (in[i] + strides[i] - 1) / strides[i];
      int64_t total =
          std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - in[i]);
      begin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[i] = total - begin[i];
    }
  } else if (autoPad != "VALID") {
    std::vector<int64_t> pads = perDimAttr(n, "pads", 2 * nd, 0);
    for (size_t i = 0; i < nd; ++i) {
      begin[i] = pads[i];
      end[i] = pads[i + nd];
      LAZYJIT_USER_CHECK(begin[i] >= 0 && end[i] >= 0, ShapeError, "pads {} must not be negative",
                         dimsText(pads));
    }
  }
  return {begin, end};
}

// ---- Conv, ConvTranspose ------------------------------------------------------------------------

void checkConv(const NodeContext &ctx) {
  checkAutoPad(ctx.node);
  intAttr(ctx.node, "group", 1);
  intsAttr(ctx.node, "kernel_shape");
  intsAttr(ctx.node, "strides");
  intsAttr(ctx.node, "dilations");
  intsAttr(ctx.node, "pads");
}

/// The kernel's spatial dims from the weights, checked against kernel_shape when it is given.
std::vector<int64_t> convKernel(const NodeProto &n, const Tensor &x, const Tensor &w) {
  LAZYJIT_USER_CHECK(w.ndim() == x.ndim(), ShapeError,
                     "the weights {} must have the rank of the input {}", dimsText(w.intShape()),
                     dimsText(x.intShape()));
  std::vector<int64_t> wd = w.intShape();
  std::vector<int64_t> kernel(wd.begin() + 2, wd.end());
  if (std::optional<std::vector<int64_t>> ks = intsAttr(n, "kernel_shape"))
    LAZYJIT_USER_CHECK(*ks == kernel, ShapeError, "kernel_shape {} does not match the weights {}",
                       dimsText(*ks), dimsText(wd));
  return kernel;
}

Out runConv(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  std::vector<int64_t> sp = spatialDims(in[0], "the input");
  std::vector<int64_t> kernel = convKernel(n, in[0], in[1]);
  size_t nd = sp.size();
  std::vector<int64_t> strides = perDimAttr(n, "strides", nd, 1);
  std::vector<int64_t> dilations = perDimAttr(n, "dilations", nd, 1);
  auto [begin, end] = windowPads(n, sp, kernel, strides, dilations);
  std::optional<Tensor> bias;
  if (has(in, 2)) bias = in[2];
  return {
      in[0].conv2d(in[1], bias, intAttr(n, "group", 1), strides, dilations, toPad2d(begin, end))};
}

void checkConvTranspose(const NodeContext &ctx) {
  checkConv(ctx);
  intsAttr(ctx.node, "output_padding");
  intsAttr(ctx.node, "output_shape");
}

Out runConvTranspose(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  std::vector<int64_t> sp = spatialDims(in[0], "the input");
  std::vector<int64_t> kernel = convKernel(n, in[0], in[1]);
  size_t nd = sp.size();
  int64_t group = intAttr(n, "group", 1);
  std::vector<int64_t> strides = perDimAttr(n, "strides", nd, 1);
  std::vector<int64_t> dilations = perDimAttr(n, "dilations", nd, 1);
  std::vector<int64_t> outPad = perDimAttr(n, "output_padding", nd, 0);
  std::string autoPad = stringAttr(n, "auto_pad", "NOTSET");
  // `full`: the output with no padding, every input position's window written whole
  std::vector<int64_t> full(nd), begin(nd, 0), end(nd, 0);
  for (size_t i = 0; i < nd; ++i)
    full[i] = strides[i] * (sp[i] - 1) + (kernel[i] - 1) * dilations[i] + 1;
  std::optional<std::vector<int64_t>> outShape = intsAttr(n, "output_shape");
  if (outShape && outShape->size() == nd + 2)
    outShape->erase(outShape->begin(), outShape->begin() + 2);
  if (!outShape && (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")) {
    outShape.emplace();
    for (size_t i = 0; i < nd; ++i) outShape->push_back(sp[i] * strides[i]);
  }
  if (outShape) {
    LAZYJIT_USER_CHECK(outShape->size() == nd, ShapeError,
                       "output_shape {} needs {} values (one per spatial dim)", dimsText(*outShape),
                       nd);
    for (size_t i = 0; i < nd; ++i) {
      // (floor division: a larger output_shape gives a negative total, cropped negatively)
      int64_t total = full[i] + outPad[i] - (*outShape)[i];
      int64_t half = total >= 0 ? total / 2 : -((1 - total) / 2);
      begin[i] = autoPad == "SAME_UPPER" ? half : total - half;
      end[i] = total - begin[i];
    }
  } else if (autoPad != "VALID") {
    std::vector<int64_t> pads = perDimAttr(n, "pads", 2 * nd, 0);
    for (size_t i = 0; i < nd; ++i) {
      begin[i] = pads[i];
      end[i] = pads[i + nd];
    }
  }
  Tensor y = in[0].convTranspose2d(in[1], std::nullopt, group, strides, dilations, {0}, {0});
  // the padding crops the full output (output_padding and a larger output_shape extend it with
  // positions no window reaches)
  std::vector<int64_t> cropEnd(nd);
  for (size_t i = 0; i < nd; ++i) cropEnd[i] = outPad[i] - end[i];
  std::vector<int64_t> negBegin(nd);
  for (size_t i = 0; i < nd; ++i) negBegin[i] = -begin[i];
  y = y.pad2d(toPad2d(negBegin, cropEnd));
  if (has(in, 2)) y = y.add(perChannel(in[2], y.ndim()));
  return {y};
}

// ---- pooling ------------------------------------------------------------------------------------

/// A pooling node's windows over the spatial dims: kernel, strides, dilations, the padding before
/// each dim and the padding after it (explicit pads plus what ceil_mode adds), and the output size.
struct PoolGeometry {
  std::vector<int64_t> in, kernel, strides, dilations, begin, end, extraEnd, out;
};

PoolGeometry poolGeometry(const NodeProto &n, const Tensor &x) {
  PoolGeometry g;
  g.in = spatialDims(x, "the input");
  size_t nd = g.in.size();
  std::optional<std::vector<int64_t>> k = intsAttr(n, "kernel_shape");
  LAZYJIT_USER_CHECK(k, Error, "the required attribute 'kernel_shape' is missing");
  g.kernel = perDimAttr(n, "kernel_shape", nd, 1);
  g.strides = perDimAttr(n, "strides", nd, 1);
  g.dilations = perDimAttr(n, "dilations", nd, 1);
  std::tie(g.begin, g.end) = windowPads(n, g.in, g.kernel, g.strides, g.dilations);
  bool ceilMode = intAttr(n, "ceil_mode", 0) != 0;
  for (size_t i = 0; i < nd; ++i) {
    LAZYJIT_USER_CHECK(g.kernel[i] > 0 && g.strides[i] > 0 && g.dilations[i] > 0, ShapeError,
                       "kernel_shape {}, strides {} and dilations {} must be positive",
                       dimsText(g.kernel), dimsText(g.strides), dimsText(g.dilations));
    int64_t window = (g.kernel[i] - 1) * g.dilations[i] + 1;
    int64_t span = g.in[i] + g.begin[i] + g.end[i] - window;
    LAZYJIT_USER_CHECK(span >= 0, ShapeError,
                       "the window {} (dilations {}) does not fit the padded input {}",
                       dimsText(g.kernel), dimsText(g.dilations), dimsText(g.in));
    int64_t out = (ceilMode ? (span + g.strides[i] - 1) / g.strides[i] : span / g.strides[i]) + 1;
    // a window may not start in the padding after the input
    if (ceilMode && (out - 1) * g.strides[i] >= g.in[i] + g.begin[i]) --out;
    g.out.push_back(out);
    g.extraEnd.push_back((out - 1) * g.strides[i] + window - (g.in[i] + g.begin[i] + g.end[i]));
  }
  return g;
}

/// `x` padded with `value` to exactly the extent the windows cover.
Tensor padForPool(const Tensor &x, const PoolGeometry &g, double value) {
  std::vector<int64_t> end(g.end);
  for (size_t i = 0; i < end.size(); ++i) end[i] += g.extraEnd[i];
  return x.pad2d(toPad2d(g.begin, end), value);
}

/// The max (or the sum) over each window of `padded` (padded by padForPool).
Tensor reduceWindows(const Tensor &padded, const PoolGeometry &g, bool max) {
  std::vector<int64_t> k = g.kernel, s = g.strides, d = g.dilations;
  Tensor x = padded;
  // Tensor's pools read a one-value kernel as a square one: a 1-D pool gets a trailing unit dim
  if (k.size() == 1) {
    x = x.unsqueeze(-1);
    k.push_back(1);
    s.push_back(1);
    d.push_back(1);
  }
  Tensor y;
  if (max) {
    y = x.maxPool2d(k, s, d);
  } else {
    int64_t count = product(k, 0, k.size());
    y = x.avgPool2d(k, s, d).mul(double(count));
  }
  if (g.kernel.size() == 1) y = y.squeeze(-1);
  return y;
}

/// How many of each window's positions lie in [lo, in + hi) of a dim (the divisor of an average).
std::vector<double> windowCounts(const PoolGeometry &g, bool countPads) {
  size_t nd = g.in.size();
  std::vector<double> counts{1};
  for (size_t i = 0; i < nd; ++i) {
    int64_t lo = countPads ? -g.begin[i] : 0, hi = g.in[i] + (countPads ? g.end[i] : 0);
    std::vector<double> next;
    for (double c : counts)
      for (int64_t o = 0; o < g.out[i]; ++o) {
        int64_t inside = 0;
        for (int64_t t = 0; t < g.kernel[i]; ++t) {
          int64_t p = o * g.strides[i] + t * g.dilations[i] - g.begin[i];
          inside += p >= lo && p < hi;
        }
        next.push_back(c * double(inside));
      }
    counts = std::move(next);
  }
  return counts;
}

void checkPool(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  checkAutoPad(n);
  LAZYJIT_USER_CHECK(intsAttr(n, "kernel_shape"), Error,
                     "the required attribute 'kernel_shape' is missing");
  intsAttr(n, "strides");
  intsAttr(n, "dilations");
  intsAttr(n, "pads");
  intAttr(n, "ceil_mode", 0);
  intAttr(n, "count_include_pad", 0);
  int64_t order = intAttr(n, "storage_order", 0);
  LAZYJIT_USER_CHECK(order == 0 || order == 1, Error, "storage_order {} is not 0 or 1", order);
}

Out runAveragePool(const NodeContext &ctx, const Inputs &in) {
  PoolGeometry g = poolGeometry(ctx.node, in[0]);
  Tensor sum = reduceWindows(padForPool(in[0], g, 0), g, false);
  std::vector<double> counts = windowCounts(g, intAttr(ctx.node, "count_include_pad", 0) != 0);
  double full = double(product(g.kernel, 0, g.kernel.size()));
  if (std::all_of(counts.begin(), counts.end(), [&](double c) { return c == full; }))
    return {sum.div(full)};
  std::vector<int64_t> cs{1, 1};
  cs.insert(cs.end(), g.out.begin(), g.out.end());
  return {sum.div(Tensor::fromVector(counts, toShape(cs)).cast(sum.dtype()))};
}

/// LpPool's and GlobalLpPool's p: a float in opset 1, an int after.
double lpOrder(const NodeContext &ctx) {
  const AttributeProto *a = findAttr(ctx.node, "p");
  double p = !a                                ? 2
             : a->type == AttributeType::Float ? double(a->f)
                                               : double(intAttr(ctx.node, "p", 2));
  LAZYJIT_USER_CHECK(p > 0, Error, "attribute 'p' = {} must be positive", p);
  return p;
}

void checkLpPool(const NodeContext &ctx) {
  checkPool(ctx);
  lpOrder(ctx);
}

Out runLpPool(const NodeContext &ctx, const Inputs &in) {
  PoolGeometry g = poolGeometry(ctx.node, in[0]);
  double p = lpOrder(ctx);
  Tensor powered = in[0].abs().pow(p);
  return {reduceWindows(padForPool(powered, g, 0), g, false).pow(1 / p)};
}

/// The flat index of each input element as MaxPool's Indices output counts it: row-major over the
/// whole tensor, or with storage_order 1 column-major within each [N, C] plane.
Tensor elementIndices(const std::vector<int64_t> &dims, bool columnMajor) {
  int64_t rank = int64_t(dims.size());
  int64_t plane = product(dims, 2, dims.size());
  TensorOptions i64(dtypes::int64);
  std::vector<int64_t> planes(size_t(rank), 1);
  planes[0] = dims[0];
  planes[1] = dims[1];
  Tensor idx =
      Tensor::arange(double(dims[0] * dims[1]), i64).mul(double(plane)).reshape(toShape(planes));
  int64_t stride = 1;
  for (int64_t k = 0; k < rank - 2; ++k) {
    // row-major: the last dim has stride 1; column-major: the first spatial dim does
    int64_t axis = columnMajor ? 2 + k : rank - 1 - k;
    std::vector<int64_t> s(size_t(rank), 1);
    s[size_t(axis)] = dims[size_t(axis)];
    idx = idx.add(
        Tensor::arange(double(dims[size_t(axis)]), i64).mul(double(stride)).reshape(toShape(s)));
    stride *= dims[size_t(axis)];
  }
  return idx;
}

Out runMaxPool(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  PoolGeometry g = poolGeometry(ctx.node, x);
  Tensor padded = padForPool(x, g, lowestValue(x.dtype()));
  if (ctx.node.output.size() < 2 || ctx.node.output[1].empty())
    return {reduceWindows(padded, g, true)};
  // With Indices: the windows' positions stacked on a last axis, one strided slice per kernel
  // position, and the first maximum's index picked from the same slices of the indices.
  Tensor idx =
      padForPool(elementIndices(x.intShape(), intAttr(ctx.node, "storage_order", 0) == 1), g, -1);
  size_t nd = g.in.size();
  int64_t positions = product(g.kernel, 0, nd);
  std::vector<Tensor> vals, idxs;
  for (int64_t p = 0; p < positions; ++p) {
    std::vector<Index> ix{Index::all(), Index::all()};
    std::vector<int64_t> tap(nd);
    for (size_t i = nd, rest = size_t(p); i-- > 0;) {
      tap[i] = int64_t(rest % size_t(g.kernel[i]));
      rest /= size_t(g.kernel[i]);
    }
    for (size_t i = 0; i < nd; ++i) {
      int64_t start = tap[i] * g.dilations[i];
      ix.push_back(Index::range(start, start + (g.out[i] - 1) * g.strides[i] + 1, g.strides[i]));
    }
    vals.push_back(padded.getitem(ix));
    idxs.push_back(idx.getitem(ix));
  }
  Tensor v = Tensor::stack(vals, -1), iv = Tensor::stack(idxs, -1);
  Tensor pick = v.argmax(-1, true).cast(dtypes::int64);
  return {v.max(std::vector<int64_t>{-1}), iv.gather(pick, -1).squeeze(-1)};
}

Out runGlobalPool(const Tensor &x, bool max) {
  spatialDims(x, "the input");
  std::vector<int64_t> axes = iota(2, x.ndim());
  return {max ? x.max(axes, true) : x.mean(axes, true)};
}

void checkGlobalLpPool(const NodeContext &ctx) { lpOrder(ctx); }
Out runGlobalLpPool(const NodeContext &ctx, const Inputs &in) {
  spatialDims(in[0], "the input");
  double p = lpOrder(ctx);
  return {in[0].abs().pow(p).sum(iota(2, in[0].ndim()), true).pow(1 / p)};
}

void checkMaxUnpool(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  LAZYJIT_USER_CHECK(intsAttr(n, "kernel_shape"), Error,
                     "the required attribute 'kernel_shape' is missing");
  intsAttr(n, "strides");
  intsAttr(n, "pads");
}

Out runMaxUnpool(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  std::vector<int64_t> dims = x.intShape();
  std::vector<int64_t> sp = spatialDims(x, "the input");
  LAZYJIT_USER_CHECK(in[1].intShape() == dims && in[1].dtype().isInt(), ShapeError,
                     "the indices {} ({}) must be integers of the input's shape {}",
                     dimsText(in[1].intShape()), in[1].dtype().name(), dimsText(dims));
  size_t nd = sp.size();
  std::vector<int64_t> kernel = perDimAttr(n, "kernel_shape", nd, 1);
  std::vector<int64_t> strides = perDimAttr(n, "strides", nd, 1);
  std::vector<int64_t> pads = perDimAttr(n, "pads", 2 * nd, 0);
  // The indices count positions in the unpooled shape the attributes give; an output_shape input
  // (pads are then ignored) pads or crops that shape at the end of each dim.
  std::vector<int64_t> outDims{dims[0], dims[1]}, given;
  if (has(in, 2)) {
    given = hostInts(in[2], "the output_shape input");
    LAZYJIT_USER_CHECK(given.size() == dims.size(), ShapeError,
                       "output_shape {} must have the input's rank {}", dimsText(given),
                       dims.size());
    std::fill(pads.begin(), pads.end(), 0);
  }
  for (size_t i = 0; i < nd; ++i)
    outDims.push_back((sp[i] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + nd]);
  int64_t planes = dims[0] * dims[1], inPlane = product(sp, 0, nd);
  int64_t outPlane = product(outDims, 2, outDims.size());
  // each value goes to the position its index names in its own [N, C] plane
  Tensor base = Tensor::arange(double(planes), TensorOptions(dtypes::int64))
                    .mul(double(outPlane))
                    .reshape(toShape({planes, 1, 1}));
  Tensor local = in[1].cast(dtypes::int64).reshape(toShape({planes, inPlane, 1})).sub(base);
  Tensor hit = local.eq(Tensor::arange(double(outPlane), TensorOptions(dtypes::int64))
                            .reshape(toShape({1, 1, outPlane})));
  Tensor y = hit.where(x.reshape(toShape({planes, inPlane, 1})), 0).sum(std::vector<int64_t>{1});
  y = keepDType(y, x.dtype()).reshape(toShape(outDims));
  if (given.empty()) return {y};
  LAZYJIT_USER_CHECK(given[0] == dims[0] && given[1] == dims[1], ShapeError,
                     "output_shape {} does not match the input's [N, C] in {}", dimsText(given),
                     dimsText(dims));
  std::vector<int64_t> extra;
  for (size_t i = 0; i < nd; ++i) extra.push_back(given[2 + i] - outDims[2 + i]);
  return {y.pad2d(toPad2d(std::vector<int64_t>(nd, 0), extra))};
}

// ---- normalization ------------------------------------------------------------------------------

void checkBatchNorm(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  floatAttr(n, "epsilon", 1e-5f);
  floatAttr(n, "momentum", 0.9f);
  intAttr(n, "spatial", 1);
  intAttr(n, "training_mode", 0);
  LAZYJIT_USER_CHECK(n.output.size() <= 3, UnsupportedError,
                     "the saved_mean and saved_var outputs (training before opset 14) are not "
                     "supported");
}

Out runBatchNorm(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  int64_t rank = x.ndim();
  LAZYJIT_USER_CHECK(rank >= 2, ShapeError, "the input {} must be [N, C, ...]",
                     dimsText(x.intShape()));
  double eps = floatAttr(n, "epsilon", 1e-5f);
  bool training = ctx.opset >= 14 ? intAttr(n, "training_mode", 0) != 0 : n.output.size() > 1;
  Tensor scale = perChannel(in[1], rank), bias = perChannel(in[2], rank);
  Tensor mean = perChannel(in[3], rank), var = perChannel(in[4], rank);
  // (at inference the running statistics, asked for or not, pass through unchanged)
  // (from opset 15 the statistics may have a wider type than x; Y keeps x's)
  if (!training)
    return {keepDType(x.sub(mean).mul(var.add(eps).rsqrt()).mul(scale).add(bias), x.dtype()), in[3],
            in[4]};
  // training: normalized with the batch's statistics, which also update the running ones
  std::vector<int64_t> axes{0};
  if (in[3].ndim() == 1)
    for (int64_t a = 2; a < rank; ++a) axes.push_back(a);
  Tensor batchMean = x.mean(axes, true), batchVar = x.var(axes, true, 0);
  double momentum = floatAttr(n, "momentum", 0.9f);
  Tensor y = x.sub(batchMean).mul(batchVar.add(eps).rsqrt()).mul(scale).add(bias);
  Tensor runMean = in[3].mul(momentum).add(batchMean.reshape(in[3].shape()).mul(1 - momentum));
  Tensor runVar = in[4].mul(momentum).add(batchVar.reshape(in[4].shape()).mul(1 - momentum));
  return {keepDType(y, x.dtype()), runMean, runVar};
}

void checkEpsilon(const NodeContext &ctx) { floatAttr(ctx.node, "epsilon", 1e-5f); }

Out runInstanceNorm(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  spatialDims(x, "the input");
  std::vector<int64_t> axes = iota(2, x.ndim());
  double eps = floatAttr(ctx.node, "epsilon", 1e-5f);
  Tensor mean = x.mean(axes, true), var = x.var(axes, true, 0);
  return {x.sub(mean)
              .mul(var.add(eps).rsqrt())
              .mul(perChannel(in[1], x.ndim()))
              .add(perChannel(in[2], x.ndim()))};
}

DType stashType(const NodeContext &ctx) {
  int64_t code = intAttr(ctx.node, "stash_type", 1);
  std::optional<DType> dt = toDType(DataType(code));
  LAZYJIT_USER_CHECK(dt && dt->isFloating(), UnsupportedError,
                     "attribute 'stash_type' = {} is not a floating point type", code);
  return *dt;
}
void checkLayerNorm(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", -1);
  floatAttr(ctx.node, "epsilon", 1e-5f);
  stashType(ctx);
}

Out runLayerNorm(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", -1), x.ndim(), "axis");
  double eps = floatAttr(ctx.node, "epsilon", 1e-5f);
  Tensor xs = x.cast(stashType(ctx));
  std::vector<int64_t> axes = iota(axis, x.ndim());
  Tensor mean = xs.mean(axes, true);
  Tensor invStd = xs.var(axes, true, 0).add(eps).rsqrt();
  Tensor y = xs.sub(mean).mul(invStd).cast(x.dtype()).mul(in[1]);
  if (has(in, 2)) y = y.add(in[2]);
  return {y, mean, invStd};
}

void checkLRN(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  int64_t size = requiredIntAttr(n, "size");
  LAZYJIT_USER_CHECK(size > 0, Error, "attribute 'size' = {} must be positive", size);
  floatAttr(n, "alpha", 1e-4f);
  floatAttr(n, "beta", 0.75f);
  floatAttr(n, "bias", 1);
}

Out runLRN(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  std::vector<int64_t> dims = x.intShape();
  LAZYJIT_USER_CHECK(dims.size() >= 2, ShapeError, "the input {} must be [N, C, ...]",
                     dimsText(dims));
  int64_t size = requiredIntAttr(n, "size");
  double alpha = floatAttr(n, "alpha", 1e-4f), beta = floatAttr(n, "beta", 0.75f);
  double bias = floatAttr(n, "bias", 1);
  // the sum of squares over the channels [c - (size-1)/2, c + ceil((size-1)/2)]: a window sum
  // over the channel axis of [N, 1, C, rest]
  int64_t rest = product(dims, 2, dims.size());
  Tensor sq = x.mul(x).reshape(toShape({dims[0], 1, dims[1], rest}));
  sq = sq.pad2d({0, 0, (size - 1) / 2, size / 2});
  Tensor sum = sq.avgPool2d({size, 1}, std::vector<int64_t>{1, 1}).mul(double(size));
  Tensor denom = sum.reshape(x.shape()).mul(alpha / double(size)).add(bias).pow(beta);
  return {x.div(denom)};
}

void checkMVN(const NodeContext &ctx) { intsAttr(ctx.node, "axes"); }
Out runMVN(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  std::vector<int64_t> axes = intsAttr(ctx.node, "axes").value_or(std::vector<int64_t>{0, 2, 3});
  for (int64_t &a : axes) a = normalizeAxis(a, x.ndim(), "axis");
  Tensor mean = x.mean(axes, true);
  Tensor stdDev = x.mul(x).mean(axes, true).sub(mean.mul(mean)).sqrt();
  return {x.sub(mean).div(stdDev.add(1e-9))};
}

void checkLpNorm(const NodeContext &ctx) {
  intAttr(ctx.node, "axis", -1);
  int64_t p = intAttr(ctx.node, "p", 2);
  LAZYJIT_USER_CHECK(p == 1 || p == 2, UnsupportedError, "attribute 'p' = {} is not 1 or 2", p);
}
Out runLpNorm(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  int64_t axis = normalizeAxis(intAttr(ctx.node, "axis", -1), x.ndim(), "axis");
  std::vector<int64_t> axes{axis};
  Tensor norm =
      intAttr(ctx.node, "p", 2) == 1 ? x.abs().sum(axes, true) : x.mul(x).sum(axes, true).sqrt();
  return {x.div(norm)};
}

// ---- Dropout ------------------------------------------------------------------------------------

void checkDropout(const NodeContext &ctx) {
  floatAttr(ctx.node, "ratio", 0.5f);
  intAttr(ctx.node, "seed", 0);
  intAttr(ctx.node, "is_test", 0);
}

/// Dropout at inference: the input, and a mask of all kept (bool from opset 10, the input's type
/// before). Before opset 7 is_test=0 asks for training; runtimes run those models for inference
/// alike, and so does this. From opset 12 a true training_mode input with a nonzero ratio drops
/// values at random, which is not supported.
Out runDropout(const NodeContext &ctx, const Inputs &in) {
  if (ctx.opset >= 12 && has(in, 2) && hostScalar(in[2], "the training_mode input") != 0) {
    double ratio = has(in, 1) ? hostScalar(in[1], "the ratio input") : 0.5;
    LAZYJIT_USER_CHECK(ratio == 0, UnsupportedError,
                       "training-mode dropout (random, ratio {}) is not supported", ratio);
  }
  Tensor mask = ctx.opset >= 10 ? Tensor::ones(in[0].shape(), TensorOptions(dtypes::boolean))
                                : in[0].onesLike();
  return {in[0], mask};
}

// ---- losses -------------------------------------------------------------------------------------

void checkLoss(const NodeContext &ctx) {
  checkStringAttr(ctx.node, "reduction", {"none", "sum", "mean"});
  intAttr(ctx.node, "ignore_index", 0);
}

/// NegativeLogLikelihoodLoss of log-probabilities `logp` [N, C, d...] and class indices `target`
/// [N, d...], weighted by `weight` [C] when given.
Tensor nllLoss(const NodeContext &ctx, const Tensor &logp, const Tensor &target,
               const Tensor &weight) {
  const NodeProto &n = ctx.node;
  std::vector<int64_t> dims = logp.intShape(), td = target.intShape();
  LAZYJIT_USER_CHECK(dims.size() >= 2, ShapeError, "the input {} must be [N, C, ...]",
                     dimsText(dims));
  std::vector<int64_t> expect = dims;
  expect.erase(expect.begin() + 1);
  LAZYJIT_USER_CHECK(td == expect && target.dtype().isInt(), ShapeError,
                     "the target {} ({}) must be integers of shape {}", dimsText(td),
                     target.dtype().name(), dimsText(expect));
  int64_t rank = int64_t(dims.size());
  std::vector<int64_t> classShape(size_t(rank), 1);
  classShape[1] = dims[1];
  Tensor classes =
      Tensor::arange(double(dims[1]), TensorOptions(target.dtype())).reshape(toShape(classShape));
  Tensor hit = target.unsqueeze(1).eq(classes); // [N, C, d...]; a target out of range hits nothing
  std::vector<int64_t> classAxis{1};
  Tensor picked = hit.where(logp, 0).sum(classAxis);
  Tensor w = weight.defined() ? hit.where(weight.reshape(toShape(classShape)), 0).sum(classAxis)
                              : hit.cast(logp.dtype()).sum(classAxis);
  if (findAttr(n, "ignore_index")) {
    Tensor kept = target.ne(double(intAttr(n, "ignore_index", 0)));
    w = kept.where(w, 0);
    picked = kept.where(picked, 0);
  }
  Tensor loss = picked.neg().mul(w);
  std::string reduction = stringAttr(n, "reduction", "mean");
  if (reduction == "none") return loss;
  if (reduction == "sum") return loss.sum();
  return loss.sum().div(w.sum());
}

Out runNLLLoss(const NodeContext &ctx, const Inputs &in) {
  return {nllLoss(ctx, in[0], in[1], has(in, 2) ? in[2] : Tensor())};
}

Out runSCELoss(const NodeContext &ctx, const Inputs &in) {
  LAZYJIT_USER_CHECK(in[0].ndim() >= 2, ShapeError, "the scores {} must be [N, C, ...]",
                     dimsText(in[0].intShape()));
  Tensor logp = in[0].logSoftmax(1);
  return {nllLoss(ctx, logp, in[1], has(in, 2) ? in[2] : Tensor()), logp};
}

// ---- DepthToSpace, SpaceToDepth -----------------------------------------------------------------

void checkDepthToSpace(const NodeContext &ctx) {
  int64_t b = requiredIntAttr(ctx.node, "blocksize");
  LAZYJIT_USER_CHECK(b > 0, Error, "attribute 'blocksize' = {} must be positive", b);
  checkStringAttr(ctx.node, "mode", {"DCR", "CRD"});
}

Out runDepthToSpace(const NodeContext &ctx, const Inputs &in) {
  std::vector<int64_t> d = in[0].intShape();
  int64_t b = requiredIntAttr(ctx.node, "blocksize");
  LAZYJIT_USER_CHECK(d.size() == 4 && d[1] % (b * b) == 0, ShapeError,
                     "the input {} must be [N, C, H, W] with C a multiple of blocksize^2 = {}",
                     dimsText(d), b * b);
  int64_t c = d[1] / (b * b);
  Tensor y = stringAttr(ctx.node, "mode", "DCR") == "DCR"
                 ? in[0].reshape(toShape({d[0], b, b, c, d[2], d[3]})).permute({0, 3, 4, 1, 5, 2})
                 : in[0].reshape(toShape({d[0], c, b, b, d[2], d[3]})).permute({0, 1, 4, 2, 5, 3});
  return {y.reshape(toShape({d[0], c, d[2] * b, d[3] * b}))};
}

void checkSpaceToDepth(const NodeContext &ctx) {
  int64_t b = requiredIntAttr(ctx.node, "blocksize");
  LAZYJIT_USER_CHECK(b > 0, Error, "attribute 'blocksize' = {} must be positive", b);
}

Out runSpaceToDepth(const NodeContext &ctx, const Inputs &in) {
  std::vector<int64_t> d = in[0].intShape();
  int64_t b = requiredIntAttr(ctx.node, "blocksize");
  LAZYJIT_USER_CHECK(d.size() == 4 && d[2] % b == 0 && d[3] % b == 0, ShapeError,
                     "the input {} must be [N, C, H, W] with H and W multiples of blocksize {}",
                     dimsText(d), b);
  Tensor y =
      in[0].reshape(toShape({d[0], d[1], d[2] / b, b, d[3] / b, b})).permute({0, 3, 5, 1, 2, 4});
  return {y.reshape(toShape({d[0], d[1] * b * b, d[2] / b, d[3] / b}))};
}

// ---- Resize, Upsample ---------------------------------------------------------------------------

struct ResizeMode {
  std::string mode;        ///< nearest, linear, cubic
  std::string coord;       ///< coordinate_transformation_mode
  std::string nearestMode; ///< nearest_mode, or "simple" (before opset 11: floor up, ceil down)
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0;
};

/// One axis of a resize.
struct AxisResize {
  int64_t in, out;
  double scale;
  double roiStart = 0, roiEnd = 1;
};

/// The input coordinate output position `o` reads (ONNX's reference: the output length in the
/// formulas is scale * in, unrounded).
double sourceCoord(const ResizeMode &m, const AxisResize &a, int64_t o) {
  double x = double(o), len = a.scale * double(a.in), in = double(a.in);
  const std::string &c = m.coord;
  if (c == "asymmetric") return x / a.scale;
  if (c == "align_corners") return len == 1 ? 0 : x * (in - 1) / (len - 1);
  if (c == "pytorch_half_pixel") return a.out > 1 ? (x + 0.5) / a.scale - 0.5 : 0;
  if (c == "tf_half_pixel_for_nn") return (x + 0.5) / a.scale;
  if (c == "tf_crop_and_resize")
    return len > 1 ? a.roiStart * (in - 1) + x * (a.roiEnd - a.roiStart) * (in - 1) / (len - 1)
                   : 0.5 * (a.roiStart + a.roiEnd) * (in - 1);
  if (c == "half_pixel_symmetric") {
    double adjust = double(a.out) / len;
    return in / 2 * (1 - adjust) + (x + 0.5) / a.scale - 0.5;
  }
  return (x + 0.5) / a.scale - 0.5; // half_pixel
}

std::vector<double> cubicWeights(double r, double A) {
  auto near = [&](double t) { return ((A + 2) * t - (A + 3)) * t * t + 1; };      // |t| <= 1
  auto far = [&](double t) { return ((A * t - 5 * A) * t + 8 * A) * t - 4 * A; }; // 1 < |t| < 2
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

/// An axis's sampling: for each output position, `taps` input indices and weights, and whether
/// the position lies outside the input (tf_crop_and_resize's extrapolation_value).
struct Sampling {
  int64_t taps = 1;
  std::vector<int64_t> idx;
  std::vector<double> weight;
  std::vector<bool> outside;
  bool anyOutside = false, identity = true;
};

Sampling sampleAxis(const ResizeMode &m, const AxisResize &a) {
  Sampling s;
  s.taps = m.mode == "nearest" ? 1 : m.mode == "linear" ? 2 : 4;
  s.identity = a.in == a.out;
  for (int64_t o = 0; o < a.out; ++o) {
    double x = sourceCoord(m, a, o);
    bool outside = m.coord == "tf_crop_and_resize" && (x < 0 || x > double(a.in - 1));
    double fl = std::floor(x), r = x - fl;
    int64_t i0 = int64_t(fl);
    std::vector<int64_t> idx;
    std::vector<double> w;
    if (m.mode == "nearest") {
      const std::string &nm = m.nearestMode;
      bool up =
          r > 0 && (nm == "ceil" || (nm == "round_prefer_floor" && r > 0.5) ||
                    (nm == "round_prefer_ceil" && r >= 0.5) || (nm == "simple" && a.scale < 1));
      idx = {up ? i0 + 1 : i0};
      w = {1};
    } else if (m.mode == "linear") {
      idx = {i0, i0 + 1};
      w = {1 - r, r};
    } else {
      idx = {i0 - 1, i0, i0 + 1, i0 + 2};
      w = cubicWeights(r, m.cubicA);
    }
    if (m.excludeOutside && s.taps > 1) {
      double sum = 0;
      for (size_t t = 0; t < idx.size(); ++t) {
        if (idx[t] < 0 || idx[t] >= a.in) w[t] = 0;
        sum += w[t];
      }
      if (sum != 0)
        for (double &v : w) v /= sum;
    }
    double self = 0;
    for (size_t t = 0; t < idx.size(); ++t) {
      idx[t] = std::clamp<int64_t>(idx[t], 0, a.in - 1);
      if (outside) w[t] = 0;
      if (idx[t] == o)
        self += w[t];
      else if (w[t] != 0)
        s.identity = false;
    }
    s.identity = s.identity && !outside && self == 1;
    s.anyOutside = s.anyOutside || outside;
    s.outside.push_back(outside);
    s.idx.insert(s.idx.end(), idx.begin(), idx.end());
    s.weight.insert(s.weight.end(), w.begin(), w.end());
  }
  return s;
}

/// Nearest sampling that is a movement op: each input repeated `k` times (an integer upscale) or
/// every `k`-th input from `first` (an integer downscale). Returns null when it is neither.
std::optional<Tensor> nearestByMovement(const Tensor &x, int64_t axis, const Sampling &s) {
  if (s.taps != 1 || s.anyOutside) return std::nullopt;
  std::vector<int64_t> dims = x.intShape();
  int64_t in = dims[size_t(axis)], out = int64_t(s.idx.size());
  if (out % in == 0) {
    int64_t k = out / in;
    bool repeat = true;
    for (int64_t o = 0; o < out && repeat; ++o) repeat = s.idx[size_t(o)] == o / k;
    if (repeat) {
      std::vector<int64_t> split = dims, wide = dims;
      split.insert(split.begin() + axis + 1, 1);
      wide.insert(wide.begin() + axis + 1, k);
      dims[size_t(axis)] = out;
      return x.reshape(toShape(split)).expand(toShape(wide)).reshape(toShape(dims));
    }
  }
  int64_t first = s.idx[0], k = out > 1 ? s.idx[1] - s.idx[0] : 1;
  if (k < 1) return std::nullopt;
  for (int64_t o = 0; o < out; ++o)
    if (s.idx[size_t(o)] != first + o * k) return std::nullopt;
  std::vector<Index> ix(size_t(axis), Index::all());
  ix.push_back(Index::range(first, first + (out - 1) * k + 1, k));
  return x.getitem(ix);
}

/// `x` resampled along `axis`: a gather of the taps' positions, then their weighted sum.
Tensor resampleAxis(const Tensor &x, int64_t axis, const Sampling &s, const ResizeMode &m) {
  if (s.identity) return x;
  if (std::optional<Tensor> y = nearestByMovement(x, axis, s)) return *y;
  std::vector<int64_t> dims = x.intShape();
  int64_t out = int64_t(s.outside.size()), trailing = x.ndim() - axis - 1;
  std::vector<Index> ix(size_t(axis), Index::all());
  ix.push_back(Index::of(s.idx));
  Tensor y = x.getitem(ix);
  if (s.taps > 1) {
    std::vector<int64_t> split = dims;
    split[size_t(axis)] = out;
    split.insert(split.begin() + axis + 1, s.taps);
    std::vector<int64_t> ws{out, s.taps};
    ws.insert(ws.end(), size_t(trailing), 1);
    Tensor w = Tensor::fromVector(s.weight, toShape(ws)).cast(y.dtype());
    y = y.reshape(toShape(split)).mul(w).sum(std::vector<int64_t>{axis + 1});
  }
  if (s.anyOutside) {
    std::vector<int64_t> ms{out};
    ms.insert(ms.end(), size_t(trailing), 1);
    Tensor mask = Tensor::fromVector(s.outside, toShape(ms));
    y = mask.where(m.extrapolation, y);
  }
  return y;
}

/// Resizes `x` to `out` along every axis with the given scales (ROI per axis as [starts, ends]).
Tensor resize(const Tensor &x, const ResizeMode &m, const std::vector<int64_t> &out,
              const std::vector<double> &scales, const std::vector<double> &roi) {
  bool toFloat = m.mode != "nearest" && !x.dtype().isFloating();
  Tensor y = toFloat ? x.cast(dtypes::float32) : x;
  std::vector<int64_t> in = x.intShape();
  size_t rank = in.size();
  for (size_t i = 0; i < rank; ++i) {
    AxisResize a{in[i], out[i], scales[i]};
    if (roi.size() == 2 * rank) {
      a.roiStart = roi[i];
      a.roiEnd = roi[i + rank];
    }
    LAZYJIT_USER_CHECK(a.out >= 0 && a.scale > 0, ShapeError,
                       "cannot resize dim {} of {} to {} (scale {})", i, dimsText(in), a.out,
                       a.scale);
    if (a.out == 0 || a.in == 0) {
      std::vector<int64_t> d = y.intShape();
      d[i] = a.out;
      y = Tensor::zeros(toShape(d), TensorOptions(y.dtype()));
      continue;
    }
    y = resampleAxis(y, int64_t(i), sampleAxis(m, a), m);
  }
  return toFloat ? y.add(0.5).floor().cast(x.dtype()) : y;
}

void checkResize(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  checkStringAttr(n, "mode", {"nearest", "linear", "cubic"});
  checkStringAttr(n, "coordinate_transformation_mode",
                  {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                   "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"});
  checkStringAttr(n, "nearest_mode", {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  checkStringAttr(n, "keep_aspect_ratio_policy", {"stretch", "not_larger", "not_smaller"});
  floatAttr(n, "cubic_coeff_a", -0.75f);
  intAttr(n, "exclude_outside", 0);
  floatAttr(n, "extrapolation_value", 0);
  intsAttr(n, "axes");
  LAZYJIT_USER_CHECK(intAttr(n, "antialias", 0) == 0, UnsupportedError,
                     "attribute 'antialias' = 1 is not supported");
  if (ctx.opset < 11)
    LAZYJIT_USER_CHECK(n.input.size() == 2, Error, "it takes 2 inputs before opset 11");
}

Out runResize(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  std::vector<int64_t> dims = x.intShape();
  size_t rank = dims.size();
  ResizeMode m;
  m.mode = stringAttr(n, "mode", "nearest");
  if (ctx.opset < 11) {
    m.coord = "asymmetric";
    m.nearestMode = "simple";
  } else {
    m.coord = stringAttr(n, "coordinate_transformation_mode", "half_pixel");
    m.nearestMode = stringAttr(n, "nearest_mode", "round_prefer_floor");
  }
  m.cubicA = floatAttr(n, "cubic_coeff_a", -0.75f);
  m.excludeOutside = intAttr(n, "exclude_outside", 0) != 0;
  m.extrapolation = floatAttr(n, "extrapolation_value", 0);
  // opset 18's axes: scales, sizes and roi name only these axes
  std::vector<int64_t> axes = intsAttr(n, "axes").value_or(iota(0, int64_t(rank)));
  for (int64_t &a : axes) a = normalizeAxis(a, int64_t(rank), "axis");
  size_t na = axes.size();
  Tensor roiIn, scalesIn, sizesIn;
  if (ctx.opset < 11) {
    scalesIn = in[1];
  } else {
    roiIn = has(in, 1) ? in[1] : Tensor();
    scalesIn = has(in, 2) ? in[2] : Tensor();
    sizesIn = has(in, 3) ? in[3] : Tensor();
  }
  if (scalesIn.defined() && numelOf(scalesIn) == 0) scalesIn = Tensor();
  if (sizesIn.defined() && numelOf(sizesIn) == 0) sizesIn = Tensor();
  LAZYJIT_USER_CHECK(scalesIn.defined() != sizesIn.defined(), Error,
                     "exactly one of scales and sizes must be given");
  std::vector<int64_t> out = dims;
  std::vector<double> scales(rank, 1.0), roi;
  if (scalesIn.defined()) {
    std::vector<double> s = hostDoubles(scalesIn);
    LAZYJIT_USER_CHECK(s.size() == na, ShapeError, "scales has {} values for {} axes", s.size(),
                       na);
    for (size_t k = 0; k < na; ++k) {
      size_t a = size_t(axes[k]);
      scales[a] = s[k];
      out[a] = int64_t(std::floor(s[k] * double(dims[a])));
    }
  } else {
    std::vector<int64_t> sz = hostInts(sizesIn, "the sizes input");
    LAZYJIT_USER_CHECK(sz.size() == na, ShapeError, "sizes {} has {} values for {} axes",
                       dimsText(sz), sz.size(), na);
    std::string policy = stringAttr(n, "keep_aspect_ratio_policy", "stretch");
    double common = policy == "not_larger" ? INFINITY : 0;
    for (size_t k = 0; k < na; ++k) {
      size_t a = size_t(axes[k]);
      double s = double(sz[k]) / double(dims[a]);
      if (policy == "not_larger") common = std::min(common, s);
      if (policy == "not_smaller") common = std::max(common, s);
      scales[a] = s;
      out[a] = sz[k];
    }
    if (policy != "stretch")
      for (size_t k = 0; k < na; ++k) {
        size_t a = size_t(axes[k]);
        scales[a] = common;
        out[a] = int64_t(std::round(common * double(dims[a])));
      }
  }
  if (roiIn.defined() && numelOf(roiIn) > 0 && m.coord == "tf_crop_and_resize") {
    std::vector<double> r = hostDoubles(roiIn);
    LAZYJIT_USER_CHECK(r.size() == 2 * na, ShapeError, "roi has {} values for {} axes", r.size(),
                       na);
    roi.assign(2 * rank, 0);
    for (size_t i = 0; i < rank; ++i) roi[i + rank] = 1;
    for (size_t k = 0; k < na; ++k) {
      roi[size_t(axes[k])] = r[k];
      roi[size_t(axes[k]) + rank] = r[k + na];
    }
  }
  return {resize(x, m, out, scales, roi)};
}

void checkUpsample(const NodeContext &ctx) {
  checkStringAttr(ctx.node, "mode", {"nearest", "linear"});
  if (ctx.opset < 9)
    LAZYJIT_USER_CHECK(floatsAttr(ctx.node, "scales"), Error,
                       "the required attribute 'scales' is missing");
}

Out runUpsample(const NodeContext &ctx, const Inputs &in) {
  const Tensor &x = in[0];
  std::vector<int64_t> dims = x.intShape();
  std::vector<double> scales;
  if (ctx.opset < 9) {
    std::vector<float> s = *floatsAttr(ctx.node, "scales");
    scales.assign(s.begin(), s.end());
  } else {
    LAZYJIT_USER_CHECK(has(in, 1), Error, "from opset 9 the scales are the second input");
    scales = hostDoubles(in[1]);
  }
  LAZYJIT_USER_CHECK(scales.size() == dims.size(), ShapeError, "scales has {} values for rank {}",
                     scales.size(), dims.size());
  ResizeMode m{stringAttr(ctx.node, "mode", "nearest"), "asymmetric", "simple"};
  std::vector<int64_t> out;
  for (size_t i = 0; i < dims.size(); ++i)
    out.push_back(int64_t(std::floor(scales[i] * double(dims[i]))));
  return {resize(x, m, out, scales, {})};
}

// ---- GridSample, RoiAlign -----------------------------------------------------------------------

void checkGridSample(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  checkStringAttr(n, "mode", {"bilinear", "nearest", "bicubic", "linear", "cubic"});
  checkStringAttr(n, "padding_mode", {"zeros", "border", "reflection"});
  intAttr(n, "align_corners", 0);
}

/// PyTorch's reflect_coordinates: `x` reflected into [lo2 / 2, hi2 / 2] (bounds given doubled).
Tensor reflectCoord(const Tensor &x, double lo2, double hi2) {
  if (lo2 == hi2) return x.zerosLike();
  double lo = lo2 / 2, span = (hi2 - lo2) / 2;
  Tensor d = x.sub(lo).abs();
  Tensor flips = d.div(span).floor();
  Tensor extra = d.sub(flips.mul(span));
  Tensor odd = flips.sub(flips.div(2).floor().mul(2)).ne(0.0);
  return odd.where(extra.neg().add(span + lo), extra.add(lo));
}

/// One sampled position along an axis of GridSample: its index (a float tensor [N, P]) and weight.
struct GridTap {
  Tensor idx, weight;
};

/// The taps along one axis of size `size` for normalized grid coordinates `g` [N, P] (PyTorch's
/// grid_sampler_compute_source_index and the interpolation kernels).
std::vector<GridTap> gridTaps(const Tensor &g, int64_t size, const std::string &mode,
                              const std::string &padding, bool alignCorners) {
  double sz = double(size);
  Tensor x = alignCorners ? g.add(1).mul((sz - 1) / 2) : g.add(1).mul(sz).sub(1).div(2);
  auto pad = [&](const Tensor &c) {
    if (padding == "border") return c.clip(0, sz - 1);
    if (padding == "reflection")
      return (alignCorners ? reflectCoord(c, 0, 2 * (sz - 1)) : reflectCoord(c, -1, 2 * sz - 1))
          .clip(0, sz - 1);
    return c;
  };
  std::vector<GridTap> taps;
  if (mode == "bicubic" || mode == "cubic") {
    // the taps are padded one by one, not the coordinate
    Tensor x0 = x.floor(), t = x.sub(x0);
    double A = -0.75;
    auto nearW = [&](const Tensor &u) { return u.mul(A + 2).sub(A + 3).mul(u).mul(u).add(1); };
    auto farW = [&](const Tensor &u) {
      return u.mul(A).sub(5 * A).mul(u).add(8 * A).mul(u).sub(4 * A);
    };
    Tensor s = t.neg().add(1);
    taps.push_back({pad(x0.sub(1)), farW(t.add(1))});
    taps.push_back({pad(x0), nearW(t)});
    taps.push_back({pad(x0.add(1)), nearW(s)});
    taps.push_back({pad(x0.add(2)), farW(s.add(1))});
    return taps;
  }
  x = pad(x);
  if (mode == "nearest") {
    // round half to even, as nearbyint
    Tensor f = x.floor(), r = x.sub(f);
    Tensor odd = f.sub(f.div(2).floor().mul(2)).ne(0.0);
    Tensor up = r.gt(0.5).add(r.eq(0.5).mul(odd)).gt(0);
    taps.push_back({up.where(f.add(1), f), x.onesLike()});
    return taps;
  }
  Tensor x0 = x.floor(), w1 = x.sub(x0);
  taps.push_back({x0, w1.neg().add(1)});
  taps.push_back({x0.add(1), w1});
  return taps;
}

Out runGridSample(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0], &grid = in[1];
  std::vector<int64_t> xd = x.intShape(), gd = grid.intShape();
  LAZYJIT_USER_CHECK(xd.size() <= 4, UnsupportedError,
                     "only 2-D sampling ([N, C, H, W] input) is supported, not {}", dimsText(xd));
  LAZYJIT_USER_CHECK(xd.size() == 4 && gd.size() == 4 && gd[0] == xd[0] && gd[3] == 2, ShapeError,
                     "the input {} and the grid {} must be [N, C, H, W] and [N, H_out, W_out, 2]",
                     dimsText(xd), dimsText(gd));
  std::string mode = stringAttr(n, "mode", "bilinear");
  std::string padding = stringAttr(n, "padding_mode", "zeros");
  bool align = intAttr(n, "align_corners", 0) != 0;
  int64_t N = xd[0], C = xd[1], H = xd[2], W = xd[3], P = gd[1] * gd[2];
  Tensor g = grid.cast(dtypes::float32);
  Tensor gx =
      g.getitem({Index::all(), Index::all(), Index::all(), Index::at(0)}).reshape(toShape({N, P}));
  Tensor gy =
      g.getitem({Index::all(), Index::all(), Index::all(), Index::at(1)}).reshape(toShape({N, P}));
  std::vector<GridTap> tx = gridTaps(gx, W, mode, padding, align);
  std::vector<GridTap> ty = gridTaps(gy, H, mode, padding, align);
  // the sampling as a matrix [N, P, H*W] of the taps' weights (a tap outside the input reads 0)
  Tensor positions = Tensor::arange(double(H * W)).reshape(toShape({1, 1, H * W}));
  Tensor m;
  for (const GridTap &a : ty)
    for (const GridTap &b : tx) {
      Tensor inside = a.idx.ge(0.0)
                          .mul(a.idx.le(double(H - 1)))
                          .mul(b.idx.ge(0.0))
                          .mul(b.idx.le(double(W - 1)));
      Tensor w = inside.where(a.weight.mul(b.weight), 0);
      Tensor flat = a.idx.mul(double(W)).add(b.idx);
      Tensor term = flat.unsqueeze(-1).eq(positions).where(w.unsqueeze(-1), 0);
      m = m.defined() ? m.add(term) : term;
    }
  Tensor y = x.cast(dtypes::float32).reshape(toShape({N, C, H * W})).matmul(m.permute({0, 2, 1}));
  return {y.cast(x.dtype()).reshape(toShape({N, C, gd[1], gd[2]}))};
}

void checkRoiAlign(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  checkStringAttr(n, "mode", {"avg", "max"});
  checkStringAttr(n, "coordinate_transformation_mode", {"half_pixel", "output_half_pixel"});
  intAttr(n, "output_height", 1);
  intAttr(n, "output_width", 1);
  intAttr(n, "sampling_ratio", 0);
  floatAttr(n, "spatial_scale", 1);
}

/// RoiAlign as onnxruntime computes it (and ONNX's reference after it): each output bin samples a
/// grid of points bilinearly; avg mode averages them, max mode takes the largest of the points'
/// weighted corner values. The boxes are read on the host, where the sampling is worked out into
/// rows of the input (as [N*H*W, C]) and weights, gathered in one step.
Out runRoiAlign(const NodeContext &ctx, const Inputs &in) {
  const NodeProto &n = ctx.node;
  const Tensor &x = in[0];
  std::vector<int64_t> xd = x.intShape();
  LAZYJIT_USER_CHECK(xd.size() == 4, ShapeError, "the input {} must be [N, C, H, W]", dimsText(xd));
  std::vector<int64_t> rd = in[1].intShape();
  LAZYJIT_USER_CHECK(rd.size() == 2 && rd[1] == 4, ShapeError, "the rois {} must be [R, 4]",
                     dimsText(rd));
  std::vector<double> rois = hostDoubles(in[1]);
  std::vector<int64_t> batch = hostInts(in[2], "the batch_indices input");
  int64_t R = rd[0], N = xd[0], C = xd[1], H = xd[2], W = xd[3];
  LAZYJIT_USER_CHECK(int64_t(batch.size()) == R, ShapeError, "{} batch indices for {} rois",
                     batch.size(), R);
  int64_t ph = intAttr(n, "output_height", 1), pw = intAttr(n, "output_width", 1);
  int64_t ratio = intAttr(n, "sampling_ratio", 0);
  double scale = floatAttr(n, "spatial_scale", 1);
  bool max = stringAttr(n, "mode", "avg") == "max";
  bool halfPixel = ctx.opset >= 16 &&
                   stringAttr(n, "coordinate_transformation_mode", "half_pixel") == "half_pixel";
  double offset = halfPixel ? 0.5 : 0;
  // per roi and bin: the sampled (row, weight) pairs, 4 per sample point
  std::vector<std::vector<std::pair<int64_t, double>>> bins(size_t(R * ph * pw));
  for (int64_t r = 0; r < R; ++r) {
    LAZYJIT_USER_CHECK(batch[size_t(r)] >= 0 && batch[size_t(r)] < N, ShapeError,
                       "batch index {} of roi {} is out of range for batch {}", batch[size_t(r)], r,
                       N);
    const double *box = &rois[size_t(4 * r)];
    double x0 = box[0] * scale - offset, y0 = box[1] * scale - offset;
    double rw = box[2] * scale - offset - x0, rh = box[3] * scale - offset - y0;
    if (!halfPixel) {
      rw = std::max(rw, 1.0);
      rh = std::max(rh, 1.0);
    }
    double bh = rh / double(ph), bw = rw / double(pw);
    int64_t gh = ratio > 0 ? ratio : int64_t(std::ceil(rh / double(ph)));
    int64_t gw = ratio > 0 ? ratio : int64_t(std::ceil(rw / double(pw)));
    double count = double(std::max<int64_t>(gh * gw, 1));
    int64_t base = batch[size_t(r)] * H * W;
    for (int64_t i = 0; i < ph; ++i)
      for (int64_t j = 0; j < pw; ++j) {
        auto &bin = bins[size_t((r * ph + i) * pw + j)];
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix) {
            double y = y0 + double(i) * bh + (double(iy) + 0.5) * bh / double(gh);
            double xx = x0 + double(j) * bw + (double(ix) + 0.5) * bw / double(gw);
            if (y < -1 || y > double(H) || xx < -1 || xx > double(W)) {
              for (int k = 0; k < 4; ++k) bin.push_back({base, 0});
              continue;
            }
            y = std::max(y, 0.0);
            xx = std::max(xx, 0.0);
            int64_t yl = int64_t(y), xl = int64_t(xx), yh, xh;
            if (yl >= H - 1) {
              yh = yl = H - 1;
              y = double(yl);
            } else
              yh = yl + 1;
            if (xl >= W - 1) {
              xh = xl = W - 1;
              xx = double(xl);
            } else
              xh = xl + 1;
            double ly = y - double(yl), lx = xx - double(xl), hy = 1 - ly, hx = 1 - lx;
            double d = max ? 1 : count;
            bin.push_back({base + yl * W + xl, hy * hx / d});
            bin.push_back({base + yl * W + xh, hy * lx / d});
            bin.push_back({base + yh * W + xl, ly * hx / d});
            bin.push_back({base + yh * W + xh, ly * lx / d});
          }
      }
  }
  size_t taps = 1;
  for (const auto &b : bins) taps = std::max(taps, b.size());
  std::vector<int64_t> rows;
  std::vector<double> weights;
  for (const auto &b : bins)
    for (size_t k = 0; k < taps; ++k) {
      // a shorter bin is filled with a repeat of its first tap (max) or a zero weight (avg)
      std::pair<int64_t, double> t = k < b.size() ? b[k]
                                     : b.empty()  ? std::pair<int64_t, double>{0, 0}
                                     : max        ? b[0]
                                                  : std::pair{b[0].first, 0.0};
      rows.push_back(t.first);
      weights.push_back(t.second);
    }
  int64_t T = int64_t(taps);
  Tensor table = x.permute({0, 2, 3, 1}).reshape(toShape({N * H * W, C}));
  Tensor vals = table.getitem({Index::of(rows)}).reshape(toShape({R * ph * pw, T, C}));
  Tensor w = Tensor::fromVector(weights, toShape({R * ph * pw, T, 1})).cast(x.dtype());
  Tensor weighted = vals.mul(w);
  Tensor y = max ? weighted.max(std::vector<int64_t>{1}) : weighted.sum(std::vector<int64_t>{1});
  return {y.reshape(toShape({R, ph, pw, C})).permute({0, 3, 1, 2})};
}

// ---- the table ----------------------------------------------------------------------------------

const OpDef opTable[] = {
    OpDef{"Conv", 2, 3, 1, checkConv, runConv},
    OpDef{"ConvTranspose", 2, 3, 1, checkConvTranspose, runConvTranspose},
    OpDef{"AveragePool", 1, 1, 1, checkPool, runAveragePool},
    OpDef{"MaxPool", 1, 1, 2, checkPool, runMaxPool},
    OpDef{"LpPool", 1, 1, 1, checkLpPool, runLpPool},
    OpDef{"GlobalAveragePool", 1, 1, 1, noCheck,
          [](const NodeContext &, const Inputs &in) { return runGlobalPool(in[0], false); }},
    OpDef{"GlobalMaxPool", 1, 1, 1, noCheck,
          [](const NodeContext &, const Inputs &in) { return runGlobalPool(in[0], true); }},
    OpDef{"GlobalLpPool", 1, 1, 1, checkGlobalLpPool, runGlobalLpPool},
    OpDef{"MaxUnpool", 2, 3, 1, checkMaxUnpool, runMaxUnpool},
    OpDef{"BatchNormalization", 5, 5, 5, checkBatchNorm, runBatchNorm},
    OpDef{"InstanceNormalization", 3, 3, 1, checkEpsilon, runInstanceNorm},
    OpDef{"LayerNormalization", 2, 3, 3, checkLayerNorm, runLayerNorm},
    OpDef{"LRN", 1, 1, 1, checkLRN, runLRN},
    OpDef{"MeanVarianceNormalization", 1, 1, 1, checkMVN, runMVN},
    OpDef{"LpNormalization", 1, 1, 1, checkLpNorm, runLpNorm},
    OpDef{"Dropout", 1, 3, 2, checkDropout, runDropout},
    OpDef{"NegativeLogLikelihoodLoss", 2, 3, 1, checkLoss, runNLLLoss},
    OpDef{"SoftmaxCrossEntropyLoss", 2, 3, 2, checkLoss, runSCELoss},
    OpDef{"DepthToSpace", 1, 1, 1, checkDepthToSpace, runDepthToSpace},
    OpDef{"SpaceToDepth", 1, 1, 1, checkSpaceToDepth, runSpaceToDepth},
    OpDef{"Resize", 1, 4, 1, checkResize, runResize},
    OpDef{"Upsample", 1, 2, 1, checkUpsample, runUpsample},
    OpDef{"GridSample", 2, 2, 1, checkGridSample, runGridSample},
    OpDef{"RoiAlign", 3, 3, 1, checkRoiAlign, runRoiAlign},
};

} // namespace

std::span<const OpDef> nnOps() { return opTable; }

} // namespace lazyjit::onnx::ops

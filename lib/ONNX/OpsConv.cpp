// ONNX ops: convolution (Conv, ConvTranspose), pooling (average, max with Indices, Lp, global) and
// MaxUnpool. Window geometry (auto_pad, pads, ceil_mode) is worked out on the host and handed to
// Tensor's N-d conv2d/pool ops as explicit padding.
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace lazyjit::onnx::ops {

namespace {

// ---- window geometry ----------------------------------------------------------------------------

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
};

} // namespace

std::span<const OpDef> convOps() { return opTable; }

} // namespace lazyjit::onnx::ops

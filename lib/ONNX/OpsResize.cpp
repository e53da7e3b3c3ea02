// ONNX ops that resample an image: Resize (opsets 10-18, every mode and coordinate transform),
// Upsample, GridSample and RoiAlign. Resize's per-axis sampling (indices and weights) is computed
// on the host and applied as a gather plus a weighted sum along each axis in turn; GridSample
// builds its sampling matrix from the grid with Tensor ops; RoiAlign reads the boxes on the host.
#include "OpsCommon.h"

#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace lazyjit::onnx::ops {

namespace {

// ---- helpers ------------------------------------------------------------------------------------

/// The values of a float input read on the host.
std::vector<double> hostDoubles(const Tensor &t) {
  return t.cast(dtypes::float64).toVector<double>();
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
  if (scalesIn.defined() && numel(scalesIn) == 0) scalesIn = Tensor();
  if (sizesIn.defined() && numel(sizesIn) == 0) sizesIn = Tensor();
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
  if (roiIn.defined() && numel(roiIn) > 0 && m.coord == "tf_crop_and_resize") {
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
    OpDef{"Resize", 1, 4, 1, checkResize, runResize},
    OpDef{"Upsample", 1, 2, 1, checkUpsample, runUpsample},
    OpDef{"GridSample", 2, 2, 1, checkGridSample, runGridSample},
    OpDef{"RoiAlign", 3, 3, 1, checkRoiAlign, runRoiAlign},
};

} // namespace

std::span<const OpDef> resizeOps() { return opTable; }

} // namespace lazyjit::onnx::ops

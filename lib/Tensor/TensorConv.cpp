// Pooling and convolution of the Tensor API (reference tensor.py): _pool (the windows of a tensor
// as extra axes, through repeat/shrink/reshape), avg_pool2d, max_pool2d, conv2d as a pooling op,
// and conv_transpose2d.
#include "TensorInternals.h"
#include "lazyjit/Runtime/Device.h"
#include "lazyjit/Tensor/Function.h"

#include <algorithm>
#include <functional>
#include <numeric>

namespace lazyjit {

using TI = TensorInternals;

namespace {

std::vector<int64_t> pairOf(const std::vector<int64_t> &v, size_t n, const char *op, const char *what) {
  if (v.size() == 1) return std::vector<int64_t>(n, v[0]);
  LAZYJIT_USER_CHECK(v.size() == n, ShapeError, "{}: expected 1 or {} {} values, got {}", op, n, what,
                     v.size());
  return v;
}

/// conv_transpose2d; with `contiguousInput` the convolution it reduces to reads its padded input
/// from a buffer written out first instead of through masks.
Tensor convTranspose(const Tensor &self, const Tensor &weight, const std::optional<Tensor> &bias, int64_t groups,
                     const std::vector<int64_t> &strideIn, const std::vector<int64_t> &dilationIn,
                     const std::vector<int64_t> &paddingIn, const std::vector<int64_t> &outputPaddingIn,
                     bool contiguousInput) {
  LAZYJIT_USER_CHECK(weight.ndim() >= 3 && self.ndim() == weight.ndim(), ShapeError,
                     "conv_transpose2d: input {} does not match the weights {}", describe(self),
                     describe(weight));
  std::vector<int64_t> HW;
  for (int64_t i = 2; i < weight.ndim(); ++i) HW.push_back(weight.shape()[i].asInt());
  size_t nhw = HW.size();
  std::vector<int64_t> trailing;
  for (int64_t i = 3; i <= weight.ndim(); ++i) trailing.push_back(i);
  int64_t w0 = weight.shape()[0].asInt(), w1 = weight.shape()[1].asInt();
  LAZYJIT_USER_CHECK(groups >= 1 && w0 % groups == 0 && pyEq(self.shape()[1], w0), ShapeError,
                     "conv_transpose2d: input {} does not match the weights {} with groups={} ({} vs. {})",
                     describe(self), describe(weight), groups, w0, self.shape()[1].render());
  Shape wr{groups, w0 / groups, w1};
  for (int64_t h : HW) wr.push_back(h);
  std::vector<int64_t> wp{0, 2, 1};
  wp.insert(wp.end(), trailing.begin(), trailing.end());
  Tensor x = self;
  Tensor w = weight.reshape(wr).permute(wp).flip(trailing);
  std::vector<int64_t> stride = pairOf(strideIn, nhw, "conv_transpose2d", "stride");
  if (std::any_of(stride.begin(), stride.end(), [](int64_t s) { return s > 1; })) {
    Shape s1(x.shape().begin(), x.shape().begin() + 2);
    for (size_t i = 2; i < x.shape().size(); ++i) {
      s1.push_back(x.shape()[i]);
      s1.push_back(1);
    }
    x = x.reshape(s1);
    std::vector<std::optional<SIntPair>> p{SIntPair(0, 0), SIntPair(0, 0)};
    for (int64_t s : stride) {
      p.emplace_back(SIntPair(0, 0));
      p.emplace_back(SIntPair(0, s - 1));
    }
    x = x.pad(p);
    Shape s2(x.shape().begin(), x.shape().begin() + 2);
    for (size_t i = 0; i < nhw; ++i) s2.push_back(x.shape()[2 + 2 * i] * stride[i]);
    x = x.reshape(s2);
    std::vector<std::optional<SIntPair>> shr{SIntPair(0, x.shape()[0]), SIntPair(0, x.shape()[1])};
    for (size_t i = 0; i < nhw; ++i) shr.emplace_back(SIntPair(0, x.shape()[2 + i] - (stride[i] - 1)));
    x = x.shrink(shr);
  }
  std::vector<int64_t> dil = pairOf(dilationIn, nhw, "conv_transpose2d", "dilation");
  std::vector<int64_t> pad = pairOf(paddingIn, nhw, "conv_transpose2d", "padding");
  std::vector<int64_t> opad = pairOf(outputPaddingIn, nhw, "conv_transpose2d", "output_padding");
  std::vector<int64_t> padding;
  for (size_t j = nhw; j-- > 0;) {
    padding.push_back((HW[j] - 1) * dil[j] - pad[j]);
    padding.push_back((HW[j] - 1) * dil[j] - pad[j] + opad[j]);
  }
  Shape wf{w.shape()[0] * w.shape()[1]};
  wf.insert(wf.end(), w.shape().begin() + 2, w.shape().end());
  if (!contiguousInput) return x.conv2d(w.reshape(wf), bias, groups, {1}, dilationIn, padding);
  // the padded (and strided) input written out once: the convolution then reads it without masks
  // (`padding` is in pad2d's order already: the last dimension's first)
  return x.pad2d(padding).contiguous().conv2d(w.reshape(wf), bias, groups, {1}, dilationIn, {0});
}

// OPT=5 (FusionFlags::convLayouts): a convolution's input and weight gradients computed directly,
// as PyTorch's backward does, instead of through the pooling op's movement ops.
// - The input's: the transposed convolution of the output's gradient g. Through the movement ops
//   the autograd builds a window-sized intermediate, [bs, cin, oy, ox, kh, kw] (655 MB for W10's
//   second convolution), which a second kernel sums back over the overlapping windows. Here g is
//   padded and written out once (a copy about its size: the convolution then reads it without
//   masks, which the CPU's channel-vector layout needs to run at speed, HeuristicsCPU.cpp
//   scatterTile) and one convolution kernel writes the input's gradient.
// - The weight's: dw[o, c, k] = sum over (n, oy, ox) of g[n, o, oy, ox] * x's window at k, one
//   reduction as the reference's, but over g written out channels-last (a copy of its size) and
//   producing [c, kh, kw, o]: the output channels are then contiguous in the output and in g, the
//   CPU's vector axis, and the window's columns a register tile (W10's weight gradients: 41, 30 and
//   114 ms a step as dot products along ow, 10, 9 and 55 with this layout).
// The convolution's output passes through unchanged; it is computed over the input and the weight
// detached where their gradient is computed here (the bias, and an input or weight whose gradient
// cannot be, keep theirs from its graph).
struct ConvGradientFn : Function {
  int64_t groups = 1;
  std::vector<int64_t> stride, dilation, kernel;
  std::vector<int64_t> pad2dPadding;          ///< conv2d's, in pad2d's order (the weight's pool)
  std::vector<int64_t> padding, outputPadding; ///< per dimension (the transposed convolution)
  bool directInput = false, directWeight = false;
  LazyBufferRef x, weight; ///< what backward needs: the input for the weight's, the weight for the input's
  std::string_view name() const override { return "ConvGradient"; }
  /// Inputs: the convolution's output, the input, the weight.
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    if (directInput) weight = in[2];
    if (directWeight) x = in[1];
    return in[0];
  }
  std::vector<LazyBufferRef> backward(const LazyBufferRef &g) override {
    LazyBufferRef dx, dw;
    if (directInput && needsInputGrad(1))
      dx = convTranspose(Tensor(g), Tensor(weight), std::nullopt, groups, stride, dilation, padding, outputPadding,
                         true)
               .lazydata();
    if (directWeight && needsInputGrad(2)) dw = weightGradient(Tensor(g)).lazydata();
    return {g, dx, dw};
  }

private:
  Tensor weightGradient(const Tensor &gt) const {
    size_t nhw = kernel.size();
    Tensor xp = TI::pool(Tensor(x).pad2d(pad2dPadding), "conv2d", kernel, stride, dilation); // [n, c, *o, *k]
    int64_t n = xp.shape()[0].asInt(), o = gt.shape()[1].asInt();
    std::vector<int64_t> toLast{0};
    for (size_t j = 0; j < nhw; ++j) toLast.push_back(static_cast<int64_t>(2 + j));
    toLast.push_back(1);
    Tensor gl = gt.permute(toLast).contiguous(); // [n, *o, cout]
    Shape xs(xp.shape().begin(), xp.shape().end()), gs{n, 1};
    xs.push_back(1);
    for (size_t j = 0; j < nhw; ++j) gs.push_back(gt.shape()[2 + j]);
    gs.insert(gs.end(), nhw, SInt(1));
    gs.push_back(o);
    Tensor prod = xp.reshape(xs).mul(gl.reshape(gs)); // [n, c, *o, *k, cout]
    // to [c, *k, cout, n, *o] and summed over the last 1 + nhw axes
    std::vector<int64_t> perm{1};
    for (size_t j = 0; j < nhw; ++j) perm.push_back(static_cast<int64_t>(2 + nhw + j));
    perm.push_back(static_cast<int64_t>(2 + 2 * nhw));
    perm.push_back(0);
    for (size_t j = 0; j < nhw; ++j) perm.push_back(static_cast<int64_t>(2 + j));
    std::vector<int64_t> sumAxes;
    for (size_t j = 0; j <= nhw; ++j) sumAxes.push_back(static_cast<int64_t>(2 + nhw + j));
    Tensor dwT = prod.permute(perm).sum(sumAxes); // [c, *k, cout]
    std::vector<int64_t> back{static_cast<int64_t>(1 + nhw), 0};
    for (size_t j = 0; j < nhw; ++j) back.push_back(static_cast<int64_t>(1 + j));
    return dwT.permute(back); // [cout, c, *k]
  }
};

} // namespace

Tensor TensorInternals::pool(const Tensor &self, const char *op, const std::vector<int64_t> &k_,
                             const std::vector<int64_t> &strideIn,
                             const std::vector<int64_t> &dilationIn) {
  size_t nk = k_.size();
  LAZYJIT_USER_CHECK(self.ndim() >= static_cast<int64_t>(nk), ShapeError, "{}: can't pool {} with {}", op,
                     describe(self), fmtInts(k_));
  LAZYJIT_USER_CHECK(allInt(self.shape()), UnsupportedError, "{}: symbolic shape {}", op, describe(self));
  std::vector<int64_t> s_ = pairOf(strideIn, nk, op, "stride"), d_ = pairOf(dilationIn, nk, op, "dilation");
  auto positive = [](const std::vector<int64_t> &v) {
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x > 0; });
  };
  LAZYJIT_USER_CHECK(positive(k_), ShapeError, "{}: kernel {} must be positive", op, fmtInts(k_));
  LAZYJIT_USER_CHECK(positive(s_), ShapeError, "{}: stride {} must be positive", op, fmtInts(s_));
  LAZYJIT_USER_CHECK(positive(d_), ShapeError, "{}: dilation {} must be positive", op, fmtInts(d_));
  std::vector<int64_t> shape = self.intShape();
  size_t np = shape.size() - nk;
  std::vector<std::optional<SIntPair>> slcPrefix;
  Shape prefix;
  for (size_t i = 0; i < np; ++i) {
    slcPrefix.emplace_back(SIntPair(0, shape[i]));
    prefix.push_back(shape[i]);
  }
  std::vector<int64_t> i_(shape.begin() + np, shape.end());
  for (size_t j = 0; j < nk; ++j)
    LAZYJIT_USER_CHECK(i_[j] >= d_[j] * (k_[j] - 1) + 1, ShapeError,
                       "{}: kernel {} (dilation {}) does not fit {}", op, fmtInts(k_), fmtInts(d_),
                       describe(self));
  auto cat = [](Shape a, const Shape &b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  auto slc = [&](const std::vector<std::optional<SIntPair>> &rest) {
    auto v = slcPrefix;
    v.insert(v.end(), rest.begin(), rest.end());
    return v;
  };
  bool anyBig = false, anyDil = false;
  for (size_t j = 0; j < nk; ++j) {
    anyBig = anyBig || k_[j] > s_[j];
    anyDil = anyDil || d_[j] != 1;
  }
  std::vector<int64_t> permOut;
  for (size_t i = 0; i < np; ++i) permOut.push_back(static_cast<int64_t>(i));
  if (anyBig || anyDil) {
    std::vector<int64_t> o_, e_;
    for (size_t j = 0; j < nk; ++j) {
      o_.push_back((i_[j] - d_[j] * (k_[j] - 1) - 1) / s_[j] + 1);
      e_.push_back(static_cast<int64_t>(std::ceil(static_cast<double>(k_[j] * (i_[j] + d_[j])) / i_[j])));
    }
    Shape r1, e1, r2;
    for (size_t j = 0; j < nk; ++j) {
      r1.push_back(1);
      r1.push_back(i_[j]);
      e1.push_back(e_[j]);
      e1.push_back(i_[j]);
      r2.push_back(e_[j] * i_[j]);
    }
    Tensor xup = self.reshape(cat(prefix, r1)).expand(cat(prefix, e1)).reshape(cat(prefix, r2));
    // slide by dilation
    std::vector<std::optional<SIntPair>> s1;
    for (size_t j = 0; j < nk; ++j) s1.emplace_back(SIntPair(0, k_[j] * (i_[j] + d_[j])));
    xup = xup.slice(slc(s1));
    Shape r3;
    for (size_t j = 0; j < nk; ++j) {
      r3.push_back(k_[j]);
      r3.push_back(i_[j] + d_[j]);
    }
    xup = xup.reshape(cat(prefix, r3));
    std::vector<std::optional<SIntPair>> s2;
    for (size_t j = 0; j < nk; ++j) {
      s2.emplace_back(SIntPair(0, k_[j]));
      s2.emplace_back(SIntPair(0, o_[j] * s_[j]));
    }
    xup = xup.slice(slc(s2));
    // handle stride, and permute to move reduce to the end
    Shape r4;
    for (size_t j = 0; j < nk; ++j) {
      r4.push_back(k_[j]);
      r4.push_back(o_[j]);
      r4.push_back(s_[j]);
    }
    xup = xup.reshape(cat(prefix, r4));
    std::vector<std::optional<SIntPair>> s3;
    for (size_t j = 0; j < nk; ++j) {
      s3.emplace_back(SIntPair(0, k_[j]));
      s3.emplace_back(SIntPair(0, o_[j]));
      s3.emplace_back(SIntPair(0, 1));
    }
    xup = xup.slice(slc(s3));
    Shape r5;
    for (size_t j = 0; j < nk; ++j) {
      r5.push_back(k_[j]);
      r5.push_back(o_[j]);
    }
    xup = xup.reshape(cat(prefix, r5));
    for (size_t j = 0; j < nk; ++j) permOut.push_back(static_cast<int64_t>(np + j * 2 + 1));
    for (size_t j = 0; j < nk; ++j) permOut.push_back(static_cast<int64_t>(np + j * 2));
    return xup.permute(permOut);
  }
  // TODO in the reference: once the shapetracker can optimize well, remove this alternative
  std::vector<int64_t> o_;
  for (size_t j = 0; j < nk; ++j) o_.push_back((i_[j] + (s_[j] - k_[j])) / s_[j]);
  std::vector<std::optional<SIntPair>> s1;
  for (size_t j = 0; j < nk; ++j) s1.emplace_back(SIntPair(0, o_[j] * s_[j]));
  Tensor xup = self.slice(slc(s1));
  Shape r1;
  for (size_t j = 0; j < nk; ++j) {
    r1.push_back(o_[j]);
    r1.push_back(s_[j]);
  }
  xup = xup.reshape(cat(prefix, r1));
  std::vector<std::optional<SIntPair>> s2;
  for (size_t j = 0; j < nk; ++j) {
    s2.emplace_back(SIntPair(0, o_[j]));
    s2.emplace_back(SIntPair(0, k_[j]));
  }
  xup = xup.slice(slc(s2));
  for (size_t j = 0; j < nk; ++j) permOut.push_back(static_cast<int64_t>(np + j * 2));
  for (size_t j = 0; j < nk; ++j) permOut.push_back(static_cast<int64_t>(np + j * 2 + 1));
  return xup.permute(permOut);
}

Tensor Tensor::avgPool2d(const std::vector<int64_t> &kernel,
                         const std::optional<std::vector<int64_t>> &stride,
                         const std::vector<int64_t> &dilation) const & {
  std::vector<int64_t> k = pairOf(kernel, kernel.size() == 1 ? 2 : kernel.size(), "avg_pool2d", "kernel");
  std::vector<int64_t> axes;
  for (int64_t i = -static_cast<int64_t>(k.size()); i < 0; ++i) axes.push_back(i);
  return TI::pool(*this, "avg_pool2d", k, stride ? *stride : k, dilation).mean(axes);
}

Tensor Tensor::maxPool2d(const std::vector<int64_t> &kernel,
                         const std::optional<std::vector<int64_t>> &stride,
                         const std::vector<int64_t> &dilation) const & {
  std::vector<int64_t> k = pairOf(kernel, kernel.size() == 1 ? 2 : kernel.size(), "max_pool2d", "kernel");
  std::vector<int64_t> axes;
  for (int64_t i = -static_cast<int64_t>(k.size()); i < 0; ++i) axes.push_back(i);
  return TI::pool(*this, "max_pool2d", k, stride ? *stride : k, dilation).max(axes);
}

Tensor Tensor::conv2d(Tensor weightIn, std::optional<Tensor> biasIn, int64_t groups,
                      const std::vector<int64_t> &stride, const std::vector<int64_t> &dilation,
                      const std::vector<int64_t> &padding) const & {
  Tensor weight = std::move(weightIn);
  std::optional<Tensor> bias = std::move(biasIn);
  if (TI::autocastWants(*this) || TI::autocastWants(weight) || (bias && TI::autocastWants(*bias))) {
    std::optional<Tensor> b = bias ? std::optional<Tensor>(TI::autocast(*bias)) : std::nullopt;
    return TI::autocast(*this).conv2d(TI::autocast(weight), b, groups, stride, dilation, padding);
  }
  LAZYJIT_USER_CHECK(ndim() >= 3 && ndim() == weight.ndim(), ShapeError,
                     "conv2d: input {} does not match the weights {}", describe(*this), describe(weight));
  LAZYJIT_USER_CHECK(groups >= 1, ShapeError, "conv2d: groups must be >= 1, got {}", groups);
  int64_t bs = shape()[0].asInt(), cinAll = shape()[1].asInt();
  int64_t cout = weight.shape()[0].asInt(), cin = weight.shape()[1].asInt();
  std::vector<int64_t> HW;
  for (int64_t i = 2; i < weight.ndim(); ++i) HW.push_back(weight.shape()[i].asInt());
  LAZYJIT_USER_CHECK(groups * cin == cinAll && cout % groups == 0, ShapeError,
                     "conv2d: input {} does not match the weights {} with groups={} ({} vs. {})",
                     describe(*this), describe(weight), groups, groups * cin, cinAll);
  if (bias)
    LAZYJIT_USER_CHECK(bias->ndim() == 1 && pyEq(bias->shape()[0], cout), ShapeError,
                       "conv2d: bias {} does not match {} output channels", describe(*bias), cout);
  size_t nhw = HW.size();
  LAZYJIT_USER_CHECK(padding.size() == 1 || padding.size() == nhw || padding.size() == 2 * nhw, ShapeError,
                     "conv2d: expected padding of length 1, {} or {}, got {} for {}", nhw, 2 * nhw,
                     padding.size(), describe(*this));
  std::vector<int64_t> padding_;
  if (padding.size() == 1) padding_.assign(2 * nhw, padding[0]);
  else if (padding.size() == 2 * nhw) padding_ = padding;
  else {
    for (int64_t p : padding) {
      padding_.push_back(p);
      padding_.push_back(p);
    }
    std::reverse(padding_.begin(), padding_.end());
  }
  bool layouts = configuredGraphOptions().fusion.convLayouts;
  // OPT=5: a padded input written out once, so the convolution reads it without masks (W7, 64
  // channels 3x3 with padding 1: 15.1-15.5 ms a call through masks, 11.9-12.1 with the copy, on
  // AVX2). Only where each input element feeds enough multiply-adds (cout/groups x the window) to
  // pay for the copy, and on a device whose kernels read through the masks slower than the copy
  // costs (on AVX-512 a window up to 5 wide: W7 through masks 5.9-6.3 ms, with the copy 6.4-6.7)
  // and the padding is the same on both sides of each dimension (the input's gradient below is
  // then one transposed convolution). The gradients below then see no padding.
  int64_t window = std::accumulate(HW.begin(), HW.end(), int64_t{1}, std::multiplies<>());
  bool padded = std::any_of(padding_.begin(), padding_.end(), [](int64_t p) { return p != 0; });
  // one padding per dimension, in HW's order, for the dimensions padded alike on both sides (the
  // transposed convolution of the input's gradient takes one per dimension)
  std::vector<int64_t> perDim;
  for (size_t j = 0; j < nhw; ++j) {
    size_t at = 2 * (nhw - 1 - j); // pad2d order: the last dimension's (begin, end) first
    if (padding_[at] == padding_[at + 1]) perDim.push_back(padding_[at]);
  }
  bool symmetric = perDim.size() == nhw;
  // (the device is asked only at OPT=5, for a convolution the copy could pay for)
  auto throughMasks = [&] { return symmetric && getDevice(device()).readsPaddedConvInput(HW.back()); };
  if (layouts && padded && cout / groups * window >= 64 && !throughMasks())
    return pad2d(padding_).contiguous().conv2d(weight, bias, groups, stride, dilation, {0});
  if (!gradDisabled() && layouts) {
    auto fn = std::make_shared<ConvGradientFn>();
    fn->groups = groups;
    fn->stride = pairOf(stride, nhw, "conv2d", "stride");
    fn->dilation = pairOf(dilation, nhw, "conv2d", "dilation");
    fn->kernel = HW;
    fn->pad2dPadding = padding_;
    fn->padding = perDim;
    fn->directInput = requiresGrad() == true && symmetric;
    fn->directWeight = weight.requiresGrad() == true && groups == 1;
    if (fn->directInput || fn->directWeight) {
      Tensor xIn = fn->directInput ? Tensor(lazydata(), std::nullopt, false) : *this;
      Tensor wIn = fn->directWeight ? Tensor(weight.lazydata(), std::nullopt, false) : weight;
      Tensor y = xIn.conv2d(wIn, bias, groups, stride, dilation, padding);
      // the output padding gives back the rows and columns that no window reached
      if (fn->directInput)
        for (size_t j = 0; j < nhw; ++j) {
          int64_t in = shape()[2 + j].asInt(), out = y.shape()[2 + j].asInt();
          fn->outputPadding.push_back(
              in - ((out - 1) * fn->stride[j] - 2 * fn->padding[j] + fn->dilation[j] * (HW[j] - 1) + 1));
        }
      return Function::apply(std::move(fn), {y, *this, weight});
    }
  }
  // conv2d is a pooling op (with padding)
  Tensor x = TI::pool(pad2d(padding_), "conv2d", HW, stride, dilation); // (bs, groups*cin, oy, ox, H, W)
  int64_t rcout = cout / groups;
  Shape oyx(x.shape().begin() + 2, x.shape().end() - nhw);
  Shape rs{bs, groups, cin, 1};
  rs.insert(rs.end(), oyx.begin(), oyx.end());
  for (int64_t h : HW) rs.push_back(h);
  Shape es{bs, groups, cin, rcout};
  es.insert(es.end(), oyx.begin(), oyx.end());
  for (int64_t h : HW) es.push_back(h);
  std::vector<int64_t> perm{0, 1, 3};
  for (size_t i = 0; i < oyx.size(); ++i) perm.push_back(static_cast<int64_t>(4 + i));
  perm.push_back(2);
  for (size_t i = 0; i < nhw; ++i) perm.push_back(static_cast<int64_t>(4 + oyx.size() + i));
  x = x.reshape(rs).expand(es).permute(perm);
  // conv! broadcasted to (bs, groups, rcout, *oyx, cin, *HW)
  Shape ws{1, groups, rcout};
  ws.insert(ws.end(), oyx.size(), SInt(1));
  ws.push_back(cin);
  for (int64_t h : HW) ws.push_back(h);
  std::vector<int64_t> sumAxes;
  for (size_t i = 0; i < 1 + oyx.size(); ++i) sumAxes.push_back(-1 - static_cast<int64_t>(i));
  Shape outShape{bs, cout};
  outShape.insert(outShape.end(), oyx.begin(), oyx.end());
  Tensor ret = x.mul(weight.reshape(ws)).sum(sumAxes, true).reshape(outShape);
  if (!bias) return ret;
  Shape bsh{1, -1};
  bsh.insert(bsh.end(), nhw, SInt(1));
  return ret.add(bias->reshape(bsh));
}

Tensor Tensor::convTranspose2d(Tensor weight, std::optional<Tensor> bias, int64_t groups,
                               const std::vector<int64_t> &strideIn, const std::vector<int64_t> &dilationIn,
                               const std::vector<int64_t> &paddingIn,
                               const std::vector<int64_t> &outputPaddingIn) const & {
  if (TI::autocastWants(*this) || TI::autocastWants(weight) || (bias && TI::autocastWants(*bias))) {
    std::optional<Tensor> b = bias ? std::optional<Tensor>(TI::autocast(*bias)) : std::nullopt;
    return TI::autocast(*this).convTranspose2d(TI::autocast(weight), b, groups, strideIn, dilationIn, paddingIn,
                                               outputPaddingIn);
  }
  return convTranspose(*this, weight, bias, groups, strideIn, dilationIn, paddingIn, outputPaddingIn, false);
}

} // namespace lazyjit

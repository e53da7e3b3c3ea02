// The reference's network functions on tensors (tensor.py): matmul/dot and linear, layernorm and
// batchnorm, dropout, scaled dot-product attention, multinomial sampling, triu/tril, and the
// losses.
#include "TensorInternals.h"

#include <algorithm>
#include <cmath>

namespace lazyjit {

using TI = TensorInternals;

Tensor Tensor::matmul(Tensor w) const & { return dot(std::move(w)); }

Tensor Tensor::dot(Tensor wIn) const & {
  Tensor w = std::move(wIn);
  if (TI::autocastWants(*this) || TI::autocastWants(w)) return TI::autocast(*this).dot(TI::autocast(w));
  int64_t n1 = ndim(), n2 = w.ndim();
  LAZYJIT_USER_CHECK(n1 != 0 && n2 != 0, ShapeError,
                     "matmul: both arguments need to be at least 1D, but they are {} and {}",
                     describe(*this), describe(w));
  const SInt &k2 = w.shape()[n2 - std::min<int64_t>(n2, 2)];
  LAZYJIT_USER_CHECK(pyEq(shape().back(), k2), ShapeError,
                     "matmul: {} and {} cannot be multiplied ({} != {})", describe(*this), describe(w),
                     shape().back().render(), k2.render());
  if (n1 >= 2 && n2 >= 2) {
    Shape xb(shape().begin(), shape().end() - 2), wb(w.shape().begin(), w.shape().end() - 2);
    size_t n = std::max(xb.size(), wb.size());
    for (size_t i = 0; i < n; ++i) {
      SInt a = i < n - xb.size() ? SInt(1) : xb[i - (n - xb.size())];
      SInt b = i < n - wb.size() ? SInt(1) : wb[i - (n - wb.size())];
      LAZYJIT_USER_CHECK(pyEq(a, b) || pyEq(a, 1) || pyEq(b, 1), ShapeError,
                         "matmul: cannot broadcast the batch dims of {} and {}", describe(*this),
                         describe(w));
    }
  }
  int64_t ones = std::min<int64_t>({n1 - 1, n2 - 1, 1});
  Shape xs(shape().begin(), shape().end() - 1);
  xs.insert(xs.end(), ones, SInt(1));
  xs.push_back(shape().back());
  Tensor x = reshape(xs);
  Shape ws(w.shape().begin(), w.shape().end() - std::min<int64_t>(n2, 2));
  ws.insert(ws.end(), ones, SInt(1));
  ws.insert(ws.end(), w.shape().end() - std::min<int64_t>(n2, 2), w.shape().end());
  Tensor wt = w.reshape(ws).transpose(-1, -std::min<int64_t>(n2, 2));
  return x.mul(wt).sum(std::vector<int64_t>{-1});
}

Tensor Tensor::linear(Tensor weightIn, std::optional<Tensor> biasIn) const & {
  Tensor weight = std::move(weightIn);
  std::optional<Tensor> bias = std::move(biasIn);
  if (weight.ndim() >= 2 && ndim() >= 1) {
    const SInt &k = weight.shape()[weight.ndim() - 2];
    LAZYJIT_USER_CHECK(pyEq(shape().back(), k), ShapeError, "linear: {} and {} cannot be multiplied ({} != {})",
                       describe(*this), describe(weight), shape().back().render(), k.render());
  }
  Tensor x = weight.ndim() == 1 ? mul(weight) : dot(weight);
  // under autocast the bias joins the product's dtype (or the add would promote it back)
  return bias ? x.add(x.dtype().isHalfWidth() ? TI::autocast(*bias) : *bias) : x;
}

Tensor Tensor::layernorm(const std::vector<int64_t> &axis, double eps) const & {
  requireFloat("layernorm", *this);
  if (autocastType() && dtype().isHalfWidth()) return TI::autocastFloat32(*this).layernorm(axis, eps);
  normAxes("layernorm", *this, axis);
  Tensor y = sub(mean(axis, true));
  return y.mul(y.mul(y).mean(axis, true).add(eps).rsqrt());
}

Tensor Tensor::batchnorm(std::optional<Tensor> weightIn, std::optional<Tensor> biasIn,
                         Tensor meanIn, Tensor invstdIn) const & {
  std::optional<Tensor> weight = std::move(weightIn), bias = std::move(biasIn);
  Tensor mean = std::move(meanIn), invstd = std::move(invstdIn);
  LAZYJIT_USER_CHECK(ndim() >= 2, ShapeError, "batchnorm: input {} needs a channel dim", describe(*this));
  Shape cs{1, -1, 1, 1};
  Tensor x = sub(mean.reshape(cs));
  if (weight) x = x.mul(weight->reshape(cs));
  Tensor ret = x.mul(invstd.ndim() == 1 ? invstd.reshape(cs) : invstd);
  return bias ? ret.add(bias->reshape(cs)) : ret;
}

Tensor Tensor::dropout(double p) const & {
  LAZYJIT_USER_CHECK(p >= 0 && p <= 1, ShapeError, "dropout: probability {} is outside [0, 1]", p);
  if (!isTraining() || p == 0) return *this;
  if (p == 1) return mul(0); // the reference divides by 1 - p = 0 (Python raises); PyTorch gives 0s
  Tensor mask = Tensor::rand(shape(), {std::nullopt, device(), false}).ge(p).cast(dtypes::boolean);
  return mul(mask).mul(1 / (1.0 - p));
}

Tensor Tensor::scaledDotProductAttention(Tensor keyIn, Tensor valueIn,
                                         std::optional<Tensor> attnMaskIn, double dropoutP,
                                         bool isCausal) const & {
  Tensor key = std::move(keyIn), value = std::move(valueIn);
  LAZYJIT_USER_CHECK(allInt(shape()), UnsupportedError,
                     "scaled_dot_product_attention: the query {} must have a concrete shape", describe(*this));
  LAZYJIT_USER_CHECK(ndim() >= 2 && key.ndim() >= 2 && value.ndim() >= 2, ShapeError,
                     "scaled_dot_product_attention: query {}, key {} and value {} need >= 2 dims",
                     describe(*this), describe(key), describe(value));
  std::optional<Tensor> attnMask = std::move(attnMaskIn);
  if (isCausal)
    attnMask = Tensor::ones({shape()[ndim() - 2], key.shape()[key.ndim() - 2]}, {std::nullopt, device(), false})
                   .tril(0)
                   .cast(dtypes::boolean);
  if (attnMask && attnMask->dtype() == dtypes::boolean) attnMask = attnMask->eq(0).where(-INFINITY, 0);
  Tensor scores = dot(key.transpose(-2, -1)).div(std::sqrt(static_cast<double>(shape().back().asInt())));
  if (attnMask) scores = scores.add(*attnMask);
  return scores.softmax(-1).dropout(dropoutP).dot(value);
}

Tensor Tensor::multinomial(int64_t numSamples, bool replacement) const & {
  LAZYJIT_USER_CHECK((ndim() == 1 || ndim() == 2) && numSamples > 0, ShapeError,
                     "multinomial: needs 1-d or 2-d weights and a positive sample count, got {} and {}",
                     describe(*this), numSamples);
  LAZYJIT_USER_CHECK(replacement || numSamples == 1, ShapeError,
                     "multinomial: without replacement only one sample can be drawn, asked for {}", numSamples);
  LAZYJIT_USER_CHECK(allInt(shape()), ShapeError, "multinomial: needs concrete weights, got {}", describe(*this));
  Tensor weight = ndim() == 1 ? unsqueeze(0) : *this;
  Tensor cw = weight.cumsum(1);
  int64_t rows = weight.shape()[0].asInt(), cols = weight.shape()[1].asInt();
  Tensor cdf = cw.div(cw.getitem({Index::all(), Index::at(-1)}).unsqueeze(1));
  Tensor unif = Tensor::rand({numSamples, rows, 1}, {cdf.dtype(), device(), false});
  Tensor indices = unif.expand({numSamples, rows, cols}).ge(cdf).sum(std::vector<int64_t>{2}).permute({1, 0});
  return (ndim() == 1 ? indices.squeeze(0) : indices).cast(dtypes::int32);
}

Tensor Tensor::triu(int64_t k) const & {
  LAZYJIT_USER_CHECK(allInt(shape()) && ndim() >= 2, ShapeError, "triu: needs a concrete >= 2-d tensor, got {}",
                     describe(*this));
  int64_t r = shape()[ndim() - 2].asInt(), c = shape().back().asInt();
  TensorOptions o{dtype(), device(), std::nullopt};
  Tensor tri = Tensor::arange(0, static_cast<double>(r), 1, o).unsqueeze(1).expand({r, c})
                   .le(Tensor::arange(static_cast<double>(-k), static_cast<double>(c - k), 1, o)
                           .unsqueeze(0)
                           .expand({r, c}));
  return tri.where(*this, zerosLike());
}

Tensor Tensor::tril(int64_t k) const & {
  LAZYJIT_USER_CHECK(allInt(shape()) && ndim() >= 2, ShapeError, "tril: needs a concrete >= 2-d tensor, got {}",
                     describe(*this));
  int64_t r = shape()[ndim() - 2].asInt(), c = shape().back().asInt();
  TensorOptions o{dtype(), device(), std::nullopt};
  Tensor tri = Tensor::arange(0, static_cast<double>(r), 1, o).unsqueeze(1).expand({r, c})
                   .le(Tensor::arange(static_cast<double>(-(k + 1)), static_cast<double>(c - (k + 1)), 1, o)
                           .unsqueeze(0)
                           .expand({r, c}));
  return tri.where(zerosLike(), *this);
}

Tensor Tensor::binaryCrossentropy(Tensor yIn) const & {
  if (autocastType() && dtype().isHalfWidth()) return TI::autocastFloat32(*this).binaryCrossentropy(std::move(yIn));
  Tensor y = std::move(yIn);
  Tensor a = y.neg().mul(log());
  Tensor b = y.sub(1, true).mul(sub(1, true).log());
  return a.sub(b).mean();
}

Tensor Tensor::binaryCrossentropyLogits(Tensor yIn) const & {
  if (autocastType() && dtype().isHalfWidth())
    return TI::autocastFloat32(*this).binaryCrossentropyLogits(std::move(yIn));
  Tensor y = std::move(yIn);
  Tensor a = maximum(0).sub(y.mul(*this));
  return a.add(abs().neg().exp().add(1, true).log()).mean();
}

Tensor Tensor::sparseCategoricalCrossentropy(Tensor yIn, int64_t ignoreIndex) const & {
  if (autocastType() && dtype().isHalfWidth())
    return TI::autocastFloat32(*this).sparseCategoricalCrossentropy(std::move(yIn), ignoreIndex);
  Tensor Y = std::move(yIn);
  Tensor lossMask = Y.ne(static_cast<double>(ignoreIndex));
  int64_t classes = shape().back().asInt();
  Tensor yCounter = Tensor::arange(0, static_cast<double>(classes), 1, {dtypes::int32, device(), false})
                        .unsqueeze(0)
                        .expand({Y.numel(), classes});
  Shape ys = Y.shape();
  ys.push_back(classes);
  Tensor y = yCounter.eq(Y.flatten().reshape({-1, 1})).where(-1.0, 0).mul(lossMask.reshape({-1, 1})).reshape(ys);
  return logSoftmax().mul(y).sum().div(lossMask.sum());
}


} // namespace lazyjit

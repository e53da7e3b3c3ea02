// nn layers (reference tinygrad/nn/__init__.py): initializations and forward passes.
#include "lazyjit/NN/Layers.h"
#include "lazyjit/Graph/ShapeText.h"
#include "lazyjit/Support/Error.h"

#include <cmath>

namespace lazyjit::nn {

namespace {
std::string describeT(const Tensor &t) { return typedShapeText(t.dtype(), t.shape()); }

int64_t prodFrom(const Shape &s, size_t from) {
  int64_t n = 1;
  for (size_t i = from; i < s.size(); ++i) n *= s[i].asInt();
  return n;
}
} // namespace

Linear::Linear(int64_t inFeatures, int64_t outFeatures, bool hasBias)
    : weight(Tensor::kaimingUniform({outFeatures, inFeatures}, std::sqrt(5.0))) {
  double bound = 1 / std::sqrt(static_cast<double>(inFeatures));
  if (hasBias) bias = Tensor::uniform({outFeatures}, -bound, bound);
}

Tensor Linear::operator()(Tensor xIn) const {
  Tensor x = std::move(xIn);
  return x.linear(weight.transpose(), bias);
}

Conv2d::Conv2d(int64_t inChannels, int64_t outChannels, std::vector<int64_t> ks,
               std::vector<int64_t> stride_, std::vector<int64_t> padding_,
               std::vector<int64_t> dilation_, int64_t groups_, bool hasBias)
    : Conv2d(inChannels, outChannels, ks.size() == 1 ? std::vector<int64_t>{ks[0], ks[0]} : ks,
             std::move(stride_), std::move(padding_), std::move(dilation_), groups_, hasBias, false) {}

Conv2d::Conv2d(int64_t inChannels, int64_t outChannels, std::vector<int64_t> ks,
               std::vector<int64_t> stride_, std::vector<int64_t> padding_,
               std::vector<int64_t> dilation_, int64_t groups_, bool hasBias, bool transposed)
    : kernelSize(std::move(ks)), stride(std::move(stride_)), padding(std::move(padding_)),
      dilation(std::move(dilation_)), groups(groups_) {
  LAZYJIT_USER_CHECK(groups >= 1 && inChannels % groups == 0 && outChannels % groups == 0, ShapeError,
                     "{}: {} input and {} output channels are not divisible by groups={}",
                     transposed ? "ConvTranspose2d" : "Conv2d", inChannels, outChannels, groups);
  LAZYJIT_USER_CHECK(!kernelSize.empty(), ShapeError, "Conv2d: empty kernel size");
  // initialize_weight: (out, in/groups, *k), or (in, out/groups, *k) for the transposed conv
  Shape ws = transposed ? Shape{inChannels, outChannels / groups} : Shape{outChannels, inChannels / groups};
  for (int64_t k : kernelSize) ws.push_back(k);
  weight = Tensor::kaimingUniform(ws, std::sqrt(5.0));
  double bound = 1 / std::sqrt(static_cast<double>(prodFrom(ws, 1)));
  if (hasBias) bias = Tensor::uniform({outChannels}, -bound, bound);
}

Tensor Conv2d::operator()(Tensor xIn) const {
  Tensor x = std::move(xIn);
  return x.conv2d(weight, bias, groups, stride, dilation, padding);
}

Conv2d Conv1d(int64_t inChannels, int64_t outChannels, int64_t kernelSize, int64_t stride,
              int64_t padding, int64_t dilation, int64_t groups, bool bias) {
  return Conv2d(inChannels, outChannels, {kernelSize}, {stride}, {padding}, {dilation}, groups, bias, false);
}

ConvTranspose2d::ConvTranspose2d(int64_t inChannels, int64_t outChannels, std::vector<int64_t> ks,
                                 std::vector<int64_t> stride_, std::vector<int64_t> padding_,
                                 std::vector<int64_t> outputPadding_, std::vector<int64_t> dilation_,
                                 int64_t groups_, bool hasBias)
    : ConvTranspose2d(inChannels, outChannels, std::move(ks), std::move(stride_), std::move(padding_),
                      std::move(outputPadding_), std::move(dilation_), groups_, hasBias, false) {}

ConvTranspose2d::ConvTranspose2d(int64_t inChannels, int64_t outChannels, std::vector<int64_t> ks,
                                 std::vector<int64_t> stride_, std::vector<int64_t> padding_,
                                 std::vector<int64_t> outputPadding_, std::vector<int64_t> dilation_,
                                 int64_t groups_, bool hasBias, bool oneDim)
    : Conv2d(inChannels, outChannels,
             !oneDim && ks.size() == 1 ? std::vector<int64_t>{ks[0], ks[0]} : ks, std::move(stride_),
             std::move(padding_), std::move(dilation_), groups_, hasBias, true),
      outputPadding(std::move(outputPadding_)) {}

Tensor ConvTranspose2d::operator()(Tensor xIn) const {
  Tensor x = std::move(xIn);
  return x.convTranspose2d(weight, bias, groups, stride, dilation, padding, outputPadding);
}

ConvTranspose2d ConvTranspose1d(int64_t inChannels, int64_t outChannels, int64_t kernelSize,
                                int64_t stride, int64_t padding, int64_t outputPadding,
                                int64_t dilation, int64_t groups, bool bias) {
  return ConvTranspose2d(inChannels, outChannels, {kernelSize}, {stride}, {padding}, {outputPadding},
                         {dilation}, groups, bias, true);
}

BatchNorm2d::BatchNorm2d(int64_t sz, double eps_, bool affine, bool track, double momentum_)
    : eps(eps_), momentum(momentum_), trackRunningStats(track),
      runningMean(Tensor::zeros({sz}, {std::nullopt, std::nullopt, false})),
      runningVar(Tensor::ones({sz}, {std::nullopt, std::nullopt, false})),
      numBatchesTracked(Tensor::zeros({1}, {std::nullopt, std::nullopt, false})) {
  if (affine) {
    weight = Tensor::ones({sz});
    bias = Tensor::zeros({sz});
  }
}

void BatchNorm2d::members(Members &m) {
  m("weight", weight)("bias", bias)("running_mean", runningMean)("running_var", runningVar)(
      "num_batches_tracked", numBatchesTracked);
}

Tensor BatchNorm2d::operator()(Tensor xIn) {
  Tensor x = std::move(xIn);
  LAZYJIT_USER_CHECK(x.ndim() == 4 && pyEq(x.shape()[1], runningMean.shape()[0]), ShapeError,
                     "BatchNorm2d: expected an input of shape [N, {}, H, W], got {}",
                     runningMean.shape()[0].render(), describeT(x));
  Tensor batchMean, batchInvstd;
  if (Tensor::isTraining()) {
    // This requires two full memory accesses to x (reference comment)
    batchMean = x.mean(std::vector<int64_t>{0, 2, 3});
    Tensor y = x.sub(batchMean.reshape({1, -1, 1, 1}));
    Tensor batchVar = y.mul(y).mean(std::vector<int64_t>{0, 2, 3});
    batchInvstd = batchVar.add(eps).pow(-0.5);
    if (trackRunningStats) {
      runningMean.assign(runningMean.mul(1 - momentum, true).add(batchMean.detach().mul(momentum, true)));
      double n = static_cast<double>(prodInt(y.shape()));
      double c = static_cast<double>(y.shape()[1].asInt());
      runningVar.assign(runningVar.mul(1 - momentum, true)
                            .add(batchVar.detach().mul(momentum * n / (n - c), true)));
      numBatchesTracked.assign(numBatchesTracked.add(1));
    }
  } else {
    batchMean = runningMean;
    // NOTE: this can be precomputed for static inference. we expand it here so it fuses
    batchInvstd = runningVar.reshape({1, -1, 1, 1}).expand(x.shape()).add(eps).rsqrt();
  }
  return x.batchnorm(weight, bias, batchMean, batchInvstd);
}

LayerNorm::LayerNorm(Shape shape, double eps_, bool affine) : normalizedShape(std::move(shape)), eps(eps_) {
  for (size_t i = 0; i < normalizedShape.size(); ++i) axis.push_back(-1 - static_cast<int64_t>(i));
  if (affine) {
    weight = Tensor::ones(normalizedShape);
    bias = Tensor::zeros(normalizedShape);
  }
}

Tensor LayerNorm::operator()(Tensor xIn) const {
  Tensor x = std::move(xIn);
  LAZYJIT_USER_CHECK(x.ndim() >= static_cast<int64_t>(normalizedShape.size()) &&
                         Shape(x.shape().end() - normalizedShape.size(), x.shape().end()) == normalizedShape,
                     ShapeError, "LayerNorm: last dimensions of {} must match {}", describeT(x),
                     shapeText(normalizedShape));
  Tensor y = x.layernorm(axis, eps);
  if (!weight) return y;
  return y.mul(*weight).add(*bias);
}

LayerNorm2d::LayerNorm2d(int64_t channels, double eps_, bool affine) : LayerNorm({channels}, eps_, affine) {}

Tensor LayerNorm2d::operator()(Tensor xIn) const {
  Tensor x = std::move(xIn);
  LAZYJIT_USER_CHECK(x.ndim() == 4, ShapeError, "LayerNorm2d: expected an NCHW input, got {}", describeT(x));
  return LayerNorm::operator()(x.permute({0, 2, 3, 1})).permute({0, 3, 1, 2});
}

namespace {
// x * weight + bias on the channel dim (dim 1) of an N-d input
Tensor channelAffine(const Tensor &x, const std::optional<Tensor> &weight, const std::optional<Tensor> &bias) {
  if (!weight || !bias) return x;
  Shape s{1, -1};
  s.insert(s.end(), x.ndim() - 2, SInt(1));
  return x.mul(weight->reshape(s)).add(bias->reshape(s));
}
} // namespace

GroupNorm::GroupNorm(int64_t groups, int64_t channels, double eps_, bool affine)
    : numGroups(groups), numChannels(channels), eps(eps_) {
  LAZYJIT_USER_CHECK(groups >= 1 && channels % groups == 0, ShapeError,
                     "GroupNorm: {} channels are not divisible into {} groups", channels, groups);
  if (affine) {
    weight = Tensor::ones({channels});
    bias = Tensor::zeros({channels});
  }
}

Tensor GroupNorm::operator()(Tensor xIn) const {
  Tensor x = std::move(xIn);
  LAZYJIT_USER_CHECK(x.ndim() >= 2 && pyEq(x.shape()[1], numChannels), ShapeError,
                     "GroupNorm: expected {} channels in dim 1, got {}", numChannels, describeT(x));
  // reshape for layernorm to work as group norm: subtract mean and divide stddev
  Tensor y = x.reshape({x.shape()[0], numGroups, -1}).layernorm({-1}, eps).reshape(x.shape());
  return channelAffine(y, weight, bias);
}

InstanceNorm::InstanceNorm(int64_t features, double eps_, bool affine) : numFeatures(features), eps(eps_) {
  if (affine) {
    weight = Tensor::ones({features});
    bias = Tensor::zeros({features});
  }
}

Tensor InstanceNorm::operator()(Tensor xIn) const {
  Tensor x = std::move(xIn);
  LAZYJIT_USER_CHECK(x.ndim() >= 2 && pyEq(x.shape()[1], numFeatures), ShapeError,
                     "InstanceNorm: expected {} features in dim 1, got {}", numFeatures, describeT(x));
  Tensor y = x.reshape({x.shape()[0], numFeatures, -1}).layernorm({-1}, eps).reshape(x.shape());
  return channelAffine(y, weight, bias);
}

Embedding::Embedding(int64_t vocab, int64_t embed)
    : vocabSize(vocab), embedSize(embed), weight(Tensor::glorotUniform({vocab, embed})) {}

Tensor Embedding::operator()(Tensor idxIn) const {
  Tensor idx = std::move(idxIn);
  LAZYJIT_USER_CHECK(idx.dtype().isInt(), DTypeError, "Embedding: indices must be integers, got {}",
                     describeT(idx));
  // The reference adds vocab_counter to the layer's __dict__ on the first call (so it shows up in
  // later state dicts); here it is a cache, not state.
  if (!vocabCounter)
    vocabCounter = Tensor::arange(0, static_cast<double>(vocabSize), 1, {std::nullopt, std::nullopt, false})
                       .reshape({1, 1, vocabSize});
  Shape es = idx.shape();
  es.push_back(vocabSize);
  return vocabCounter->eq(idx.unsqueeze(2)).expand(es).matmul(weight);
}

} // namespace lazyjit::nn

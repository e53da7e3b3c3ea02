// nn layers (reference tinygrad/nn/__init__.py).
#include "lazyjit/Tensor/NN.h"
#include "TensorInternals.h"

#include <cmath>

namespace lazyjit::nn {

Linear::Linear(int64_t inFeatures, int64_t outFeatures, bool hasBias)
    : weight(Tensor::kaimingUniform({outFeatures, inFeatures}, std::sqrt(5.0))) {
  double bound = 1 / std::sqrt(static_cast<double>(inFeatures));
  if (hasBias) bias = Tensor::uniform({outFeatures}, -bound, bound);
}

Tensor Linear::operator()(const Tensor &x) const { return x.linear(weight.transpose(), bias); }

Conv2d::Conv2d(int64_t inChannels, int64_t outChannels, std::vector<int64_t> ks,
               std::vector<int64_t> stride_, std::vector<int64_t> padding_,
               std::vector<int64_t> dilation_, int64_t groups_, bool hasBias)
    : kernelSize(ks.size() == 1 ? std::vector<int64_t>{ks[0], ks[0]} : ks), stride(std::move(stride_)),
      padding(std::move(padding_)), dilation(std::move(dilation_)), groups(groups_) {
  LAZYJIT_USER_CHECK(groups >= 1 && inChannels % groups == 0, ShapeError,
                     "Conv2d: {} input channels are not divisible by groups={}", inChannels, groups);
  Shape ws{outChannels, inChannels / groups};
  for (int64_t k : kernelSize) ws.push_back(k);
  weight = Tensor::kaimingUniform(ws, std::sqrt(5.0));
  int64_t fan = inChannels / groups;
  for (int64_t k : kernelSize) fan *= k;
  double bound = 1 / std::sqrt(static_cast<double>(fan));
  if (hasBias) bias = Tensor::uniform({outChannels}, -bound, bound);
}

Tensor Conv2d::operator()(const Tensor &x) const {
  return x.conv2d(weight, bias, groups, stride, dilation, padding);
}

BatchNorm2d::BatchNorm2d(int64_t sz, double eps_, bool affine, bool track, double momentum_)
    : eps(eps_), momentum(momentum_), trackRunningStats(track), runningMean(Tensor::zeros({sz})),
      runningVar(Tensor::ones({sz})), numBatchesTracked(Tensor::zeros({1})) {
  if (affine) {
    weight = Tensor::ones({sz});
    bias = Tensor::zeros({sz});
  }
}

Tensor BatchNorm2d::operator()(const Tensor &x) {
  Tensor batchMean, batchInvstd;
  if (Tensor::training) {
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

Tensor LayerNorm::operator()(const Tensor &x) const {
  LAZYJIT_USER_CHECK(x.ndim() >= static_cast<int64_t>(normalizedShape.size()) &&
                         Shape(x.shape().end() - normalizedShape.size(), x.shape().end()) == normalizedShape,
                     ShapeError, "LayerNorm: last dimensions of {} must match {}", describe(x),
                     fmtShape(normalizedShape));
  Tensor y = x.layernorm(axis, eps);
  if (!weight) return y;
  return y.mul(*weight).add(*bias);
}

} // namespace lazyjit::nn

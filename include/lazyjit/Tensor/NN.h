// Layers of the reference's nn module that lazyjit's examples and tests use: Linear, Conv2d,
// BatchNorm2d and LayerNorm. Weights are lazy Tensors initialized as in the reference.
#pragma once

#include "lazyjit/Tensor/Tensor.h"

#include <optional>
#include <vector>

namespace lazyjit::nn {

struct Linear {
  Tensor weight;
  std::optional<Tensor> bias;
  Linear(int64_t inFeatures, int64_t outFeatures, bool bias = true);
  Tensor operator()(const Tensor &x) const;
};

struct Conv2d {
  std::vector<int64_t> kernelSize, stride, padding, dilation;
  int64_t groups;
  Tensor weight;
  std::optional<Tensor> bias;
  Conv2d(int64_t inChannels, int64_t outChannels, std::vector<int64_t> kernelSize,
         std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},
         std::vector<int64_t> dilation = {1}, int64_t groups = 1, bool bias = true);
  Tensor operator()(const Tensor &x) const;
};

struct BatchNorm2d {
  double eps, momentum;
  bool trackRunningStats;
  std::optional<Tensor> weight, bias;
  Tensor runningMean, runningVar, numBatchesTracked;
  explicit BatchNorm2d(int64_t size, double eps = 1e-5, bool affine = true,
                       bool trackRunningStats = true, double momentum = 0.1);
  Tensor operator()(const Tensor &x);
};

struct LayerNorm {
  Shape normalizedShape;
  std::vector<int64_t> axis;
  double eps;
  std::optional<Tensor> weight, bias;
  explicit LayerNorm(Shape normalizedShape, double eps = 1e-5, bool elementwiseAffine = true);
  Tensor operator()(const Tensor &x) const;
};

} // namespace lazyjit::nn

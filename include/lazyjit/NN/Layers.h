// The reference's nn layers (tinygrad/nn/__init__.py at 6d6eb930), with its initializations and
// its state-dict names. Every layer is a Module; weights are lazy Tensors whose requires_grad is
// unset (an optimizer sets it), running statistics have requires_grad false.
//
// Layers take their input by value and release it before they return, as a Python call drops
// its argument: a C++ temporary passed by reference would live to the end of the caller's full
// expression, stay a child of its sources and stop the scheduler from fusing across the layer
// (bn(conv(x)) would take two kernels instead of one). User modules should do the same.
#pragma once

#include "lazyjit/NN/Module.h"

#include <optional>
#include <vector>

namespace lazyjit::nn {

struct Linear : Module {
  Tensor weight;
  std::optional<Tensor> bias;
  Linear(int64_t inFeatures, int64_t outFeatures, bool bias = true);
  Tensor operator()(Tensor x) const;
  LAZYJIT_MODULE(weight, bias)
};

/// N-d convolution over NCHW-style inputs; kernelSize of one value k means (k, k).
struct Conv2d : Module {
  std::vector<int64_t> kernelSize, stride, padding, dilation;
  int64_t groups;
  Tensor weight;
  std::optional<Tensor> bias;
  Conv2d(int64_t inChannels, int64_t outChannels, std::vector<int64_t> kernelSize,
         std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},
         std::vector<int64_t> dilation = {1}, int64_t groups = 1, bool bias = true);
  Tensor operator()(Tensor x) const;
  LAZYJIT_MODULE(weight, bias)

protected:
  /// For Conv1d and the transposed convolutions: the kernel dims as given, and the weight's
  /// (out, in) order.
  Conv2d(int64_t inChannels, int64_t outChannels, std::vector<int64_t> kernelSize,
         std::vector<int64_t> stride, std::vector<int64_t> padding, std::vector<int64_t> dilation,
         int64_t groups, bool bias, bool transposed);
  friend Conv2d Conv1d(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool);
};

/// The reference's Conv1d: a Conv2d with a one-element kernel (inputs are N, C, L).
Conv2d Conv1d(int64_t inChannels, int64_t outChannels, int64_t kernelSize, int64_t stride = 1,
              int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1, bool bias = true);

struct ConvTranspose2d : Conv2d {
  std::vector<int64_t> outputPadding;
  ConvTranspose2d(int64_t inChannels, int64_t outChannels, std::vector<int64_t> kernelSize,
                  std::vector<int64_t> stride = {1}, std::vector<int64_t> padding = {0},
                  std::vector<int64_t> outputPadding = {0}, std::vector<int64_t> dilation = {1},
                  int64_t groups = 1, bool bias = true);
  Tensor operator()(Tensor x) const;

private:
  friend ConvTranspose2d ConvTranspose1d(int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                                         int64_t, int64_t, bool);
  ConvTranspose2d(int64_t inChannels, int64_t outChannels, std::vector<int64_t> kernelSize,
                  std::vector<int64_t> stride, std::vector<int64_t> padding,
                  std::vector<int64_t> outputPadding, std::vector<int64_t> dilation,
                  int64_t groups, bool bias, bool oneDim);
};

ConvTranspose2d ConvTranspose1d(int64_t inChannels, int64_t outChannels, int64_t kernelSize,
                                int64_t stride = 1, int64_t padding = 0, int64_t outputPadding = 0,
                                int64_t dilation = 1, int64_t groups = 1, bool bias = true);

/// Batch normalization over N, H, W. In training mode (Tensor::training) it normalizes with the
/// batch statistics and, with trackRunningStats, updates the running ones by assign; otherwise it
/// uses the running statistics.
struct BatchNorm2d : Module {
  double eps, momentum;
  bool trackRunningStats;
  std::optional<Tensor> weight, bias;
  Tensor runningMean, runningVar, numBatchesTracked;
  explicit BatchNorm2d(int64_t size, double eps = 1e-5, bool affine = true,
                       bool trackRunningStats = true, double momentum = 0.1);
  Tensor operator()(Tensor x);
  void members(Members &m) override;
};

struct LayerNorm : Module {
  Shape normalizedShape;
  std::vector<int64_t> axis;
  double eps;
  std::optional<Tensor> weight, bias;
  explicit LayerNorm(Shape normalizedShape, double eps = 1e-5, bool elementwiseAffine = true);
  Tensor operator()(Tensor x) const;
  LAZYJIT_MODULE(weight, bias)
};

/// LayerNorm over the channel dim of an NCHW tensor.
struct LayerNorm2d : LayerNorm {
  explicit LayerNorm2d(int64_t channels, double eps = 1e-5, bool elementwiseAffine = true);
  Tensor operator()(Tensor x) const;
};

struct GroupNorm : Module {
  int64_t numGroups, numChannels;
  double eps;
  std::optional<Tensor> weight, bias;
  GroupNorm(int64_t numGroups, int64_t numChannels, double eps = 1e-5, bool affine = true);
  Tensor operator()(Tensor x) const;
  LAZYJIT_MODULE(weight, bias)
};

struct InstanceNorm : Module {
  int64_t numFeatures;
  double eps;
  std::optional<Tensor> weight, bias;
  explicit InstanceNorm(int64_t numFeatures, double eps = 1e-5, bool affine = true);
  Tensor operator()(Tensor x) const;
  LAZYJIT_MODULE(weight, bias)
};

/// A lookup table: integer indices [...] -> vectors [..., embedSize], computed as the reference
/// does (a one-hot comparison with an arange, then a matmul).
struct Embedding : Module {
  int64_t vocabSize, embedSize;
  Tensor weight;
  Embedding(int64_t vocabSize, int64_t embedSize);
  Tensor operator()(Tensor idx) const;
  LAZYJIT_MODULE(weight)

private:
  mutable std::optional<Tensor> vocabCounter;
};

} // namespace lazyjit::nn

// Optimizers with the reference's formulas (tinygrad/nn/optim.py at 6d6eb930): SGD with momentum,
// weight decay and nesterov; LAMB, and Adam and AdamW as LAMB with a trust ratio of 1.
//
// The constructor sets requires_grad on every parameter whose requires_grad is unset; tensors
// with requires_grad false are buffers (running statistics), which step() realizes with the
// parameters. step() updates the parameters by assign and realizes them and the optimizer state,
// so after a step nothing of the step's graph stays alive.
#pragma once

#include "lazyjit/Tensor/Tensor.h"

#include <string>
#include <vector>

namespace lazyjit::nn::optim {

class Optimizer {
public:
  Optimizer(std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;
  /// Drops every parameter's gradient.
  void zeroGrad();
  /// Updates the parameters from their gradients and realizes them (and the optimizer state).
  virtual void step() = 0;
  /// Realizes `extra`, the parameters and the buffers in one schedule.
  void realize(const std::vector<Tensor> &extra = {});

  std::vector<Tensor> params;  ///< the tensors that require a gradient (deduplicated)
  std::vector<Tensor> buffers; ///< the others (realized with the parameters)
  Tensor lr;                   ///< [1] float tensor: assign to it to change the learning rate
  std::string device;

protected:
  /// The gradient of params[i]; throws an Error naming `who` and the parameter if it has none.
  Tensor gradOf(const char *who, size_t i) const;
};

class SGD : public Optimizer {
public:
  SGD(std::vector<Tensor> params, double lr = 0.001, double momentum = 0, double weightDecay = 0,
      bool nesterov = false);
  void step() override;

  double momentum, wd;
  bool nesterov;
  std::vector<Tensor> b; ///< momentum buffers (empty without momentum)
};

/// LAMB (https://arxiv.org/abs/1904.00962); with adam=true the trust ratio is 1 (Adam/AdamW).
class LAMB : public Optimizer {
public:
  LAMB(std::vector<Tensor> params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999,
       double eps = 1e-6, double wd = 0.0, bool adam = false);
  void step() override;

  double b1, b2, eps, wd;
  bool adam;
  Tensor t; ///< the step count, a [1] float tensor
  std::vector<Tensor> m, v;
};

LAMB Adam(std::vector<Tensor> params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999,
          double eps = 1e-8);
LAMB AdamW(std::vector<Tensor> params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999,
           double eps = 1e-8, double wd = 0.01);

} // namespace lazyjit::nn::optim

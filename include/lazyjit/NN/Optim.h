// Optimizers with the reference's formulas (tinygrad/nn/optim.py at 6d6eb930): SGD with momentum,
// weight decay and nesterov; LAMB, and Adam and AdamW as LAMB with a trust ratio of 1.
//
// The constructor sets requires_grad on every parameter whose requires_grad is unset; tensors
// with requires_grad false are buffers (running statistics), which step() realizes with the
// parameters. step() updates the parameters by assign and realizes them and the optimizer state,
// so after a step nothing of the step's graph stays alive. A gradient that is only an elementwise
// expression of realized buffers (what clipGradNorm leaves: the gradient times its clip
// coefficient) is not realized on its own: the update kernels compute it (and it stays lazy after
// the step, reading only buffers the step does not write).
//
// Resumable runs: nn::getStateDict(optimizer) names the optimizer's state (its momentum buffers,
// moments and step count), its learning rate and its hyperparameters, so the dict saves with
// safeSave beside the model's; nn::loadStateDict(optimizer, dict) puts it back, and a run resumed
// from the two files takes the same steps, bit for bit, as one that never stopped.
#pragma once

#include "lazyjit/NN/Module.h"
#include "lazyjit/Tensor/Tensor.h"

#include <concepts>
#include <string>
#include <unordered_set>
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

  /// What kind of optimizer this is: "SGD", "Adam" (also AdamW) or "LAMB".
  virtual std::string kind() const = 0;
  /// The state as named tensors (nn::getStateDict): "lr" (the learning-rate tensor itself), every
  /// hyperparameter as a 0-d float64 tensor, and the state tensors (aliases: an assign through
  /// the dict changes the optimizer). Names start with `prefix`.
  StateDict stateDict(const std::string &prefix = "") const;
  /// Takes `dict`'s state and hyperparameters (nn::loadStateDict). A dict of another kind of
  /// optimizer, a missing or unexpected key (with `strict`), or a tensor of another shape or
  /// dtype is an Error naming it; everything is checked before anything changes.
  void loadStateDict(const StateDict &dict, bool strict = true);

  /// A hyperparameter as stored in the state dict (booleans as 0 or 1).
  struct Hyperparameter {
    std::string name;
    double value;
  };

  std::vector<Tensor> params;  ///< the tensors that require a gradient (deduplicated)
  std::vector<Tensor> buffers; ///< the others (realized with the parameters)
  Tensor lr; ///< [1] float tensor the kernels read: change it with setLearningRate (LRScheduler.h), in place
  std::string device;

protected:
  /// The gradient of params[i]; throws an Error naming `who` and the parameter if it has none.
  Tensor gradOf(const char *who, size_t i) const;
  /// The buffers a step writes in place: the parameters' and the state tensors' (writtenBuffers
  /// is called once per step, before anything is assigned).
  using BufferSet = std::unordered_set<const Buffer *>;
  BufferSet writtenBuffers() const;
  /// gradOf, realized unless it is an elementwise expression of realized buffers outside
  /// `written` and constants (then the update kernels compute it, fusing e.g. a clip scale).
  Tensor stepGrad(const char *who, size_t i, const BufferSet &written) const;
  /// The hyperparameters in state-dict order; the kind-defining ones are checked, not set.
  virtual std::vector<Hyperparameter> hyperparameters() const = 0;
  virtual void setHyperparameter(const std::string &name, double value) = 0;
  /// The state tensors besides lr, named as in the state dict.
  virtual std::vector<std::pair<std::string, Tensor>> stateTensors() const = 0;
};

class SGD : public Optimizer {
public:
  SGD(std::vector<Tensor> params, double lr = 0.001, double momentum = 0, double weightDecay = 0,
      bool nesterov = false);
  void step() override;
  std::string kind() const override { return "SGD"; }

  double momentum, wd;
  bool nesterov;
  std::vector<Tensor> b; ///< momentum buffers (empty without momentum)

protected:
  std::vector<Hyperparameter> hyperparameters() const override;
  void setHyperparameter(const std::string &name, double value) override;
  std::vector<std::pair<std::string, Tensor>> stateTensors() const override;
};

/// LAMB (https://arxiv.org/abs/1904.00962); with adam=true the trust ratio is 1 (Adam/AdamW).
class LAMB : public Optimizer {
public:
  LAMB(std::vector<Tensor> params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999,
       double eps = 1e-6, double wd = 0.0, bool adam = false);
  void step() override;
  std::string kind() const override { return adam ? "Adam" : "LAMB"; }

  double b1, b2, eps, wd;
  bool adam;
  Tensor t; ///< the step count, a [1] float tensor
  std::vector<Tensor> m, v;

protected:
  std::vector<Hyperparameter> hyperparameters() const override;
  void setHyperparameter(const std::string &name, double value) override;
  std::vector<std::pair<std::string, Tensor>> stateTensors() const override;
};

LAMB Adam(std::vector<Tensor> params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999,
          double eps = 1e-8);
LAMB AdamW(std::vector<Tensor> params, double lr = 0.001, double b1 = 0.9, double b2 = 0.999,
           double eps = 1e-8, double wd = 0.01);

} // namespace lazyjit::nn::optim

namespace lazyjit::nn {

/// The optimizer's state dict (Optimizer::stateDict). Declared with the same parameters as
/// Module.h's getStateDict so that, for an optimizer, this more constrained overload is chosen.
template <typename O>
  requires std::derived_from<O, optim::Optimizer>
StateDict getStateDict(O &optimizer, const std::string &prefix = "") {
  return optimizer.stateDict(prefix);
}

/// Loads an optimizer's state dict (Optimizer::loadStateDict); see getStateDict on the overload.
template <typename O>
  requires std::derived_from<O, optim::Optimizer>
void loadStateDict(O &optimizer, const StateDict &dict, bool strict = true) {
  optimizer.loadStateDict(dict, strict);
}

} // namespace lazyjit::nn

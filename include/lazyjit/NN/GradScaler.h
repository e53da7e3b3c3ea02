// Dynamic loss scaling for float16 training (PyTorch's torch.cuda.amp.GradScaler): the loss is
// multiplied by a scale before backward so that small float16 gradients do not flush to zero;
// step() unscales the gradients inside the optimizer's kernels, skips the step when any gradient
// is inf or NaN, and update() halves the scale after such a step and doubles it after
// `growthInterval` clean steps in a row.
//
//   nn::GradScaler scaler;
//   { Tensor::AutocastGuard ac(dtypes::float16); loss = model(x).sparseCategoricalCrossentropy(y); }
//   scaler.scale(loss).backward();
//   scaler.unscale(opt); nn::clipGradNorm(opt.params, 1.0);  // optional: clip unscaled gradients
//   scaler.step(opt);   // opt.step() unless a gradient is not finite
//   scaler.update();
//
// The scale is a [1] tensor the kernels read, so a change of scale compiles nothing. The finite
// check is one reduction over all gradients, read on the host (one synchronisation per step, as
// PyTorch's on CPU): a scaled step decides on the host, so it is not for inside a Jit capture.
#pragma once

#include "lazyjit/NN/Module.h"
#include "lazyjit/NN/Optim.h"

namespace lazyjit::nn {

class GradScaler {
public:
  struct Options {
    double initScale = 65536.0;
    double growthFactor = 2.0;
    double backoffFactor = 0.5;
    int64_t growthInterval = 2000;
    /// Disabled, scale() and step() pass through (PyTorch's enabled=False).
    bool enabled = true;
  };
  GradScaler() : GradScaler(Options{}) {}
  explicit GradScaler(Options options);

  /// `loss` times the current scale (the loss itself when disabled).
  Tensor scale(const Tensor &loss);
  /// Unscales the gradients of `opt`'s parameters, checks them, and runs opt.step() when they
  /// are all finite. Returns whether the step ran. Each parameter's gradient becomes the
  /// unscaled one (lazily: the division runs in the optimizer's kernels).
  bool step(optim::Optimizer &opt);
  /// Unscales and checks the gradients now (PyTorch's unscale_), to clip them before step(),
  /// which then takes them as they are. At most once between two update()s.
  void unscale(optim::Optimizer &opt);
  /// Adjusts the scale after step(): back off when the step found inf/NaN, grow after
  /// growthInterval clean steps. Calling it without a step() before is an error.
  void update();

  double getScale() const { return scaleValue; }
  int64_t growthTracker() const { return tracker; }
  /// The scale and the growth tracker as float64 tensors ("scale", "growth_tracker"), to save
  /// beside the model and the optimizer; loadStateDict restores them.
  StateDict stateDict() const;
  void loadStateDict(const StateDict &dict);

private:
  void setScale(double value);

  Options opts;
  double scaleValue;
  int64_t tracker = 0;
  std::optional<bool> foundInf; ///< set by step(), consumed by update()
  Tensor scaleT;                ///< [1] float32 on the loss's device, created at the first scale()
};

} // namespace lazyjit::nn

// Dynamic loss scaling (PyTorch's GradScaler, torch/cuda/amp/grad_scaler.py in 1.13): the scale
// lives in a [1] tensor that scale() and the unscaled gradients read, so changing it compiles
// nothing; the finite check sums |g| over every gradient into one value read on the host (a sum
// keeps a NaN or an inf, where a max would drop a NaN).
#include "lazyjit/NN/GradScaler.h"
#include "lazyjit/Support/Error.h"

#include <cmath>

namespace lazyjit::nn {

GradScaler::GradScaler(Options options) : opts(options), scaleValue(options.initScale) {
  LAZYJIT_USER_CHECK(opts.initScale > 0 && std::isfinite(opts.initScale), Error,
                     "GradScaler: the initial scale must be positive and finite, got {}", opts.initScale);
  LAZYJIT_USER_CHECK(opts.growthFactor > 1, Error, "GradScaler: growth_factor must be > 1, got {}", opts.growthFactor);
  LAZYJIT_USER_CHECK(opts.backoffFactor > 0 && opts.backoffFactor < 1, Error,
                     "GradScaler: backoff_factor must be in (0, 1), got {}", opts.backoffFactor);
  LAZYJIT_USER_CHECK(opts.growthInterval > 0, Error, "GradScaler: growth_interval must be > 0, got {}",
                     opts.growthInterval);
}

void GradScaler::setScale(double value) {
  scaleValue = value;
  if (scaleT.defined())
    scaleT.assign(Tensor::fromValues({value}, {1}, {dtypes::float32, scaleT.device(), false})).realize();
}

Tensor GradScaler::scale(const Tensor &loss) {
  if (!opts.enabled) return loss;
  LAZYJIT_USER_CHECK(loss.defined() && loss.dtype().isFloating(), DTypeError,
                     "GradScaler.scale: the loss must be a floating-point tensor");
  if (!scaleT.defined() || scaleT.device() != loss.device())
    scaleT = Tensor::fromValues({scaleValue}, {1}, {dtypes::float32, loss.device(), false}).realize();
  Tensor s = scaleT.reshape(Shape(loss.ndim(), SInt(1)));
  return loss.mul(s.cast(loss.dtype()));
}

void GradScaler::unscale(optim::Optimizer &opt) {
  if (!opts.enabled) return;
  LAZYJIT_USER_CHECK(scaleT.defined(), Error, "GradScaler: call scale(loss) and backward() first");
  LAZYJIT_USER_CHECK(!foundInf.has_value(), Error,
                     "GradScaler: the gradients were already unscaled since the last update()");
  Tensor total;
  for (const auto &p : opt.params) {
    std::optional<Tensor> g = p.grad();
    if (!g) continue;
    Tensor s = g->cast(dtypes::float32).abs().sum();
    total = total.defined() ? total.add(s) : s;
  }
  LAZYJIT_USER_CHECK(total.defined(), Error, "GradScaler: no parameter of the optimizer has a gradient");
  foundInf = !std::isfinite(total.item<double>());
  if (*foundInf) return;
  Tensor inv = scaleT.reciprocal();
  for (auto &p : opt.params) {
    std::optional<Tensor> g = p.grad();
    if (g) p.setGrad(g->mul(inv.cast(g->dtype())));
  }
}

bool GradScaler::step(optim::Optimizer &opt) {
  if (!opts.enabled) {
    opt.step();
    return true;
  }
  if (!foundInf.has_value()) unscale(opt);
  if (*foundInf) return false;
  opt.step();
  return true;
}

void GradScaler::update() {
  if (!opts.enabled) return;
  LAZYJIT_USER_CHECK(foundInf.has_value(), Error, "GradScaler.update: call step() first");
  if (*foundInf) {
    tracker = 0;
    setScale(scaleValue * opts.backoffFactor);
  } else if (++tracker == opts.growthInterval) {
    tracker = 0;
    setScale(scaleValue * opts.growthFactor);
  }
  foundInf.reset();
}

StateDict GradScaler::stateDict() const {
  StateDict d;
  d.insert("scale", Tensor::fromValues({scaleValue}, {}, {dtypes::float64, std::nullopt, false}));
  d.insert("growth_tracker", Tensor::fromValues({static_cast<double>(tracker)}, {}, {dtypes::float64, std::nullopt, false}));
  return d;
}

void GradScaler::loadStateDict(const StateDict &dict) {
  double s = dict.at("scale").item<double>();
  double t = dict.at("growth_tracker").item<double>();
  LAZYJIT_USER_CHECK(s > 0 && std::isfinite(s) && t >= 0 && t == std::floor(t), Error,
                     "GradScaler.loadStateDict: invalid scale {} or growth tracker {}", s, t);
  tracker = static_cast<int64_t>(t);
  setScale(s);
}

} // namespace lazyjit::nn

// Learning-rate schedules with PyTorch's formulas (torch/optim/lr_scheduler.py at 1.13), written
// in its order of operations so the doubles agree to the last bit, and the in-place write of the
// rate into the optimizer's lr tensor.
#include "lazyjit/NN/LRScheduler.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

namespace lazyjit::nn::optim {

namespace {

Tensor number(double v) { return Tensor::fromValues({v}, {1}, {dtypes::float64, "CPU", false}); }

double numberAt(const StateDict &dict, const std::string &key) {
  const Tensor *t = dict.find(key);
  LAZYJIT_USER_CHECK(t != nullptr, Error,
                     "scheduler state: the state dict has no key '{}' (saved by another kind of "
                     "scheduler, or under another prefix?)",
                     key);
  std::vector<double> v = t->toVector<double>();
  LAZYJIT_USER_CHECK(v.size() == 1, ShapeError,
                     "scheduler state: '{}' has {} elements, not 1 (a saved number)", key,
                     v.size());
  return v[0];
}

int64_t countAt(const StateDict &dict, const std::string &key) {
  return static_cast<int64_t>(numberAt(dict, key));
}

/// The optimizer's lr buffer, when the tensor is realized into a buffer of its own one element.
Buffer *ownLRBuffer(Optimizer &opt) {
  opt.lr.realize();
  const LazyBufferRef &lb = opt.lr.lazydata();
  if (lb->isView() || !lb->isRealized()) return nullptr;
  Buffer *buf = lb->realized().get();
  return buf->size() == 1 && buf->dtype() == opt.lr.dtype() ? buf : nullptr;
}

} // namespace

void setLearningRate(Optimizer &opt, double value) {
  LAZYJIT_USER_CHECK(opt.lr.defined() && opt.lr.shape().size() == 1 && opt.lr.intShape()[0] == 1,
                     ShapeError, "setLearningRate: the optimizer's lr must be a [1] tensor");
  if (Buffer *buf = ownLRBuffer(opt)) {
    std::vector<uint8_t> in(sizeof(double)), out(opt.lr.dtype().itemsize());
    std::memcpy(in.data(), &value, sizeof(double));
    detail::convertFromBytes(in, dtypes::float64, out.data(), opt.lr.dtype(), 1);
    // a kernel launched earlier may still read the old value
    getDevice(buf->device()).synchronize();
    buf->copyIn(out.data(), out.size());
    return;
  }
  // a view, or a buffer of another size or dtype: assign gives the tensor a buffer of its own
  // (kernels or a Jit captured before read the old one; from here on the write is in place)
  opt.lr.assign(Tensor::fromValues({value}, {1}, {opt.lr.dtype(), opt.lr.device(), false}))
      .realize();
}

double getLearningRate(const Optimizer &opt) {
  std::vector<double> v = opt.lr.toVector<double>();
  LAZYJIT_USER_CHECK(v.size() == 1, ShapeError,
                     "getLearningRate: the optimizer's lr has {} elements, not 1", v.size());
  return v[0];
}

// ---- LRScheduler --------------------------------------------------------------------------------

LRScheduler::LRScheduler(Optimizer &opt)
    : opt_(opt), baseLR_(getLearningRate(opt)), groupLR_(baseLR_), lastLR_(baseLR_) {}

void LRScheduler::initialStep() {
  stepCount_ = 0;
  step();
}

void LRScheduler::step() { advance(lastEpoch_ + 1, false); }

void LRScheduler::stepTo(int64_t epoch) { advance(epoch, true); }

void LRScheduler::advance(int64_t nextEpoch, bool closedForm) {
  int64_t epoch = lastEpoch_;
  ++stepCount_;
  lastEpoch_ = nextEpoch;
  double lr;
  try {
    std::optional<double> closed = closedForm ? closedFormLR() : std::nullopt;
    lr = closed ? *closed : getLR();
  } catch (...) {
    --stepCount_;
    lastEpoch_ = epoch;
    throw;
  }
  apply(lr);
}

void LRScheduler::apply(double lr) {
  groupLR_ = lr;
  lastLR_ = lr;
  setLearningRate(opt_, lr);
}

StateDict LRScheduler::stateDict(const std::string &prefix) const {
  StateDict sd;
  sd.insert(prefix + "last_epoch", number(static_cast<double>(lastEpoch_)));
  sd.insert(prefix + "_step_count", number(static_cast<double>(stepCount_)));
  sd.insert(prefix + "base_lr", number(baseLR_));
  sd.insert(prefix + "lr", number(groupLR_));
  sd.insert(prefix + "_last_lr", number(lastLR_));
  return sd;
}

void LRScheduler::loadStateDict(const StateDict &dict, const std::string &prefix) {
  int64_t epoch = countAt(dict, prefix + "last_epoch"),
          count = countAt(dict, prefix + "_step_count");
  double base = numberAt(dict, prefix + "base_lr"), group = numberAt(dict, prefix + "lr");
  double last = numberAt(dict, prefix + "_last_lr");
  lastEpoch_ = epoch;
  stepCount_ = count;
  baseLR_ = base;
  groupLR_ = group;
  lastLR_ = last;
  setLearningRate(opt_, groupLR_);
}

// ---- MultiStepLR --------------------------------------------------------------------------------

MultiStepLR::MultiStepLR(Optimizer &opt, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(opt), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initialStep();
}

double MultiStepLR::getLR() {
  auto n = std::count(milestones_.begin(), milestones_.end(), lastEpoch_);
  if (n == 0) return groupLR_;
  return groupLR_ * std::pow(gamma_, static_cast<double>(n));
}

std::optional<double> MultiStepLR::closedFormLR() const {
  auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), lastEpoch_) - milestones_.begin();
  return baseLR_ * std::pow(gamma_, static_cast<double>(passed));
}

// ---- CosineAnnealingLR --------------------------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer &opt, int64_t tMax, double etaMin)
    : LRScheduler(opt), tMax_(tMax), etaMin_(etaMin) {
  LAZYJIT_USER_CHECK(tMax > 0, Error, "CosineAnnealingLR: T_max must be positive, got {}", tMax);
  initialStep();
}

double CosineAnnealingLR::getLR() {
  const double pi = std::numbers::pi, t = static_cast<double>(tMax_);
  const double e = static_cast<double>(lastEpoch_);
  if (lastEpoch_ == 0) return groupLR_;
  if (stepCount_ == 1 && lastEpoch_ > 0)
    return etaMin_ + (baseLR_ - etaMin_) * (1 + std::cos(e * pi / t)) / 2;
  if ((lastEpoch_ - 1 - tMax_) % (2 * tMax_) == 0) // a minimum: the recursion would divide by 0
    return groupLR_ + (baseLR_ - etaMin_) * (1 - std::cos(pi / t)) / 2;
  return (1 + std::cos(pi * e / t)) / (1 + std::cos(pi * (e - 1) / t)) * (groupLR_ - etaMin_) +
         etaMin_;
}

std::optional<double> CosineAnnealingLR::closedFormLR() const {
  const double pi = std::numbers::pi;
  return etaMin_ +
         (baseLR_ - etaMin_) *
             (1 + std::cos(pi * static_cast<double>(lastEpoch_) / static_cast<double>(tMax_))) / 2;
}

// ---- LinearLR -----------------------------------------------------------------------------------

LinearLR::LinearLR(Optimizer &opt, double startFactor, double endFactor, int64_t totalIters)
    : LRScheduler(opt), startFactor_(startFactor), endFactor_(endFactor), totalIters_(totalIters) {
  LAZYJIT_USER_CHECK(startFactor > 0 && startFactor <= 1, Error,
                     "LinearLR: start_factor must be in (0, 1], got {}", startFactor);
  LAZYJIT_USER_CHECK(endFactor >= 0 && endFactor <= 1, Error,
                     "LinearLR: end_factor must be in [0, 1], got {}", endFactor);
  LAZYJIT_USER_CHECK(totalIters > 0, Error, "LinearLR: total_iters must be positive, got {}",
                     totalIters);
  initialStep();
}

double LinearLR::getLR() {
  if (lastEpoch_ == 0) return groupLR_ * startFactor_;
  if (lastEpoch_ > totalIters_) return groupLR_;
  const double d = endFactor_ - startFactor_;
  return groupLR_ * (1. + d / (static_cast<double>(totalIters_) * startFactor_ +
                               static_cast<double>(lastEpoch_ - 1) * d));
}

std::optional<double> LinearLR::closedFormLR() const {
  const double done = static_cast<double>(std::min(totalIters_, lastEpoch_));
  return baseLR_ *
         (startFactor_ + (endFactor_ - startFactor_) * done / static_cast<double>(totalIters_));
}

// ---- OneCycleLR ---------------------------------------------------------------------------------

OneCycleLR::OneCycleLR(Optimizer &opt, double maxLR, int64_t totalSteps, const OneCycleOptions &o)
    : LRScheduler(opt), totalSteps_(totalSteps), anneal_(o.anneal) {
  LAZYJIT_USER_CHECK(totalSteps > 0, Error, "OneCycleLR: total_steps must be positive, got {}",
                     totalSteps);
  LAZYJIT_USER_CHECK(o.pctStart >= 0 && o.pctStart <= 1, Error,
                     "OneCycleLR: pct_start must be in [0, 1], got {}", o.pctStart);
  LAZYJIT_USER_CHECK(
      !o.cycleMomentum, Error,
      "OneCycleLR: cycle_momentum is not supported: SGD's momentum and Adam's beta1 are "
      "constants of the optimizer's kernels, so cycling them would compile new kernels "
      "every step");
  const double initial = maxLR / o.divFactor, min = initial / o.finalDivFactor;
  const double total = static_cast<double>(totalSteps), last = static_cast<double>(totalSteps - 1);
  if (o.threePhase)
    phases_ = {{o.pctStart * total - 1, initial, maxLR},
               {2 * o.pctStart * total - 2, maxLR, initial},
               {last, initial, min}};
  else
    phases_ = {{o.pctStart * total - 1, initial, maxLR}, {last, maxLR, min}};
  baseLR_ = initial; // PyTorch sets the group's initial_lr
  initialStep();
}

double OneCycleLR::getLR() {
  LAZYJIT_USER_CHECK(lastEpoch_ <= totalSteps_, Error,
                     "OneCycleLR: tried to step {} times; the schedule has total_steps {}",
                     lastEpoch_ + 1, totalSteps_);
  const double step = static_cast<double>(lastEpoch_);
  double start = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase &p = phases_[i];
    if (step <= p.endStep || i + 1 == phases_.size()) {
      LAZYJIT_USER_CHECK(p.endStep != start, Error,
                         "OneCycleLR: phase {} of {} is empty (it starts and ends at step {}); "
                         "change pct_start or total_steps ({})",
                         i + 1, phases_.size(), start, totalSteps_);
      double pct = (step - start) / (p.endStep - start);
      if (anneal_ == Anneal::Linear) return (p.endLR - p.startLR) * pct + p.startLR;
      double cosOut = std::cos(std::numbers::pi * pct) + 1;
      return p.endLR + (p.startLR - p.endLR) / 2.0 * cosOut;
    }
    start = p.endStep;
  }
  LAZYJIT_INTERNAL_CHECK(false, "OneCycleLR: no phase for step {}", lastEpoch_);
  return 0;
}

// ---- SequentialLR -------------------------------------------------------------------------------

SequentialLR::SequentialLR(Optimizer &opt, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(opt), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  LAZYJIT_USER_CHECK(!schedulers_.empty(), Error, "SequentialLR: needs at least one scheduler");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    LAZYJIT_USER_CHECK(schedulers_[i] != nullptr, Error, "SequentialLR: scheduler {} is null", i);
    LAZYJIT_USER_CHECK(&schedulers_[i]->opt_ == &opt_, Error,
                       "SequentialLR: scheduler {} belongs to another optimizer", i);
  }
  LAZYJIT_USER_CHECK(milestones_.size() + 1 == schedulers_.size(), Error,
                     "SequentialLR: {} schedulers need {} milestones, got {}", schedulers_.size(),
                     schedulers_.size() - 1, milestones_.size());
  // PyTorch: back to the group's initial_lr, undo the children's first steps, take the first
  // child's first step
  lastEpoch_ = 0;
  baseLR_ = schedulers_[0]->baseLR_;
  for (auto &s : schedulers_) {
    s->baseLR_ = baseLR_;
    s->lastEpoch_ -= 1;
  }
  LRScheduler &first = *schedulers_[0];
  first.groupLR_ = baseLR_;
  first.initialStep();
  groupLR_ = first.groupLR_;
  lastLR_ = first.lastLR_;
}

void SequentialLR::step() {
  ++lastEpoch_;
  ++stepCount_;
  size_t idx =
      std::upper_bound(milestones_.begin(), milestones_.end(), lastEpoch_) - milestones_.begin();
  LRScheduler &s = *schedulers_[idx];
  s.groupLR_ = groupLR_; // the children share one parameter group
  if (idx > 0 && milestones_[idx - 1] == lastEpoch_)
    s.stepTo(0);
  else
    s.step();
  groupLR_ = s.groupLR_;
  lastLR_ = s.lastLR_;
}

StateDict SequentialLR::stateDict(const std::string &prefix) const {
  StateDict sd = LRScheduler::stateDict(prefix);
  for (size_t i = 0; i < schedulers_.size(); ++i)
    for (const auto &[k, v] :
         schedulers_[i]->stateDict(prefix + "_schedulers." + std::to_string(i) + "."))
      sd.insert(k, v);
  return sd;
}

void SequentialLR::loadStateDict(const StateDict &dict, const std::string &prefix) {
  for (size_t i = 0; i < schedulers_.size(); ++i)
    schedulers_[i]->loadStateDict(dict, prefix + "_schedulers." + std::to_string(i) + ".");
  LRScheduler::loadStateDict(dict, prefix);
}

// ---- ReduceLROnPlateau --------------------------------------------------------------------------

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer &opt, const ReduceLROnPlateauOptions &options)
    : opt_(opt), o_(options), lr_(getLearningRate(opt)),
      best_(options.mode == PlateauMode::Min ? INFINITY : -INFINITY) {
  LAZYJIT_USER_CHECK(o_.factor < 1.0, Error, "ReduceLROnPlateau: factor must be < 1.0, got {}",
                     o_.factor);
}

bool ReduceLROnPlateau::isBetter(double a) const {
  bool rel = o_.thresholdMode == ThresholdMode::Rel;
  if (o_.mode == PlateauMode::Min)
    return rel ? a < best_ * (1. - o_.threshold) : a < best_ - o_.threshold;
  return rel ? a > best_ * (o_.threshold + 1.) : a > best_ + o_.threshold;
}

void ReduceLROnPlateau::step(double metric) {
  ++lastEpoch_;
  if (isBetter(metric)) {
    best_ = metric;
    numBadEpochs_ = 0;
  } else {
    ++numBadEpochs_;
  }
  if (cooldownCounter_ > 0) {
    --cooldownCounter_;
    numBadEpochs_ = 0; // ignore any bad epochs in cooldown
  }
  if (numBadEpochs_ > o_.patience) {
    double reduced = std::max(lr_ * o_.factor, o_.minLR);
    if (lr_ - reduced > o_.eps) {
      lr_ = reduced;
      setLearningRate(opt_, lr_);
    }
    cooldownCounter_ = o_.cooldown;
    numBadEpochs_ = 0;
  }
}

void ReduceLROnPlateau::step(const Tensor &metric) {
  std::vector<double> v = metric.toVector<double>();
  LAZYJIT_USER_CHECK(v.size() == 1, ShapeError,
                     "ReduceLROnPlateau.step: the metric has {} elements, not 1", v.size());
  step(v[0]);
}

StateDict ReduceLROnPlateau::stateDict(const std::string &prefix) const {
  StateDict sd;
  sd.insert(prefix + "last_epoch", number(static_cast<double>(lastEpoch_)));
  sd.insert(prefix + "best", number(best_));
  sd.insert(prefix + "num_bad_epochs", number(static_cast<double>(numBadEpochs_)));
  sd.insert(prefix + "cooldown_counter", number(static_cast<double>(cooldownCounter_)));
  sd.insert(prefix + "lr", number(lr_));
  return sd;
}

void ReduceLROnPlateau::loadStateDict(const StateDict &dict, const std::string &prefix) {
  int64_t epoch = countAt(dict, prefix + "last_epoch"),
          bad = countAt(dict, prefix + "num_bad_epochs");
  int64_t cooldown = countAt(dict, prefix + "cooldown_counter");
  double best = numberAt(dict, prefix + "best"), lr = numberAt(dict, prefix + "lr");
  lastEpoch_ = epoch;
  numBadEpochs_ = bad;
  cooldownCounter_ = cooldown;
  best_ = best;
  lr_ = lr;
  setLearningRate(opt_, lr_);
}

} // namespace lazyjit::nn::optim

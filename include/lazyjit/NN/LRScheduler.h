// Learning-rate schedules: PyTorch's MultiStepLR, CosineAnnealingLR, LinearLR (linear warmup),
// OneCycleLR, SequentialLR and ReduceLROnPlateau (torch/optim/lr_scheduler.py at 1.13; the
// reference's extra/lr_scheduler.py at 6d6eb930 has the first four in a simpler form).
//
//   nn::optim::SGD opt(nn::getParameters(model), 0.1);
//   nn::optim::CosineAnnealingLR sched(opt, 100);
//   for (...) { ...; opt.step(); sched.step(); }
//
// A scheduler computes the next learning rate on the host, in double, with PyTorch's formulas
// (the chainable, recursive ones step() uses, so the values are PyTorch's to the last bits), and
// writes it into the optimizer's lr tensor in place (setLearningRate): the optimizer's kernels
// read that tensor, so a new rate neither compiles a kernel nor breaks a Jit replay, and a step
// of the schedule runs no kernel at all.
//
// PyTorch keeps the rate of a parameter group as a double that the recursive formulas read back;
// here the optimizer's tensor holds it in its dtype (float32), so each scheduler keeps that double
// itself, starting from the tensor's value when it is built (0.1 reads as 0.10000000149011612).
// The scheduler therefore owns the rate: a value written into opt.lr by other code is not seen by
// its next step. To chain schedules, use SequentialLR, which shares one rate between its children
// as PyTorch's parameter group does.
//
// For resuming a run, stateDict() holds a scheduler's progress (step counts, the current rate,
// the best metric...) as [1] float64 tensors that safeSave writes next to the model's; the
// hyperparameters are the constructor's, as the same code builds the scheduler again before
// loadStateDict.
#pragma once

#include "lazyjit/NN/Module.h"
#include "lazyjit/NN/Optim.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lazyjit::nn::optim {

/// Writes `value` into the optimizer's lr tensor in place (its realized buffer, converted to its
/// dtype): kernels compiled for it, and Jit replays of them, read the new value; nothing runs.
/// (`opt.lr.assign(...)` instead would hand the tensor a new buffer, which a Jit replay does not
/// read.) Where lr is a view of another tensor, it first gets a buffer of its own.
void setLearningRate(Optimizer &opt, double value);
/// The value the optimizer's lr tensor holds (in its dtype, read back as a double).
double getLearningRate(const Optimizer &opt);

/// PyTorch's _LRScheduler: step() advances one epoch (or batch) and sets the rate. The
/// constructor of each scheduler takes its first step (epoch 0) and sets the rate, as PyTorch's.
class LRScheduler {
public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler &) = delete;
  LRScheduler &operator=(const LRScheduler &) = delete;

  /// Advances one step and writes the new rate into the optimizer.
  virtual void step();
  /// The rate the last step (or the constructor) set, in double: PyTorch's get_last_lr()[0].
  double lastLR() const { return lastLR_; }
  /// The rate the optimizer's kernels read now: its lr tensor, in the tensor's dtype.
  double currentLR() const { return getLearningRate(opt_); }
  /// The rate the schedule starts from: the optimizer's rate when the scheduler was built
  /// (PyTorch's base_lrs[0], its group's initial_lr).
  double baseLR() const { return baseLR_; }
  /// The number of steps taken since epoch 0 (PyTorch's last_epoch).
  int64_t lastEpoch() const { return lastEpoch_; }
  Optimizer &optimizer() const { return opt_; }

  /// The progress, as [1] float64 tensors named `prefix` + PyTorch's keys ("last_epoch", ...).
  virtual StateDict stateDict(const std::string &prefix = "") const;
  /// Restores what stateDict saved (an Error names a missing key) and writes the rate into the
  /// optimizer.
  virtual void loadStateDict(const StateDict &dict, const std::string &prefix = "");

protected:
  explicit LRScheduler(Optimizer &opt);
  /// PyTorch's _initial_step: the derived constructor calls it last (a base constructor cannot
  /// call the derived class's getLR).
  void initialStep();
  /// The chainable rate for lastEpoch_, from groupLR_ (the rate now) and baseLR_.
  virtual double getLR() = 0;
  /// The rate at lastEpoch_ from baseLR_ alone, where the schedule has a closed form.
  virtual std::optional<double> closedFormLR() const { return std::nullopt; }
  /// PyTorch's step(epoch): jumps to `epoch`, by the closed form where there is one (SequentialLR
  /// uses it at a milestone).
  void stepTo(int64_t epoch);
  /// Sets the rate: the group's double, the last rate and the optimizer's tensor.
  void apply(double lr);

  Optimizer &opt_;
  double baseLR_;
  double groupLR_; ///< PyTorch's param_groups[0]["lr"], which the recursive formulas read
  double lastLR_;
  int64_t lastEpoch_ = -1;
  int64_t stepCount_ = 0; ///< PyTorch's _step_count

private:
  /// Runs `nextEpoch` and getLR or the closed form, leaving the counts as they were on an error.
  void advance(int64_t nextEpoch, bool closedForm);
  friend class SequentialLR;
};

/// Multiplies the rate by gamma at each milestone (a milestone listed twice multiplies by
/// gamma^2, as PyTorch's Counter does).
class MultiStepLR : public LRScheduler {
public:
  MultiStepLR(Optimizer &opt, std::vector<int64_t> milestones, double gamma = 0.1);

protected:
  double getLR() override;
  std::optional<double> closedFormLR() const override;

private:
  std::vector<int64_t> milestones_; ///< sorted
  double gamma_;
};

/// Cosine annealing from the base rate to etaMin over tMax steps, rising again after (SGDR
/// without restarts), by PyTorch's recursive formula.
class CosineAnnealingLR : public LRScheduler {
public:
  CosineAnnealingLR(Optimizer &opt, int64_t tMax, double etaMin = 0);

protected:
  double getLR() override;
  std::optional<double> closedFormLR() const override;

private:
  int64_t tMax_;
  double etaMin_;
};

/// Linear warmup (PyTorch's LinearLR): the base rate times a factor that goes linearly from
/// startFactor to endFactor over totalIters steps, then stays. 0 < startFactor <= 1 (PyTorch
/// 1.13 accepts 0, then divides by zero at the first step), 0 <= endFactor <= 1.
class LinearLR : public LRScheduler {
public:
  LinearLR(Optimizer &opt, double startFactor = 1.0 / 3, double endFactor = 1.0,
           int64_t totalIters = 5);

protected:
  double getLR() override;
  std::optional<double> closedFormLR() const override;

private:
  double startFactor_, endFactor_;
  int64_t totalIters_;
};

enum class Anneal { Cos, Linear };

struct OneCycleOptions {
  double pctStart = 0.3;       ///< the share of the steps spent warming up
  Anneal anneal = Anneal::Cos; ///< the curve of each phase
  double divFactor = 25;       ///< initial rate = maxLR / divFactor
  double finalDivFactor = 1e4; ///< final rate = initial rate / finalDivFactor
  bool threePhase = false;     ///< warm up, cool down to the initial rate, then anneal to the final
  /// PyTorch cycles SGD's momentum or Adam's beta1 inversely to the rate by default. Here those
  /// are constants compiled into the optimizer's kernels, so cycling them would compile new
  /// kernels every step: it is not supported, and true is an Error.
  bool cycleMomentum = false;
};

/// The 1cycle policy (https://arxiv.org/abs/1708.07120): the rate rises from maxLR / divFactor
/// to maxLR over pctStart of totalSteps, then anneals to the final rate. It sets the rate itself
/// (the optimizer's is ignored). A step past epoch totalSteps is an Error, as in PyTorch.
class OneCycleLR : public LRScheduler {
public:
  OneCycleLR(Optimizer &opt, double maxLR, int64_t totalSteps, const OneCycleOptions &options = {});

protected:
  double getLR() override;

private:
  struct Phase {
    double endStep, startLR, endLR;
  };
  std::vector<Phase> phases_;
  int64_t totalSteps_;
  Anneal anneal_;
};

/// Runs its children one after another, switching at the milestones (PyTorch's SequentialLR):
/// LinearLR then CosineAnnealingLR is a warmup followed by cosine decay. The children must be
/// built on the same optimizer, one after another, just before this (each one's constructor
/// takes its first step; this undoes those steps, as PyTorch does). Every child's base rate is
/// the first child's, which is PyTorch's initial_lr of the group; at a milestone the next child
/// jumps to its epoch 0 by its closed form, so a MultiStepLR or CosineAnnealingLR restarts from
/// the base rate, as in PyTorch.
class SequentialLR : public LRScheduler {
public:
  SequentialLR(Optimizer &opt, std::vector<std::shared_ptr<LRScheduler>> schedulers,
               std::vector<int64_t> milestones);
  void step() override;
  /// Its own progress and each child's under `prefix` + "_schedulers.<i>.".
  StateDict stateDict(const std::string &prefix = "") const override;
  void loadStateDict(const StateDict &dict, const std::string &prefix = "") override;

protected:
  double getLR() override { return groupLR_; }

private:
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

enum class PlateauMode { Min, Max };
enum class ThresholdMode { Rel, Abs };

struct ReduceLROnPlateauOptions {
  PlateauMode mode = PlateauMode::Min; ///< whether the metric should fall or rise
  double factor = 0.1;                 ///< new rate = rate * factor (< 1)
  int64_t patience = 10;               ///< steps without improvement before a reduction
  double threshold = 1e-4;             ///< what counts as an improvement (see ThresholdMode)
  ThresholdMode thresholdMode = ThresholdMode::Rel;
  int64_t cooldown = 0; ///< steps after a reduction that count no bad step
  double minLR = 0;     ///< the rate never goes below this
  double eps = 1e-8;    ///< a reduction smaller than this is skipped
};

/// Reduces the rate when a metric stops improving (PyTorch's ReduceLROnPlateau, which is not an
/// _LRScheduler either: its step takes the metric). Its rate starts at the optimizer's.
class ReduceLROnPlateau {
public:
  explicit ReduceLROnPlateau(Optimizer &opt, const ReduceLROnPlateauOptions &options = {});
  ReduceLROnPlateau(const ReduceLROnPlateau &) = delete;
  ReduceLROnPlateau &operator=(const ReduceLROnPlateau &) = delete;

  /// One epoch's metric (a validation loss): counts a bad epoch or a new best, and reduces the
  /// rate after more than `patience` bad epochs.
  void step(double metric);
  /// The same with a one-element tensor (read back to the host).
  void step(const Tensor &metric);

  double lastLR() const { return lr_; }
  double currentLR() const { return getLearningRate(opt_); }
  int64_t lastEpoch() const { return lastEpoch_; }
  double best() const { return best_; }
  int64_t numBadEpochs() const { return numBadEpochs_; }
  Optimizer &optimizer() const { return opt_; }

  /// "last_epoch", "best", "num_bad_epochs", "cooldown_counter" and the rate "lr".
  StateDict stateDict(const std::string &prefix = "") const;
  void loadStateDict(const StateDict &dict, const std::string &prefix = "");

private:
  bool isBetter(double a) const;

  Optimizer &opt_;
  ReduceLROnPlateauOptions o_;
  double lr_;
  double best_;
  int64_t numBadEpochs_ = 0, cooldownCounter_ = 0, lastEpoch_ = 0;
};

} // namespace lazyjit::nn::optim

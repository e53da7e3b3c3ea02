// Learning-rate schedulers: every schedule against PyTorch's over 100 steps (lr_schedules.json,
// written at build time by golden/gen_lr_golden.py), resumed from a state dict at any step, the
// rate reaching the optimizer's kernels (an SGD step moves a parameter by the scheduled rate), no
// compile and no kernel for a new rate over a whole schedule, Jit replays that see each new rate,
// and the errors.
//
// Tolerance: the schedulers compute in double with PyTorch's formulas in its order of operations,
// from the same base rate (0.1 rounded to float32, which is what lazyjit's optimizer holds), so
// the values agree bit for bit on x86-64; 1e-12 relative leaves room only for a compiler that
// contracts a multiply-add into an FMA, or a cos rounded differently from the one Python used.
#include "lazyjit/NN/LRScheduler.h"
#include "Tensor/TensorTestUtil.h"
#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/State.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/CPUDevice.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Tensor/Jit.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <unistd.h>

using namespace lazyjit;
using namespace lazyjit::testing;
using doctest::Contains;
using nlohmann::json;
namespace optim = lazyjit::nn::optim;

namespace {

const json &golden() {
  static const json g = [] {
    std::string path = std::string(LAZYJIT_LR_GOLDEN_DIR) + "/lr_schedules.json";
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "missing " << path << " (the NNTests build runs gen_lr_golden.py)");
    return json::parse(in);
  }();
  return g;
}

double arg(const json &args, const char *key, double fallback) {
  return args.contains(key) ? args[key].get<double>() : fallback;
}

/// A golden entry's epoch scheduler (PyTorch's class name and keyword arguments) on `opt`.
std::shared_ptr<optim::LRScheduler> buildEpoch(optim::Optimizer &opt, const json &entry) {
  const std::string kind = entry["scheduler"];
  const json &a = entry["args"];
  if (kind == "MultiStepLR") {
    auto ms = a["milestones"].get<std::vector<int64_t>>();
    return a.contains("gamma")
               ? std::make_shared<optim::MultiStepLR>(opt, ms, a["gamma"].get<double>())
               : std::make_shared<optim::MultiStepLR>(opt, ms);
  }
  if (kind == "CosineAnnealingLR") {
    int64_t tMax = a["T_max"];
    return a.contains("eta_min")
               ? std::make_shared<optim::CosineAnnealingLR>(opt, tMax, a["eta_min"].get<double>())
               : std::make_shared<optim::CosineAnnealingLR>(opt, tMax);
  }
  if (kind == "LinearLR") // PyTorch's defaults: 1/3, 1.0, 5
    return std::make_shared<optim::LinearLR>(opt, arg(a, "start_factor", 1.0 / 3),
                                             arg(a, "end_factor", 1.0),
                                             static_cast<int64_t>(arg(a, "total_iters", 5)));
  if (kind == "OneCycleLR") {
    optim::OneCycleOptions o; // lazyjit's defaults, which must be PyTorch's
    if (a.contains("pct_start")) o.pctStart = a["pct_start"];
    if (a.contains("anneal_strategy"))
      o.anneal = a["anneal_strategy"] == "cos" ? optim::Anneal::Cos : optim::Anneal::Linear;
    if (a.contains("div_factor")) o.divFactor = a["div_factor"];
    if (a.contains("final_div_factor")) o.finalDivFactor = a["final_div_factor"];
    if (a.contains("three_phase")) o.threePhase = a["three_phase"];
    if (a.contains("cycle_momentum")) o.cycleMomentum = a["cycle_momentum"];
    return std::make_shared<optim::OneCycleLR>(opt, a["max_lr"].get<double>(),
                                               a["total_steps"].get<int64_t>(), o);
  }
  if (kind == "SequentialLR") {
    std::vector<std::shared_ptr<optim::LRScheduler>> children;
    for (const json &c : a["schedulers"]) children.push_back(buildEpoch(opt, c));
    return std::make_shared<optim::SequentialLR>(opt, children,
                                                 a["milestones"].get<std::vector<int64_t>>());
  }
  FAIL("unknown scheduler " << kind);
  return nullptr;
}

std::unique_ptr<optim::ReduceLROnPlateau> buildPlateau(optim::Optimizer &opt, const json &entry) {
  const json &a = entry["args"];
  optim::ReduceLROnPlateauOptions o; // lazyjit's defaults, which must be PyTorch's
  if (a.contains("mode"))
    o.mode = a["mode"] == "min" ? optim::PlateauMode::Min : optim::PlateauMode::Max;
  if (a.contains("factor")) o.factor = a["factor"];
  if (a.contains("patience")) o.patience = a["patience"];
  if (a.contains("threshold")) o.threshold = a["threshold"];
  if (a.contains("threshold_mode"))
    o.thresholdMode =
        a["threshold_mode"] == "rel" ? optim::ThresholdMode::Rel : optim::ThresholdMode::Abs;
  if (a.contains("cooldown")) o.cooldown = a["cooldown"];
  if (a.contains("min_lr")) o.minLR = a["min_lr"];
  if (a.contains("eps")) o.eps = a["eps"];
  return std::make_unique<optim::ReduceLROnPlateau>(opt, o);
}

/// Either kind of scheduler, stepped the same way (ReduceLROnPlateau with the golden metrics).
struct AnyScheduler {
  std::shared_ptr<optim::LRScheduler> epoch;
  std::unique_ptr<optim::ReduceLROnPlateau> plateau;

  AnyScheduler(optim::Optimizer &opt, const json &entry) {
    if (entry["scheduler"] == "ReduceLROnPlateau")
      plateau = buildPlateau(opt, entry);
    else
      epoch = buildEpoch(opt, entry);
  }
  /// Step `i` (0-based) of the schedule.
  void step(size_t i) {
    if (plateau)
      plateau->step(golden()["metrics"][i].get<double>());
    else
      epoch->step();
  }
  double lastLR() const { return plateau ? plateau->lastLR() : epoch->lastLR(); }
  double currentLR() const { return plateau ? plateau->currentLR() : epoch->currentLR(); }
  nn::StateDict stateDict(const std::string &prefix = "") const {
    return plateau ? plateau->stateDict(prefix) : epoch->stateDict(prefix);
  }
  void loadStateDict(const nn::StateDict &d, const std::string &prefix = "") {
    if (plateau)
      plateau->loadStateDict(d, prefix);
    else
      epoch->loadStateDict(d, prefix);
  }
};

bool close(double got, double want) { return std::abs(got - want) <= 1e-12 * std::abs(want); }

/// One float32 parameter that an SGD at 0.1 updates (a scheduler's dummy, as the golden's).
struct DummyRun {
  Tensor param = Tensor::zeros({1}, {dtypes::float32, "CPU"});
  optim::SGD opt{{param}, 0.1};
};

std::string tempPath(const std::string &name) {
  auto dir = std::filesystem::temp_directory_path() / ("lazyjit-lr-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

template <typename F> std::string errorOf(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_SUITE("LRScheduler") {

  TEST_CASE("LRScheduler: every schedule matches PyTorch's over 100 steps") {
    const json &g = golden();
    REQUIRE(g["cases"].size() >= 16);
    for (const json &c : g["cases"]) {
      CAPTURE(c["name"].get<std::string>());
      const std::vector<double> want = c["lrs"];
      REQUIRE(want.size() == g["steps"].get<size_t>() + 1);
      DummyRun run;
      // the optimizer holds 0.1 in float32: the golden's base rate is that value
      REQUIRE(optim::getLearningRate(run.opt) == g["base_lr"].get<double>());
      AnyScheduler s(run.opt, c);
      for (size_t i = 0; i < want.size(); ++i) {
        CAPTURE(i);
        if (i > 0) s.step(i - 1);
        CHECK_MESSAGE(close(s.lastLR(), want[i]), s.lastLR() << " != " << want[i]);
        // the optimizer's tensor holds the rate in float32
        CHECK(s.currentLR() == static_cast<double>(static_cast<float>(want[i])));
      }
    }
  }

  TEST_CASE("LRScheduler: a schedule resumed from its state dict continues as PyTorch's") {
    const json &g = golden();
    for (const json &c : g["cases"]) {
      for (size_t stopAt : {0, 1, 5, 37, 99}) {
        CAPTURE(c["name"].get<std::string>());
        CAPTURE(stopAt);
        const std::vector<double> want = c["lrs"];
        nn::StateDict saved;
        {
          DummyRun run;
          AnyScheduler s(run.opt, c);
          for (size_t i = 0; i < stopAt; ++i) s.step(i);
          saved = s.stateDict("scheduler.");
        }
        for (const auto &[name, t] : saved) {
          CHECK(name.rfind("scheduler.", 0) == 0);
          CHECK(t.dtype() == dtypes::float64);
        }
        DummyRun run; // a fresh optimizer and scheduler, as a restarted process builds them
        AnyScheduler s(run.opt, c);
        s.loadStateDict(saved, "scheduler.");
        CHECK(close(s.lastLR(), want[stopAt]));
        CHECK(s.currentLR() == static_cast<double>(static_cast<float>(want[stopAt])));
        for (size_t i = stopAt; i + 1 < want.size(); ++i) {
          s.step(i);
          CHECK_MESSAGE(close(s.lastLR(), want[i + 1]),
                        "step " << i + 1 << ": " << s.lastLR() << " != " << want[i + 1]);
        }
      }
    }
  }

  TEST_CASE("LRScheduler: the state saves with the model's in one safetensors file") {
    const json &g = golden();
    for (const char *name :
         {"SequentialLR warmup then cosine", "ReduceLROnPlateau min abs cooldown min_lr"}) {
      CAPTURE(name);
      const json *entry = nullptr;
      for (const json &c : g["cases"])
        if (c["name"] == name) entry = &c;
      REQUIRE(entry != nullptr);
      const std::vector<double> want = (*entry)["lrs"];
      for (size_t stopAt : {0, 42}) { // at 0 ReduceLROnPlateau's best is +inf
        CAPTURE(stopAt);
        nn::Linear model(3, 2);
        std::string path = tempPath("run.safetensors");
        {
          DummyRun run;
          AnyScheduler s(run.opt, *entry);
          for (size_t i = 0; i < stopAt; ++i) s.step(i);
          nn::StateDict all = nn::getStateDict(model);
          for (const auto &[k, t] : s.stateDict("scheduler.")) all.insert(k, t);
          safeSave(all, path);
        }
        nn::StateDict loaded = safeLoad(path);
        CHECK(loaded.contains("weight"));
        DummyRun run;
        AnyScheduler s(run.opt, *entry);
        s.loadStateDict(loaded, "scheduler.");
        for (size_t i = stopAt; i + 1 < want.size(); ++i) {
          s.step(i);
          CHECK(close(s.lastLR(), want[i + 1]));
        }
      }
    }
  }

  TEST_CASE("LRScheduler: an SGD step moves the parameter by the scheduled rate") {
    for (const std::string &dev : devices()) {
      CAPTURE(dev);
      // loss = sum(p * c): the gradient is c, powers of two so that lr * c is exact in float32
      std::vector<float> host{1.0f, -2.0f, 3.0f, 0.5f};
      const std::vector<float> c{1.0f, 2.0f, -0.5f, 4.0f};
      Tensor p = Tensor::fromVector(host, {4}, dev);
      Tensor cT = Tensor::fromVector(c, {4}, dev).realize();
      optim::SGD opt({p}, 0.1);
      optim::OneCycleLR sched(opt, 0.5, 20);
      std::set<float> rates;
      for (int step = 0; step < 20; ++step) {
        CAPTURE(step);
        float lr = static_cast<float>(sched.lastLR());
        rates.insert(lr);
        opt.zeroGrad();
        p.mul(cT).sum().backward();
        opt.step();
        for (size_t j = 0; j < host.size(); ++j) host[j] = host[j] - lr * c[j];
        CHECK(p.toVector<float>() == host);
        sched.step();
      }
      CHECK(rates.size() == 20);
    }
  }

  TEST_CASE(
      "LRScheduler: a whole schedule compiles nothing after the first steps and runs no kernel") {
    using Make = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
    struct Case {
      std::string name;
      Make make;
      int warmupSteps; // the steps that compile: the first update reads zero state as constants
    };
    const std::vector<Case> cases{
        {"SGD",
         [](std::vector<Tensor> p) { return std::make_unique<optim::SGD>(std::move(p), 0.1); }, 1},
        {"SGD momentum",
         [](std::vector<Tensor> p) { return std::make_unique<optim::SGD>(std::move(p), 0.1, 0.9); },
         2},
        {"Adam",
         [](std::vector<Tensor> p) {
           return std::make_unique<optim::LAMB>(optim::Adam(std::move(p), 0.01));
         },
         2},
    };
    for (const Case &c : cases) {
      CAPTURE(c.name);
      Tensor::manualSeed(11);
      nn::Linear model(4, 3);
      std::unique_ptr<optim::Optimizer> opt = c.make(nn::getParameters(model));
      Tensor::corealize(opt->params); // else step 1 also computes the initial weights
      auto warmup = std::make_shared<optim::LinearLR>(*opt, 0.1, 1.0, 10);
      auto cosine = std::make_shared<optim::CosineAnnealingLR>(*opt, 90, 1e-3);
      optim::SequentialLR sched(*opt, {warmup, cosine}, {10});
      Tensor x = Tensor::rand({8, 4}, {dtypes::float32, "CPU"}).realize();
      Tensor y = Tensor::rand({8, 3}, {dtypes::float32, "CPU"}).realize();
      const Buffer *lrBuffer = opt->lr.lazydata()->realized().get();
      CHECK(lrBuffer != nullptr);
      auto compiles = [] { return cpuCompileStats().compiled + cpuCompileStats().diskHits; };
      int compiledAfterWarmup = 0;
      std::set<double> rates;
      for (int step = 1; step <= 100; ++step) {
        CAPTURE(step);
        opt->zeroGrad();
        model(x).sub(y).square().mean().backward();
        opt->step();
        if (step == c.warmupSteps) compiledAfterWarmup = compiles();
        int64_t kernels = globalCounters().kernelCount;
        sched.step();
        CHECK(globalCounters().kernelCount == kernels); // a new rate is a host write, not a kernel
        rates.insert(sched.lastLR());
      }
      CHECK(compiles() == compiledAfterWarmup);
      CHECK(rates.size() >= 95);
      CHECK(opt->lr.lazydata()->realized().get() ==
            lrBuffer); // the kernels read one buffer throughout
    }
  }

  TEST_CASE("LRScheduler: a Jit replay of the training step sees each new rate") {
    std::vector<float> host{1.0f, -2.0f, 3.0f, 0.5f};
    const std::vector<float> c{1.0f, 2.0f, -0.5f, 4.0f};
    Tensor p = Tensor::fromVector(host, {4}, "CPU");
    optim::SGD opt({p}, 0.1);
    optim::CosineAnnealingLR sched(opt, 7, 0.01); // falls and rises again within the run
    Jit jit([&](const std::vector<Tensor> &in) {
      opt.zeroGrad();
      Tensor loss = p.mul(in[0]).sum().backward();
      opt.step();
      return std::vector<Tensor>{loss};
    });
    std::set<float> rates;
    for (int step = 0; step < 30; ++step) {
      CAPTURE(step);
      float lr = static_cast<float>(sched.lastLR());
      rates.insert(lr);
      jit({Tensor::fromVector(c, {4}, "CPU").realize()});
      for (size_t j = 0; j < host.size(); ++j) host[j] = host[j] - lr * c[j];
      CHECK(p.toVector<float>() == host);
      if (step >= 2) CHECK(jit.captured());
      sched.step();
    }
    CHECK(rates.size() >= 8);
  }

  TEST_CASE("LRScheduler: setLearningRate writes the rate in place, also over a pending assign") {
    DummyRun run;
    optim::setLearningRate(run.opt, 0.25);
    CHECK(optim::getLearningRate(run.opt) == 0.25);
    run.opt.lr.assign(Tensor::fromValues({0.5}, {1}, {dtypes::float32, "CPU", false})); // lazy
    optim::setLearningRate(run.opt, 0.125);
    CHECK(optim::getLearningRate(run.opt) == 0.125);
    optim::setLearningRate(run.opt, 0.1);
    CHECK(optim::getLearningRate(run.opt) == static_cast<double>(0.1f));
  }

  TEST_CASE("LRScheduler: bad arguments and misuse are errors that say what is wrong") {
    DummyRun run;
    optim::Optimizer &opt = run.opt;
    CHECK_THROWS_WITH_AS(optim::LinearLR(opt, 0.0),
                         Contains("LinearLR: start_factor must be in (0, 1], got 0"), Error);
    CHECK_THROWS_WITH_AS(optim::LinearLR(opt, 0.5, 1.5),
                         Contains("LinearLR: end_factor must be in [0, 1], got 1.5"), Error);
    CHECK_THROWS_WITH_AS(optim::LinearLR(opt, 0.5, 1.0, 0),
                         Contains("total_iters must be positive"), Error);
    CHECK_THROWS_WITH_AS(optim::CosineAnnealingLR(opt, 0),
                         Contains("CosineAnnealingLR: T_max must be positive, got 0"), Error);
    CHECK_THROWS_WITH_AS(optim::OneCycleLR(opt, 0.1, 0),
                         Contains("OneCycleLR: total_steps must be positive"), Error);
    CHECK_THROWS_WITH_AS(optim::OneCycleLR(opt, 0.1, 10, {.pctStart = 1.5}),
                         Contains("pct_start must be in [0, 1], got 1.5"), Error);
    CHECK_THROWS_WITH_AS(optim::OneCycleLR(opt, 0.1, 10, {.cycleMomentum = true}),
                         Contains("cycle_momentum is not supported"), Error);
    CHECK_THROWS_WITH_AS(optim::ReduceLROnPlateau(opt, {.factor = 1.0}),
                         Contains("factor must be < 1.0, got 1"), Error);

    // stepping past total_steps, as PyTorch (which allows step total_steps itself)
    optim::OneCycleLR once(opt, 0.1, 5);
    for (int i = 0; i < 5; ++i) once.step();
    double last = once.lastLR();
    CHECK_THROWS_WITH_AS(
        once.step(), Contains("OneCycleLR: tried to step 7 times; the schedule has total_steps 5"),
        Error);
    CHECK(once.lastEpoch() == 5); // unchanged by the failed step
    CHECK(once.lastLR() == last);
    // pct_start 1: the annealing phase is empty, reached at step total_steps (PyTorch divides by 0)
    optim::OneCycleLR allWarmup(opt, 0.1, 4, {.pctStart = 1.0});
    for (int i = 0; i < 3; ++i) allWarmup.step();
    CHECK_THROWS_WITH_AS(allWarmup.step(), Contains("OneCycleLR: phase 2 of 2 is empty"), Error);

    auto a = std::make_shared<optim::LinearLR>(opt, 0.5);
    auto b = std::make_shared<optim::CosineAnnealingLR>(opt, 10);
    CHECK_THROWS_WITH_AS(optim::SequentialLR(opt, {a, b}, {}),
                         Contains("SequentialLR: 2 schedulers need 1 milestones, got 0"), Error);
    DummyRun other;
    auto foreign = std::make_shared<optim::CosineAnnealingLR>(other.opt, 10);
    CHECK_THROWS_WITH_AS(optim::SequentialLR(opt, {a, foreign}, {3}),
                         Contains("scheduler 1 belongs to another optimizer"), Error);

    nn::StateDict partial = optim::CosineAnnealingLR(opt, 10).stateDict();
    nn::StateDict missing;
    for (const auto &[k, t] : partial)
      if (k != "lr") missing.insert(k, t);
    optim::CosineAnnealingLR target(opt, 10);
    CHECK(errorOf([&] {
            target.loadStateDict(missing);
          }).find("scheduler state: the state dict has no key 'lr'") != std::string::npos);
    optim::ReduceLROnPlateau plateau(opt);
    CHECK(errorOf([&] {
            plateau.loadStateDict(partial);
          }).find("the state dict has no key 'num_bad_epochs'") != std::string::npos);
    CHECK_THROWS_WITH_AS(plateau.step(Tensor::zeros({2})),
                         Contains("the metric has 2 elements, not 1"), ShapeError);
  }

} // TEST_SUITE

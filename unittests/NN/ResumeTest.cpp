// Resumable runs: an optimizer's state dict (nn::getStateDict(optimizer)) saved with safeSave beside
// the model's, and loaded into a new model and a new optimizer, continues the run bit for bit: a
// run stopped at step 4 and resumed reaches the same bytes at step 10 as one that never stopped,
// for SGD with momentum (also nesterov and weight decay), Adam, AdamW and LAMB, with and without
// Jit. A state dict that does not fit (another shape, a missing or unexpected key, another kind of
// optimizer) is an Error naming it, and changes nothing.
#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/Optim.h"
#include "lazyjit/NN/State.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Tensor/Jit.h"
#include "Tensor/TensorTestUtil.h"

#include <filesystem>
#include <functional>
#include <memory>
#include <unistd.h>

using namespace lazyjit;
using namespace lazyjit::testing;
using doctest::Contains;
namespace optim = lazyjit::nn::optim;
namespace fs = std::filesystem;

namespace {

/// Conv2d -> tanh -> Linear -> tanh -> Linear, on [4, 1, 5, 5] inputs.
struct Net : nn::Module {
  nn::Conv2d conv{1, 2, {3}};
  nn::Linear l1{18, 6}, l2{6, 3};
  LAZYJIT_MODULE(conv, l1, l2)
  Tensor operator()(const Tensor &x) const { return l2(l1(conv(x).tanh().flatten(1)).tanh()); }
};

/// The batch of step `step`: the same values in every run.
std::vector<Tensor> batch(int step, const std::string &dev) {
  uint64_t s = static_cast<uint64_t>(step);
  Tensor x = Tensor::fromValues(randVals(100, 1000 + s), {4, 1, 5, 5}, {dtypes::float32, dev, false});
  Tensor y = Tensor::fromValues(randVals(12, 2000 + s, -1, 1), {4, 3}, {dtypes::float32, dev, false});
  return {x.realize(), y.realize()};
}

using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;
using P = std::vector<Tensor>;

/// An optimizer setting, and a factory for the same kind with other hyperparameters (what a
/// resumed run builds before loading: the state dict must bring the originals back).
struct Setting {
  const char *name;
  Factory make, makeOther;
};

const std::vector<Setting> &settings() {
  static const std::vector<Setting> s = {
      {"SGD momentum 0.9", [](P p) { return std::make_unique<optim::SGD>(std::move(p), 0.05, 0.9); },
       [](P p) { return std::make_unique<optim::SGD>(std::move(p), 0.5, 0.1, 0.2, true); }},
      {"SGD momentum 0.8 nesterov weight_decay 0.01",
       [](P p) { return std::make_unique<optim::SGD>(std::move(p), 0.05, 0.8, 0.01, true); },
       [](P p) { return std::make_unique<optim::SGD>(std::move(p), 0.3, 0.5); }},
      {"Adam", [](P p) { return std::make_unique<optim::LAMB>(optim::Adam(std::move(p), 0.01)); },
       [](P p) { return std::make_unique<optim::LAMB>(optim::Adam(std::move(p), 0.1, 0.5, 0.9, 1e-3)); }},
      {"AdamW weight_decay 0.1",
       [](P p) { return std::make_unique<optim::LAMB>(optim::AdamW(std::move(p), 0.01, 0.9, 0.999, 1e-8, 0.1)); },
       [](P p) { return std::make_unique<optim::LAMB>(optim::Adam(std::move(p))); }},
      {"LAMB weight_decay 0.01",
       [](P p) { return std::make_unique<optim::LAMB>(std::move(p), 0.02, 0.9, 0.999, 1e-6, 0.01); },
       [](P p) { return std::make_unique<optim::LAMB>(std::move(p), 0.001, 0.8, 0.99, 1e-4); }},
  };
  return s;
}

/// A model and its optimizer on `dev`, initialized from `seed`.
struct Run {
  std::unique_ptr<Net> net;
  std::unique_ptr<optim::Optimizer> opt;

  Run(const std::string &dev, uint64_t seed, const Factory &make) {
    Config c = config();
    c.device = dev;
    ScopedConfig scope(c);
    Tensor::manualSeed(seed);
    net = std::make_unique<Net>();
    for (Tensor &p : nn::getParameters(*net)) p.realize();
    opt = make(nn::getParameters(*net));
  }

  /// Steps [from, to), through a Jit (made here: a resumed run's is new) or plainly.
  void train(int from, int to, bool useJit, const std::string &dev) {
    auto step = [this](const std::vector<Tensor> &in) {
      opt->zeroGrad();
      Tensor loss = (*net)(in[0]).sub(in[1]).square().mean();
      loss.backward();
      opt->step();
      return std::vector<Tensor>{loss};
    };
    Jit jit(step);
    for (int s = from; s < to; ++s) useJit ? jit(batch(s, dev)) : step(batch(s, dev));
    if (useJit && to - from > 2) CHECK(jit.captured());
  }
};

/// The raw bytes of every tensor of `dict`, by name.
std::vector<std::pair<std::string, std::vector<uint8_t>>> bytesOf(const nn::StateDict &dict) {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> out;
  for (const auto &[name, t] : dict) out.emplace_back(name, t.toBytes());
  return out;
}

/// A fresh directory under the system's temp directory, removed with the object.
struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() / ("lazyjit-resume-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string &name) const { return (path / name).string(); }
};

const int kSteps = 10, kStop = 4;

} // namespace

TEST_SUITE_BEGIN("Resume");

TEST_CASE("Resume: a run stopped, saved and resumed into a new model and optimizer ends bit-identical") {
  for (const std::string &dev : devices())
    for (bool useJit : {false, true})
      for (const Setting &s : settings()) {
        std::string name = s.name;
        CAPTURE(dev);
        CAPTURE(useJit);
        CAPTURE(name);
        Run whole(dev, 1, s.make);
        whole.train(0, kSteps, useJit, dev);

        TempDir dir;
        {
          Run first(dev, 1, s.make);
          first.train(0, kStop, useJit, dev);
          safeSave(nn::getStateDict(*first.net), dir / "model.safetensors");
          safeSave(nn::getStateDict(*first.opt), dir / "optim.safetensors");
        }
        // another initialization and other hyperparameters: everything must come from the files
        Run resumed(dev, 2, s.makeOther);
        CHECK(bytesOf(nn::getStateDict(*resumed.net)) != bytesOf(nn::getStateDict(*whole.net)));
        nn::loadStateDict(*resumed.net, safeLoad(dir / "model.safetensors", dev));
        nn::loadStateDict(*resumed.opt, safeLoad(dir / "optim.safetensors", dev));
        resumed.train(kStop, kSteps, useJit, dev);

        CHECK(bytesOf(nn::getStateDict(*resumed.net)) == bytesOf(nn::getStateDict(*whole.net)));
        // the optimizer state too: lr, hyperparameters, step count, momentum buffers and moments
        CHECK(bytesOf(nn::getStateDict(*resumed.opt)) == bytesOf(nn::getStateDict(*whole.opt)));
      }
}

TEST_CASE("Resume: an optimizer's state dict names its lr, hyperparameters and state, aliasing the state") {
  Tensor w = Tensor::fromValues({1, 2, 3, 4, 5, 6}, {2, 3}), b = Tensor::fromValues({1, 2}, {2});
  optim::SGD sgd({w, b}, 0.1, 0.9, 0.01, true);
  nn::StateDict sd = nn::getStateDict(sgd);
  CHECK(sd.keys() == std::vector<std::string>{"lr", "momentum", "weight_decay", "nesterov", "b.0", "b.1"});
  CHECK(sd.at("lr").sameAs(sgd.lr));
  CHECK(sd.at("b.1").sameAs(sgd.b[1]));
  expectDType(sd.at("momentum"), dtypes::float64);
  CHECK(sd.at("momentum").ndim() == 0);
  CHECK(sd.at("momentum").item<double>() == 0.9);
  CHECK(sd.at("weight_decay").item<double>() == 0.01);
  CHECK(sd.at("nesterov").item<double>() == 1.0);

  optim::LAMB lamb({w, b}, 0.01, 0.8, 0.99, 1e-5, 0.1);
  nn::StateDict ld = nn::getStateDict(lamb, "optimizer.");
  CHECK(ld.keys() == std::vector<std::string>{"optimizer.lr", "optimizer.b1", "optimizer.b2", "optimizer.eps",
                                              "optimizer.weight_decay", "optimizer.adam", "optimizer.t",
                                              "optimizer.m.0", "optimizer.m.1", "optimizer.v.0", "optimizer.v.1"});
  CHECK(ld.at("optimizer.t").sameAs(lamb.t));
  CHECK(ld.at("optimizer.v.0").sameAs(lamb.v[0]));
  CHECK(ld.at("optimizer.eps").item<double>() == 1e-5);
  CHECK(ld.at("optimizer.adam").item<double>() == 0.0);
  optim::LAMB adam = optim::Adam({w, b});
  CHECK(nn::getStateDict(adam).at("adam").item<double>() == 1.0);
  // a model still gets the model's state dict
  nn::Linear lin(3, 2);
  CHECK(nn::getStateDict(lin).keys() == std::vector<std::string>{"weight", "bias"});
}

TEST_CASE("Resume: loading restores the hyperparameters, and a dict that does not fit changes nothing") {
  auto params = [] {
    return std::vector<Tensor>{Tensor::fromValues(randVals(6, 31), {2, 3}), Tensor::fromValues({0.5, -1}, {2})};
  };
  auto stepOnce = [](optim::Optimizer &opt) {
    for (Tensor &p : opt.params) p.square().sum().backward();
    opt.step();
  };
  optim::SGD sgd(params(), 0.1, 0.9);
  stepOnce(sgd); // momentum buffers with values
  auto before = bytesOf(nn::getStateDict(sgd));
  auto expectUnchanged = [&] {
    CHECK(bytesOf(nn::getStateDict(sgd)) == before);
    CHECK(sgd.momentum == 0.9);
    CHECK(sgd.wd == 0.0);
    CHECK(!sgd.nesterov);
  };

  // a good dict from a twin optimizer with other hyperparameters and state
  optim::SGD twin(params(), 0.3, 0.5, 0.02, true);
  stepOnce(twin);
  stepOnce(twin);
  nn::StateDict good = nn::getStateDict(twin);

  SUBCASE("a tensor of another shape") {
    optim::SGD other({Tensor::fromValues({1, 2, 3}, {3}), Tensor::fromValues({1, 2}, {2})}, 0.3, 0.5);
    CHECK_THROWS_WITH_AS(nn::loadStateDict(sgd, nn::getStateDict(other)),
                         Contains("SGD load_state_dict: \"b.0\" is float32[3] in the state dict, but this "
                                  "optimizer's is float32[2, 3]"),
                         ShapeError);
    expectUnchanged();
  }
  SUBCASE("a missing state tensor") {
    nn::StateDict d;
    for (const auto &[name, t] : good)
      if (name != "b.1") d.insert(name, t);
    CHECK_THROWS_WITH_AS(nn::loadStateDict(sgd, d),
                         Contains("SGD load_state_dict: the state dict has no \"b.1\" (this optimizer's float32[2])"),
                         Error);
    expectUnchanged();
  }
  SUBCASE("a missing hyperparameter") {
    nn::StateDict d;
    for (const auto &[name, t] : good)
      if (name != "momentum") d.insert(name, t);
    CHECK_THROWS_WITH_AS(nn::loadStateDict(sgd, d),
                         Contains("SGD load_state_dict: the state dict has no hyperparameter \"momentum\""), Error);
    expectUnchanged();
  }
  SUBCASE("an unexpected key") {
    nn::StateDict d = good;
    d.insert("b.2", Tensor::zeros({2}));
    CHECK_THROWS_WITH_AS(nn::loadStateDict(sgd, d), Contains("SGD load_state_dict: unexpected key \"b.2\""), Error);
    expectUnchanged();
  }
  SUBCASE("a hyperparameter that is not one value") {
    nn::StateDict d = good;
    d.insert("weight_decay", Tensor::zeros({3}, {dtypes::float64}));
    CHECK_THROWS_WITH_AS(nn::loadStateDict(sgd, d),
                         Contains("SGD load_state_dict: hyperparameter \"weight_decay\" is float64[3] in the state "
                                  "dict, but must be one float value"),
                         ShapeError);
    expectUnchanged();
  }
  SUBCASE("another kind of optimizer") {
    optim::LAMB adam = optim::Adam(params());
    CHECK_THROWS_WITH_AS(nn::loadStateDict(sgd, nn::getStateDict(adam)),
                         Contains("SGD load_state_dict: the state dict belongs to another kind of optimizer (Adam), "
                                  "not SGD"),
                         Error);
    expectUnchanged();
    optim::LAMB lamb(params());
    CHECK_THROWS_WITH_AS(nn::loadStateDict(adam, nn::getStateDict(lamb)),
                         Contains("Adam load_state_dict: the state dict belongs to another kind of optimizer (LAMB), "
                                  "not Adam"),
                         Error);
    CHECK_THROWS_WITH_AS(nn::loadStateDict(lamb, nn::getStateDict(sgd)),
                         Contains("LAMB load_state_dict: the state dict belongs to another kind of optimizer (SGD), "
                                  "not LAMB"),
                         Error);
    expectUnchanged();
  }
  SUBCASE("a good dict: every hyperparameter and the state come back") {
    TempDir dir;
    safeSave(good, dir / "optim.safetensors");
    nn::loadStateDict(sgd, safeLoad(dir / "optim.safetensors"));
    CHECK(sgd.momentum == 0.5);
    CHECK(sgd.wd == 0.02);
    CHECK(sgd.nesterov);
    CHECK(bytesOf(nn::getStateDict(sgd)) == bytesOf(good));
    expectExact(sgd.lr, {1}, {static_cast<float>(0.3)});
  }
}

TEST_SUITE_END();

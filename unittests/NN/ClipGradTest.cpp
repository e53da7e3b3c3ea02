// Gradient clipping against PyTorch (clip_golden.json, written at build time by
// golden/gen_clip_golden.py with torch.nn.utils.clip_grad_norm_ and clip_grad_value_): clipped
// gradients and total norms for the 2-, 1-, 3- and inf-norms with max_norm below and above the
// norm, clamped gradients, and SGD trajectories with clipping before each step. And the kernels:
// the norm is one kernel, and clipping adds no kernel to the step beyond it (the scale is computed
// inside the update kernels).
#include "lazyjit/NN/ClipGrad.h"
#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/Optim.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Tensor/Jit.h"
#include "Tensor/TensorTestUtil.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <functional>

using namespace lazyjit;
using namespace lazyjit::testing;
using doctest::Contains;
using nlohmann::json;
namespace optim = lazyjit::nn::optim;

namespace {

const json &golden() {
  static const json data = [] {
    std::string path = std::string(LAZYJIT_CLIP_GOLDEN_DIR) + "/clip_golden.json";
    std::ifstream in(path);
    REQUIRE_MESSAGE(in.good(), "missing ", path, " (built by the nn-clip-golden target)");
    return json::parse(in);
  }();
  return data;
}

double normTypeOf(const json &c) {
  return c["norm_type"].is_string() ? std::numeric_limits<double>::infinity() : c["norm_type"].get<double>();
}

Tensor fromJson(const json &t, const std::string &dev, std::optional<bool> requiresGrad = false) {
  return Tensor::fromValues(t["values"].get<Vals>(), toShape(t["shape"].get<Ints>()),
                            {dtypes::float32, dev, requiresGrad});
}

/// Parameters (zeros) whose gradients are the golden fixed gradients, realized.
std::vector<Tensor> paramsWithGoldenGrads(const std::string &dev) {
  std::vector<Tensor> params;
  for (const json &g : golden()["grads"]) {
    Tensor p = Tensor::zeros(toShape(g["shape"].get<Ints>()), {dtypes::float32, dev, true}).realize();
    p.setGrad(fromJson(g, dev).realize());
    params.push_back(p);
  }
  return params;
}

// float32 against PyTorch in float64 from the same float32 values: a sum of 46 squares (or
// absolute values) in float32 is off by a few 1e-8 relative, the clipped values by as much more
const Tol kClipTol{1e-6, 1e-9};

/// The SGD golden's model: Linear(4, 5) -> tanh -> Linear(5, 2).
struct MLP : nn::Module {
  nn::Linear l1{4, 5}, l2{5, 2};
  LAZYJIT_MODULE(l1, l2)
  Tensor operator()(const Tensor &x) const { return l2(l1(x).tanh()); }

  explicit MLP(const std::string &dev) {
    const json &init = golden()["sgd"]["init"];
    l1.weight = fromJson(init[0], dev, std::nullopt).realize();
    l1.bias = fromJson(init[1], dev, std::nullopt).realize();
    l2.weight = fromJson(init[2], dev, std::nullopt).realize();
    l2.bias = fromJson(init[3], dev, std::nullopt).realize();
  }
  Tensor loss(const std::string &dev) const {
    const json &s = golden()["sgd"];
    return (*this)(fromJson(s["x"], dev)).sub(fromJson(s["y"], dev)).square().mean();
  }
};

optim::SGD goldenSGD(MLP &m) {
  const json &s = golden()["sgd"];
  return optim::SGD(nn::getParameters(m), s["lr"].get<double>(), s["momentum"].get<double>(),
                    s["weight_decay"].get<double>());
}

/// The kernels `block` runs.
int64_t kernelsOf(const std::function<void()> &block) {
  int64_t before = globalCounters().kernelCount;
  block();
  return globalCounters().kernelCount - before;
}

} // namespace

TEST_SUITE_BEGIN("ClipGrad");

TEST_CASE("ClipGrad: clipGradNorm gives torch's total norm and clipped gradients") {
  for (const std::string &dev : devices())
    for (const json &c : golden()["norm_cases"]) {
      double normType = normTypeOf(c), maxNorm = c["max_norm"].get<double>();
      CAPTURE(dev);
      CAPTURE(normType);
      CAPTURE(maxNorm);
      std::vector<Tensor> params = paramsWithGoldenGrads(dev);
      Tensor norm = nn::clipGradNorm(params, maxNorm, normType);
      CHECK(norm.ndim() == 0);
      CHECK(norm.lazydata()->isRealized());
      expectValues(norm, {}, {c["total_norm"].get<double>()}, kClipTol);
      for (size_t i = 0; i < params.size(); ++i) {
        CAPTURE(i);
        // the scale stays lazy, for the optimizer's kernels
        CHECK(!params[i].grad()->lazydata()->isRealized());
        expectValues(*params[i].grad(), golden()["grads"][i]["shape"].get<Ints>(), c["grads"][i].get<Vals>(),
                     kClipTol);
      }
    }
}

TEST_CASE("ClipGrad: the total norm of all gradients is one kernel") {
  for (const std::string &dev : devices())
    for (double normType : {2.0, 1.0, 3.0, std::numeric_limits<double>::infinity()}) {
      CAPTURE(dev);
      CAPTURE(normType);
      std::vector<Tensor> params = paramsWithGoldenGrads(dev); // gradients realized
      CHECK(kernelsOf([&] { nn::clipGradNorm(params, 1.0, normType); }) == 1);
    }
}

TEST_CASE("ClipGrad: clipGradValue clamps as torch's clip_grad_value_") {
  for (const std::string &dev : devices())
    for (const json &c : golden()["value_cases"]) {
      double v = c["clip_value"].get<double>();
      CAPTURE(dev);
      CAPTURE(v);
      std::vector<Tensor> params = paramsWithGoldenGrads(dev);
      nn::clipGradValue(params, v);
      for (size_t i = 0; i < params.size(); ++i) {
        // PyTorch clamped in float64; a float32 gradient holds the clip value rounded to float32
        Vals want = c["grads"][i].get<Vals>();
        for (double &x : want) x = static_cast<float>(x);
        expectExact(*params[i].grad(), golden()["grads"][i]["shape"].get<Ints>(), want);
      }
    }
}

TEST_CASE("ClipGrad: SGD steps after clipGradNorm follow torch's") {
  // the loss and gradients in float32 against float64: as OptimTest's trajectories
  for (const std::string &dev : devices())
    for (const json &c : golden()["sgd"]["cases"]) {
      double normType = normTypeOf(c), maxNorm = c["max_norm"].get<double>();
      CAPTURE(dev);
      CAPTURE(normType);
      CAPTURE(maxNorm);
      MLP m(dev);
      optim::SGD opt = goldenSGD(m);
      for (size_t step = 0; step < c["steps"].size(); ++step) {
        CAPTURE(step);
        opt.zeroGrad();
        m.loss(dev).backward();
        Tensor norm = nn::clipGradNorm(opt.params, maxNorm, normType);
        expectValues(norm, {}, {c["norms"][step].get<double>()}, {2e-6, 1e-6});
        opt.step();
        std::vector<Tensor> now = nn::getParameters(m);
        for (size_t i = 0; i < now.size(); ++i)
          expectValues(now[i], golden()["sgd"]["init"][i]["shape"].get<Ints>(), c["steps"][step][i].get<Vals>(),
                       {2e-6, 1e-6});
      }
    }
}

TEST_CASE("ClipGrad: clipping adds the norm's kernel to a training step and nothing more") {
  // the same steps of the golden model with and without clipping, from the same realized state;
  // a step counts its backward's kernels, the clip's and the optimizer's (measured: SGD 17 plain,
  // 18 with clipGradNorm, 17 with clipGradValue; Adam 30, 31, 30; without the fused scale,
  // clipGradNorm's would be 22 and 35: one kernel per parameter more)
  auto count = [](const std::string &dev, const std::function<void(optim::Optimizer &)> &clip, bool adam) {
    MLP m(dev);
    std::unique_ptr<optim::Optimizer> opt;
    if (adam) opt = std::make_unique<optim::LAMB>(optim::Adam(nn::getParameters(m), 0.01));
    else opt = std::make_unique<optim::SGD>(goldenSGD(m));
    opt->lr.realize();
    std::vector<int64_t> kernels;
    for (int step = 0; step < 3; ++step)
      kernels.push_back(kernelsOf([&] {
        opt->zeroGrad();
        m.loss(dev).backward();
        clip(*opt);
        opt->step();
      }));
    return kernels;
  };
  for (const std::string &dev : devices())
    for (bool adam : {false, true}) {
      CAPTURE(dev);
      CAPTURE(adam);
      std::vector<int64_t> plain = count(dev, [](optim::Optimizer &) {}, adam);
      std::vector<int64_t> byNorm = count(dev, [](optim::Optimizer &o) { nn::clipGradNorm(o.params, 0.5); }, adam);
      std::vector<int64_t> byValue = count(dev, [](optim::Optimizer &o) { nn::clipGradValue(o.params, 0.1); }, adam);
      for (size_t step = 0; step < plain.size(); ++step) {
        CAPTURE(step);
        CHECK(byNorm[step] <= plain[step] + 1);
        CHECK(byValue[step] <= plain[step]);
      }
    }
}

TEST_CASE("ClipGrad: a step with clipGradNorm through Jit replays to the plain step's bytes") {
  auto train = [](bool useJit) {
    MLP m("CPU");
    optim::SGD opt = goldenSGD(m);
    auto step = [&](const std::vector<Tensor> &in) {
      opt.zeroGrad();
      Tensor loss = m(in[0]).sub(in[1]).square().mean().backward();
      Tensor norm = nn::clipGradNorm(opt.params, 0.5);
      opt.step();
      return std::vector<Tensor>{loss, norm};
    };
    Jit jit(step);
    std::vector<float> norms;
    for (int i = 0; i < 6; ++i) {
      const json &s = golden()["sgd"];
      std::vector<Tensor> in{fromJson(s["x"], "CPU").realize(), fromJson(s["y"], "CPU").realize()};
      norms.push_back((useJit ? jit(in) : step(in))[1].item<float>());
    }
    if (useJit) CHECK(jit.captured());
    std::vector<std::vector<uint8_t>> params;
    for (const Tensor &p : nn::getParameters(m)) params.push_back(p.toBytes());
    return std::make_pair(norms, params);
  };
  auto plain = train(false), jitted = train(true);
  CHECK(jitted.first == plain.first);
  CHECK(jitted.second == plain.second);
  CHECK(plain.first.back() < plain.first.front()); // it trains
}

TEST_CASE("ClipGrad: parameters without a gradient are skipped; bad arguments are Errors") {
  Tensor a = Tensor::fromValues({3, 4}, {2}, {dtypes::float32, std::nullopt, true});
  Tensor b = Tensor::fromValues({1}, {1}, {dtypes::float32, std::nullopt, true});
  CHECK(nn::clipGradNorm({a, b}, 1.0).item<double>() == 0.0); // no gradients yet
  a.setGrad(Tensor::fromValues({3, 4}, {2}));
  Tensor norm = nn::clipGradNorm({a, b}, 1.0);
  expectValues(norm, {}, {5}, {1e-7, 0});
  expectValues(*a.grad(), {2}, {3 / (5 + 1e-6), 4 / (5 + 1e-6)}, {1e-6, 0});
  CHECK(!b.grad().has_value());
  CHECK_THROWS_WITH_AS(nn::clipGradNorm({a}, -1.0), Contains("clip_grad_norm: max_norm must be >= 0, but it is -1"),
                       Error);
  CHECK_THROWS_WITH_AS(nn::clipGradNorm({a}, 1.0, 0.0),
                       Contains("clip_grad_norm: norm_type must be > 0 (or inf), but it is 0"), Error);
  CHECK_THROWS_WITH_AS(nn::clipGradValue({a}, -0.5),
                       Contains("clip_grad_value: clip_value must be >= 0, but it is -0.5"), Error);
}

TEST_SUITE_END();

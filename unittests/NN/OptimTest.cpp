// Optimizers: SGD, Adam and AdamW trajectories against torch.optim (golden/OptimGolden.h, written
// by golden/gen_optim_golden.py), LAMB against its formula computed here in double, and the
// bookkeeping the reference's Optimizer does: which tensors are parameters and which are buffers,
// gradients that accumulate until zeroGrad, aliasing of the model's tensors, and the errors.
#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/Optim.h"
#include "Tensor/TensorTestUtil.h"
#include "golden/OptimGolden.h"

#include <map>
#include <memory>
#include <set>

using namespace lazyjit;
using namespace lazyjit::testing;
using doctest::Contains;
namespace optim = lazyjit::nn::optim;

namespace {

const DType f32 = dtypes::float32;

Tensor onDev(const Vals &v, const std::vector<int64_t> &shape, const std::string &dev,
             std::optional<bool> requiresGrad = std::nullopt) {
  return Tensor::fromValues(v, toShape(shape), {f32, dev, requiresGrad});
}

/// The golden model: Linear(4, 5) -> tanh -> Linear(5, 2).
struct MLP : nn::Module {
  nn::Linear l1{4, 5}, l2{5, 2};
  LAZYJIT_MODULE(l1, l2)
  Tensor operator()(Tensor x) const { return l2(l1(std::move(x)).tanh()); }

  /// The golden initial parameters on `dev`, requires_grad unset as a fresh layer's.
  void load(const std::string &dev) {
    const auto &p = golden::kOptimInit;
    l1.weight = onDev(p[0].values, p[0].shape, dev);
    l1.bias = onDev(p[1].values, p[1].shape, dev);
    l2.weight = onDev(p[2].values, p[2].shape, dev);
    l2.bias = onDev(p[3].values, p[3].shape, dev);
  }
};

Tensor mlpLoss(const MLP &m, const std::string &dev) {
  Tensor x = onDev(golden::kOptimX, golden::kOptimXShape, dev, false);
  Tensor y = onDev(golden::kOptimY, golden::kOptimYShape, dev, false);
  return m(x).sub(y).square().mean();
}

using Factory = std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>)>;

/// The lazyjit optimizer of every golden case, by the golden's name.
const std::map<std::string, Factory> &factories() {
  using P = std::vector<Tensor>;
  static const std::map<std::string, Factory> f = {
      {"SGD lr 0.1", [](P p) { return std::make_unique<optim::SGD>(std::move(p), 0.1); }},
      {"SGD lr 0.1 momentum 0.9", [](P p) { return std::make_unique<optim::SGD>(std::move(p), 0.1, 0.9); }},
      {"SGD lr 0.1 weight_decay 0.1", [](P p) { return std::make_unique<optim::SGD>(std::move(p), 0.1, 0, 0.1); }},
      {"SGD lr 0.1 momentum 0.9 nesterov",
       [](P p) { return std::make_unique<optim::SGD>(std::move(p), 0.1, 0.9, 0, true); }},
      {"SGD lr 0.05 momentum 0.8 weight_decay 0.05 nesterov",
       [](P p) { return std::make_unique<optim::SGD>(std::move(p), 0.05, 0.8, 0.05, true); }},
      {"Adam lr 0.01", [](P p) { return std::make_unique<optim::LAMB>(optim::Adam(std::move(p), 0.01)); }},
      {"Adam lr 0.05 betas (0.8, 0.99) eps 1e-6",
       [](P p) { return std::make_unique<optim::LAMB>(optim::Adam(std::move(p), 0.05, 0.8, 0.99, 1e-6)); }},
      {"AdamW lr 0.01", [](P p) { return std::make_unique<optim::LAMB>(optim::AdamW(std::move(p), 0.01)); }},
      {"AdamW lr 0.02 weight_decay 0.1",
       [](P p) { return std::make_unique<optim::LAMB>(optim::AdamW(std::move(p), 0.02, 0.9, 0.999, 1e-8, 0.1)); }},
  };
  return f;
}

/// Host LAMB in double (https://arxiv.org/abs/1904.00962 as the reference writes it), one trust
/// ratio per parameter tensor.
struct HostLamb {
  double lr, b1, b2, eps, wd;
  int t = 0;
  std::vector<Vals> m = {}, v = {};

  void step(std::vector<Vals> &params, const std::vector<Vals> &grads) {
    ++t;
    if (m.empty())
      for (const auto &p : params) {
        m.emplace_back(p.size(), 0);
        v.emplace_back(p.size(), 0);
      }
    for (size_t i = 0; i < params.size(); ++i) {
      Vals &p = params[i];
      Vals up(p.size());
      for (size_t j = 0; j < p.size(); ++j) {
        double g = grads[i][j];
        m[i][j] = b1 * m[i][j] + (1 - b1) * g;
        v[i][j] = b2 * v[i][j] + (1 - b2) * g * g;
        double mHat = m[i][j] / (1 - std::pow(b1, t)), vHat = v[i][j] / (1 - std::pow(b2, t));
        up[j] = mHat / (std::sqrt(vHat) + eps) + wd * p[j];
      }
      double r1 = 0, r2 = 0;
      for (size_t j = 0; j < p.size(); ++j) {
        r1 += p[j] * p[j];
        r2 += up[j] * up[j];
      }
      r1 = std::sqrt(r1);
      r2 = std::sqrt(r2);
      double r = r1 > 0 ? (r2 > 0 ? r1 / r2 : 1.0) : 1.0;
      for (size_t j = 0; j < p.size(); ++j) p[j] -= lr * r * up[j];
    }
  }
};

/// loss = mean((x W^T + b - y)^2) over an (n, out) prediction, and its gradients, in double.
struct HostLinearRegression {
  Vals x, y;
  int64_t n, in, out;

  std::vector<Vals> grads(const Vals &w, const Vals &b) const {
    Vals gw(w.size(), 0), gb(b.size(), 0);
    double scale = 2.0 / static_cast<double>(n * out);
    for (int64_t s = 0; s < n; ++s)
      for (int64_t o = 0; o < out; ++o) {
        double pred = b[o];
        for (int64_t k = 0; k < in; ++k) pred += x[s * in + k] * w[o * in + k];
        double r = (pred - y[s * out + o]) * scale;
        gb[o] += r;
        for (int64_t k = 0; k < in; ++k) gw[o * in + k] += r * x[s * in + k];
      }
    return {gw, gb};
  }
};

} // namespace

TEST_CASE("Optim: every golden case has a lazyjit optimizer and the reverse") {
  std::set<std::string> names;
  for (const auto &c : golden::kOptimCases) {
    std::string name = c.name;
    CAPTURE(name);
    CHECK(factories().count(name) == 1);
    CHECK(names.insert(name).second);
  }
  CHECK(names.size() == factories().size());
}

TEST_CASE("Optim: SGD, Adam and AdamW follow torch.optim's trajectory for five steps") {
  // lazyjit in float32 against PyTorch in float64: each step adds a few float32 roundings of the
  // parameters (magnitude < 1, so 3e-8 each) and of gradients computed from ~20-term sums; after
  // five steps they differ by about 3e-8. 1e-6 (plus 2e-6 relative) leaves room and is far below
  // a step (lr * g, 1e-4 and more here), so a wrong formula cannot pass.
  for (const std::string &dev : devices())
    for (const auto &c : golden::kOptimCases) {
      std::string name = c.name;
      CAPTURE(dev);
      CAPTURE(name);
      MLP model;
      model.load(dev);
      std::unique_ptr<optim::Optimizer> opt = factories().at(name)(nn::getParameters(model));
      REQUIRE(opt->params.size() == 4);
      for (size_t step = 0; step < c.steps.size(); ++step) {
        CAPTURE(step);
        opt->zeroGrad();
        Tensor loss = mlpLoss(model, dev);
        loss.backward();
        // read before the step: the step assigns into the parameters' buffers
        CHECK(loss.item<double>() == doctest::Approx(c.losses[step]).epsilon(1e-6));
        opt->step();
        std::vector<Tensor> now = nn::getParameters(model);
        for (size_t i = 0; i < now.size(); ++i)
          expectValues(now[i], golden::kOptimInit[i].shape, c.steps[step][i], {2e-6, 1e-6});
      }
    }
}

TEST_CASE("Optim: LAMB follows its formula computed in double on the host") {
  // Linear(4, 3) regression; the bias starts at 0, so its first trust ratio takes the r1 = 0 branch
  const int64_t n = 5, in = 4, out = 3;
  HostLinearRegression task{randVals(n * in, 701, -2, 2), randVals(n * out, 702, -1, 1), n, in, out};
  const Vals w0 = randVals(out * in, 703, -0.5, 0.5), b0(out, 0);
  struct Setting {
    const char *name;
    double lr, b1, b2, eps, wd;
  };
  for (const Setting &s : {Setting{"defaults", 0.001, 0.9, 0.999, 1e-6, 0.0},
                           Setting{"lr 0.05, weight decay 0.01", 0.05, 0.9, 0.999, 1e-6, 0.01},
                           Setting{"lr 0.1, betas (0.8, 0.99), weight decay 0.1", 0.1, 0.8, 0.99, 1e-6, 0.1}})
    for (const std::string &dev : devices()) {
      std::string name = s.name;
      CAPTURE(name);
      CAPTURE(dev);
      nn::Linear lin(in, out);
      lin.weight = onDev(w0, {out, in}, dev);
      lin.bias = onDev(b0, {out}, dev);
      optim::LAMB opt(nn::getParameters(lin), s.lr, s.b1, s.b2, s.eps, s.wd);
      HostLamb host{s.lr, s.b1, s.b2, s.eps, s.wd};
      std::vector<Vals> hp{w0, b0};
      Tensor x = onDev(task.x, {n, in}, dev, false), y = onDev(task.y, {n, out}, dev, false);
      for (int step = 0; step < 5; ++step) {
        CAPTURE(step);
        opt.zeroGrad();
        lin(x).sub(y).square().mean().backward();
        opt.step();
        host.step(hp, task.grads(hp[0], hp[1]));
        // float32 parameters (< 1) and updates against double: a few roundings of 3e-8 per step
        expectValues(lin.weight, {out, in}, hp[0], {2e-6, 1e-6});
        expectValues(*lin.bias, {out}, hp[1], {2e-6, 1e-6});
      }
      expectExact(opt.t, {1}, {5});
    }
}

TEST_CASE("Optim: zeroGrad drops every parameter's gradient") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    MLP model;
    model.load(dev);
    optim::SGD opt(nn::getParameters(model), 0.1);
    mlpLoss(model, dev).backward();
    for (const Tensor &p : opt.params) CHECK(p.grad().has_value());
    opt.zeroGrad();
    for (const Tensor &p : opt.params) CHECK(!p.grad().has_value());
    // and a step without a new backward has nothing to apply
    CHECK_THROWS_WITH_AS(opt.step(), Contains("SGD.step: parameter 0 (float32 [5, 4]) has no gradient"), Error);
  }
}

TEST_CASE("Optim: gradients accumulate across two backward() calls until zeroGrad") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor p = onDev({1, -2, 0.5}, {3}, dev);
    optim::SGD opt({p}, 0.5);
    Tensor c = onDev({3, 1, -1}, {3}, dev, false);
    p.mul(c).sum().backward(); // d/dp = c
    expectValues(*p.grad(), {3}, {3, 1, -1});
    p.mul(p).sum().backward(); // + 2p
    expectValues(*p.grad(), {3}, {5, -3, 0});
    opt.step(); // p - 0.5 * (c + 2p)
    expectValues(p, {3}, {-1.5, -0.5, 0.5});
    opt.zeroGrad();
    p.sum().backward();
    expectValues(*p.grad(), {3}, {1, 1, 1});
  }
}

TEST_CASE("Optim: an optimizer over nn::getParameters(model) updates the model's own tensors") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    MLP model;
    model.load(dev);
    optim::SGD opt(nn::getParameters(model), 0.25);
    REQUIRE(opt.params.size() == 4);
    CHECK(opt.params[0].sameAs(model.l1.weight));
    CHECK(opt.params[1].sameAs(*model.l1.bias));
    CHECK(opt.params[2].sameAs(model.l2.weight));
    CHECK(opt.params[3].sameAs(*model.l2.bias));
    mlpLoss(model, dev).backward();
    Vals before = model.l2.weight.toVector<double>(), g = model.l2.weight.grad()->toVector<double>();
    opt.step();
    Vals expected(before.size());
    for (size_t i = 0; i < before.size(); ++i) expected[i] = before[i] - 0.25 * g[i];
    // the model's handle sees the step (float32: one rounding of the update)
    expectValues(model.l2.weight, {2, 5}, expected, {1e-6, 1e-7});
    CHECK(model.l2.weight.toVector<double>() != before);
  }
}

TEST_CASE("Optim: unset requires_grad becomes true; tensors with requires_grad false are buffers") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor unset = onDev({1, 2}, {2}, dev);
    Tensor on = onDev({3}, {1}, dev, true);
    Tensor off = onDev({4}, {1}, dev, false);
    CHECK(!unset.requiresGrad().has_value());
    optim::SGD opt({unset, on, off, unset}, 0.1);
    CHECK(unset.requiresGrad() == std::optional<bool>(true));
    CHECK(on.requiresGrad() == std::optional<bool>(true));
    CHECK(off.requiresGrad() == std::optional<bool>(false));
    // deduplicated, in order
    REQUIRE(opt.params.size() == 2);
    CHECK(opt.params[0].sameAs(unset));
    CHECK(opt.params[1].sameAs(on));
    REQUIRE(opt.buffers.size() == 1);
    CHECK(opt.buffers[0].sameAs(off));
    CHECK(opt.device == dev);
  }
}

TEST_CASE("Optim: a buffer (BatchNorm2d running statistics) is realized by step but not updated") {
  const Ints shape{2, 2, 2, 2};
  Vals xv = randVals(16, 711, -2, 2);
  Vals mean(2, 0);
  for (int64_t i = 0; i < 16; ++i) mean[(i / 4) % 2] += xv[i] / 8;
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    nn::BatchNorm2d bn(2);
    // to() leaves requires_grad unset, as the reference's does: set it back to false
    bn.runningMean = bn.runningMean.to(dev).setRequiresGrad(false);
    bn.runningVar = bn.runningVar.to(dev).setRequiresGrad(false);
    bn.numBatchesTracked = bn.numBatchesTracked.to(dev).setRequiresGrad(false);
    bn.weight = bn.weight->to(dev);
    bn.bias = bn.bias->to(dev);
    optim::SGD opt(nn::getParameters(bn), 10.0);
    REQUIRE(opt.params.size() == 2);
    REQUIRE(opt.buffers.size() == 3);
    CHECK(opt.buffers[0].sameAs(bn.runningMean));
    CHECK(opt.buffers[1].sameAs(bn.runningVar));
    CHECK(opt.buffers[2].sameAs(bn.numBatchesTracked));
    {
      Tensor::TrainingGuard training;
      Tensor x = make(xv, shape, dev);
      bn(x).mul(onDev(randVals(16, 712, -1, 1), shape, dev, false)).sum().backward();
    }
    CHECK(!bn.runningMean.lazydata()->isRealized()); // the forward's update is still pending
    opt.step();
    for (const Tensor &b : opt.buffers) CHECK(b.lazydata()->isRealized());
    // the running mean is the forward's momentum update (0.9 * 0 + 0.1 * batch mean), untouched by
    // the step (lr 10 would move it far)
    expectValues(bn.runningMean, {2}, {0.1 * mean[0], 0.1 * mean[1]}, {1e-5, 1e-6});
    expectExact(bn.numBatchesTracked, {1}, {1});
    CHECK(!bn.runningMean.grad().has_value());
  }
}

TEST_CASE("Optim: step with a parameter that has no gradient throws an Error naming it") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    auto params = [&] {
      return std::vector<Tensor>{onDev(randVals(6, 721), {2, 3}, dev), onDev({1, 2, 3}, {3}, dev)};
    };
    {
      std::vector<Tensor> p = params();
      optim::SGD opt(p, 0.1);
      p[0].sum().backward(); // p[1] gets no gradient
      CHECK_THROWS_WITH_AS(opt.step(),
                           Contains("SGD.step: parameter 1 (float32 [3]) has no gradient; call backward() on a "
                                    "loss that depends on it before step()"),
                           Error);
    }
    {
      std::vector<Tensor> p = params();
      optim::LAMB opt = optim::Adam(p);
      p[0].sum().backward();
      CHECK_THROWS_WITH_AS(opt.step(), Contains("Adam.step: parameter 1 (float32 [3]) has no gradient"), Error);
    }
    {
      std::vector<Tensor> p = params();
      optim::LAMB opt(p);
      p[1].sum().backward();
      CHECK_THROWS_WITH_AS(opt.step(), Contains("LAMB.step: parameter 0 (float32 [2, 3]) has no gradient"), Error);
    }
  }
}

TEST_CASE("Optim: an optimizer without parameters throws") {
  CHECK_THROWS_WITH_AS(optim::SGD({}, 0.1),
                       Contains("optimizer: must have at least one parameter (none of the 0 tensors requires a "
                                "gradient)"),
                       Error);
  // only buffers: nothing requires a gradient
  Tensor buffer = Tensor::zeros({2}, {f32, std::nullopt, false});
  CHECK_THROWS_WITH_AS(optim::Adam({buffer}),
                       Contains("optimizer: must have at least one parameter (none of the 1 tensors requires a "
                                "gradient)"),
                       Error);
}

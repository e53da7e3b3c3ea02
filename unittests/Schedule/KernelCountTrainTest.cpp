// Kernel counts of the reference's external_test_opt.py programs (tinygrad-cases.md K054-K063):
// forward passes of convs and batchnorm, backward passes and SGD steps, at OPT=0..4. They count
// the kernels a block runs after everything alive has been realized (the reference's exec_count),
// so they check the backward formulas, the optimizer's realize order and the fusion of both.
#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/Optim.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Support/Config.h"

#include <doctest/doctest.h>

#include <array>
#include <functional>

using namespace lazyjit;

namespace {

// exec_count: every tensor in `live` is realized (the reference realizes every live Tensor), then
// the kernels `block` runs are counted.
int execCount(const std::vector<Tensor> &live, const std::function<void()> &block) {
  for (Tensor t : live) t.realize();
  int64_t before = globalCounters().kernelCount;
  block();
  return static_cast<int>(globalCounters().kernelCount - before);
}

void checkLevels(const std::function<int()> &program, std::array<int, 5> expected) {
  for (int opt = 0; opt <= 4; ++opt) {
    Config c = config();
    c.opt = opt;
    ScopedConfig scope(c);
    CAPTURE(opt);
    CHECK(program() == expected[opt]);
  }
}

std::vector<Tensor> paramsOf(nn::Module &m) { return nn::getParameters(m); }

std::vector<Tensor> join(std::vector<Tensor> a, const std::vector<Tensor> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

} // namespace

TEST_CASE("KernelCount: K054 fold_batchnorm (train, ones)") {
  checkLevels([] {
    Tensor::TrainingGuard train(true);
    Tensor img = Tensor::ones({1, 32, 4, 4});
    nn::BatchNorm2d bn(32, 1e-5, true, false);
    return execCount(join({img}, paramsOf(bn)), [&] { bn(img).realize(); });
  }, {12, 5, 3, 3, 3});
}

TEST_CASE("KernelCount: K055 fold_conv_sgd") {
  checkLevels([] {
    Tensor::TrainingGuard train(true);
    Tensor img = Tensor::ones({2, 3, 4, 4});
    nn::Conv2d c1(3, 32, {3});
    nn::optim::SGD opt(nn::getParameters(c1));
    return execCount(join({img, opt.lr}, paramsOf(c1)), [&] {
      opt.zeroGrad();
      c1(img).relu().sum().backward();
      opt.step();
    });
  }, {15, 7, 6, 6, 6});
}

TEST_CASE("KernelCount: K056 fold_2convs_sgd") {
  checkLevels([] {
    Tensor::TrainingGuard train(true);
    Tensor img = Tensor::ones({2, 3, 64, 64});
    nn::Conv2d c1(3, 16, {3}, {1}, {0}, {1}, 1, false), c2(16, 32, {3}, {1}, {0}, {1}, 1, false);
    std::vector<nn::Conv2d> convs{c1, c2};
    nn::optim::SGD opt(nn::getParameters(convs));
    return execCount(join({img, opt.lr}, nn::getParameters(convs)), [&] {
      opt.zeroGrad();
      c2(c1(img).relu()).relu().sum().backward();
      opt.step();
    });
  }, {23, 12, 9, 9, 10});
}

TEST_CASE("KernelCount: K057 fold_4convs_sgd") {
  checkLevels([] {
    Tensor::TrainingGuard train(true);
    Tensor img = Tensor::ones({2, 3, 64, 64});
    nn::Conv2d c1(3, 4, {3}, {1}, {0}, {1}, 1, false), c2(4, 8, {3}, {1}, {0}, {1}, 1, false);
    nn::Conv2d c3(8, 16, {3}, {1}, {0}, {1}, 1, false), c4(16, 32, {3}, {1}, {0}, {1}, 1, false);
    std::vector<nn::Conv2d> convs{c1, c2, c3, c4};
    nn::optim::SGD opt(nn::getParameters(convs));
    return execCount(join({img, opt.lr}, nn::getParameters(convs)), [&] {
      opt.zeroGrad();
      c4(c3(c2(c1(img).relu()).relu()).relu()).relu().sum().backward();
      opt.step();
    });
  }, {49, 26, 19, 19, 22});
}

namespace {
// the reference's get_parameters([c1, bn]): a list of two different layer types
struct ConvBN : nn::Module {
  nn::Conv2d &c1;
  nn::BatchNorm2d &bn;
  ConvBN(nn::Conv2d &c, nn::BatchNorm2d &b) : c1(c), bn(b) {}
  void members(nn::Members &m) override { m("0", c1)("1", bn); }
};
} // namespace

TEST_CASE("KernelCount: K058 fold_conv_batchnorm_sgd") {
  checkLevels([] {
    Tensor::TrainingGuard train(true);
    Tensor img = Tensor::ones({1, 3, 4, 4});
    nn::Conv2d c1(3, 32, {3});
    nn::BatchNorm2d bn(32, 1e-5, true, false);
    ConvBN both(c1, bn);
    nn::optim::SGD opt(nn::getParameters(both));
    std::optional<Tensor> imgBn;
    return execCount(join({img, opt.lr}, nn::getParameters(both)), [&] {
      imgBn = bn(c1(img)).elu().sum();
      opt.zeroGrad();
      imgBn->backward();
      opt.step();
    });
  }, {67, 21, 17, 17, 17});
}

TEST_CASE("KernelCount: K059 fold_conv_batchnorm_notrain (second run)") {
  checkLevels([] {
    Tensor::TrainingGuard eval(false);
    Tensor img = Tensor::ones({1, 3, 8, 8});
    nn::Conv2d c1(3, 32, {3});
    nn::BatchNorm2d bn(32, 1e-5, true, false);
    bn(c1(img)).relu().realize();
    return execCount(join({img}, join(paramsOf(c1), paramsOf(bn))), [&] { bn(c1(img)).relu().realize(); });
  }, {11, 2, 1, 1, 1});
}

TEST_CASE("KernelCount: K060 fold_conv_batchnorm (train)") {
  checkLevels([] {
    Tensor::TrainingGuard train(true);
    Tensor img = Tensor::ones({1, 3, 8, 8});
    nn::Conv2d c1(3, 32, {3});
    nn::BatchNorm2d bn(32, 1e-5, true, false);
    return execCount(join({img}, join(paramsOf(c1), paramsOf(bn))), [&] { bn(c1(img)).relu().realize(); });
  }, {16, 7, 4, 4, 4});
}

namespace {
int twoConvs(bool bias, bool elu) {
  Tensor img = Tensor::ones({1, 4, 8, 8});
  nn::Conv2d c1(4, 4, {3}, {1}, {0}, {1}, 1, bias), c2(4, 4, {3}, {1}, {0}, {1}, 1, bias);
  auto act = [elu](const Tensor &x) { return elu ? x.elu() : x.relu(); };
  return execCount(join({img}, join(paramsOf(c1), paramsOf(c2))), [&] {
    std::vector<std::function<Tensor(const Tensor &)>> seq{
        [&](const Tensor &x) { return c1(x); }, act, [&](const Tensor &x) { return c2(x); }, act};
    img.sequential(seq).realize();
  });
}
} // namespace

TEST_CASE("KernelCount: K061 fold_conv_elu") {
  checkLevels([] { return twoConvs(true, true); }, {18, 4, 2, 2, 2});
}

TEST_CASE("KernelCount: K062 fold_conv_relu") {
  checkLevels([] { return twoConvs(true, false); }, {8, 4, 2, 2, 2});
}

TEST_CASE("KernelCount: K063 fold_conv_relu_nobias") {
  checkLevels([] { return twoConvs(false, false); }, {6, 4, 2, 2, 2});
}

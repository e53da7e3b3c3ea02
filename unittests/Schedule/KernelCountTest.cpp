// Kernel counts of the reference's test programs (tinygrad-cases.md §2), at OPT=0..4, written with
// the same object lifetimes as the reference programs (intermediates held, dropped or `del`-ed the
// same way).
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/NN/Layers.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <functional>

using namespace lazyjit;

namespace {

// check_schedule of the reference: `pre` tensors are scheduled first (each with a copy of `seen`)
// and their outputs count as done; then the kernels of `outs` are counted.
int schedCount(const std::vector<Tensor> &outs, const std::vector<Tensor> &pre = {},
               bool filterLoadops = true) {
  SeenSet seen;
  for (const auto &p : pre) {
    SeenSet copy = seen;
    for (const auto &si : schedule(p.lazydata(), copy)) seen.add(si.out);
  }
  int n = 0;
  for (const auto &o : outs)
    for (const auto &si : schedule(o.lazydata(), seen))
      if (!filterLoadops || si.isKernel()) ++n;
  return n;
}

Tensor E(Shape s) { return Tensor::empty(s); }

// Runs `program` at each OPT level and checks the counts.
void checkLevels(const std::function<int()> &program, std::array<int, 5> expected) {
  for (int opt = 0; opt <= 4; ++opt) {
    Config c = config();
    c.opt = opt;
    ScopedConfig scope(c);
    CAPTURE(opt);
    CHECK(program() == expected[opt]);
  }
}

} // namespace

TEST_CASE("KernelCount: K001 basic_binop_fusion") {
  checkLevels([] {
    Tensor a = E({10}), b = E({10}), c = E({10});
    return schedCount({a + b + c});
  }, {2, 1, 1, 1, 1});
}

TEST_CASE("KernelCount: K002 basic_binop_fusion_deep") {
  checkLevels([] {
    Tensor a = E({10}), b = E({10}), c = E({10}), d = E({10});
    return schedCount({a + b + c + d});
  }, {3, 1, 1, 1, 1});
}

TEST_CASE("KernelCount: K003 mulacc_fusion") {
  checkLevels([] {
    Tensor a = E({10}), b = E({10});
    return schedCount({(a * b).sum()});
  }, {2, 1, 1, 1, 1});
}

TEST_CASE("KernelCount: K004 mulacc_relu_fusion") {
  checkLevels([] {
    Tensor a = E({10}), b = E({10});
    return schedCount({(a * b).sum().relu()});
  }, {3, 2, 1, 1, 1});
}

TEST_CASE("KernelCount: K005 binop_reshape_fusion") {
  checkLevels([] {
    Tensor a = E({10}), b = E({10}), c = E({5, 2});
    return schedCount({(a + b).reshape({5, 2}) + c});
  }, {2, 1, 1, 1, 1});
}

TEST_CASE("KernelCount: K006 binop_permute_fusion") {
  checkLevels([] {
    Tensor a = E({2, 5}), b = E({2, 5}), c = E({5, 2});
    return schedCount({(a + b).permute({1, 0}) + c});
  }, {2, 1, 1, 1, 1});
}

TEST_CASE("KernelCount: K007 constants_are_embedded") {
  checkLevels([] {
    Tensor a = E({3, 3}) * 2;
    return schedCount({a}, {}, false);
  }, {2, 2, 2, 2, 2});
}

TEST_CASE("KernelCount: K008 binop_elu_fusion") {
  checkLevels([] {
    Tensor a = E({10});
    return schedCount({a.elu()});
  }, {6, 1, 1, 1, 1});
}

TEST_CASE("KernelCount: K009 binop_reshape_reduce_fusion") {
  checkLevels([] {
    Tensor a = E({100}), b = E({100});
    return schedCount({(a + b).reshape({10, 10}).sum(std::vector<int64_t>{0}, true)});
  }, {2, 1, 1, 1, 1});
}

TEST_CASE("KernelCount: K010 reduce_reshape_binop_fusion") {
  checkLevels([] {
    Tensor a = E({10, 10}), b = E({10});
    return schedCount({a.sum(std::vector<int64_t>{0}) + b});
  }, {2, 2, 1, 1, 1});
}

TEST_CASE("KernelCount: K011 binop_early_reshape_reduce_fusion") {
  checkLevels([] {
    Tensor a = E({100}), b = E({100}), c = E({10, 10});
    return schedCount({((a + b).reshape({10, 10}) + c).sum(std::vector<int64_t>{0})});
  }, {3, 1, 1, 1, 1});
}

TEST_CASE("KernelCount: K012 diamond_folded") {
  checkLevels([] {
    Tensor a = E({10}), b = E({10}), c = E({10}), d = E({10});
    Tensor ab = a + b;
    return schedCount({(ab + c) + (ab + d)});
  }, {4, 1, 1, 1, 1});
}

TEST_CASE("KernelCount: K013 cache_binaryop") {
  checkLevels([] {
    Tensor a = E({10}), b = E({10});
    Tensor c = a + b;
    Tensor d = a + b;
    return schedCount({d}, {c});
  }, {0, 0, 0, 0, 0});
}

TEST_CASE("KernelCount: K014 cache_binaryop_transpose") {
  checkLevels([] {
    Tensor a = E({10, 10}), b = E({10, 10});
    Tensor c = (a.T() * b.T()).T();
    Tensor d = a * b;
    return schedCount({d}, {c});
  }, {1, 0, 0, 0, 0});
}

TEST_CASE("KernelCount: K015 cache_two_reduceops") {
  checkLevels([] {
    Tensor a = E({10});
    Tensor b = a.sum();
    Tensor c = a.sum();
    return schedCount({b + c});
  }, {2, 2, 1, 1, 1});
}

TEST_CASE("KernelCount: K016 fold_double_unary") {
  checkLevels([] {
    Tensor y = E({2});
    return schedCount({-y.sum(std::nullopt, true).sqrt()});
  }, {3, 2, 1, 1, 1});
}

TEST_CASE("KernelCount: K017 fold_batchnorm (train)") {
  checkLevels([] {
    Tensor::TrainingGuard train(true);
    Tensor img = E({1, 32, 4, 4});
    nn::BatchNorm2d bn(32, 1e-5, true, false);
    return schedCount({bn(img)});
  }, {12, 5, 3, 3, 3});
}

TEST_CASE("KernelCount: K018 fold_conv_relu (weights prerealized)") {
  checkLevels([] {
    nn::Conv2d c1(3, 16, {3});
    Tensor img = Tensor::ones({2, 3, 64, 64});
    return schedCount({c1(img).relu()}, {c1.weight, *c1.bias});
  }, {4, 2, 1, 1, 3});
}

TEST_CASE("KernelCount: K019 fold_conv_elu (weights prerealized, img=rand)") {
  checkLevels([] {
    nn::Conv2d c1(3, 16, {3});
    Tensor img = Tensor::rand({2, 3, 64, 64});
    return schedCount({c1(img).elu()}, {c1.weight, *c1.bias});
  }, {9, 2, 1, 1, 3});
}

TEST_CASE("KernelCount: K020 two_sum (with del x)") {
  checkLevels([] {
    Tensor img = E({64, 64});
    std::optional<Tensor> x = img.sum(std::vector<int64_t>{0}) + img.sum(std::vector<int64_t>{1});
    Tensor out = x->relu();
    x.reset(); // del x
    return schedCount({out});
  }, {4, 3, 2, 2, 2});
}

TEST_CASE("KernelCount: K021 two_sum (without del x)") {
  checkLevels([] {
    Tensor img = E({64, 64});
    Tensor x = img.sum(std::vector<int64_t>{0}) + img.sum(std::vector<int64_t>{1});
    Tensor out = x.relu();
    return schedCount({out});
  }, {4, 3, 3, 3, 3});
}

TEST_CASE("KernelCount: K022 no_binop_rerun") {
  checkLevels([] {
    Tensor a = E({16}), b = E({16});
    Tensor c = a + b;
    Tensor d = (a + b).reshape({16, 1});
    return schedCount({d}, {c});
  }, {0, 0, 0, 0, 1});
}

TEST_CASE("KernelCount: K023 multi_permute_should_collapse") {
  checkLevels([] {
    Tensor a = E({4, 4, 4, 4}), b = E({16});
    return schedCount({a.sum(std::vector<int64_t>{0, 1})
                           .cast(dtypes::float16)
                           .permute({1, 0})
                           .reshape({4, 4, 1})
                           .permute({1, 0, 2})
                           .reshape({16}) +
                       b});
  }, {3, 2, 1, 1, 1});
}

TEST_CASE("KernelCount: K024/K025 dont_fuse_binops_with_children") {
  checkLevels([] {
    Tensor a = E({10}), b = E({10}), c = E({10});
    Tensor keepMe = a + b;
    Tensor e = keepMe.sum();
    Tensor d = keepMe + c;
    return schedCount({d});
  }, {2, 2, 2, 2, 2});
  checkLevels([] {
    Tensor a = E({10}), b = E({10}), c = E({10});
    Tensor keepMe = a + b;
    Tensor e = keepMe.sum();
    Tensor d = keepMe + c;
    return schedCount({keepMe}, {d});
  }, {0, 0, 0, 0, 0});
}

TEST_CASE("KernelCount: K026/K027 some_permute_fusion") {
  for (int which = 0; which < 2; ++which) {
    checkLevels([which] {
      Tensor a = E({8192, 16}), b = E({1, 16});
      Tensor d = a.T() + b.expand({8192, 16}).T();
      Tensor c = a + b.expand({8192, 16});
      Tensor e = d.T();
      return schedCount({which == 0 ? c : e});
    }, {1, 1, 1, 1, 1});
  }
}

namespace {
Tensor p(const Tensor &x) {
  return x.permute({1, 0}).contiguous().reshape({32, 16, 1}).expand({32, 16, 16}).sum(std::vector<int64_t>{2}).permute({1, 0});
}
} // namespace

TEST_CASE("KernelCount: K028 image_conv_fusion_minimal") {
  checkLevels([] {
    Tensor b1 = E({16}), b2 = E({16});
    Tensor x = E({16, 32});
    std::optional<Tensor> base = p(x) + b1.reshape({16, 1});
    x = *base;
    x = p(x);
    x = x + b2.reshape({16, 1});
    x = x + *base;
    base.reset();
    x = p(x);
    return schedCount({x});
  }, {9, 6, 4, 4, 4});
}

TEST_CASE("KernelCount: K029 image_conv_fusion_more_minimal") {
  checkLevels([] {
    Tensor b1 = E({16});
    Tensor x = E({16, 32});
    std::optional<Tensor> base = p(x) + b1.reshape({16, 1});
    x = *base;
    x = p(x);
    base.reset();
    return schedCount({x});
  }, {5, 4, 3, 3, 3});
}

namespace {
struct BasicBlock {
  nn::Conv2d conv1, conv2;
  nn::BatchNorm2d bn1, bn2;
  BasicBlock(int64_t in, int64_t planes)
      : conv1(in, planes, {3}, {1}, {1}, {1}, 1, false), conv2(planes, planes, {3}, {1}, {1}, {1}, 1, false),
        bn1(planes), bn2(planes) {}
  Tensor operator()(const Tensor &x) {
    Tensor out = bn1(conv1(x)).relu();
    out = bn2(conv2(out));
    out = out + x;
    out = out.relu();
    return out;
  }
};
} // namespace

TEST_CASE("KernelCount: K030 resnet_block (eval)") {
  checkLevels([] {
    Tensor::TrainingGuard eval(false);
    BasicBlock bb(64, 64);
    Tensor x = E({1, 64, 32, 32});
    Tensor out = bb(x);
    return schedCount({out});
  }, {25, 6, 4, 4, 4});
}

TEST_CASE("KernelCount: K031/K032 contiguous") {
  checkLevels([] {
    Tensor x = E({1, 64, 32, 32});
    return schedCount({x.contiguous()}, {}, false);
  }, {1, 1, 1, 1, 1});
  checkLevels([] {
    Tensor x = E({1, 64, 32, 32});
    return schedCount({x.permute({0, 2, 3, 1}).contiguous()}, {}, false);
  }, {2, 2, 2, 2, 2});
}

TEST_CASE("KernelCount: K033 double_from") {
  checkLevels([] {
    Tensor x = Tensor::fromValues({1, 2, 3, 4}, {4});
    return schedCount({x.to("CPU")}, {}, false);
  }, {0, 0, 0, 0, 0});
}

TEST_CASE("KernelCount: K034/K038 pow_const_tensor") {
  checkLevels([] {
    Tensor x = Tensor::fromValues({1, 2, 3, 4}, {4});
    return schedCount({x.pow(Tensor::scalar(2))});
  }, {1, 1, 1, 1, 1});
  checkLevels([] {
    Tensor x = Tensor::fromValues({1, 2, 3, 4}, {4});
    return schedCount({x.pow(Tensor::scalar(0))});
  }, {32, 1, 1, 1, 1});
}

TEST_CASE("KernelCount: K035 zero_size") {
  checkLevels([] {
    Tensor x = Tensor::rand({2, 3, 0});
    return schedCount({x + 1}, {}, false);
  }, {0, 0, 0, 0, 0});
}

TEST_CASE("KernelCount: K036 shrink_fuse / K037 expand_nofuse") {
  checkLevels([] {
    Tensor a = E({8192, 16}), b = E({8192, 16});
    Tensor c = a * b;
    Tensor d = E({1, 16});
    return schedCount({c.getitem({Index::at(0)}) * d});
  }, {2, 1, 1, 1, 1});
  checkLevels([] {
    Tensor a = E({1, 16}), b = E({1, 16});
    Tensor c = a * b;
    Tensor d = E({8192, 16});
    return schedCount({c * d});
  }, {2, 2, 2, 2, 2});
}

TEST_CASE("KernelCount: K039-K044 old-lazy baselines") {
  checkLevels([] {
    Tensor a = E({10}), b = E({10});
    Tensor c = a + b;
    Tensor d = a.reshape({10, 1}) + b.reshape({10, 1});
    return schedCount({d}, {c});
  }, {1, 1, 1, 1, 1});
  checkLevels([] {
    Tensor a = E({16, 16}), b = E({16, 16});
    return schedCount({(a + b).reshape({4, 4, 4, 4}).permute({2, 3, 0, 1}).contiguous()});
  }, {2, 2, 2, 2, 1});
  checkLevels([] {
    Tensor a = E({4, 4, 4, 4}), b = E({4, 4, 4, 4});
    return schedCount({(a + b).reshape({16, 16}).permute({1, 0}).contiguous()});
  }, {2, 2, 2, 1, 1});
  checkLevels([] {
    Tensor a = E({10}), b = E({10});
    Tensor c = a + b;
    Tensor d = a.reshape({10, 1}) + b.reshape({10, 1});
    return schedCount({c.sum() + d.sum()});
  }, {5, 3, 2, 2, 2});
  checkLevels([] {
    Tensor a = E({10, 10, 10}), b = E({10, 10});
    Tensor c = (a.sum(std::vector<int64_t>{2}) + b).permute({1, 0});
    Tensor d = c.permute({1, 0});
    return schedCount({d});
  }, {2, 2, 2, 1, 1});
  checkLevels([] {
    Tensor a = E({10, 10, 10}), b = E({10, 10, 1});
    return schedCount({a.sum(std::vector<int64_t>{0}, true).permute({2, 1, 0}) + b});
  }, {2, 2, 2, 1, 1});
}

TEST_CASE("KernelCount: K074-K078 linearizer programs") {
  checkLevels([] {
    std::vector<std::optional<SIntPair>> pads(5, SIntPair(1, 1));
    return schedCount({Tensor::rand({3, 4, 5, 6, 7}).pad(pads) + 1});
  }, {1, 1, 1, 1, 1});
  checkLevels([] { return schedCount({Tensor::ones({256, 256}).sum()}); }, {1, 1, 1, 1, 1});
  checkLevels([] {
    Tensor l1 = Tensor::rand({5}).cat({Tensor::rand({5}), Tensor::rand({5}), Tensor::rand({5})});
    Tensor l2 = l1.unsqueeze(0).cat({Tensor::rand({6, 20})});
    return schedCount({l2});
  }, {4, 2, 1, 1, 1});
  checkLevels([] {
    std::vector<Tensor> outer;
    for (int i = 0; i < 6; ++i) {
      std::vector<Tensor> inner;
      for (int j = 0; j < 6; ++j) inner.push_back(Tensor::rand({16}));
      outer.push_back(Tensor::stack(inner));
    }
    Tensor m = Tensor::stack(outer);
    return schedCount({m});
  }, {35, 7, 1, 1, 1});
  checkLevels([] {
    Tensor l1 = Tensor::rand({3, 4}).cat({Tensor::rand({4, 4})});
    Tensor l2 = l1.unsqueeze(0).cat({Tensor::rand({6, 7, 4})});
    Tensor l3 = l2.unsqueeze(0).cat({Tensor::rand({6, 7, 7, 4})});
    return schedCount({l3});
  }, {3, 3, 1, 1, 1});
}

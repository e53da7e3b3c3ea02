// Forward values and gradients against PyTorch (golden/GradGolden.h, written by
// golden/gen_grad_golden.py): losses, convolutions, pooling, attention, normalization layers
// (BatchNorm2d in training mode with its running statistics) and a small MLP and CNN end to end.
//
// lazyjit runs in float32 from the same float32 inputs PyTorch took; PyTorch computed in float64.
// Each value is a sum of at most ~100 float32 products and goes through a few float32 roundings
// (2^-24 = 6e-8 each), which bounds its error by about 100 * 6e-8 = 6e-6 of the magnitudes
// involved; it is checked to 2e-5 relative plus 1e-5 of the largest magnitude in the tensor (the
// absolute part covers values that are a difference of larger ones, as the centred values of a
// normalization are). The errors seen are below 1e-6.
#include "lazyjit/NN/Layers.h"
#include "TensorTestUtil.h"
#include "golden/GradGolden.h"

#include <map>
#include <set>

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

using golden::GradGoldenCase;
using golden::GradGoldenTensor;

using Inputs = std::map<std::string, Tensor>;

struct Result {
  Tensor out;
  /// State read after backward (running statistics), by the golden's names.
  std::vector<std::pair<std::string, Tensor>> after = {};
};

using CaseFn = std::function<Result(const Inputs &, const std::string &dev)>;

/// A module's running statistics are created on the default device; the test device may differ.
void moveStats(nn::BatchNorm2d &bn, const std::string &dev) {
  bn.runningMean = bn.runningMean.to(dev);
  bn.runningVar = bn.runningVar.to(dev);
  bn.numBatchesTracked = bn.numBatchesTracked.to(dev);
}

Tensor attention(const Inputs &t, std::optional<Tensor> mask = std::nullopt, bool causal = false) {
  return t.at("q").scaledDotProductAttention(t.at("k"), t.at("v"), std::move(mask), 0, causal);
}

/// The lazyjit side of every golden case, by name.
const std::map<std::string, CaseFn> &caseFns() {
  using V = std::vector<int64_t>;
  static const std::map<std::string, CaseFn> fns = {
      // losses
      {"sparse_categorical_crossentropy",
       [](const Inputs &t, const std::string &) { return Result{t.at("x").sparseCategoricalCrossentropy(t.at("labels"))}; }},
      {"sparse_categorical_crossentropy ignore_index -1",
       [](const Inputs &t, const std::string &) {
         return Result{t.at("x").sparseCategoricalCrossentropy(t.at("labels"), -1)};
       }},
      {"sparse_categorical_crossentropy ignore_index 2, 3-d",
       [](const Inputs &t, const std::string &) {
         return Result{t.at("x").sparseCategoricalCrossentropy(t.at("labels"), 2)};
       }},
      {"binary_crossentropy",
       [](const Inputs &t, const std::string &) { return Result{t.at("x").binaryCrossentropy(t.at("y"))}; }},
      {"binary_crossentropy_logits",
       [](const Inputs &t, const std::string &) { return Result{t.at("x").binaryCrossentropyLogits(t.at("y"))}; }},
      {"mean_squared_error",
       [](const Inputs &t, const std::string &) { return Result{t.at("x").sub(t.at("y")).square().mean()}; }},
      // convolution
      {"conv2d", [](const Inputs &t, const std::string &) { return Result{t.at("x").conv2d(t.at("w"), t.at("b"))}; }},
      {"conv2d stride 2 padding 1",
       [](const Inputs &t, const std::string &) {
         return Result{t.at("x").conv2d(t.at("w"), t.at("b"), 1, {2}, {1}, {1})};
       }},
      {"conv2d groups 2",
       [](const Inputs &t, const std::string &) { return Result{t.at("x").conv2d(t.at("w"), t.at("b"), 2)}; }},
      {"conv2d dilation 2 padding 2 stride (1, 2)",
       [](const Inputs &t, const std::string &) {
         return Result{t.at("x").conv2d(t.at("w"), std::nullopt, 1, {1, 2}, {2}, {2})};
       }},
      {"conv2d stride 2 padding 1 dilation 2 groups 2",
       [](const Inputs &t, const std::string &) {
         return Result{t.at("x").conv2d(t.at("w"), t.at("b"), 2, {2}, {2}, {1})};
       }},
      {"conv_transpose2d",
       [](const Inputs &t, const std::string &) { return Result{t.at("x").convTranspose2d(t.at("w"), t.at("b"))}; }},
      {"conv_transpose2d stride 2 padding 1 output_padding 1",
       [](const Inputs &t, const std::string &) {
         return Result{t.at("x").convTranspose2d(t.at("w"), t.at("b"), 1, {2}, {1}, {1}, {1})};
       }},
      {"conv_transpose2d groups 2",
       [](const Inputs &t, const std::string &) {
         return Result{t.at("x").convTranspose2d(t.at("w"), t.at("b"), 2)};
       }},
      {"conv_transpose2d stride 2 dilation 2",
       [](const Inputs &t, const std::string &) {
         return Result{t.at("x").convTranspose2d(t.at("w"), std::nullopt, 1, {2}, {2})};
       }},
      // pooling
      {"avg_pool2d 2", [](const Inputs &t, const std::string &) { return Result{t.at("x").avgPool2d({2, 2})}; }},
      {"avg_pool2d 3 stride 1",
       [](const Inputs &t, const std::string &) { return Result{t.at("x").avgPool2d({3, 3}, V{1, 1})}; }},
      {"avg_pool2d (3, 2) stride (2, 1)",
       [](const Inputs &t, const std::string &) { return Result{t.at("x").avgPool2d({3, 2}, V{2, 1})}; }},
      {"max_pool2d 2", [](const Inputs &t, const std::string &) { return Result{t.at("x").maxPool2d({2, 2})}; }},
      {"max_pool2d 3 stride 2",
       [](const Inputs &t, const std::string &) { return Result{t.at("x").maxPool2d({3, 3}, V{2, 2})}; }},
      {"max_pool2d 2 stride 1 dilation 2",
       [](const Inputs &t, const std::string &) { return Result{t.at("x").maxPool2d({2, 2}, V{1, 1}, {2})}; }},
      // attention
      {"scaled_dot_product_attention", [](const Inputs &t, const std::string &) { return Result{attention(t)}; }},
      {"scaled_dot_product_attention float mask",
       [](const Inputs &t, const std::string &) { return Result{attention(t, t.at("mask"))}; }},
      {"scaled_dot_product_attention bool mask",
       [](const Inputs &t, const std::string &) { return Result{attention(t, t.at("mask").cast(dtypes::boolean))}; }},
      {"scaled_dot_product_attention causal",
       [](const Inputs &t, const std::string &) { return Result{attention(t, std::nullopt, true)}; }},
      // normalization
      {"layernorm", [](const Inputs &t, const std::string &) { return Result{t.at("x").layernorm()}; }},
      {"layernorm two axes", [](const Inputs &t, const std::string &) { return Result{t.at("x").layernorm({-2, -1})}; }},
      {"nn.LayerNorm affine",
       [](const Inputs &t, const std::string &) {
         nn::LayerNorm ln({4});
         ln.weight = t.at("weight");
         ln.bias = t.at("bias");
         return Result{ln(t.at("x"))};
       }},
      {"nn.BatchNorm2d training",
       [](const Inputs &t, const std::string &dev) {
         nn::BatchNorm2d bn(3);
         moveStats(bn, dev);
         bn.weight = t.at("weight");
         bn.bias = t.at("bias");
         Tensor::TrainingGuard training;
         Tensor out = bn(t.at("x"));
         return Result{out,
                       {{"running_mean", bn.runningMean},
                        {"running_var", bn.runningVar},
                        {"num_batches_tracked", bn.numBatchesTracked}}};
       }},
      {"nn.GroupNorm",
       [](const Inputs &t, const std::string &) {
         nn::GroupNorm gn(2, 4);
         gn.weight = t.at("weight");
         gn.bias = t.at("bias");
         return Result{gn(t.at("x"))};
       }},
      // models
      {"mlp",
       [](const Inputs &t, const std::string &) {
         nn::Linear l1(5, 8), l2(8, 4);
         l1.weight = t.at("l1.weight");
         l1.bias = t.at("l1.bias");
         l2.weight = t.at("l2.weight");
         l2.bias = t.at("l2.bias");
         return Result{l2(l1(t.at("x")).relu()).sparseCategoricalCrossentropy(t.at("labels"))};
       }},
      {"cnn",
       [](const Inputs &t, const std::string &dev) {
         nn::Conv2d conv(1, 3, {3});
         nn::BatchNorm2d bn(3);
         nn::Linear fc(12, 4);
         moveStats(bn, dev);
         conv.weight = t.at("conv.weight");
         conv.bias = t.at("conv.bias");
         bn.weight = t.at("bn.weight");
         bn.bias = t.at("bn.bias");
         fc.weight = t.at("fc.weight");
         fc.bias = t.at("fc.bias");
         Tensor::TrainingGuard training;
         Tensor h = bn(conv(t.at("x"))).relu().maxPool2d({2, 2}).flatten(1);
         return Result{fc(h).sparseCategoricalCrossentropy(t.at("labels")),
                       {{"bn.running_mean", bn.runningMean}, {"bn.running_var", bn.runningVar}}};
       }},
  };
  return fns;
}

/// float32 against float64 PyTorch values: 2e-5 relative and 1e-5 of the tensor's largest value.
void expectGolden(const Tensor &t, const GradGoldenTensor &g, const Vals &expected, const std::string &what) {
  std::string name = g.name;
  CAPTURE(what);
  CAPTURE(name);
  double scale = 1;
  for (double v : expected) scale = std::max(scale, std::fabs(v));
  expectValues(t, g.shape, expected, {2e-5, 1e-5 * scale});
}

void checkCase(const GradGoldenCase &c, const CaseFn &fn, const std::string &dev) {
  Inputs in;
  std::vector<std::pair<const GradGoldenTensor *, Tensor>> withGrad;
  for (const auto &gi : c.inputs) {
    if (gi.isInt) {
      in[gi.name] = Tensor::fromValues(gi.values, toShape(gi.shape), {dtypes::int32, dev, false});
      continue;
    }
    Tensor t = Tensor::fromValues(gi.values, toShape(gi.shape), {dtypes::float32, dev, true});
    in[gi.name] = t;
    withGrad.emplace_back(&gi, t);
  }
  Result r = fn(in, dev);
  CHECK(r.out.dtype().name() == dtypes::float32.name());
  expectGolden(r.out, c.out, c.out.values, "forward");
  Tensor w = Tensor::fromValues(c.out.grad, toShape(c.out.shape), {dtypes::float32, dev, false});
  r.out.mul(w).sum().backward();
  for (const auto &[gi, t] : withGrad) {
    std::optional<Tensor> g = t.grad();
    REQUIRE_MESSAGE(g.has_value(), "no gradient reached " << gi->name);
    expectGolden(*g, *gi, gi->grad, "gradient");
  }
  REQUIRE(r.after.size() == c.after.size());
  for (size_t i = 0; i < c.after.size(); ++i) {
    CHECK(r.after[i].first == c.after[i].name);
    expectGolden(r.after[i].second, c.after[i], c.after[i].values, "after the step");
  }
}

} // namespace

TEST_CASE("GradGolden: every golden case has a lazyjit side and every lazyjit side a golden case") {
  std::set<std::string> names;
  for (const auto &c : golden::kGradCases) {
    std::string name = c.name;
    CAPTURE(name);
    CHECK(caseFns().count(c.name) == 1);
    CHECK(names.insert(c.name).second);
  }
  CHECK(names.size() == caseFns().size());
}

TEST_CASE("GradGolden: values and gradients match PyTorch") {
  for (const std::string &dev : devices())
    for (const auto &c : golden::kGradCases) {
      std::string name = c.name;
      CAPTURE(dev);
      CAPTURE(name);
      auto it = caseFns().find(c.name);
      REQUIRE(it != caseFns().end());
      checkCase(c, it->second, dev);
    }
}

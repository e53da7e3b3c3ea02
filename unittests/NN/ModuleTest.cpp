// Modules and state dicts: the reference's get_state_dict names, walks over layers, user models,
// lists, maps and pointers, and handles that alias the model's tensors.
#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/Module.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

using namespace lazyjit;

namespace {
struct Block : nn::Module {
  nn::Conv2d conv{3, 4, {3}};
  nn::BatchNorm2d bn{4};
  LAZYJIT_MODULE(conv, bn)
};

struct Net : nn::Module {
  nn::Linear l1{8, 4}, l2{4, 2, false};
  std::vector<Block> blocks{Block(), Block()};
  std::optional<Tensor> extra;
  Tensor scale = Tensor::ones({1});
  std::map<std::string, nn::Linear> heads{{"a", nn::Linear(2, 1)}};
  std::shared_ptr<nn::LayerNorm> norm = std::make_shared<nn::LayerNorm>(Shape{2});
  LAZYJIT_MODULE(l1, l2, blocks, extra, scale, heads, norm)
};

std::vector<std::string> keysOf(const nn::StateDict &sd) { return sd.keys(); }
} // namespace

TEST_CASE("Module: state dict names follow the reference's get_state_dict") {
  nn::Linear lin(3, 2);
  CHECK(keysOf(nn::getStateDict(lin)) == std::vector<std::string>{"weight", "bias"});
  nn::BatchNorm2d bn(4);
  CHECK(keysOf(nn::getStateDict(bn)) ==
        std::vector<std::string>{"weight", "bias", "running_mean", "running_var", "num_batches_tracked"});
  nn::BatchNorm2d plain(4, 1e-5, false);
  CHECK(keysOf(nn::getStateDict(plain)) ==
        std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"});
  Net net;
  CHECK(keysOf(nn::getStateDict(net)) ==
        std::vector<std::string>{"l1.weight", "l1.bias", "l2.weight",
                                 "blocks.0.conv.weight", "blocks.0.conv.bias", "blocks.0.bn.weight",
                                 "blocks.0.bn.bias", "blocks.0.bn.running_mean", "blocks.0.bn.running_var",
                                 "blocks.0.bn.num_batches_tracked",
                                 "blocks.1.conv.weight", "blocks.1.conv.bias", "blocks.1.bn.weight",
                                 "blocks.1.bn.bias", "blocks.1.bn.running_mean", "blocks.1.bn.running_var",
                                 "blocks.1.bn.num_batches_tracked",
                                 "scale", "heads.a.weight", "heads.a.bias", "norm.weight", "norm.bias"});
  net.extra = Tensor::zeros({2});
  CHECK(nn::getStateDict(net).contains("extra"));
  // a list at the top level is named by index; a tensor by itself has the empty name
  std::vector<nn::Linear> layers{nn::Linear(2, 2), nn::Linear(2, 2, false)};
  CHECK(keysOf(nn::getStateDict(layers)) == std::vector<std::string>{"0.weight", "0.bias", "1.weight"});
  Tensor t = Tensor::ones({2});
  CHECK(keysOf(nn::getStateDict(t)) == std::vector<std::string>{""});
  // a prefix is prepended as the reference's prefix argument
  CHECK(keysOf(nn::getStateDict(lin, "model.")) == std::vector<std::string>{"model.weight", "model.bias"});
}

TEST_CASE("Module: parameters alias the model's tensors") {
  Net net;
  std::vector<Tensor> params = nn::getParameters(net);
  REQUIRE(params.size() == 22);
  CHECK(params[0].sameAs(net.l1.weight));
  CHECK(params[1].sameAs(*net.l1.bias));
  params[0].assign(Tensor::zeros({4, 8}));
  CHECK(net.l1.weight.toVector<float>() == std::vector<float>(32, 0.0f));
  nn::StateDict sd = nn::getStateDict(net);
  CHECK(sd.at("blocks.1.bn.running_var").sameAs(net.blocks[1].bn.runningVar));
  CHECK(sd.find("nope") == nullptr);
  CHECK_THROWS_WITH_AS(sd.at("l3.weight"), "state dict has no key 'l3.weight'", Error);
}

TEST_CASE("Module: Sequential runs layers and functions in order and names layers by index") {
  Tensor::manualSeed(3);
  nn::Sequential seq{nn::Linear(4, 3), [](const Tensor &x) { return x.relu(); }, nn::Linear(3, 2)};
  CHECK(keysOf(nn::getStateDict(seq)) == std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  Tensor x = Tensor::fromValues({1, -2, 3, 0.5, 2, 1, -1, 0}, {2, 4});
  nn::Linear &a = seq.at<nn::Linear>(0), &b = seq.at<nn::Linear>(2);
  std::vector<float> want = b(a(x).relu()).toVector<float>();
  CHECK(seq(x).toVector<float>() == want);
  CHECK_THROWS_WITH_AS(seq.at<nn::Linear>(1), "Sequential: item 1 of 3 is not a layer of the requested type", Error);
  CHECK_THROWS_WITH_AS(seq.at<nn::Conv2d>(0), "Sequential: item 0 of 3 is not a layer of the requested type", Error);
}

TEST_CASE("Module: the initializations and requires_grad states of the reference's layers") {
  Tensor::manualSeed(11);
  nn::Linear lin(100, 50);
  CHECK(lin.weight.shape() == Shape{50, 100});
  CHECK_FALSE(lin.weight.requiresGrad().has_value());
  // kaiming_uniform(a=sqrt(5)): bound sqrt(3)*sqrt(2/(1+5))/sqrt(fan_in) = 1/sqrt(fan_in)
  std::vector<float> w = lin.weight.toVector<float>();
  float lo = *std::min_element(w.begin(), w.end()), hi = *std::max_element(w.begin(), w.end());
  CHECK(lo >= -0.1f);
  CHECK(hi <= 0.1f);
  CHECK(hi - lo > 0.18f); // 5000 draws fill the range
  nn::BatchNorm2d bn(3);
  CHECK(bn.runningMean.requiresGrad() == false);
  CHECK(bn.runningVar.toVector<float>() == std::vector<float>{1, 1, 1});
  nn::ConvTranspose2d ct(4, 6, {3}, {2}, {1}, {1}, {1}, 2);
  CHECK(ct.weight.shape() == Shape{4, 3, 3, 3}); // (in, out/groups, k, k)
  nn::Conv2d c1 = nn::Conv1d(2, 5, 3);
  CHECK(c1.weight.shape() == Shape{5, 2, 3});
  nn::Embedding emb(10, 4);
  CHECK(emb.weight.shape() == Shape{10, 4});
  CHECK_THROWS_WITH_AS(nn::GroupNorm(3, 8), "GroupNorm: 8 channels are not divisible into 3 groups", ShapeError);
}

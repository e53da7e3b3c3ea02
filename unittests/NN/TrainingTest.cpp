// Training end to end: a small MLP learns a 2k-image subset of Fashion-MNIST (the loss falls and
// the accuracy passes a threshold), and a training loop's memory stays flat: the graph of step k
// is freed by step k+1 and step 1000 holds what step 10 held.
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/NN/IDX.h"
#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/Optim.h"
#include "lazyjit/Runtime/Buffer.h"

#include <doctest/doctest.h>

#include <cstring>
#include <numeric>

using namespace lazyjit;

namespace {

struct MLP : nn::Module {
  nn::Linear l1{784, 64}, l2{64, 10};
  LAZYJIT_MODULE(l1, l2)
  Tensor operator()(Tensor xIn) const {
    Tensor x = std::move(xIn);
    return l2(l1(x).relu());
  }
};

/// The first `n` images of a Fashion-MNIST file pair, as float32 [n, 784] in [0, 1] and int32 [n].
std::pair<std::vector<float>, std::vector<int32_t>> subset(const std::string &images, const std::string &labels,
                                                           int64_t n) {
  const std::string dir = "/usr/share/datasets/fashion-mnist/"; // scripts/setup-deps.sh installs it
  Tensor x = nn::loadIDX(dir + images), y = nn::loadIDX(dir + labels);
  Tensor xs = x.shrink({SIntPair(0, n), std::nullopt, std::nullopt}).cast(dtypes::float32).div(255.0);
  Tensor ys = y.shrink({SIntPair(0, n)}).cast(dtypes::int32);
  return {xs.toVector<float>(), ys.toVector<int32_t>()};
}

Tensor rowsOf(const std::vector<float> &all, const std::vector<int32_t> &idx) {
  std::vector<float> out(idx.size() * 784);
  for (size_t i = 0; i < idx.size(); ++i) std::memcpy(&out[i * 784], &all[idx[i] * 784], 784 * sizeof(float));
  return Tensor::fromVector(out, {static_cast<int64_t>(idx.size()), 784});
}

} // namespace

TEST_CASE("Training: an MLP learns a 2k-image subset of Fashion-MNIST") {
  auto [trainX, trainY] = subset("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 2000);
  auto [testX, testY] = subset("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 1000);
  Tensor::manualSeed(1234);
  MLP model;
  nn::optim::LAMB opt = nn::optim::Adam(nn::getParameters(model), 2e-3);
  std::vector<float> losses;
  for (int step = 0; step < 120; ++step) {
    std::vector<int32_t> idx =
        Tensor::randint({128}, 0, 2000, {dtypes::int32, std::nullopt, false}).toVector<int32_t>();
    std::vector<int32_t> labels(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) labels[i] = trainY[idx[i]];
    Tensor::TrainingGuard train(true);
    opt.zeroGrad();
    Tensor loss = model(rowsOf(trainX, idx)).sparseCategoricalCrossentropy(Tensor::fromVector(labels, {128})).backward();
    opt.step();
    losses.push_back(loss.item<float>());
  }
  auto mean = [&](size_t from, size_t to) {
    return std::accumulate(losses.begin() + from, losses.begin() + to, 0.0) / static_cast<double>(to - from);
  };
  CAPTURE(mean(0, 10));
  CAPTURE(mean(110, 120));
  CHECK(mean(0, 10) > 1.2);                   // starts near ln(10) = 2.3
  CHECK(mean(110, 120) < 0.5 * mean(0, 10));  // and falls
  std::vector<int32_t> all(1000);
  std::iota(all.begin(), all.end(), 0);
  Tensor::NoGradGuard noGrad;
  std::vector<int32_t> pred = model(rowsOf(testX, all)).argmax(1).toVector<int32_t>();
  int correct = 0;
  for (size_t i = 0; i < pred.size(); ++i) correct += pred[i] == testY[i];
  CAPTURE(correct);
  CHECK(correct >= 720); // 10 classes; a linear model reaches about 80% on the full set
}

TEST_CASE("Training: a training loop's memory stays flat and each step's graph is freed") {
  Tensor::manualSeed(5);
  nn::Linear l1(6, 8), l2(8, 3);
  nn::BatchNorm2d bn(8); // running statistics are assigned every step
  std::vector<Tensor> params = nn::getParameters(l1);
  for (const Tensor &t : nn::getParameters(l2)) params.push_back(t);
  for (const Tensor &t : nn::getParameters(bn)) params.push_back(t);
  nn::optim::LAMB opt = nn::optim::Adam(params, 1e-3);
  Tensor x = Tensor::rand({4, 6}).realize();
  Tensor y = Tensor::fromValues({0, 1, 2, 1}, {4}, {dtypes::int32}).realize();
  std::weak_ptr<LazyBuffer> previousActivation;
  size_t buffersAt10 = 0;
  int64_t bytesAt10 = 0;
  for (int step = 1; step <= 1000; ++step) {
    Tensor::TrainingGuard train(true);
    opt.zeroGrad();
    Tensor h = l1(x).relu();
    Tensor hb = bn(h.reshape({4, 8, 1, 1})).reshape({4, 8});
    Tensor loss = l2(hb).sparseCategoricalCrossentropy(y).backward();
    opt.step();
    loss.realize();
    // the activation of the previous step is gone once this step has run
    CHECK(previousActivation.expired());
    previousActivation = h.lazydata();
    if (step == 10) {
      buffersAt10 = liveLazyBufferCount();
      bytesAt10 = bufferBytesInUse();
    }
    if (step == 1000) {
      CHECK(liveLazyBufferCount() == buffersAt10);
      CHECK(bufferBytesInUse() == bytesAt10);
    }
  }
}

// Forward values of the reference's layers against closed forms computed on the host, and their
// argument errors.
#include "lazyjit/NN/Layers.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace lazyjit;

namespace {
std::vector<double> vals(const Tensor &t) { return t.toVector<double>(); }

std::vector<double> seq(size_t n, double scale = 0.37, double shift = -1.1) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = std::sin(static_cast<double>(i) * scale) * 2 + shift * (i % 3 == 0);
  return v;
}

void checkClose(const std::vector<double> &got, const std::vector<double> &want, double tol = 1e-4) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(got[i] == doctest::Approx(want[i]).epsilon(tol).scale(1));
  }
}
} // namespace

TEST_CASE("Layers: Conv1d and ConvTranspose1d compute the 1-d convolution and its transpose") {
  Tensor::manualSeed(5);
  nn::Conv2d c = nn::Conv1d(2, 3, 3, 1, 1);
  Tensor x = Tensor::fromValues(seq(2 * 2 * 5), {2, 2, 5});
  std::vector<double> w = vals(c.weight), b = vals(*c.bias), xv = vals(x);
  std::vector<double> want;
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 3; ++o)
      for (int l = 0; l < 5; ++l) {
        double acc = b[o];
        for (int i = 0; i < 2; ++i)
          for (int k = 0; k < 3; ++k) {
            int p = l + k - 1;
            if (p >= 0 && p < 5) acc += w[(o * 2 + i) * 3 + k] * xv[(n * 2 + i) * 5 + p];
          }
        want.push_back(acc);
      }
  checkClose(vals(c(x)), want);

  nn::ConvTranspose2d ct = nn::ConvTranspose1d(2, 3, 3, 2);
  Tensor y = ct(x);
  CHECK(y.shape() == Shape{2, 3, 11}); // (L-1)*stride + k
  std::vector<double> tw = vals(ct.weight), tb = vals(*ct.bias);
  std::vector<double> twant(2 * 3 * 11);
  for (int n = 0; n < 2; ++n)
    for (int o = 0; o < 3; ++o)
      for (int l = 0; l < 11; ++l) twant[(n * 3 + o) * 11 + l] = tb[o];
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 2; ++i)
      for (int l = 0; l < 5; ++l)
        for (int o = 0; o < 3; ++o)
          for (int k = 0; k < 3; ++k) twant[(n * 3 + o) * 11 + l * 2 + k] += xv[(n * 2 + i) * 5 + l] * tw[(i * 3 + o) * 3 + k];
  checkClose(vals(y), twant);
}

TEST_CASE("Layers: BatchNorm2d uses batch statistics in training and running ones otherwise") {
  Tensor::manualSeed(7);
  nn::BatchNorm2d bn(2);
  bn.weight->assign(Tensor::fromValues({2, 0.5}, {2}));
  bn.bias->assign(Tensor::fromValues({1, -1}, {2}));
  std::vector<double> xv = seq(3 * 2 * 2 * 2, 0.9, 0.4);
  Tensor x = Tensor::fromValues(xv, {3, 2, 2, 2});
  std::vector<double> mean(2, 0), var(2, 0);
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 2; ++c)
      for (int k = 0; k < 4; ++k) mean[c] += xv[(n * 2 + c) * 4 + k] / 12;
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 2; ++c)
      for (int k = 0; k < 4; ++k) var[c] += std::pow(xv[(n * 2 + c) * 4 + k] - mean[c], 2) / 12;
  std::vector<double> want;
  double wgt[2] = {2, 0.5}, bia[2] = {1, -1};
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 2; ++c)
      for (int k = 0; k < 4; ++k)
        want.push_back((xv[(n * 2 + c) * 4 + k] - mean[c]) / std::sqrt(var[c] + 1e-5) * wgt[c] + bia[c]);
  {
    Tensor::TrainingGuard train(true);
    checkClose(vals(bn(x)), want);
  }
  // running stats: (1 - momentum) * old + momentum * batch (unbiased variance), one batch tracked
  checkClose(vals(bn.runningMean), {0.1 * mean[0], 0.1 * mean[1]});
  checkClose(vals(bn.runningVar), {0.9 + 0.1 * var[0] * 12 / 11, 0.9 + 0.1 * var[1] * 12 / 11});
  checkClose(vals(bn.numBatchesTracked), {1});
  Tensor::TrainingGuard eval(false);
  std::vector<double> rm = vals(bn.runningMean), rv = vals(bn.runningVar), ev;
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 2; ++c)
      for (int k = 0; k < 4; ++k)
        ev.push_back((xv[(n * 2 + c) * 4 + k] - rm[c]) / std::sqrt(rv[c] + 1e-5) * wgt[c] + bia[c]);
  checkClose(vals(bn(x)), ev);
  CHECK_THROWS_WITH_AS(bn(Tensor::ones({3, 4, 2, 2})), "BatchNorm2d: expected an input of shape [N, 2, H, W], got float32[3, 4, 2, 2]",
                       ShapeError);
}

TEST_CASE("Layers: InstanceNorm, GroupNorm, LayerNorm2d normalize over their groups") {
  std::vector<double> xv = seq(2 * 4 * 3, 0.7, 0.3);
  Tensor x = Tensor::fromValues(xv, {2, 4, 3});
  auto normalized = [&](int groupSize) {
    std::vector<double> out(xv.size());
    for (size_t g = 0; g < xv.size() / groupSize; ++g) {
      double m = 0, v = 0;
      for (int k = 0; k < groupSize; ++k) m += xv[g * groupSize + k] / groupSize;
      for (int k = 0; k < groupSize; ++k) v += std::pow(xv[g * groupSize + k] - m, 2) / groupSize;
      for (int k = 0; k < groupSize; ++k) out[g * groupSize + k] = (xv[g * groupSize + k] - m) / std::sqrt(v + 1e-5);
    }
    return out;
  };
  checkClose(vals(nn::InstanceNorm(4)(x)), normalized(3));
  checkClose(vals(nn::GroupNorm(2, 4)(x)), normalized(6));
  nn::GroupNorm gn(1, 4);
  gn.weight->assign(Tensor::fromValues({1, 2, 3, 4}, {4}));
  std::vector<double> g1 = normalized(12), got = vals(gn(x));
  for (size_t i = 0; i < g1.size(); ++i) g1[i] *= 1 + static_cast<double>((i / 3) % 4);
  checkClose(got, g1);
  // LayerNorm2d normalizes each pixel over the channels
  Tensor img = Tensor::fromValues(seq(2 * 3 * 2 * 2, 1.3), {2, 3, 2, 2});
  Tensor viaPermute = nn::LayerNorm({3})(img.permute({0, 2, 3, 1})).permute({0, 3, 1, 2});
  checkClose(vals(nn::LayerNorm2d(3)(img)), vals(viaPermute));
  CHECK_THROWS_WITH_AS(nn::GroupNorm(2, 4)(Tensor::ones({2, 3, 3})), "GroupNorm: expected 4 channels in dim 1, got float32[2, 3, 3]",
                       ShapeError);
}

TEST_CASE("Layers: Embedding looks up rows of its weight") {
  Tensor::manualSeed(9);
  nn::Embedding emb(5, 3);
  Tensor idx = Tensor::fromValues({4, 0, 2, 2}, {2, 2}, {dtypes::int32});
  std::vector<double> w = vals(emb.weight), want;
  for (int i : {4, 0, 2, 2})
    for (int k = 0; k < 3; ++k) want.push_back(w[i * 3 + k]);
  Tensor out = emb(idx);
  CHECK(out.shape() == Shape{2, 2, 3});
  checkClose(vals(out), want);
  CHECK_THROWS_WITH_AS(emb(Tensor::ones({2, 2})), "Embedding: indices must be integers, got float32[2, 2]", DTypeError);
  // the gradient of the weight counts the lookups
  emb.weight.setRequiresGrad(true);
  emb(idx).sum().backward();
  std::vector<double> g = vals(*emb.weight.grad());
  checkClose(g, {1, 1, 1, 0, 0, 0, 2, 2, 2, 0, 0, 0, 1, 1, 1});
}

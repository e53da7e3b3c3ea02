// GradScaler: the scale follows PyTorch's rule (back off on inf/NaN, grow after growth_interval
// clean steps), a skipped step changes neither the parameters nor the optimizer state, a clean
// step with a power-of-two scale is bit-identical to an unscaled one, and under float16 autocast
// it keeps gradients that would flush to zero without it.
#include "lazyjit/NN/GradScaler.h"
#include "lazyjit/NN/Optim.h"
#include "lazyjit/Runtime/Realize.h"
#include "Tensor/TensorTestUtil.h"

#include <cmath>

using namespace lazyjit;
using namespace lazyjit::testing;
using doctest::Contains;
namespace optim = lazyjit::nn::optim;

namespace {
Tensor param(const Vals &v, const Ints &shape) {
  return Tensor::fromValues(v, toShape(shape), {dtypes::float32, "CPU", true}).realize();
}
/// One step of loss = sum((x @ w) * c) with an optional poison: a gradient of inf or NaN.
void backwardOnce(const Tensor &w, double c, nn::GradScaler *scaler, double poison = 0) {
  Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, "CPU");
  Tensor loss = x.matmul(w).mul(c).sum();
  if (poison != 0) loss = loss.add(w.sum().mul(poison));
  (scaler ? scaler->scale(loss) : loss).backward();
}
} // namespace

TEST_CASE("GradScaler: the scale backs off on a non-finite step and grows after clean ones") {
  Tensor w = param({1, 2, 3}, {3, 1});
  optim::SGD opt({w}, 0.1);
  nn::GradScaler scaler({8.0, 2.0, 0.5, 2, true});
  // clean, clean, inf, clean, nan, clean, clean: the scale after each update
  const std::vector<double> poison{0, 0, INFINITY, 0, NAN, 0, 0};
  const std::vector<double> expected{8, 16, 8, 8, 4, 4, 8};
  for (size_t s = 0; s < poison.size(); ++s) {
    CAPTURE(s);
    opt.zeroGrad();
    backwardOnce(w, 1.0, &scaler, poison[s]);
    bool stepped = scaler.step(opt);
    CHECK(stepped == (poison[s] == 0));
    scaler.update();
    CHECK(scaler.getScale() == expected[s]);
  }
  CHECK_THROWS_WITH_AS(scaler.update(), Contains("call step() first"), Error);
}

TEST_CASE("GradScaler: a skipped step changes nothing; a clean step equals the unscaled step") {
  Tensor w1 = param({0.5, -1, 2}, {3, 1}), w2 = param({0.5, -1, 2}, {3, 1});
  optim::LAMB a1 = optim::Adam({w1}, 0.01), a2 = optim::Adam({w2}, 0.01);
  nn::GradScaler scaler({1024.0, 2.0, 0.5, 1000, true});
  for (int s = 0; s < 5; ++s) {
    CAPTURE(s);
    a1.zeroGrad();
    backwardOnce(w1, 0.25, nullptr);
    a1.step();
    a2.zeroGrad();
    backwardOnce(w2, 0.25, &scaler);
    CHECK(scaler.step(a2));
    scaler.update();
    // the scale is a power of two: scaling and unscaling are exact, the updates bit-identical
    CHECK(w1.toBytes() == w2.toBytes());
  }
  std::vector<uint8_t> before = w2.toBytes(), tBefore = a2.t.toBytes(), mBefore = a2.m[0].toBytes();
  a2.zeroGrad();
  backwardOnce(w2, 0.25, &scaler, INFINITY);
  CHECK_FALSE(scaler.step(a2));
  scaler.update();
  CHECK(scaler.getScale() == 512);
  CHECK(w2.toBytes() == before);
  CHECK(a2.t.toBytes() == tBefore);
  CHECK(a2.m[0].toBytes() == mBefore);
  // the state round-trips
  nn::GradScaler other;
  other.loadStateDict(scaler.stateDict());
  CHECK(other.getScale() == 512);
  CHECK(other.growthTracker() == 0);
}

TEST_CASE("GradScaler: under float16 autocast it keeps gradients that flush to zero without it") {
  const double c = 1e-8; // below float16's smallest subnormal (6e-8): an unscaled gradient is 0
  for (bool scaled : {false, true}) {
    CAPTURE(scaled);
    Tensor w = param({1, 2, 3}, {3, 1});
    nn::GradScaler scaler;
    {
      Tensor::AutocastGuard ac(dtypes::float16);
      Tensor x = make({1, 2, 3, 4, 5, 6}, {2, 3}, "CPU");
      Tensor y = x.matmul(w);
      REQUIRE(y.dtype() == dtypes::float16);
      Tensor loss = y.cast(dtypes::float32).mul(c).sum();
      (scaled ? scaler.scale(loss) : loss).backward();
    }
    REQUIRE(w.grad().has_value());
    CHECK(w.grad()->dtype() == dtypes::float32);
    std::vector<double> g = w.grad()->toVector<double>();
    if (!scaled) {
      CHECK(g == std::vector<double>{0, 0, 0});
      continue;
    }
    // d/dw sum(x @ w) * c = c * column sums of x, recovered after unscaling
    optim::SGD opt({w}, 0.0);
    CHECK(scaler.step(opt));
    std::vector<double> unscaled = w.grad()->toVector<double>();
    const std::vector<double> colSums{5, 7, 9};
    for (size_t i = 0; i < 3; ++i) CHECK(unscaled[i] == doctest::Approx(c * colSums[i]).epsilon(1e-3));
  }
}

TEST_CASE("GradScaler: disabled, it passes through; bad options and misuse are errors") {
  Tensor w = param({1, 2, 3}, {3, 1});
  optim::SGD opt({w}, 0.5);
  nn::GradScaler off({65536.0, 2.0, 0.5, 2000, false});
  Tensor x = make({1, 1, 1}, {1, 3}, "CPU");
  Tensor loss = x.matmul(w).sum();
  CHECK(off.scale(loss).sameAs(loss));
  loss.backward();
  CHECK(off.step(opt));
  CHECK(w.toVector<double>() == std::vector<double>{0.5, 1.5, 2.5});
  CHECK_THROWS_WITH_AS(nn::GradScaler({0.0, 2.0, 0.5, 1, true}), Contains("initial scale"), Error);
  CHECK_THROWS_WITH_AS(nn::GradScaler({1.0, 2.0, 1.5, 1, true}), Contains("backoff_factor"), Error);
  nn::GradScaler s;
  CHECK_THROWS_WITH_AS(s.step(opt), Contains("call scale(loss) and backward() first"), Error);
}

TEST_CASE("GradScaler: unscale before step gives the unscaled gradients to clip, once per step") {
  Tensor w = param({1, 2, 3}, {3, 1});
  optim::SGD opt({w}, 1.0);
  nn::GradScaler scaler({256.0, 2.0, 0.5, 1000, true});
  backwardOnce(w, 1.0, &scaler);
  scaler.unscale(opt);
  // d/dw sum(x @ w) = the column sums of x = [5, 7, 9]
  CHECK(w.grad()->toVector<double>() == std::vector<double>{5, 7, 9});
  CHECK_THROWS_WITH_AS(scaler.unscale(opt), Contains("already unscaled"), Error);
  w.setGrad(w.grad()->mul(0.5)); // e.g. a clip
  CHECK(scaler.step(opt));       // takes the gradients as they are: not unscaled twice
  CHECK(w.toVector<double>() == std::vector<double>{-1.5, -1.5, -1.5});
  scaler.update();
}

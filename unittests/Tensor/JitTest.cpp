// lazyjit::Jit (the reference's TinyJit): replays give the values the function computes, with no
// graph building, scheduling or cache lookups; a whole training step replays to the same
// parameters bit for bit; bound variables are re-bound from the inputs; changed inputs are errors.
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/Optim.h"
#include "lazyjit/Runtime/CPUDevice.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Tensor/Jit.h"

#include <doctest/doctest.h>

using namespace lazyjit;

namespace {
Tensor input(int64_t rows, uint64_t seed) {
  Tensor::manualSeed(seed);
  return Tensor::rand(Shape{rows, 3}, {dtypes::float32, "CPU"}).realize();
}
} // namespace

TEST_CASE("Jit: inference replays the captured kernels and matches the function on every call") {
  Tensor w = Tensor::fromValues({1, -2, 3, 0.5, 4, -1}, Shape{3, 2}, {dtypes::float32, "CPU"}).realize();
  auto f = [&](const std::vector<Tensor> &in) {
    return std::vector<Tensor>{in[0].matmul(w).relu().sum(std::vector<int64_t>{1}), (in[0] * 2).exp()};
  };
  Jit jit(f);
  for (int call = 0; call < 6; ++call) {
    CAPTURE(call);
    Tensor x = input(4, 100 + static_cast<uint64_t>(call));
    int64_t plainStart = globalCounters().kernelCount;
    std::vector<Tensor> want = f({x});
    for (auto &t : want) t.realize();
    int64_t plainKernels = globalCounters().kernelCount - plainStart;
    std::vector<float> want0 = want[0].toVector<float>(), want1 = want[1].toVector<float>();
    auto stats0 = cpuCompileStats();
    int64_t kernels0 = globalCounters().kernelCount;
    size_t live0 = liveLazyBufferCount();
    std::vector<Tensor> got = jit({x});
    REQUIRE(got.size() == 2);
    CHECK(got[0].toVector<float>() == want0);
    CHECK(got[1].toVector<float>() == want1);
    CHECK(jit.calls() == call + 1);
    if (call >= 2) {
      // a replay: the captured kernels ran, nothing was compiled or looked up, no graph was built
      CHECK(jit.captured());
      CHECK(static_cast<int64_t>(jit.kernelCount()) == plainKernels);
      CHECK(globalCounters().kernelCount - kernels0 == plainKernels);
      CHECK(cpuCompileStats().memoryHits == stats0.memoryHits);
      CHECK(cpuCompileStats().compiled == stats0.compiled);
      CHECK(liveLazyBufferCount() <= live0 + 2); // only the two output handles
    }
  }
}

namespace {
struct Tiny : nn::Module {
  nn::Linear l1{3, 8}, l2{8, 4};
  LAZYJIT_MODULE(l1, l2)
  Tensor operator()(Tensor x) const { return l2(l1(std::move(x)).relu()); }
};
} // namespace

TEST_CASE("Jit: a whole training step replays to the same parameters as the plain step") {
  auto train = [](bool useJit) {
    Tensor::manualSeed(5);
    Tiny model;
    nn::optim::LAMB opt = nn::optim::Adam(nn::getParameters(model), 1e-2);
    auto step = [&](const std::vector<Tensor> &in) {
      Tensor::TrainingGuard training(true);
      opt.zeroGrad();
      Tensor loss = model(in[0]).sparseCategoricalCrossentropy(in[1]).backward();
      opt.step();
      return std::vector<Tensor>{loss};
    };
    Jit jit(step);
    std::vector<float> losses;
    for (int i = 0; i < 8; ++i) {
      Tensor x = input(16, 7); // one batch (fresh tensors with the same values) to fit
      Tensor y = Tensor::fromVector(std::vector<int32_t>{0, 1, 2, 3, 3, 2, 1, 0, 0, 0, 1, 1, 2, 2, 3, 3}, Shape{16})
                     .realize();
      losses.push_back((useJit ? jit({x, y}) : step({x, y}))[0].item<float>());
    }
    std::vector<std::vector<float>> params;
    for (auto &p : nn::getParameters(model)) params.push_back(p.toVector<float>());
    if (useJit) CHECK(jit.captured());
    return std::make_pair(losses, params);
  };
  auto plain = train(false), jitted = train(true);
  CHECK(jitted.first == plain.first);
  CHECK(jitted.second == plain.second);
  CHECK(plain.first.back() < plain.first.front());
}

TEST_CASE("Jit: a bound variable is re-bound from the inputs on replay") {
  Tensor base = Tensor::arange(0, 10, 1, {dtypes::float32, "CPU"}).realize();
  Jit jit([](const std::vector<Tensor> &in) { return std::vector<Tensor>{(in[0] * 3).sum()}; });
  for (int64_t len : {2, 3, 4, 7, 9}) {
    CAPTURE(len);
    NodeRef n = variable("n", 1, 10); // a variable is bound once (the reference's bind mutates it)
    Tensor x = base.shrink({SIntPair(SInt(0), SInt(n->bind(len)))});
    float got = jit({x})[0].item<float>();
    CHECK(got == 3.0f * static_cast<float>(len * (len - 1) / 2));
  }
}

TEST_CASE("Jit: inputs that differ from the captured ones are errors; reset() forgets the capture") {
  Jit jit([](const std::vector<Tensor> &in) { return std::vector<Tensor>{in[0] + 1}; });
  jit({input(4, 1)});
  jit({input(4, 2)});
  CHECK_THROWS_WITH_AS(jit({input(5, 3)}),
                       doctest::Contains("Jit: input 0 is float32[5, 3] on CPU, but was float32[4, 3] on CPU"), Error);
  CHECK_THROWS_WITH_AS(jit({input(4, 3).cast(dtypes::float64)}), doctest::Contains("input 0 is float64[4, 3]"), Error);
  CHECK_THROWS_WITH_AS(jit({input(4, 3), input(4, 4)}), doctest::Contains("called with 2 inputs, captured with 1"),
                       Error);
  Tensor x = input(4, 9);
  CHECK_THROWS_WITH_AS(jit({x, x}), doctest::Contains("inputs 0 and 1 are the same buffer"), Error);
  jit.reset();
  CHECK(jit.calls() == 0);
  Tensor big = input(5, 3);
  for (int i = 0; i < 3; ++i) CHECK(jit({big})[0].toVector<float>() == (big + 1).toVector<float>());
  CHECK(jit.captured());
}

TEST_CASE("Jit: a call that finds another call of the same Jit in progress is an Error, and the Jit still works") {
  // the same check that stops a second thread (unittests/Threads): here the function calls its
  // own Jit, which is deterministically "in progress"
  Jit *self = nullptr;
  bool inner = true;
  Jit jit([&](const std::vector<Tensor> &in) {
    if (inner) {
      inner = false;
      CHECK_THROWS_WITH_AS((*self)(in), doctest::Contains("Jit: called concurrently while another thread's call of "
                                                          "the same Jit is in progress"),
                           Error);
      CHECK_THROWS_WITH_AS(self->reset(), doctest::Contains("Jit: reset called concurrently"), Error);
    }
    return std::vector<Tensor>{in[0] * 2 + 1};
  });
  self = &jit;
  for (int call = 0; call < 4; ++call) {
    CAPTURE(call);
    Tensor x = Tensor::fromVector(std::vector<float>{1, 2, 3}, {3}).realize();
    CHECK(jit({x})[0].toVector<float>() == std::vector<float>{3, 5, 7});
  }
  CHECK(jit.captured());
  CHECK_FALSE(inner);
}

TEST_CASE("Jit: a constant input (Tensor::zeros, full) gets a buffer and later calls replay on new values") {
  auto f = [](const std::vector<Tensor> &in) { return std::vector<Tensor>{(in[0] + 1).sum()}; };
  Jit jit(f);
  for (int call = 0; call < 4; ++call) {
    CAPTURE(call);
    // the first calls pass constants, which realize to no buffer of their own; the later ones data
    Tensor x = call < 3 ? Tensor::full(Shape{2, 3}, double(call), {dtypes::float32, "CPU"})
                        : input(2, 7);
    float want = f({x})[0].item<float>();
    CHECK(jit({x})[0].item<float>() == doctest::Approx(want));
  }
}

TEST_CASE("Jit: a kernel never writes over a tensor the function made from host data (a constant of every replay)") {
  // c is made from host data inside the function and dies with the kernel that doubles it: a plain
  // call may write c * 2 over c's buffer, but a replay reads that buffer again as c. (An ONNX
  // model's folded shapes and constants are such tensors: GPT-2's replays drifted.)
  auto f = [](const std::vector<Tensor> &in) {
    Tensor d = Tensor::fromVector(std::vector<float>{1, 2, 3}, Shape{3}, "CPU").mul(2).contiguous();
    return std::vector<Tensor>{d.add(in[0]).contiguous().mul(3)};
  };
  Jit jit(f);
  for (int call = 0; call < 5; ++call) {
    CAPTURE(call);
    Tensor x = Tensor::fromVector(std::vector<float>{float(call), 0, -1}, Shape{3}, "CPU").realize();
    std::vector<float> got = jit({x})[0].toVector<float>();
    CHECK(got == std::vector<float>{(2 + float(call)) * 3, 12, 15});
  }
}

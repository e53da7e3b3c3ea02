// W10 and W11: training steps through the public API, as examples/fashion_mnist.cpp runs them.
#include "Training.h"
#include "lazyjit/Runtime/ThreadPool.h"
#include "lazyjit/lazyjit.h"

namespace lazyjit::bench {

namespace {

struct CNN : nn::Module {
  nn::Sequential layers{
      nn::Conv2d(1, 32, {5}),  [](const Tensor &x) { return x.relu(); },
      nn::Conv2d(32, 32, {5}), [](const Tensor &x) { return x.relu(); },
      nn::BatchNorm2d(32),     [](const Tensor &x) { return x.maxPool2d(); },
      nn::Conv2d(32, 64, {3}), [](const Tensor &x) { return x.relu(); },
      nn::Conv2d(64, 64, {3}), [](const Tensor &x) { return x.relu(); },
      nn::BatchNorm2d(64),     [](const Tensor &x) { return x.maxPool2d(); },
      [](const Tensor &x) { return x.flatten(1); },
      nn::Linear(576, 10)};
  LAZYJIT_MODULE(layers)
  Tensor operator()(Tensor x) const { return layers(std::move(x)); }
};

struct MLP : nn::Module {
  nn::Linear l1{784, 1024}, l2{1024, 1024}, l3{1024, 10};
  LAZYJIT_MODULE(l1, l2, l3)
  Tensor operator()(Tensor xIn) const {
    Tensor x = std::move(xIn);
    return l3(l2(l1(x).relu()).relu());
  }
};

/// The forward under autocast when `low` is set (the backward outside it, as PyTorch's).
template <typename Model>
Tensor lossOf(Model &model, const Tensor &x, const Tensor &y, std::optional<DType> low) {
  std::optional<Tensor::AutocastGuard> ac;
  if (low) ac.emplace(*low);
  return model(x).sparseCategoricalCrossentropy(y);
}

template <typename Model>
Result trainStep(const std::string &id, const std::string &name, Model &model, const Shape &inputShape, int batch,
                 const std::string &device, const std::vector<Peer> &peers, std::optional<DType> low = std::nullopt) {
  Tensor::manualSeed(7);
  const int defaultOpt = config().opt; // the level of this row; timeAgainstPeers adds OPT=2's
  nn::optim::LAMB opt = nn::optim::Adam(nn::getParameters(model), 1e-3);
  Tensor x = Tensor::rand(inputShape, {std::nullopt, device}).realize();
  Tensor y = Tensor::randint({batch}, 0, 10, {dtypes::int32, device}).realize();
  int64_t kernels = 0, refKernels = 0;
  double runSeconds = 0, wall = 0;
  auto step = [&] {
    bool atRef = config().opt == kReferenceOptLevel && config().opt != defaultOpt;
    int64_t k0 = globalCounters().kernelCount;
    double r0 = globalCounters().runSeconds;
    auto a = Clock::now();
    Tensor::TrainingGuard train(true);
    opt.zeroGrad();
    Tensor loss = lossOf(model, x, y, low).backward();
    opt.step();
    loss.realize();
    getDevice(device).synchronize();
    if (atRef) { // the reference level's step, timed in turns with ours (timeAgainstPeers)
      refKernels = globalCounters().kernelCount - k0;
      return;
    }
    wall = seconds(a, Clock::now());
    kernels = globalCounters().kernelCount - k0;
    runSeconds = globalCounters().runSeconds - r0;
  };
  Result r{id, name, "steps/s"};
  timeAgainstPeers(r, step, peers, 1); // (one timed step a turn)
  r.rate = 1.0 / r.t.median;
  r.kernels = static_cast<int>(kernels);
  r.refKernels = static_cast<int>(refKernels);
  double building = 100.0 * (wall - runSeconds) / wall;
  // the same step captured by lazyjit::Jit and replayed (x and y are its inputs)
  Jit jit([&](const std::vector<Tensor> &in) {
    Tensor::TrainingGuard train(true);
    opt.zeroGrad();
    Tensor loss = lossOf(model, in[0], in[1], low).backward();
    opt.step();
    return std::vector<Tensor>{loss};
  });
  Timing jt = timeInterleaved({[&] {
                                jit({x, y});
                                getDevice(device).synchronize();
                              }},
                              kRounds, 1)[0];
  r.vs["jit"] = r.t.median / jt.median;
  r.note = fmt::format("{:.1f} ms/step, with Jit {:.1f} ms/step; graph building, autograd and scheduling {:.0f}% "
                       "of the last step; OPT={}",
                       r.t.median * 1e3, jt.median * 1e3, building, config().opt);
  return r;
}

} // namespace

Result benchW10(int batch, const std::string &device) {
  Tensor::manualSeed(3);
  CNN model;
  std::vector<Peer> peers;
#ifdef LAZYJIT_BENCH_TORCH
  if (device == "CPU") peers.push_back({"libtorch", torchCnnStep(batch, static_cast<int>(ThreadPool::global().size()))});
#endif
  return trainStep("W10", "training step: Fashion-MNIST CNN, batch " + std::to_string(batch) + ", Adam", model,
                   {batch, 1, 28, 28}, batch, device, peers);
}

Result benchW10LowPrecision(int batch, const std::string &device, DType low) {
  // the float32 step of the same model, timed in turns with the mixed-precision one
  struct Float32Step {
    CNN model;
    nn::optim::LAMB opt{nn::optim::Adam(nn::getParameters(model), 1e-3)};
    Tensor x, y;
  };
  Tensor::manualSeed(3);
  auto f32 = std::make_shared<Float32Step>();
  f32->x = Tensor::rand({batch, 1, 28, 28}, {std::nullopt, device}).realize();
  f32->y = Tensor::randint({batch}, 0, 10, {dtypes::int32, device}).realize();
  Peer peer{"float32", [f32, device] {
              Tensor::TrainingGuard train(true);
              f32->opt.zeroGrad();
              Tensor loss = f32->model(f32->x).sparseCategoricalCrossentropy(f32->y).backward();
              f32->opt.step();
              loss.realize();
              getDevice(device).synchronize();
            }};
  Tensor::manualSeed(3);
  CNN model;
  std::string tag = low == dtypes::bfloat16 ? "bf16" : "fp16";
  return trainStep("W10-" + tag,
                   "training step: Fashion-MNIST CNN, batch " + std::to_string(batch) + ", Adam, autocast " +
                       std::string(low.name()) + " (float32 master weights)",
                   model, {batch, 1, 28, 28}, batch, device, {peer}, low);
}

Result benchW9d(const std::string &device) {
  // 64 tiny kernels (one realize each), captured; a replay runs just their launches
  Tensor a = Tensor::rand(Shape{16}, {std::nullopt, device}).realize();
  constexpr int kKernels = 64;
  Jit jit([&](const std::vector<Tensor> &in) {
    Tensor x = in[0];
    for (int i = 0; i < kKernels; ++i) x = (x * 0.5 + 1).realize();
    return std::vector<Tensor>{x};
  });
  Result r{"W9d", "Jit replay overhead per kernel (64 kernels of 16 elements)", "us/kernel"};
  Timing t = timeIt(
      [&] {
        jit({a});
        getDevice(device).synchronize();
      },
      3, 51);
  r.t = t;
  r.rate = t.median / kKernels * 1e6;
  r.kernels = static_cast<int>(jit.kernelCount());
  r.note = fmt::format("{} kernels replayed in {:.1f} us", jit.kernelCount(), t.median * 1e6);
  return r;
}

Result benchW11(int batch, const std::string &device) {
  Tensor::manualSeed(4);
  MLP model;
  std::vector<Peer> peers;
#ifdef LAZYJIT_BENCH_TORCH
  if (device == "CPU") peers.push_back({"libtorch", torchMlpStep(batch, static_cast<int>(ThreadPool::global().size()))});
#endif
  return trainStep("W11", "training step: W6 MLP 784-1024-1024-10, B=" + std::to_string(batch) + ", Adam", model,
                   {batch, 784}, batch, device, peers);
}

} // namespace lazyjit::bench

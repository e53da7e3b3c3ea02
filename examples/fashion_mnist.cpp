// Trains the reference's beautiful_mnist CNN on Fashion-MNIST (Debian's dataset-fashion-mnist):
// Conv2d 1->32 k5, ReLU, Conv2d 32->32 k5, ReLU, BatchNorm2d, max_pool2d, Conv2d 32->64 k3, ReLU,
// Conv2d 64->64 k3, ReLU, BatchNorm2d, max_pool2d, flatten, Linear 576->10; batch 512, Adam with
// lr 1e-3, over epochs of shuffled batches that a DataLoader assembles on a background thread.
// Prints a live progress line and, last, `test accuracy: NN.NN%`.
//
//   fashion_mnist [--steps N] [--eval-every N] [--data DIR] [--quiet] [--kernels]
//                 [--schedule none|cosine|onecycle|step] [--warmup N] [--clip NORM]
//                 [--bf16 | --fp16] [--save DIR] [--resume DIR] [--stop-at N]
//
// --kernels lists the fused kernels of the first training step as they run (forward, backward
// and the optimizer update), with their size and compile time.
// --schedule sets the learning rate per step (cosine annealing to 0 over the run, the 1cycle
// policy peaking at 10x the rate, or x0.1 at half and three quarters of the run), after --warmup
// steps of linear warmup from a tenth of the rate. --clip clips the gradients' global norm.
// --bf16 runs the forward's convolutions and matmuls in bfloat16 (float32 master weights and
// optimizer state); --fp16 in float16, with dynamic loss scaling.
// --save DIR writes DIR/checkpoint.safetensors at the end: the model, the optimizer, the
// schedule, the loss scaler and the position in the data; --stop-at N ends the run after step N
// of --steps (as an interrupted run). --resume DIR starts from the checkpoint and runs to --steps
// (give the same --steps, --schedule and --warmup: the schedule is laid over the whole run): the
// parameters then equal, bit for bit, those of a run that never stopped (the last line prints a
// checksum of them to compare).
//
// Runs at the default fusion level (OPT=5, lazyjit's own); OPT=2 trains with the reference's kernels.
// The progress line shows the test accuracy only on the steps where it was measured (every
// --eval-every steps and the last), and the last lines say the fusion level and the step time.
#include "lazyjit/NN/ClipGrad.h"
#include "lazyjit/NN/DataLoader.h"
#include "lazyjit/NN/GradScaler.h"
#include "lazyjit/NN/LRScheduler.h"
#include "lazyjit/Runtime/ThreadPool.h"
#include "lazyjit/lazyjit.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <unistd.h>

using namespace lazyjit;

namespace {

struct Model : nn::Module {
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

struct Options {
  int steps = 350, evalEvery = 50, stopAt = 0;
  bool quiet = false, kernels = false;
  std::string dir = "/usr/share/datasets/fashion-mnist/";
  std::string schedule = "none";
  int warmup = 0;
  double clip = 0;
  std::optional<DType> low; // --bf16 / --fp16
  std::string save, resume;
};

int usage(const char *argv0) {
  std::fprintf(stderr,
               "usage: %s [--steps N] [--eval-every N] [--data DIR] [--quiet] [--kernels]\n"
               "       [--schedule none|cosine|onecycle|step] [--warmup N] [--clip NORM] [--bf16 | --fp16]\n"
               "       [--save DIR] [--resume DIR] [--stop-at N]\n",
               argv0);
  return 1;
}

/// Parses argv into `o`; false on a bad argument.
bool parseArgs(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool hasValue = i + 1 < argc;
    auto intArg = [&](int &out, int min) {
      if (!hasValue) return false;
      char *end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end || v < min || v > 1000000) return false;
      out = static_cast<int>(v);
      return true;
    };
    if (a == "--steps") {
      if (!intArg(o.steps, 0)) return false;
    } else if (a == "--eval-every") {
      if (!intArg(o.evalEvery, 1)) return false;
    } else if (a == "--stop-at") {
      if (!intArg(o.stopAt, 1)) return false;
    } else if (a == "--warmup") {
      if (!intArg(o.warmup, 0)) return false;
    } else if (a == "--clip" && hasValue) {
      char *end = nullptr;
      o.clip = std::strtod(argv[++i], &end);
      if (*end || !(o.clip > 0)) return false;
    } else if (a == "--data" && hasValue) {
      o.dir = std::string(argv[++i]) + "/";
    } else if (a == "--schedule" && hasValue) {
      o.schedule = argv[++i];
      if (o.schedule != "none" && o.schedule != "cosine" && o.schedule != "onecycle" && o.schedule != "step")
        return false;
    } else if ((a == "--save" || a == "--resume") && hasValue) {
      (a == "--save" ? o.save : o.resume) = argv[++i];
    } else if (a == "--bf16" || a == "--fp16") {
      if (o.low) return false;
      o.low = a == "--bf16" ? dtypes::bfloat16 : dtypes::float16;
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (a == "--kernels") {
      o.kernels = true;
    } else {
      return false;
    }
  }
  return true;
}

std::shared_ptr<nn::IDXDataset> loadSplit(const std::string &dir, const std::string &split) {
  auto opts = nn::IDXOptions().normalize(true).int32Labels(true).imageShape({1, 28, 28});
  return std::make_shared<nn::IDXDataset>(dir + split + "-images-idx3-ubyte.gz", dir + split + "-labels-idx1-ubyte.gz",
                                          opts);
}

double accuracy(const Model &model, const std::shared_ptr<nn::IDXDataset> &test) {
  Tensor::TrainingGuard eval(false);
  Tensor::NoGradGuard noGrad;
  nn::DataLoader loader(test, 2000, nn::DataLoaderOptions().shuffle(false));
  int64_t correct = 0;
  for (nn::Batch &b : loader) correct += model(b.x).argmax(1).eq(b.y).sum().item<int64_t>();
  return 100.0 * static_cast<double>(correct) / static_cast<double>(test->size());
}

/// The learning-rate schedule over `steps` steps (null for none), after `warmup` warmup steps.
std::shared_ptr<nn::optim::LRScheduler> makeSchedule(nn::optim::Optimizer &opt, const Options &o) {
  using namespace nn::optim;
  int64_t main = std::max<int64_t>(1, o.steps - o.warmup);
  double base = getLearningRate(opt);
  auto mainSchedule = [&]() -> std::shared_ptr<LRScheduler> {
    if (o.schedule == "cosine") return std::make_shared<CosineAnnealingLR>(opt, main);
    if (o.schedule == "onecycle") return std::make_shared<OneCycleLR>(opt, base * 10, main);
    if (o.schedule == "step") return std::make_shared<MultiStepLR>(opt, std::vector<int64_t>{main / 2, main * 3 / 4});
    return nullptr;
  };
  if (o.warmup == 0) return mainSchedule();
  // SequentialLR wants its children built one after another, just before it
  auto warm = std::make_shared<LinearLR>(opt, 0.1, 1.0, o.warmup);
  std::shared_ptr<LRScheduler> s = mainSchedule();
  if (!s) return warm;
  return std::make_shared<SequentialLR>(opt, std::vector<std::shared_ptr<LRScheduler>>{warm, s},
                                        std::vector<int64_t>{o.warmup});
}

/// Everything a resumed run needs, under one prefix per part, in one safetensors file.
struct Checkpoint {
  static std::string path(const std::string &dir) { return dir + "/checkpoint.safetensors"; }

  static nn::StateDict sub(const nn::StateDict &d, const std::string &prefix) {
    nn::StateDict out;
    for (const auto &[k, t] : d)
      if (k.rfind(prefix, 0) == 0) out.insert(k.substr(prefix.size()), t);
    return out;
  }
};

/// The FNV-1a hash of every parameter and buffer's bytes: equal runs print equal checksums.
uint64_t checksum(Model &model) {
  uint64_t h = 1469598103934665603ULL;
  for (const auto &[name, t] : nn::getStateDict(model))
    for (uint8_t b : t.toBytes()) h = (h ^ b) * 1099511628211ULL;
  return h;
}

struct Trainer {
  const Options &o;
  Model model;
  nn::optim::LAMB opt{nn::optim::Adam(nn::getParameters(model), 1e-3)};
  std::shared_ptr<nn::optim::LRScheduler> schedule;
  nn::GradScaler scaler{nn::GradScaler::Options{65536.0, 2.0, 0.5, 2000, o.low == dtypes::float16}};
  int step = 0; // steps done

  explicit Trainer(const Options &options) : o(options), schedule(makeSchedule(opt, options)) {}

  float trainStep(const nn::Batch &b) {
    Tensor::TrainingGuard trainMode(true);
    opt.zeroGrad();
    Tensor loss;
    {
      std::optional<Tensor::AutocastGuard> autocast;
      if (o.low) autocast.emplace(*o.low);
      loss = model(b.x).sparseCategoricalCrossentropy(b.y);
    }
    scaler.scale(loss).backward();
    if (o.clip > 0) {
      scaler.unscale(opt);
      nn::clipGradNorm(opt.params, o.clip);
    }
    scaler.step(opt);
    scaler.update();
    if (schedule) schedule->step();
    ++step;
    return loss.item<float>();
  }

  void save(const std::string &dir, uint64_t epoch, size_t batch) {
    std::filesystem::create_directories(dir);
    nn::StateDict all;
    for (const auto &[k, t] : nn::getStateDict(model, "model.")) all.insert(k, t);
    for (const auto &[k, t] : nn::getStateDict(opt, "optim.")) all.insert(k, t);
    if (schedule)
      for (const auto &[k, t] : schedule->stateDict("schedule.")) all.insert(k, t);
    for (const auto &[k, t] : scaler.stateDict()) all.insert("scaler." + k, t);
    TensorOptions f64{dtypes::float64, std::nullopt, false};
    all.insert("progress.step", Tensor::fromValues({static_cast<double>(step)}, {}, f64));
    all.insert("progress.epoch", Tensor::fromValues({static_cast<double>(epoch)}, {}, f64));
    all.insert("progress.batch", Tensor::fromValues({static_cast<double>(batch)}, {}, f64));
    safeSave(all, Checkpoint::path(dir));
  }

  /// Loads a checkpoint; returns the (epoch, batch) to go on from.
  std::pair<uint64_t, size_t> load(const std::string &dir) {
    nn::StateDict all = safeLoad(Checkpoint::path(dir));
    nn::loadStateDict(model, Checkpoint::sub(all, "model."));
    nn::loadStateDict(opt, Checkpoint::sub(all, "optim."));
    nn::StateDict sched = Checkpoint::sub(all, "schedule.");
    LAZYJIT_USER_CHECK(static_cast<bool>(schedule) == !sched.empty(), Error,
                       "{}: the checkpoint was written with another --schedule", Checkpoint::path(dir));
    if (schedule) schedule->loadStateDict(all, "schedule.");
    scaler.loadStateDict(Checkpoint::sub(all, "scaler."));
    step = static_cast<int>(all.at("progress.step").item<double>());
    return {static_cast<uint64_t>(all.at("progress.epoch").item<double>()),
            static_cast<size_t>(all.at("progress.batch").item<double>())};
  }
};

void observeKernels(int &listed) {
  std::printf("kernels of training step 1 (forward, backward, Adam update):\n");
  setScheduleObserver([&listed](const ScheduleItem &, const Program *prg) {
    if (!prg) return;
    const ProgramInfo &info = prg->info();
    std::printf("  %3d %-36s %8.2f MFLOP %8.2f MB  compiled in %6.1f ms%s\n", ++listed, info.name.c_str(),
                static_cast<double>(info.flops.isInt() ? info.flops.asInt() : 0) / 1e6,
                static_cast<double>(info.memBytes) / 1e6, info.compileSeconds * 1e3,
                info.fromCache ? " (disk cache)" : "");
  });
}

int run(const Options &o) {
  auto train = loadSplit(o.dir, "train"), test = loadSplit(o.dir, "t10k");
  nn::DataLoader loader(train, 512, nn::DataLoaderOptions().seed(42).dropLast(true));
  std::printf("Fashion-MNIST: %zu training and %zu test images; %d steps of batch 512, %zu a epoch (OPT=%d, %s%s)\n",
              train->size(), test->size(), o.steps, loader.batchesPerEpoch(), config().opt, defaultDevice().c_str(),
              o.low ? (", autocast " + std::string(o.low->name())).c_str() : "");

  Tensor::manualSeed(42);
  Trainer t(o);
  std::pair<uint64_t, size_t> position{0, 0}; // the epoch and batch of the next step
  if (!o.resume.empty()) {
    auto [epoch, batch] = t.load(o.resume);
    loader.setEpoch(epoch, batch);
    position = {epoch, batch};
    std::printf("resumed from %s at step %d (epoch %llu, batch %zu)\n", Checkpoint::path(o.resume).c_str(), t.step,
                static_cast<unsigned long long>(epoch), batch);
  }
  bool tty = isatty(fileno(stdout)) && !o.quiet;
  double totalMs = 0, finalAcc = -1;
  float firstLoss = 0, loss = 0;
  int listed = 0, timed = 0;
  const int start = t.step, end = o.stopAt ? std::min(o.stopAt, o.steps) : o.steps;
  while (t.step < end) {
    std::optional<nn::Batch> b = loader.next();
    if (!b) continue; // the epoch ended: the next one starts
    bool first = t.step == start;
    if (o.kernels && first) observeKernels(listed);
    auto t0 = std::chrono::steady_clock::now();
    loss = t.trainStep(*b);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (o.kernels && first) {
      setScheduleObserver(nullptr);
      std::printf("%d kernels\n", listed);
    }
    if (!first) totalMs += ms, ++timed; // the first step compiles every kernel
    if (first) firstLoss = loss;
    // the accuracy is measured (and shown) on these steps only; the other lines leave it blank
    position = {b->epoch, b->index + 1};
    bool evaluated = t.step % o.evalEvery == 0 || t.step == end;
    double acc = evaluated ? accuracy(t.model, test) : -1;
    if (t.step == end) finalAcc = acc;
    char accText[32] = "";
    if (evaluated) std::snprintf(accText, sizeof accText, "  test accuracy %6.2f%%", acc);
    char line[200];
    std::snprintf(line, sizeof line, "epoch %2llu step %4d/%d  loss %6.3f  lr %.2e  %7.1f ms/step  wait %5.2f ms%s",
                  static_cast<unsigned long long>(b->epoch), t.step, o.steps, loss, t.opt.lr.item<double>(),
                  timed ? totalMs / timed : ms, loader.lastWaitSeconds() * 1e3, accText);
    if (tty) {
      // an evaluated line stays on the screen; the others are overwritten by the next step
      std::printf("\r%-100s%s", line, evaluated ? "\n" : "");
      std::fflush(stdout);
    } else if (!o.quiet && (t.step % 10 == 0 || first || evaluated)) {
      std::printf("%s\n", line);
    }
  }
  if (!o.save.empty()) t.save(o.save, position.first, position.second);
  if (finalAcc < 0) finalAcc = accuracy(t.model, test);
  std::printf("loss %.3f -> %.3f over steps %d..%d\n", firstLoss, loss, start + 1, end);
  std::printf("fusion level OPT=%d (%s); %.1f ms/step after the first (%s, %zu threads); the loader kept the "
              "steps waiting %.2f ms in all\n",
              config().opt,
              config().opt == kReferenceOptLevel ? "the reference's kernels"
              : config().opt == kDefaultOptLevel ? "lazyjit's own fusions, the default"
                                                 : "set by OPT",
              timed ? totalMs / timed : 0.0, defaultDevice().c_str(), ThreadPool::global().size(),
              loader.totalWaitSeconds() * 1e3);
  if (!o.save.empty()) std::printf("saved %s\n", Checkpoint::path(o.save).c_str());
  std::printf("parameter checksum: %016llx\n", static_cast<unsigned long long>(checksum(t.model)));
  std::printf("test accuracy: %.2f%%\n", finalAcc);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parseArgs(argc, argv, o)) return usage(argv[0]);
  try {
    return run(o);
  } catch (const Error &e) {
    std::fprintf(stderr, "fashion_mnist: error: %s\n", e.what());
    return 1;
  }
}

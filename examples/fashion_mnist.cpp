// Trains the reference's beautiful_mnist CNN on Fashion-MNIST (Debian's dataset-fashion-mnist):
// Conv2d 1->32 k5, ReLU, Conv2d 32->32 k5, ReLU, BatchNorm2d, max_pool2d, Conv2d 32->64 k3, ReLU,
// Conv2d 64->64 k3, ReLU, BatchNorm2d, max_pool2d, flatten, Linear 576->10; batch 512, Adam with
// lr 1e-3, random batches. Prints a live progress line and, last, `test accuracy: NN.NN%`.
//
//   fashion_mnist [--steps N] [--eval-every N] [--data DIR] [--quiet] [--kernels]
//
// --kernels lists the fused kernels of the first training step as they run (forward, backward
// and the optimizer update), with their size and compile time.
//
// Runs at the default fusion level (OPT=5, lazyjit's own); OPT=2 trains with the reference's kernels.
// The progress line shows the test accuracy only on the steps where it was measured (every
// --eval-every steps and the last), and the last lines say the fusion level and the step time.
#include "lazyjit/lazyjit.h"
#include "lazyjit/Runtime/ThreadPool.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

/// A data set held on the host: images as float32 [N, 1, 28, 28] scaled to [0, 1], int32 labels.
struct DataSet {
  std::vector<float> images;
  std::vector<int32_t> labels;
  int64_t size() const { return static_cast<int64_t>(labels.size()); }

  static DataSet load(const std::string &images, const std::string &labels) {
    DataSet d;
    Tensor x = nn::loadIDX(images), y = nn::loadIDX(labels);
    LAZYJIT_USER_CHECK(x.ndim() == 3 && y.ndim() == 1 && pyEq(x.shape()[0], y.shape()[0]), ShapeError,
                       "{} and {} do not hold matching images and labels", images, labels);
    d.images = x.cast(dtypes::float32).div(255.0).toVector<float>();
    d.labels = y.toVector<int32_t>();
    return d;
  }

  /// The images and labels at `idx`, as tensors [B, 1, 28, 28] and [B]. The reference selects a
  /// batch with X_train[samples] on the device, an (arange == idx) * X sum over all 60000 images
  /// (its own TODO calls it very slow); a C++ program gathers the rows on the host instead.
  std::pair<Tensor, Tensor> batch(const std::vector<int32_t> &idx) const {
    std::vector<float> x(idx.size() * 784);
    std::vector<int32_t> y(idx.size());
    for (size_t i = 0; i < idx.size(); ++i) {
      std::memcpy(&x[i * 784], &images[static_cast<size_t>(idx[i]) * 784], 784 * sizeof(float));
      y[i] = labels[idx[i]];
    }
    int64_t b = static_cast<int64_t>(idx.size());
    return {Tensor::fromVector(x, {b, 1, 28, 28}), Tensor::fromVector(y, {b})};
  }
};

double accuracy(const Model &model, const DataSet &test) {
  Tensor::TrainingGuard eval(false);
  Tensor::NoGradGuard noGrad;
  int64_t correct = 0;
  const int64_t chunk = 2000;
  for (int64_t s = 0; s < test.size(); s += chunk) {
    std::vector<int32_t> idx;
    for (int64_t i = s; i < std::min(test.size(), s + chunk); ++i) idx.push_back(static_cast<int32_t>(i));
    auto [x, y] = test.batch(idx);
    correct += model(x).argmax(1).eq(y).sum().item<int64_t>();
  }
  return 100.0 * static_cast<double>(correct) / static_cast<double>(test.size());
}

int usage(const char *argv0) {
  std::fprintf(stderr, "usage: %s [--steps N] [--eval-every N] [--data DIR] [--quiet] [--kernels]\n", argv0);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  int steps = 350, evalEvery = 50;
  bool quiet = false, kernels = false;
  std::string dir = "/usr/share/datasets/fashion-mnist/";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto intArg = [&](int &out) {
      if (i + 1 >= argc) return false;
      char *end = nullptr;
      long v = std::strtol(argv[++i], &end, 10);
      if (*end || v < 0 || v > 1000000) return false;
      out = static_cast<int>(v);
      return true;
    };
    if (a == "--steps") {
      if (!intArg(steps)) return usage(argv[0]);
    } else if (a == "--eval-every") {
      if (!intArg(evalEvery) || evalEvery == 0) return usage(argv[0]);
    } else if (a == "--data" && i + 1 < argc) {
      dir = std::string(argv[++i]) + "/";
    } else if (a == "--quiet") {
      quiet = true;
    } else if (a == "--kernels") {
      kernels = true;
    } else {
      return usage(argv[0]);
    }
  }
  try {
    DataSet train = DataSet::load(dir + "train-images-idx3-ubyte.gz", dir + "train-labels-idx1-ubyte.gz");
    DataSet test = DataSet::load(dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz");
    std::printf("Fashion-MNIST: %lld training and %lld test images; %d steps of batch 512 (OPT=%d, %s)\n",
                static_cast<long long>(train.size()), static_cast<long long>(test.size()), steps,
                config().opt, defaultDevice().c_str());

    Tensor::manualSeed(42);
    Model model;
    nn::optim::LAMB opt = nn::optim::Adam(nn::getParameters(model), 1e-3);
    bool tty = isatty(fileno(stdout)) && !quiet;

    double totalMs = 0, finalAcc = -1;
    float firstLoss = 0, loss = 0;
    int listed = 0;
    for (int step = 1; step <= steps; ++step) {
      if (kernels && step == 1) {
        std::printf("kernels of training step 1 (forward, backward, Adam update):\n");
        setScheduleObserver([&](const ScheduleItem &si, const Program *prg) {
          if (!prg) return;
          const ProgramInfo &info = prg->info();
          std::printf("  %3d %-36s %8.2f MFLOP %8.2f MB  compiled in %6.1f ms%s\n", ++listed, info.name.c_str(),
                      static_cast<double>(info.flops.isInt() ? info.flops.asInt() : 0) / 1e6,
                      static_cast<double>(info.memBytes) / 1e6,
                      info.compileSeconds * 1e3, info.fromCache ? " (disk cache)" : "");
        });
      }
      auto t0 = std::chrono::steady_clock::now();
      std::vector<int32_t> samples =
          Tensor::randint({512}, 0, train.size(), {dtypes::int32, std::nullopt, false}).toVector<int32_t>();
      auto [x, y] = train.batch(samples);
      {
        Tensor::TrainingGuard trainMode(true);
        opt.zeroGrad();
        Tensor l = model(x).sparseCategoricalCrossentropy(y).backward();
        opt.step();
        loss = l.item<float>();
      }
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (kernels && step == 1) {
        setScheduleObserver(nullptr);
        std::printf("%d kernels\n", listed);
      }
      if (step > 1) totalMs += ms; // the first step compiles every kernel
      if (step == 1) firstLoss = loss;
      // the accuracy is measured (and shown) on these steps only; the other lines leave it blank
      bool evaluated = step % evalEvery == 0 || step == steps;
      double acc = evaluated ? accuracy(model, test) : -1;
      if (step == steps) finalAcc = acc;
      double avg = step > 1 ? totalMs / (step - 1) : ms;
      char accText[32] = "";
      if (evaluated) std::snprintf(accText, sizeof accText, "  test accuracy %6.2f%%", acc);
      char line[160];
      std::snprintf(line, sizeof line, "step %4d/%d  loss %6.3f  %7.1f ms/step%s", step, steps, loss, avg, accText);
      if (tty) {
        // an evaluated line stays on the screen; the others are overwritten by the next step
        std::printf("\r%-72s%s", line, evaluated ? "\n" : "");
        std::fflush(stdout);
      } else if (!quiet && (step % 10 == 0 || step == 1 || evaluated)) {
        std::printf("%s\n", line);
      }
    }
    if (finalAcc < 0 && steps > 0) finalAcc = accuracy(model, test);
    std::printf("loss %.3f -> %.3f over %d steps\n", firstLoss, loss, steps);
    std::printf("fusion level OPT=%d (%s); %.1f ms/step after the first (%s, %zu threads)\n", config().opt,
                config().opt == kReferenceOptLevel ? "the reference's kernels"
                : config().opt == kDefaultOptLevel ? "lazyjit's own fusions, the default"
                                                   : "set by OPT",
                steps > 1 ? totalMs / (steps - 1) : 0.0, defaultDevice().c_str(), ThreadPool::global().size());
    std::printf("test accuracy: %.2f%%\n", steps > 0 ? finalAcc : 0.0);
    return 0;
  } catch (const Error &e) {
    std::fprintf(stderr, "fashion_mnist: error: %s\n", e.what());
    return 1;
  }
}

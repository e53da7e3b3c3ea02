// The demo: an MLP forward pass (784 -> 256 -> 128 -> 10, ReLU, log-softmax) on a batch of 32
// random inputs. It prints the schedule (the fused kernels), compiles and runs it on the default
// device (the CPU JIT), and prints the time it took and the result.
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/lazyjit.h"

#include <chrono>
#include <cstdio>

using namespace lazyjit;

int main() {
  try {
    Tensor::manualSeed(1337);
    nn::Linear l1(784, 256), l2(256, 128), l3(128, 10);
    Tensor x = Tensor::rand({32, 784});
    // the weights and inputs are realized first, so the schedule below is the model itself
    Tensor::corealize({x, l1.weight, *l1.bias, l2.weight, *l2.bias, l3.weight, *l3.bias});

    Tensor out = l3(l2(l1(x).relu()).relu()).logSoftmax();

    auto sched = schedule(out.lazydata());
    std::printf("schedule of the MLP forward (%zu items, OPT=%d):\n", sched.size(), config().opt);
    int i = 0;
    for (const auto &si : sched) {
      if (!si.isKernel()) {
        std::printf("  loadop %d %s\n", i++, std::string(opName(si.kind())).c_str());
        continue;
      }
      KernelSignature sig =
          describeKernel(si.ast, TargetSpec::host(config().llvmOptLevel), CompileOptions::from(config()));
      std::printf("  kernel %d %-24s %d buffers  opts [", i++, sig.name.c_str(), sig.numBuffers);
      for (size_t k = 0; k < sig.opts.size(); ++k) std::printf("%s%s", k ? ", " : "", sig.opts[k].str().c_str());
      std::printf("]\n");
    }

    auto t0 = std::chrono::steady_clock::now();
    RunStats stats = runSchedule(std::move(sched));
    getDevice(out.device()).synchronize();
    double first = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    // a second forward pass reuses the compiled kernels
    Tensor out2 = l3(l2(l1(x).relu()).relu()).logSoftmax();
    t0 = std::chrono::steady_clock::now();
    out2.realize();
    getDevice(out2.device()).synchronize();
    double second = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    std::printf("ran %d kernels on %s: first call %.2f ms (includes compile), second call %.3f ms\n",
                stats.kernels, out.device().c_str(), first, second);
    std::vector<float> v = out.toVector<float>();
    std::vector<int> pred = out.argmax(1).toVector<int>();
    std::printf("log-probabilities of sample 0:");
    for (int c = 0; c < 10; ++c) std::printf(" %.4f", v[c]);
    std::printf("\npredicted classes:");
    for (int p : pred) std::printf(" %d", p);
    std::printf("\n");
    return 0;
  } catch (const Error &e) {
    std::fprintf(stderr, "mlp: error: %s\n", e.what());
    return 1;
  }
}

// The training workloads of lazyjit-bench: W10, one training step of the Fashion-MNIST example's
// CNN (batch 512, Adam), and W11, one training step of the W6 MLP (Adam), each against the same
// step in libtorch (PyTorch's C++ API) in the same process when it is installed.
#pragma once

#include "BenchUtil.h"
// (declared only: TorchPeer.cpp includes this header without lazyjit's include path)
namespace lazyjit {
class DType;
}

#include <string>

namespace lazyjit::bench {

/// Steps per second, the kernels one step runs and the share of a step spent outside
/// runSchedule (graph building, autograd and scheduling) go into the result.
Result benchW10(int batch, const std::string &device);
/// W10 with the forward under autocast (`low`: bfloat16 or float16), against the float32 step.
Result benchW10LowPrecision(int batch, const std::string &device, DType low);
Result benchW11(int batch, const std::string &device);
/// The launch path of a Jit replay: microseconds per kernel (W9d).
Result benchW9d(const std::string &device);

#ifdef LAZYJIT_BENCH_TORCH
/// The same steps in libtorch on the CPU with `threads` threads: one step per call.
Call torchCnnStep(int batch, int threads);
Call torchMlpStep(int batch, int threads);
/// W5-W7's kernels in libtorch (no autograd), `threads` threads: one call each.
Call torchMatmul(int n, int threads);
Call torchMLP(int batch, int threads);
Call torchConv2d(int batch, int threads);
#endif

} // namespace lazyjit::bench

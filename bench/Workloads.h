// The workloads of lazyjit-bench (shared/bench/WORKLOADS.md), one function each, and the pieces
// they share. W1-W7 and the GPU's W8 are kernels timed through the public Tensor API against the
// peers of Peers.h (Kernels.cpp); W9a-W9c are the overheads around kernels: a first call in a
// fresh process, graph building and scheduling, compilation (Overheads.cpp). W9d, W10 and W11 are
// in Training.h.
#pragma once

#include "BenchUtil.h"
#include "lazyjit/lazyjit.h"

#include <functional>
#include <string>

namespace lazyjit::bench {

/// The sizes of one run; a GPU run uses larger ones.
struct Sizes {
  int64_t n1, rows, cols, n5a, n5b, mlpBatch, convN;
};

/// Waits for every kernel queued on `device`.
void sync(const std::string &device);
/// A realized tensor of uniform values in [-0.5, 0.5).
Tensor input(const Shape &shape, const std::string &dev);
/// Counts the kernels of `build()`'s schedule, then times `build()` realized and synchronized in
/// turns with `peers`' calls (timeInterleaved); the rate is `workPerCall` (bytes or flops) per
/// median call, in units of 1e9, and each peer's ratio its median over ours.
Result runTensor(const std::string &id, const std::string &name, const std::string &unit, double workPerCall,
                 const std::function<Tensor()> &build, const std::string &dev, const std::vector<Peer> &peers = {});

// ---- kernels (Kernels.cpp); `gpu` leaves out the CPU peers --------------------------------------

/// W8 on a GPU: the device's copy ceiling, a copy kernel of n1 floats through the same runtime.
Result benchDeviceCopy(const Sizes &sz, const std::string &device);
Result benchW1(const Sizes &sz, const std::string &device, bool gpu);
/// `readRate`: the plain read loop's GB/s of this run (0 if not measured).
Result benchW2(const Sizes &sz, const std::string &device, bool gpu, double readRate);
Result benchW3(const Sizes &sz, const std::string &device, bool gpu);
Result benchW4(const Sizes &sz, const std::string &device, bool gpu);
/// W5a/W5b: an n x n matmul.
Result benchW5(const std::string &id, int64_t n, const std::string &device, bool gpu);
Result benchW6(const Sizes &sz, const std::string &device, bool gpu);
Result benchW7(const Sizes &sz, const std::string &device, bool gpu);

// ---- overheads (Overheads.cpp) ------------------------------------------------------------------

/// W9a: the first softmax call in three fresh processes each, with an empty and a filled disk
/// cache (each process runs this executable with --w9a-child).
Result benchW9a(const std::string &device);
/// The fresh process of W9a: schedules, compiles and runs W3 once and prints the seconds it took.
void runW9aChild(const Sizes &sz, const std::string &device);
Result benchW9b(const std::string &device, int ops);
/// W9c: the median compile time of the kernels of W1-W7 (CPU only, without the disk cache).
Result benchW9c(const Sizes &sz);

// ---- request threads (Threads.cpp) ----------------------------------------------------------------

/// W14: the throughput of ResNet-style inference requests served by 1, 2 and 4 threads, timed in
/// turns, each row with its ratio to one thread (t1) and its latency percentiles.
std::vector<Result> benchW14(const std::string &device);

} // namespace lazyjit::bench

// The kernel workloads of lazyjit-bench, W1-W7 (and W8 on a GPU): each one built through the public
// Tensor API, timed realized, and compared with the same computation in Eigen or OpenBLAS.
#include "Peers.h"
#include "Training.h"
#include "Workloads.h"
#include "lazyjit/Runtime/ThreadPool.h"

#include <cstdint>
#include <optional>

namespace lazyjit::bench {

namespace {
int countKernels(const Tensor &t) {
  int n = 0;
  for (const auto &si : schedule(t.lazydata()))
    if (si.isKernel()) ++n;
  return n;
}
#ifdef LAZYJIT_BENCH_TORCH
// libtorch runs on as many threads as lazyjit's pool
int torchThreads() { return static_cast<int>(ThreadPool::global().size()); }
#endif
} // namespace

void sync(const std::string &device) { getDevice(device).synchronize(); }

Tensor input(const Shape &shape, const std::string &dev) {
  Tensor t = Tensor::rand(shape, {std::nullopt, dev}).sub(0.5);
  t.realize();
  return t;
}

Result runTensor(const std::string &id, const std::string &name, const std::string &unit, double workPerCall,
                 const std::function<Tensor()> &build, const std::string &dev, const std::vector<Peer> &peers) {
  Result r{id, name, unit};
  {
    Tensor probe = build();
    r.kernels = countKernels(probe);
  }
  atReferenceLevel([&] {
    Tensor probe = build();
    r.refKernels = countKernels(probe);
  });
  timeAgainstPeers(
      r,
      [&] {
        Tensor out = build();
        out.realize();
        sync(dev);
      },
      peers);
  r.rate = workPerCall / r.t.median / 1e9;
  return r;
}

Result benchDeviceCopy(const Sizes &sz, const std::string &device) {
  Tensor a = input({sz.n1}, device);
  return runTensor("W8", "copy (device)", "GB/s", 8.0 * sz.n1, [&] { return a.add(0.0f).contiguous(); }, device);
}

Result benchW1(const Sizes &sz, const std::string &device, bool gpu) {
  Tensor a = input({sz.n1}, device), b = input({sz.n1}, device), c = input({sz.n1}, device);
  std::vector<Peer> peers;
#ifdef LAZYJIT_BENCH_EIGEN
  if (!gpu) peers.push_back({"eigen", eigenW1(static_cast<size_t>(sz.n1))});
#endif
  (void)gpu;
  Result r = runTensor("W1", "relu(a*b + c) * 0.5", "GB/s", 16.0 * static_cast<double>(sz.n1),
                       [&] { return (a * b + c).relu() * 0.5; }, device, peers);
  r.vsCopy = true;
  return r;
}

Result benchW2(const Sizes &sz, const std::string &device, bool gpu, double readRate) {
  Tensor a = input({sz.n1}, device);
  std::vector<Peer> peers;
#ifdef LAZYJIT_BENCH_EIGEN
  if (!gpu) peers.push_back({"eigen", eigenW2(static_cast<size_t>(sz.n1))});
#endif
  (void)gpu;
  Result r = runTensor("W2", "sum of all elements", "GB/s", 4.0 * static_cast<double>(sz.n1),
                       [&] { return a.sum(); }, device, peers);
  r.vsCopy = true;
  if (readRate > 0) r.vs["read"] = r.rate / readRate; // context: a plain read loop, same run
  return r;
}

Result benchW3(const Sizes &sz, const std::string &device, bool gpu) {
  Tensor x = input({sz.rows, sz.cols}, device);
  std::vector<Peer> peers;
#ifdef LAZYJIT_BENCH_EIGEN
  if (!gpu) peers.push_back({"eigen", eigenRows(static_cast<size_t>(sz.rows), static_cast<size_t>(sz.cols), true)});
#endif
  (void)gpu;
  Result r = runTensor("W3", "softmax over the last axis", "GB/s", 8.0 * static_cast<double>(sz.rows * sz.cols),
                       [&] { return x.softmax(); }, device, peers);
  r.vsCopy = true;
  return r;
}

Result benchW4(const Sizes &sz, const std::string &device, bool gpu) {
  Tensor x = input({sz.rows, sz.cols}, device);
  std::vector<Peer> peers;
#ifdef LAZYJIT_BENCH_EIGEN
  if (!gpu) peers.push_back({"eigen", eigenRows(static_cast<size_t>(sz.rows), static_cast<size_t>(sz.cols), false)});
#endif
  (void)gpu;
  Result r = runTensor("W4", "layernorm over the last axis (eps 1e-5)", "GB/s",
                       8.0 * static_cast<double>(sz.rows * sz.cols), [&] { return x.layernorm(); }, device, peers);
  r.vsCopy = true;
  return r;
}

Result benchW5(const std::string &id, int64_t n, const std::string &device, bool gpu) {
  Tensor a = input({n, n}, device), b = input({n, n}, device);
  std::vector<Peer> peers;
#ifdef LAZYJIT_BENCH_OPENBLAS
  if (!gpu) peers.push_back({"openblas", blasGemm(static_cast<int>(n), static_cast<int>(n), static_cast<int>(n))});
#endif
#ifdef LAZYJIT_BENCH_TORCH
  if (!gpu) peers.push_back({"libtorch", torchMatmul(static_cast<int>(n), torchThreads())});
#endif
  (void)gpu;
  return runTensor(id, "matmul n=" + std::to_string(n), "GFLOP/s", 2.0 * n * n * static_cast<double>(n),
                   [&] { return a.matmul(b); }, device, peers);
}

Result benchW6(const Sizes &sz, const std::string &device, bool gpu) {
  int64_t B = sz.mlpBatch;
  Tensor x = input({B, 784}, device), w1 = input({784, 1024}, device), w2 = input({1024, 1024}, device),
         w3 = input({1024, 10}, device);
  double flops = 2.0 * B * (784.0 * 1024 + 1024.0 * 1024 + 1024.0 * 10);
  std::vector<Peer> peers;
#ifdef LAZYJIT_BENCH_OPENBLAS
  if (!gpu) peers.push_back({"openblas", blasMLP(static_cast<int>(B))});
#endif
#ifdef LAZYJIT_BENCH_TORCH
  if (!gpu) peers.push_back({"libtorch", torchMLP(static_cast<int>(B), torchThreads())});
#endif
  (void)gpu;
  return runTensor("W6", "MLP relu(x@W1) -> relu(@W2) -> @W3, B=" + std::to_string(B), "GFLOP/s", flops,
                   [&] { return x.matmul(w1).relu().matmul(w2).relu().matmul(w3); }, device, peers);
}

Result benchW7(const Sizes &sz, const std::string &device, bool gpu) {
  int64_t N = sz.convN;
  Tensor x = input({N, 64, 56, 56}, device), w = input({64, 64, 3, 3}, device);
  double flops = 2.0 * N * 64 * 64 * 9 * 56 * 56;
  std::vector<Peer> peers;
#ifdef LAZYJIT_BENCH_OPENBLAS
  // the equivalent im2col GEMM: M=64, N=8*56*56, K=576
  if (!gpu) peers.push_back({"openblas", blasGemm(64, static_cast<int>(N * 56 * 56), 576)});
#endif
#ifdef LAZYJIT_BENCH_TORCH
  if (!gpu) peers.push_back({"libtorch", torchConv2d(static_cast<int>(N), torchThreads())});
#endif
  (void)gpu;
  return runTensor("W7", "conv2d NCHW x[" + std::to_string(N) + ",64,56,56] w[64,64,3,3] pad 1", "GFLOP/s", flops,
                   [&] { return x.conv2d(w, std::nullopt, 1, {1}, {1}, {1}); }, device, peers);
}

} // namespace lazyjit::bench

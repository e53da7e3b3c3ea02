// W14: request threads. A server runs one model for many requests from several threads at once;
// the cores are the same, so N request threads should serve at least the throughput of one
// thread that runs every request itself (the kernels of concurrent requests queue for the pool's
// cores instead of oversubscribing them: ThreadPool.h). Each request is a ResNet basic block at
// batch 1 (W7's convolution twice, with the residual add and ReLUs) over weights every thread
// shares, realized once.
#include "Workloads.h"
#include "lazyjit/Runtime/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <thread>

namespace lazyjit::bench {

namespace {
Tensor basicBlock(const Tensor &x, const Tensor &w1, const Tensor &w2) {
  Tensor h = x.conv2d(w1, std::nullopt, 1, {1}, {1}, {1}).relu();
  return (h.conv2d(w2, std::nullopt, 1, {1}, {1}, {1}) + x).relu();
}
} // namespace

std::vector<Result> benchW14(const std::string &device) {
  constexpr int kRequests = 48;
  const std::vector<int> threadCounts{1, 2, 4};
  Tensor w1 = input({64, 64, 3, 3}, device), w2 = input({64, 64, 3, 3}, device);
  // each request's input, made and realized before timing (a server receives its data)
  std::vector<Tensor> xs;
  for (int r = 0; r < kRequests; ++r) xs.push_back(input({1, 64, 56, 56}, device));
  // the expected output of each request, from one thread (every configuration is checked)
  std::vector<float> expect;
  for (const auto &x : xs) expect.push_back(basicBlock(x, w1, w2).sum().item<float>());

  std::mutex latMu;
  std::vector<std::vector<double>> latencies(threadCounts.size());
  int wrong = 0;
  auto serve = [&](size_t cfg) {
    int threads = threadCounts[cfg];
    std::vector<std::thread> pool;
    std::vector<double> lat;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        std::vector<double> mine;
        int bad = 0;
        for (int r = t; r < kRequests; r += threads) {
          auto a = Clock::now();
          float got = basicBlock(xs[static_cast<size_t>(r)], w1, w2).sum().item<float>();
          mine.push_back(seconds(a, Clock::now()));
          if (std::abs(got - expect[static_cast<size_t>(r)]) > 1e-3f * std::max(1.0f, std::abs(got))) ++bad;
        }
        std::lock_guard lock(latMu);
        latencies[cfg].insert(latencies[cfg].end(), mine.begin(), mine.end());
        wrong += bad;
      });
    for (auto &th : pool) th.join();
  };
  std::vector<Call> calls;
  for (size_t c = 0; c < threadCounts.size(); ++c) calls.push_back([&, c] { serve(c); });
  std::vector<Timing> t = timeInterleaved(calls, kRounds, 1, 1);

  int kernels = 0; // of one request
  for (const auto &si : schedule(basicBlock(xs[0], w1, w2).sum().lazydata())) kernels += si.isKernel();
  std::vector<Result> out;
  ThreadPool &pool = ThreadPool::global();
  for (size_t c = 0; c < threadCounts.size(); ++c) {
    Result r{"W14-t" + std::to_string(threadCounts[c]),
             "ResNet basic block b1 (2 conv 3x3 64ch 56x56), " + std::to_string(kRequests) + " requests over " +
                 std::to_string(threadCounts[c]) + " request threads",
             "req/s"};
    r.t = t[c];
    r.kernels = kernels;
    r.rate = kRequests / t[c].median;
    r.vs["t1"] = t[0].median / t[c].median; // throughput over one thread running every request
    std::vector<double> &l = latencies[c];
    std::sort(l.begin(), l.end());
    auto pct = [&](double p) { return l.empty() ? 0.0 : l[std::min(l.size() - 1, static_cast<size_t>(p * l.size()))]; };
    r.note = fmt::format("latency p50 {:.2f} ms, p99 {:.2f} ms", pct(0.50) * 1e3, pct(0.99) * 1e3);
    out.push_back(r);
  }
  out.back().note += fmt::format("; at most {} threads ran pool work at once (pool of {}){}", pool.peakBusy(),
                                 pool.size(), wrong ? fmt::format("; {} WRONG results", wrong) : "");
  return out;
}

} // namespace lazyjit::bench

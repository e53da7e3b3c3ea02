// A persistent pool of worker threads for CPU kernels and parallel compiles. The calling thread
// takes part in the work, so a pool of N threads has N-1 workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lazyjit {

class ThreadPool {
public:
  explicit ThreadPool(size_t threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// The process pool, sized by the THREADS knob (default: all cores).
  static ThreadPool &global();
  size_t size() const { return workers.size() + 1; }

  /// Runs fn(begin, end) over [0, n) in at most `chunks` contiguous chunks and waits for all of
  /// them. chunks <= 1 runs inline on the caller.
  void parallelFor(int64_t n, size_t chunks, const std::function<void(int64_t, int64_t)> &fn);
  /// Runs every task (on the pool and the caller) and waits; the first exception is rethrown.
  void runAll(const std::vector<std::function<void()>> &tasks);

private:
  std::vector<std::thread> workers;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  bool stopping = false;
  void workerLoop();
};

} // namespace lazyjit

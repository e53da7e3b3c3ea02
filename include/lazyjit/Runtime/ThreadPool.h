// A persistent pool of worker threads for CPU kernels and parallel compiles, shared by every
// thread of the process.
//
// The pool owns THREADS cores (the knob; default all of them), and at most that many threads run
// pool work at once: a thread that runs work (a kernel, a batch of compiles) takes a core first,
// waiting while every core is busy, and takes part in its own work; the workers (THREADS - 1)
// help a batch only on a core its caller took for them, when one is free. So request threads
// that launch kernels at the same time queue for the cores instead of oversubscribing them, and
// a batch whose caller found no free core runs on the caller alone, taking helpers as cores free
// up between its tasks. A task that starts pool work itself (nested) runs it inline, on its core.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
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
  /// The cores the pool runs work on (the workers and one caller).
  size_t size() const { return workers.size() + 1; }

  /// Runs fn(begin, end) over [0, n) in at most `chunks` contiguous chunks and waits for all of
  /// them. chunks <= 1 runs on the caller alone (on a core of the pool).
  void parallelFor(int64_t n, size_t chunks, const std::function<void(int64_t, int64_t)> &fn);
  /// Runs every task (on the caller and the helpers its cores allow) and waits; the first
  /// exception is rethrown.
  void runAll(const std::vector<std::function<void()>> &tasks);

  /// The most threads that ran pool work at the same time since the pool started (the stress
  /// test and lazyjit-bench W14 check that it never exceeds size()).
  size_t peakBusy() const;

private:
  struct Batch;
  class CoreScope;
  std::vector<std::thread> workers;
  mutable std::mutex mu;
  std::condition_variable ticketCv; ///< workers wait for a ticket
  std::condition_variable coreCv;   ///< callers wait for a free core
  /// One ticket: one worker helps that batch, on a core its caller took for it.
  std::deque<std::shared_ptr<Batch>> tickets;
  size_t freeCores = 0;   ///< cores no thread runs pool work on
  size_t idleWorkers = 0; ///< workers waiting for a ticket
  size_t busy = 0, peak = 0;
  bool stopping = false;

  void workerLoop();
  /// Takes a core for the calling thread, waiting while none is free.
  void acquireCore();
  void releaseCore();
  /// Hands `b` to as many idle workers as there are free cores and tasks left to share.
  void recruit(const std::shared_ptr<Batch> &b);
};

} // namespace lazyjit

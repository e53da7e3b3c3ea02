// The persistent thread pool (ThreadPool.h): a core count that bounds the threads running pool
// work, batches whose tasks are claimed by index, and tickets that bring workers to a batch.
#include "lazyjit/Runtime/ThreadPool.h"
#include "lazyjit/Support/Config.h"

#include <algorithm>
#include <atomic>
#include <exception>

namespace lazyjit {

namespace {
// Whether the calling thread runs pool work on a core (then work it starts runs inline).
thread_local bool tOnCore = false;

// Marks the calling thread as on a core for a scope.
struct OnCore {
  OnCore() { tOnCore = true; }
  ~OnCore() { tOnCore = false; }
};
} // namespace

struct ThreadPool::Batch {
  explicit Batch(const std::vector<std::function<void()>> &tasks) : tasks(tasks), count(tasks.size()) {}
  /// The caller's, alive while a task is unfinished: a worker whose ticket comes after the last
  /// task was claimed reads only `count`.
  const std::vector<std::function<void()>> &tasks;
  const size_t count;
  std::atomic<size_t> next{0}, remaining{0};
  std::mutex doneMu;
  std::condition_variable doneCv;
  std::exception_ptr error;

  /// Runs tasks of this batch until none is left to claim; `between` runs before each but the first.
  template <typename F> void work(F &&between) {
    for (bool first = true;; first = false) {
      if (!first) between();
      size_t k = next.fetch_add(1);
      if (k >= count) return;
      try {
        tasks[k]();
      } catch (...) {
        std::lock_guard lock(doneMu);
        if (!error) error = std::current_exception();
      }
      // the count drops under the lock: the caller that sees it reach 0 returns and may destroy
      // the task list this batch refers to
      std::lock_guard lock(doneMu);
      if (remaining.fetch_sub(1) == 1) doneCv.notify_all();
    }
  }
};

ThreadPool::ThreadPool(size_t threads) {
  freeCores = std::max<size_t>(threads, 1);
  idleWorkers = freeCores - 1;
  for (size_t i = 1; i < threads; ++i) workers.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  ticketCv.notify_all();
  for (auto &t : workers) t.join();
}

ThreadPool &ThreadPool::global() {
  static ThreadPool *pool = [] {
    size_t n = config().threads > 0 ? static_cast<size_t>(config().threads)
                                    : std::max(1u, std::thread::hardware_concurrency());
    return new ThreadPool(n); // lives until exit; workers must not be joined during static teardown
  }();
  return *pool;
}

size_t ThreadPool::peakBusy() const {
  std::lock_guard lock(mu);
  return peak;
}

void ThreadPool::acquireCore() {
  std::unique_lock lock(mu);
  coreCv.wait(lock, [&] { return freeCores > 0; });
  --freeCores;
  peak = std::max(peak, ++busy);
}

void ThreadPool::releaseCore() {
  {
    std::lock_guard lock(mu);
    ++freeCores;
    --busy;
  }
  coreCv.notify_one();
}

// Holds a core of the pool for the calling thread (waiting for one first) for a scope.
class ThreadPool::CoreScope {
public:
  explicit CoreScope(ThreadPool &pool) : pool(pool) { pool.acquireCore(); }
  ~CoreScope() { pool.releaseCore(); }
  CoreScope(const CoreScope &) = delete;
  CoreScope &operator=(const CoreScope &) = delete;

private:
  ThreadPool &pool;
  OnCore on;
};

void ThreadPool::recruit(const std::shared_ptr<Batch> &b) {
  size_t left = b->count - std::min(b->count, b->next.load());
  if (left <= 1) return; // the caller takes the last one itself
  size_t n = 0;
  {
    std::lock_guard lock(mu);
    size_t available = idleWorkers > tickets.size() ? idleWorkers - tickets.size() : 0;
    n = std::min({freeCores, available, left - 1});
    freeCores -= n;
    busy += n;
    peak = std::max(peak, busy);
    for (size_t i = 0; i < n; ++i) tickets.push_back(b);
  }
  for (size_t i = 0; i < n; ++i) ticketCv.notify_one();
}

void ThreadPool::workerLoop() {
  for (;;) {
    std::shared_ptr<Batch> b;
    {
      std::unique_lock lock(mu);
      ticketCv.wait(lock, [&] { return stopping || !tickets.empty(); });
      if (stopping && tickets.empty()) return;
      b = std::move(tickets.front());
      tickets.pop_front();
      --idleWorkers;
    }
    {
      OnCore on;
      b->work([] {});
    }
    b.reset();
    {
      std::lock_guard lock(mu);
      ++idleWorkers;
      ++freeCores; // the core the batch's caller took for this worker
      --busy;
    }
    coreCv.notify_one();
  }
}

void ThreadPool::runAll(const std::vector<std::function<void()>> &tasks) {
  if (tasks.empty()) return;
  if (tOnCore) { // nested: this thread already runs on a core
    for (const auto &t : tasks) t();
    return;
  }
  CoreScope core(*this);
  if (tasks.size() == 1 || workers.empty()) {
    for (const auto &t : tasks) t();
    return;
  }
  auto b = std::make_shared<Batch>(tasks);
  b->remaining = tasks.size();
  recruit(b);
  // between tasks, workers whose cores freed up (another thread's kernel ended) join in
  b->work([&] { recruit(b); });
  {
    std::unique_lock lock(b->doneMu);
    b->doneCv.wait(lock, [&] { return b->remaining.load() == 0; });
  }
  if (b->error) std::rethrow_exception(b->error);
}

void ThreadPool::parallelFor(int64_t n, size_t chunks, const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0) return;
  chunks = std::min<size_t>(chunks, static_cast<size_t>(n));
  if (chunks <= 1) { // a small kernel: on the caller, on a core (no task list to build)
    if (tOnCore) return fn(0, n);
    CoreScope core(*this);
    return fn(0, n);
  }
  std::vector<std::function<void()>> tasks;
  for (size_t c = 0; c < chunks; ++c) {
    int64_t b = n * static_cast<int64_t>(c) / static_cast<int64_t>(chunks);
    int64_t e = n * static_cast<int64_t>(c + 1) / static_cast<int64_t>(chunks);
    if (b < e) tasks.push_back([&fn, b, e] { fn(b, e); });
  }
  runAll(tasks);
}

} // namespace lazyjit

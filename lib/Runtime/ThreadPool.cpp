// The persistent thread pool: a shared queue, the caller helping until its batch is done.
#include "lazyjit/Runtime/ThreadPool.h"
#include "lazyjit/Support/Config.h"

#include <atomic>
#include <exception>

namespace lazyjit {

ThreadPool::ThreadPool(size_t threads) {
  for (size_t i = 1; i < threads; ++i) workers.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  cv.notify_all();
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

void ThreadPool::workerLoop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping && queue.empty()) return;
      job = std::move(queue.front());
      queue.pop_front();
    }
    job();
  }
}

void ThreadPool::runAll(const std::vector<std::function<void()>> &tasks) {
  if (tasks.empty()) return;
  if (tasks.size() == 1 || workers.empty()) {
    for (const auto &t : tasks) t();
    return;
  }
  std::atomic<size_t> remaining{tasks.size()};
  std::mutex doneMu;
  std::condition_variable doneCv;
  std::exception_ptr error;
  std::mutex errMu;
  auto wrap = [&](const std::function<void()> &t) {
    return [&, t] {
      try {
        t();
      } catch (...) {
        std::lock_guard lock(errMu);
        if (!error) error = std::current_exception();
      }
      // the count drops under the lock: a caller that sees it reach 0 returns and destroys doneMu
      // and doneCv, which must not happen between this thread's decrement and its notify
      std::lock_guard lock(doneMu);
      if (remaining.fetch_sub(1) == 1) doneCv.notify_all();
    };
  };
  {
    std::lock_guard lock(mu);
    for (size_t i = 1; i < tasks.size(); ++i) queue.push_back(wrap(tasks[i]));
  }
  cv.notify_all();
  wrap(tasks[0])();
  // help with queued work instead of idling
  for (;;) {
    std::function<void()> job;
    {
      std::lock_guard lock(mu);
      if (queue.empty()) break;
      job = std::move(queue.front());
      queue.pop_front();
    }
    job();
  }
  std::unique_lock lock(doneMu);
  doneCv.wait(lock, [&] { return remaining.load() == 0; });
  if (error) std::rethrow_exception(error);
}

void ThreadPool::parallelFor(int64_t n, size_t chunks, const std::function<void(int64_t, int64_t)> &fn) {
  if (n <= 0) return;
  chunks = std::min<size_t>(chunks, static_cast<size_t>(n));
  if (chunks <= 1) {
    fn(0, n);
    return;
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

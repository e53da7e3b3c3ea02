// SpinLock: the lock of the graph's global tables (the dedup cache, the kernel IR's intern table).
#pragma once

#include <atomic>
#include <thread>

namespace lazyjit {

/// A lock for critical sections of a few dozen instructions that one thread takes over and over:
/// building a graph takes the dedup cache's lock about five times per op, and scheduling it takes
/// the kernel IR's intern table's a few times per op. An uncontended std::mutex costs two atomic
/// read-modify-writes and two calls per section; this costs one exchange and a release store. A
/// waiter yields its core (the holder may have been preempted). BasicLockable: use it with
/// std::lock_guard.
class SpinLock {
public:
  void lock() noexcept {
    while (held_.exchange(true, std::memory_order_acquire))
      while (held_.load(std::memory_order_relaxed)) std::this_thread::yield();
  }
  bool try_lock() noexcept { return !held_.load(std::memory_order_relaxed) && !held_.exchange(true, std::memory_order_acquire); }
  void unlock() noexcept { held_.store(false, std::memory_order_release); }

private:
  std::atomic<bool> held_{false};
};

} // namespace lazyjit

#include "lazyjit/Support/Release.h"

#include <cstdint>
#include <vector>

namespace lazyjit {

namespace {

/// Prefetches the memory below the nodes a release frees. Freeing a long graph is a walk from its
/// newest node to its oldest, and the node pool (NodePool.h) lays out the nodes built one after
/// another next to each other: the walk goes down through memory, reading most lines of each op's
/// nodes, but by following pointers, so each line was a wait of its own (a 200,000-op chain's free
/// read ~24 lines per op that had left every cache). The sweep asks for the lines from where it
/// stopped down to kAhead bytes below the node being released; a release far from the sweep's
/// place (another part of memory) starts it again there.
class SweepDown {
public:
  void visit(const void *p) {
    // (a graph that fits in the caches needs none: the first releases only count)
    if (warmup_ > 0) {
      --warmup_;
      return;
    }
    uintptr_t at = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
    if (at + kRestart < frontier_ || at > frontier_ + kRestart) frontier_ = at;
    uintptr_t target = at > kAhead ? at - kAhead : 0;
    for (int n = 0; frontier_ > target && n < kMaxLines; ++n) {
      frontier_ -= 64;
      __builtin_prefetch(reinterpret_cast<const void *>(frontier_), 1, kLocality);
    }
  }

private:
  static constexpr uintptr_t kAhead = 8192, kRestart = 65536;
  static constexpr int kMaxLines = 32, kLocality = 3;
  uintptr_t frontier_ = 0;
  /// Releases before the sweep starts: ~12 per op of a fused chain, so ~350 ops, ~650 KiB of
  /// nodes, which the caches hold anyway when the graph was just built.
  int warmup_ = 4096;
};

struct Pending {
  std::vector<std::shared_ptr<const void>> queue;
  SweepDown sweep;
};
thread_local Pending *tlsPending = nullptr;

} // namespace

void deferRelease(std::shared_ptr<const void> p) noexcept {
  if (!p) return;
  if (tlsPending) tlsPending->sweep.visit(p.get());
  // not the last owner: dropping it frees nothing, so nothing can nest
  if (p.use_count() > 1) return;
  if (tlsPending) {
    try {
      tlsPending->queue.push_back(std::move(p));
    } catch (...) {
      // out of memory for the queue: free it in place (recursion, but no leak)
    }
    return;
  }
  Pending pending;
  tlsPending = &pending;
  p.reset(); // its destructor queues what it owned
  while (!pending.queue.empty()) {
    std::shared_ptr<const void> next = std::move(pending.queue.back());
    pending.queue.pop_back();
    next.reset(); // queues the next level
  }
  tlsPending = nullptr;
}

} // namespace lazyjit

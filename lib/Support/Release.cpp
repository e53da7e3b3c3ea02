#include "lazyjit/Support/Release.h"

#include <vector>

namespace lazyjit {

namespace {
thread_local std::vector<std::shared_ptr<const void>> *tlsPending = nullptr;
} // namespace

void deferRelease(std::shared_ptr<const void> p) noexcept {
  // not the last owner: dropping it frees nothing, so nothing can nest
  if (!p || p.use_count() > 1) return;
  if (tlsPending) {
    try {
      tlsPending->push_back(std::move(p));
    } catch (...) {
      // out of memory for the queue: free it in place (recursion, but no leak)
    }
    return;
  }
  std::vector<std::shared_ptr<const void>> pending;
  tlsPending = &pending;
  p.reset(); // its destructor queues what it owned
  while (!pending.empty()) {
    std::shared_ptr<const void> next = std::move(pending.back());
    pending.pop_back();
    next.reset(); // queues the next level
  }
  tlsPending = nullptr;
}

} // namespace lazyjit

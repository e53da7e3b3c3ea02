// StridePrefetch: software prefetching for a walk down a chain of nodes.
#pragma once

#include <cstddef>

namespace lazyjit {

/// A walk down a fused chain follows one pointer per node, and a chain of 20,000 ops has left the
/// caches: each step waited for its node before it could read the next address. The node pool
/// lays out nodes built one after another next to each other, so the nodes of a chain sit at a
/// steady distance apart (one op's nodes). visit() measures that distance between the last two
/// nodes and asks for the node kAhead such steps further on; on a graph laid out any other way it
/// only asks for lines nobody reads.
class StridePrefetch {
public:
  void visit(const void *node) {
    const char *at = static_cast<const char *>(node);
    if (last_) {
      std::ptrdiff_t step = at - last_;
      if (step != 0 && step < kMaxStep && step > -kMaxStep) {
        const char *ahead = at + step * kAhead;
        for (int l = 0; l < kLines; ++l) __builtin_prefetch(ahead + 64 * l, 0, 3);
      }
    }
    last_ = at;
  }

private:
  static constexpr std::ptrdiff_t kAhead = 8, kMaxStep = 16384;
  static constexpr int kLines = 2; ///< an op's op code and sources
  const char *last_ = nullptr;
};

} // namespace lazyjit

// WalkMarks (WalkMarks.h): one active per thread, and every mark cleared when it goes.
#include "lazyjit/Graph/WalkMarks.h"
#include "lazyjit/Support/Error.h"

namespace lazyjit {

namespace {
thread_local bool tActive = false;

/// Clears `nodes`' marks in order, asking for the mark a few places ahead first (`at` is its
/// address: a node spans several lines): the nodes of a long walk have left the caches again
/// by its end.
template <typename T, typename At, typename Clear>
void clearAll(const std::vector<const T *> &nodes, At at, Clear clear) {
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i + kAhead < nodes.size()) __builtin_prefetch(at(*nodes[i + kAhead]), 1, 3);
    clear(*nodes[i]);
  }
}
} // namespace

WalkMarks::WalkMarks() {
  LAZYJIT_INTERNAL_CHECK(!tActive, "a walk's marks were asked for inside another walk on the same thread");
  tActive = true;
}

WalkMarks::~WalkMarks() {
  clearAll(ops_, [](const LazyOp &op) { return &op.walkMark_; }, [](const LazyOp &op) { op.walkMark_ = 0; });
  clearAll(bufs_, [](const LazyBuffer &b) { return &b.bits_; },
           [](const LazyBuffer &b) { b.bits_ &= static_cast<uint8_t>(~LazyBuffer::kWalkFlag); });
  tActive = false;
}

} // namespace lazyjit

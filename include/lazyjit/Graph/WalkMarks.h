// WalkMarks: what a walk over the lazy graph records per node, kept in the nodes themselves.
#pragma once

#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Graph/LazyOp.h"

#include <cstdint>
#include <vector>

namespace lazyjit {

/// A walk's marks on the lazy graph's nodes: a number per LazyOp (0: none) and a flag per
/// LazyBuffer, cleared again when the WalkMarks is destroyed (also when the walk throws).
///
/// A walk over a long graph that kept "seen" or "result index" in an address table probed that
/// table at random: the tables of a 200,000-op chain are megabytes, and every probe missed the
/// caches that the node it asked about had just been read into. A mark lives in the node the walk
/// is reading anyway. Walks run under the graph lock (GraphLock.h: one thread in the graph at a
/// time), and one thread has at most one WalkMarks at a time (a second is an internal error), so
/// no two walks share a node's mark.
class WalkMarks {
public:
  WalkMarks();
  ~WalkMarks();
  WalkMarks(const WalkMarks &) = delete;
  WalkMarks &operator=(const WalkMarks &) = delete;

  /// The number this walk gave `op` (0: none yet).
  uint32_t of(const LazyOp &op) const { return op.walkMark_; }
  /// Gives `op` the number `n` (not 0).
  void set(const LazyOp &op, uint32_t n) {
    if (!op.walkMark_) ops_.push_back(&op);
    op.walkMark_ = n;
  }
  /// Whether this walk has flagged `b`.
  bool flagged(const LazyBuffer &b) const { return b.bits_ & LazyBuffer::kWalkFlag; }
  /// Flags `b`; whether it was not flagged yet.
  bool flag(const LazyBuffer &b) {
    if (flagged(b)) return false;
    b.bits_ |= LazyBuffer::kWalkFlag;
    bufs_.push_back(&b);
    return true;
  }

private:
  std::vector<const LazyOp *> ops_;
  std::vector<const LazyBuffer *> bufs_;
};

} // namespace lazyjit

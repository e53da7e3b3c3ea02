// LazyBuffer: a node of the lazy graph, with the reference's eager rewrites (lazy.py).
//
// Every op on a LazyBuffer builds a new node immediately, and the rewrites happen right there:
// movement ops are pushed through elementwise ops, childless elementwise sources are inlined, and
// structurally equal ops over the same sources are deduplicated through a weak cache. Which
// rewrites fire depends on which nodes are still alive (the weak `children` sets), so holding or
// dropping a reference changes fusion exactly as Python's `del` does in the reference.
//
// Memory model: LazyBuffers are shared_ptr nodes; a LazyOp owns its sources; `views` is a weak
// set that only counts live nodes; the dedup cache holds weak references.
//
// Children (the reference's `children` WeakSet): the live buffers whose op reads this one. The
// reference adds a new buffer to the set of every leaf of its (merged) op tree, so a chain
// `x = x + 1` repeated n times costs O(n^2). Here the relation is kept as links instead: a buffer
// lists the graph ops that read it directly (`users_`), an op lists the ops built on it and the
// buffers created over it (LazyOp `parents_` / `owners_`), and a query walks up from the buffer
// until it has seen as many distinct children as it asks about (fusion only asks "none?" and
// "at most one?"). Creating a buffer links only the ops that are new, so building a chain is
// linear. A buffer whose op is dropped at realization joins its leaves' `realizedChildren_`
// (the reference keeps it in their sets), and `discardChild` records the reference's discards.
// Threads: the graph is one per process and every op, destructor and schedule holds the graph
// lock (GraphLock.h) while it reads or changes nodes, so graphs may be built from several threads
// at once; the lock is not held while kernels compile or run.
#pragma once

#include "lazyjit/Graph/GraphOptions.h"
#include "lazyjit/Graph/LazyOp.h"
#include "lazyjit/Support/KeyedList.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace lazyjit {

/// An element-wise op's operands (at most three: WHERE), inline.
using LazyBufferRefs = SmallVector<LazyBufferRef, 3>;

/// A set of weak references to LazyBuffers with Python WeakSet semantics: identity membership,
/// and a size that counts live members only. The links are intrusive: a LazyBuffer leaves every
/// set it is in when it dies, and a set unlinks its members when it dies, so size() is O(1) and
/// nothing dead is ever scanned.
class WeakBufferSet {
public:
  WeakBufferSet() = default;
  WeakBufferSet(const WeakBufferSet &) = delete;
  WeakBufferSet &operator=(const WeakBufferSet &) = delete;
  ~WeakBufferSet();

  void add(LazyBuffer *b);
  void add(const LazyBufferRef &b) { add(b.get()); }
  void discard(const LazyBuffer *b);
  /// The number of live members.
  size_t size() const { return items.size(); }
  bool empty() const { return items.empty(); }
  bool contains(const LazyBuffer *b) const { return items.contains(b); }
  std::vector<LazyBufferRef> live() const;

private:
  friend class LazyBuffer;
  PtrList<LazyBuffer> items;
};

namespace graph_detail {
struct LazyCacheAccess;
}

/// The one copy of a device name that every LazyBuffer on that device refers to (a program uses a
/// handful of devices; the copies are never freed).
const std::string &internDevice(const std::string &device);

/// Memory layout: a long graph's build, schedule and free times follow its bytes per node (each
/// node's lines are written once and read again past the caches), so the fields every walk reads
/// come first and the ones few buffers use (an assign's target, realized and discarded children)
/// live apart, allocated on first use.
class LazyBuffer : public std::enable_shared_from_this<LazyBuffer> {
public:
  // (device and optype never change: the dedup cache compares them against the hash it stored)
  /// The interned device name (internDevice).
  const std::string &device;
  const ShapeTracker st;
  /// st.shape(); `st` is never reassigned, so this stays valid (and saves a copy per node).
  const Shape &shape;
  /// The op that computes this buffer; null once it is realized (the reference's `del op`).
  LazyOpRef op;
  const OpType optype;

  /// The number of live children (buffers whose op reads this one), counted up to `atMost`: the
  /// walk stops there. len(children) of the reference is childCount() with no limit.
  size_t childCount(size_t atMost = SIZE_MAX) const;
  bool childless() const { return childCount(1) == 0; }
  bool atMostOneChild() const { return childCount(2) <= 1; }
  /// children.discard(child) of the reference: `child` no longer counts as a child of this one.
  void discardChild(const LazyBuffer *child);
  /// The dedup cache handed this buffer out for `op` (equal to its own): the reference adds the
  /// hit to the children of the op's leaves again, undoing discards (which only ever remove a
  /// buffer from a direct source of its op).
  void readdAsChild(const LazyOp &op);
  /// Drops the op at realization (the reference's `del op`); the buffer stays a child of the
  /// leaves it was built from for as long as it lives.
  void dropOp();

  /// The buffer an assign writes into (reference `output_buffer`; null when none).
  const std::shared_ptr<Buffer> &outputBuffer() const;
  void setOutputBuffer(std::shared_ptr<Buffer> b);

  /// The reference's constructor: links `op` into the graph (this buffer becomes a child of every
  /// buffer in `op`) and registers as a view of `base`. Use create() or createLazyBuffer().
  static LazyBufferRef create(const std::string &device, ShapeTracker st, OpType optype, LazyOpRef op,
                              DType dtype, std::shared_ptr<Buffer> realized = nullptr,
                              LazyBufferRef base = nullptr);
  LazyBuffer(const std::string &device, ShapeTracker st, OpType optype, LazyOpRef op, DType dtype,
             std::shared_ptr<Buffer> realized, LazyBufferRef base);
  /// The constructor's checks (InternalError): a movement op is based on a non-movement buffer,
  /// and an unbased buffer is contiguous. createLazyBuffer makes them before it takes the dedup
  /// cache's lock, under which nothing may throw.
  static void checkConstruction(OpType optype, const LazyBuffer *base, const ShapeTracker &st);
  ~LazyBuffer();
  LazyBuffer(const LazyBuffer &) = delete;
  LazyBuffer &operator=(const LazyBuffer &) = delete;

  LazyBufferRef self() { return shared_from_this(); }
  const LazyBufferRef &baseRef() const { return base_; }
  /// The non-view buffer this one reads (itself when it is not a view).
  LazyBuffer *base() { return base_ ? base_.get() : this; }
  const LazyBuffer *base() const { return base_ ? base_.get() : this; }
  LazyBufferRef baseShared() { return base_ ? base_ : shared_from_this(); }
  bool isView() const { return static_cast<bool>(base_); }

  const std::shared_ptr<Buffer> &realized() const { return base()->realized_; }
  bool isRealized() const { return static_cast<bool>(base()->realized_); }
  /// Sets the realized storage (only on non-view buffers).
  void setRealized(std::shared_ptr<Buffer> b);
  DType dtype() const { return base()->dtype_; }

  /// Not realized, and its base's op is a LOAD CONST (a constant the scheduler inlines). Kept as
  /// a bit, updated when the base is realized or drops its op: the scheduler asks it of every
  /// leaf in several passes, and the answer read the base and then its op, two nodes that a long
  /// graph has long evicted.
  bool isUnrealizedConst() const { return bits_ & kUnrealizedConst; }
  bool isUnrealizedContiguousConst() const;
  /// Whether `st` has symbolic variables (`st.views.symbolic()`, without reading the views).
  bool symbolicShape() const { return bits_ & kSymbolic; }

  // ---- creation and special ops ----
  // Every op is built under the options `o` its caller passes (GraphOptions.h).
  static LazyBufferRef loadop(const GraphOptions &o, Op op, const Shape &shape, DType dtype,
                              const std::string &device, LazyOpArg arg = {}, LazyBufferRef src = nullptr);
  /// A constant with this buffer's shape and dtype: a 0-d CONST viewed through a stride-0 expand.
  LazyBufferRef constLike(const GraphOptions &o, double val);
  LazyBufferRef copyToDevice(const GraphOptions &o, const std::string &device);
  LazyBufferRef contiguous(const GraphOptions &o);
  LazyBufferRef cast(const GraphOptions &o, DType dtype, bool bitcast = false);

  // ---- elementwise and reduce ----
  /// An elementwise op over self and `srcs` (self first).
  LazyBufferRef e(const GraphOptions &o, Op op, const LazyBufferRefs &srcs = {}, LazyOpArg arg = {});
  /// A reduce to `newShape` (1s in the reduced dims), split in two when it is large.
  LazyBufferRef r(const GraphOptions &o, Op op, const Shape &newShape);

  // ---- movement ops ----
  LazyBufferRef reshape(const GraphOptions &o, const Shape &arg);
  LazyBufferRef pad(const GraphOptions &o, const PadArg &arg);
  LazyBufferRef expand(const GraphOptions &o, const Shape &arg);
  LazyBufferRef permute(const GraphOptions &o, const std::vector<int64_t> &arg);
  LazyBufferRef shrink(const GraphOptions &o, const PadArg &arg);
  LazyBufferRef stride(const GraphOptions &o, const std::vector<int64_t> &arg);
  LazyBufferRef movementOp(const GraphOptions &o, Op op, const LazyOpArg &arg);

  std::string repr() const;

private:
  friend class WeakBufferSet;
  friend class LazyOp; // unlinks itself from users_ when it dies
  friend struct graph_detail::LazyCacheAccess; // the dedup cache (LazyCache.cpp)
  friend class WalkMarks;
  DType dtype_;
  /// The dedup cache holds this buffer under `cacheHash_` until it dies. `cacheOp_` is its op as
  /// the cache compares it, kept weakly: realization drops `op`, and an equal op still alive
  /// elsewhere finds the realized buffer, as the reference's weak key does.
  bool inCache_ = false;
  /// One bit each (in the byte before `cacheHash_`): the walk flag (WalkMarks.h), and the answers
  /// of isUnrealizedConst() and symbolicShape(). Like the rest of the graph, not thread-safe.
  enum : uint8_t { kWalkFlag = 1, kUnrealizedConst = 2, kSymbolic = 4 };
  mutable uint8_t bits_ = 0;
  /// Clears kUnrealizedConst on this base and its views (realized, or its op dropped).
  void noLongerUnrealizedConst();
  uint32_t cacheHash_ = 0;
  LazyBufferRef base_;
  std::shared_ptr<Buffer> realized_;

public:
  // (declared among the private fields for the layout: the fields a walk reads, together)
  WeakBufferSet views;

private:
  /// The linked ops that have this buffer as a direct source.
  PtrList<const LazyOp> users_;
  /// The sets (other buffers' `views`, a cold part's sets) this buffer is in.
  PtrList<WeakBufferSet> memberOf_;
  /// What few buffers have, made on first use.
  struct Cold {
    /// Children whose op was dropped at realization.
    WeakBufferSet realizedChildren;
    /// Buffers discarded from the children (they never count again, unless the dedup cache hands
    /// them out again: the reference re-adds a cache hit to its leaves' children).
    WeakBufferSet discarded;
    std::shared_ptr<Buffer> outputBuffer;
  };
  std::unique_ptr<Cold> cold_;
  Cold &cold();
  std::weak_ptr<const LazyOp> cacheOp_;
  /// Creation order: an op's newest leaf is the one with the greatest serial (LazyOp::newestLeaf).
  const uint64_t serial_;
  /// The cache files this buffer under its op's newest leaf, in that leaf's list (KeyedList.h),
  /// or in its table when the op has no leaf or the leaf's list is full. A leaf that dies takes
  /// its list out of the cache: no live op can equal theirs any more.
  KeyedLinks<LazyBuffer> keyed_;

  LazyBufferRef reduceOp(const GraphOptions &o, Op op, const Shape &newShape);
  void linkOp();
  LazyBufferRef applyMovementOp(const GraphOptions &o, ShapeTracker st, Op op, LazyOpArg arg);
};

/// create_lazybuffer: 0-size shapes become a CONST; otherwise deduplicated through the lazy cache.
LazyBufferRef createLazyBuffer(const GraphOptions &o, const std::string &device, ShapeTracker st,
                               OpType optype, LazyOpRef op, DType dtype, LazyBufferRef base = nullptr);

/// get_movementroot / get_movementroot_contiguous of the reference.
LazyBuffer *getMovementRoot(LazyBuffer *root, bool allowContiguous = false);
LazyBuffer *getMovementRootContiguous(LazyBuffer *x);

/// The number of buffers in the dedup cache (for tests): each is there until it dies.
size_t lazyCacheSize();
/// The number of LazyBuffers alive (for tests that check a graph is freed).
size_t liveLazyBufferCount();

} // namespace lazyjit

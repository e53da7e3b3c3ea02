// The dedup cache (the reference's lazycache WeakValueDictionary): createLazyBuffer hands out a
// live buffer equal to the one asked for, and a dying buffer takes its entry with it.
#include "LazyCache.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/Logging.h"
#include "lazyjit/Support/Math.h"
#include "lazyjit/Support/ProbeTable.h"

#include <mutex>
#include <vector>

namespace lazyjit {

// The cache holds the buffers themselves, by hash, in an open-addressed table (ProbeTable) of
// pointers: a buffer is in it from its creation until its destructor takes it out, so the table
// never holds a dead buffer and needs no sweep. A graph of 20,000 ops puts 60,000 buffers in it;
// the node-based multimap of entries it replaces cost an allocation per buffer and three or four
// cache misses per lookup (a fifth of building such a graph), and the entries' own vector a
// fifth again.
struct graph_detail::LazyCacheAccess {
  std::mutex mu;
  ProbeTable<LazyBuffer *> buffers;

  static size_t hashOf(const std::string &device, DType dtype, OpType optype, const LazyOp &op, const LazyBuffer *base) {
    size_t h = std::hash<std::string>{}(device);
    hashCombine(h, static_cast<size_t>(dtype.scalar()));
    hashCombine(h, static_cast<size_t>(optype));
    hashCombine(h, op.hash());
    hashCombine(h, std::hash<const void *>{}(base));
    return h;
  }
  /// A live buffer equal to the one asked for, or null. An op locked to compare it goes into
  /// `held`, which the caller releases after the lock (its last owner may have let go meanwhile,
  /// and freeing it frees buffers, which take this lock).
  LazyBufferRef find(size_t h, const std::string &device, DType dtype, OpType optype, const LazyOp &op,
                     const LazyBuffer *base, std::vector<std::shared_ptr<const LazyOp>> &held) {
    LazyBufferRef hit;
    buffers.find(h, [&](LazyBuffer *b) {
      // the fields compared never change after construction; a buffer in the table is alive or
      // waiting in its destructor for this lock, its fields intact
      if (b->device != device || b->dtype_ != dtype || b->optype != optype || b->base_.get() != base) return false;
      auto eop = b->cacheOp_.lock();
      if (!eop) return false;
      held.push_back(eop);
      if (!(*eop == op)) return false;
      // a dying buffer does not lock, and the search goes on
      hit = b->weak_from_this().lock();
      return hit != nullptr;
    });
    return hit;
  }
  void insert(size_t h, LazyBuffer &b) {
    b.inCache_ = true;
    b.cacheHash_ = h;
    b.cacheOp_ = b.op;
    buffers.insert(h, &b);
  }
  void erase(LazyBuffer &b) { buffers.erase(b.cacheHash_, &b); }
};

namespace {

using LazyCache = graph_detail::LazyCacheAccess;

// Set while this thread holds the cache's lock. Nothing may free a buffer then: its destructor
// takes the lock (a deadlock), and skipping its removal would leave a dangling pointer in the
// table. The lookup keeps the ops it locked until after the lock for this reason.
thread_local bool cacheLocked = false;

struct CacheLock {
  explicit CacheLock(std::mutex &m) : guard(m) { cacheLocked = true; }
  ~CacheLock() { cacheLocked = false; }
  std::lock_guard<std::mutex> guard;
};

// The one deliberate global of the graph (STYLE.md): it lives behind this function.
LazyCache &lazyCache() {
  static LazyCache *c = new LazyCache(); // never destroyed: buffers may outlive static destruction
  return *c;
}

} // namespace

void graph_detail::forgetCacheEntry(LazyBuffer *b) {
  LAZYJIT_INTERNAL_CHECK(!cacheLocked, "a LazyBuffer died while its thread held the dedup cache's lock");
  auto &cache = lazyCache();
  CacheLock lock(cache.mu);
  cache.erase(*b);
}

size_t lazyCacheSize() {
  auto &c = lazyCache();
  CacheLock lock(c.mu);
  return c.buffers.size();
}

LazyBufferRef createLazyBuffer(const GraphOptions &o, const std::string &device, ShapeTracker st,
                               OpType optype, LazyOpRef op, DType dtype, LazyBufferRef base) {
  // rewrite 0 size into a CONST
  for (const auto &s : st.shape())
    if (pyEq(s, 0))
      return LazyBuffer::create(device, ShapeTracker::fromShape(st.shape()), OpType::Load,
                                LazyOp::make(Op::LoadConst, {}, 0.0), dtype);

  // EMPTY, CUSTOM and CONST load ops are never cached
  if (!o.lazyCache ||
      (optype == OpType::Load &&
       (op->op == Op::Empty || op->op == Op::Custom || op->op == Op::LoadConst)))
    return LazyBuffer::create(device, std::move(st), optype, std::move(op), dtype, nullptr,
                              std::move(base));

  auto &cache = lazyCache();
  size_t h = LazyCache::hashOf(device, dtype, optype, *op, base.get());
  std::vector<std::shared_ptr<const LazyOp>> held; // released after the lock
  {
    CacheLock lock(cache.mu);
    if (LazyBufferRef hit = cache.find(h, device, dtype, optype, *op, base.get(), held)) {
      LAZYJIT_LOG(Graph, 2, "lazycache hit: {} reuses an equal {}", hit->repr(), opName(op->op));
      hit->readdAsChild(*op);
      return hit;
    }
  }
  LazyBufferRef ret = LazyBuffer::create(device, std::move(st), optype, std::move(op), dtype, nullptr, std::move(base));
  CacheLock lock(cache.mu);
  cache.insert(h, *ret);
  return ret;
}

} // namespace lazyjit

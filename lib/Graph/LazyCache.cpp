// The dedup cache (the reference's lazycache WeakValueDictionary): createLazyBuffer hands out a
// live buffer equal to the one asked for, and a dying buffer takes its entry with it.
#include "LazyCache.h"
#include "lazyjit/Graph/GraphLock.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/Hash.h"
#include "lazyjit/Support/Logging.h"
#include "lazyjit/Support/Math.h"
#include "lazyjit/Support/ProbeTable.h"
#include "lazyjit/Support/SpinLock.h"

#include <mutex>
#include <vector>

namespace lazyjit {

// The cache holds the buffers themselves: a buffer is in it from its creation until its
// destructor takes it out (or its op's newest leaf dies first: nothing can equal its op then), so
// it never holds a dead buffer and needs no sweep. A buffer is filed under its op's newest leaf
// (LazyOp::newestLeaf), in a list on that leaf: the leaf is mostly the buffer just built before,
// so a lookup reads memory in cache, where a probe into one table of every buffer (60,000 in a
// graph of 20,000 ops, 4 MiB of slots) missed the caches once per buffer built and once per
// buffer freed, a third of building such a graph. Ops that read no buffer, and the entries past
// a leaf's first kListMax, go into an open-addressed table of pointers (ProbeTable).
struct graph_detail::LazyCacheAccess {
  SpinLock mu;
  ProbeTable<LazyBuffer *> buffers;
  size_t listed = 0; // the entries in leaves' lists
  // a leaf that many ops read (a weight in every layer's reshape) does not scan a long list: the
  // rest go to the table, and the leaf says to look there too
  static constexpr auto linksOf = [](LazyBuffer &b) -> KeyedLinks<LazyBuffer> & { return b.keyed_; };
  KeyedLists<LazyBuffer, decltype(linksOf)> lists{linksOf};

  /// 32 bits, kept in the buffer beside its small fields (the table's slots hash the same value).
  static uint32_t hashOf(const std::string &device, DType dtype, OpType optype, const LazyOp &op, const LazyBuffer *base) {
    size_t h = fnv1a(device.data(), device.size()); // (a few bytes, hashed inline)
    hashCombine(h, static_cast<size_t>(dtype.scalar()));
    hashCombine(h, static_cast<size_t>(optype));
    hashCombine(h, op.hash());
    hashCombine(h, std::hash<const void *>{}(base));
    return static_cast<uint32_t>(h ^ (h >> 32));
  }
  /// A live buffer equal to the one asked for, or null. An op locked to compare it goes into
  /// `held`, which the caller releases after the lock (its last owner may have let go meanwhile,
  /// and freeing it frees buffers, which take this lock).
  LazyBufferRef find(uint32_t h, const std::string &device, DType dtype, OpType optype, const LazyOp &op,
                     const LazyBuffer *base, std::vector<std::shared_ptr<const LazyOp>> &held) {
    LazyBufferRef hit;
    auto match = [&](LazyBuffer *b) {
      // the fields compared never change after construction; a buffer in the cache is alive or
      // waiting in its destructor for this lock, its fields intact
      if (b->device != device || b->dtype_ != dtype || b->optype != optype || b->base_.get() != base) return false;
      auto eop = b->cacheOp_.lock();
      if (!eop) return false;
      held.push_back(eop);
      if (!(*eop == op)) return false;
      // a dying buffer does not lock, and the search goes on
      hit = b->weak_from_this().lock();
      return hit != nullptr;
    };
    if (LazyBuffer *key = op.newestLeaf()) {
      if (lists.find(*key, [&](LazyBuffer *b) { return b->cacheHash_ == h && match(b); })) return hit;
      if (!key->keyed_.overflow) return nullptr;
    }
    buffers.find(h, match);
    return hit;
  }
  void insert(uint32_t h, LazyBuffer &b) {
    b.inCache_ = true;
    b.cacheHash_ = h;
    b.cacheOp_ = b.op;
    LazyBuffer *key = b.op->newestLeaf();
    if (key && lists.file(b, *key)) {
      ++listed;
      return;
    }
    buffers.insert(h, &b);
  }
  void erase(LazyBuffer &b) {
    b.inCache_ = false;
    if (!b.keyed_.key) {
      buffers.erase(b.cacheHash_, &b);
      return;
    }
    lists.unfile(b);
    --listed;
  }
  /// Leaf `key` dies: the entries in its list leave the cache (those it sent to the table stay
  /// until they die; no lookup finds them, as none can equal their ops).
  void dropList(LazyBuffer &key) {
    while (LazyBuffer *b = key.keyed_.head) erase(*b);
  }
  /// `b` dies: its entry and the entries filed under it go.
  void leave(LazyBuffer &b) {
    if (b.inCache_) erase(b);
    dropList(b);
  }
};

namespace {

using LazyCache = graph_detail::LazyCacheAccess;

// Set while this thread holds the cache's lock. Nothing may free a buffer then: its destructor
// takes the lock (a deadlock), and skipping its removal would leave a dangling pointer in the
// table. The lookup keeps the ops it locked until after the lock for this reason.
thread_local bool cacheLocked = false;

struct CacheLock {
  explicit CacheLock(SpinLock &m) : guard(m) { cacheLocked = true; }
  ~CacheLock() { cacheLocked = false; }
  std::lock_guard<SpinLock> guard;
};

// The one deliberate global of the graph (STYLE.md): it lives behind this function.
LazyCache &lazyCache() {
  static LazyCache *c = new LazyCache(); // never destroyed: buffers may outlive static destruction
  return *c;
}

} // namespace

void graph_detail::leaveCache(LazyBuffer *b) {
  LAZYJIT_INTERNAL_CHECK(!cacheLocked, "a LazyBuffer died while its thread held the dedup cache's lock");
  auto &cache = lazyCache();
  CacheLock lock(cache.mu);
  cache.leave(*b);
}

size_t lazyCacheSize() {
  auto &c = lazyCache();
  CacheLock lock(c.mu);
  return c.buffers.size() + c.listed;
}

LazyBufferRef createLazyBuffer(const GraphOptions &o, const std::string &device, ShapeTracker st,
                               OpType optype, LazyOpRef op, DType dtype, LazyBufferRef base) {
  GraphLock graph;
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
  uint32_t h = LazyCache::hashOf(device, dtype, optype, *op, base.get());
  std::vector<std::shared_ptr<const LazyOp>> held; // released after the lock
  // A miss creates and files the buffer under the same lock as the lookup (one locked
  // instruction per buffer, not two). Creating it frees nothing (its op and base move into it),
  // unless its constructor throws: its checks are made here first, before the lock.
  LazyBuffer::checkConstruction(optype, base.get(), st);
  CacheLock lock(cache.mu);
  if (LazyBufferRef hit = cache.find(h, device, dtype, optype, *op, base.get(), held)) {
    LAZYJIT_LOG(Graph, 2, "lazycache hit: {} reuses an equal {}", hit->repr(), opName(op->op));
    hit->readdAsChild(*op);
    return hit;
  }
  LazyBufferRef ret = LazyBuffer::create(device, std::move(st), optype, std::move(op), dtype, nullptr, std::move(base));
  cache.insert(h, *ret);
  return ret;
}

} // namespace lazyjit

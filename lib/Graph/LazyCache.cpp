// The dedup cache (the reference's lazycache WeakValueDictionary): createLazyBuffer hands out a
// live buffer equal to the one asked for, and a dying buffer takes its entry with it.
#include "LazyCache.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Support/Logging.h"
#include "lazyjit/Support/Math.h"
#include "lazyjit/Support/ProbeTable.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace lazyjit {

namespace {

struct CacheEntry {
  std::string device;
  DType dtype;
  OpType optype;
  std::weak_ptr<const LazyOp> op;
  const LazyBuffer *base;
  std::weak_ptr<LazyBuffer> value;
  const LazyBuffer *raw; ///< value's address, to find the entry when the buffer dies
};

// Set while this thread holds the cache's lock: a buffer that dies then (a reference dropped inside
// a locked region) leaves its entry for the next sweep instead of locking again.
thread_local bool cacheLocked = false;

struct CacheLock {
  explicit CacheLock(std::mutex &m) : guard(m) { cacheLocked = true; }
  ~CacheLock() { cacheLocked = false; }
  std::lock_guard<std::mutex> guard;
};

// The entries live in a vector (a freed one is reused), found through an open-addressed table of
// their hashes and indices: a graph of 20,000 ops has 60,000 entries, and a node-based multimap
// cost a node allocation per entry and three or four cache misses per lookup (a fifth of building
// such a graph).
struct LazyCache {
  using Visit = ProbeTable<uint32_t>::Visit;
  std::mutex mu;
  ProbeTable<uint32_t> index; ///< entries by hash
  std::vector<CacheEntry> entries;
  std::vector<uint32_t> freeEntries;
  size_t insertsSinceSweep = 0;
  size_t liveAfterSweep = 0;

  void insert(size_t h, CacheEntry e) {
    uint32_t i;
    if (!freeEntries.empty()) {
      i = freeEntries.back();
      freeEntries.pop_back();
      entries[i] = std::move(e);
    } else {
      i = static_cast<uint32_t>(entries.size());
      entries.push_back(std::move(e));
    }
    index.insert(h, i);
  }
  /// Frees entry `i` (its slot in `index` is the caller's to erase).
  void release(uint32_t i) {
    entries[i] = CacheEntry{};
    freeEntries.push_back(i);
  }
  /// Drops the entries of dead buffers and packs the rest at the front of `entries`, so the
  /// vector a large graph grew is given back once it is freed.
  void sweep() {
    std::vector<CacheEntry> kept;
    kept.reserve(index.size());
    index.eraseIf([&](uint32_t &i) {
      if (entries[i].value.expired()) return true;
      kept.push_back(std::move(entries[i]));
      i = static_cast<uint32_t>(kept.size() - 1);
      return false;
    });
    entries = std::move(kept);
    freeEntries.clear();
    insertsSinceSweep = 0;
    liveAfterSweep = index.size();
  }
};

// The one deliberate global of the graph (STYLE.md): it lives behind this function.
LazyCache &lazyCache() {
  static LazyCache *c = new LazyCache();
  return *c;
}

size_t cacheHash(const std::string &device, DType dtype, OpType optype, const LazyOp &op,
                 const LazyBuffer *base) {
  size_t h = std::hash<std::string>{}(device);
  hashCombine(h, static_cast<size_t>(dtype.scalar()));
  hashCombine(h, static_cast<size_t>(optype));
  hashCombine(h, op.hash());
  hashCombine(h, std::hash<const void *>{}(base));
  return h;
}

} // namespace

// A dying buffer takes its entry out of the cache at once. The entry's weak references would
// otherwise keep the buffer's and its op's memory (make_shared's single block) until a sweep: a
// graph of 20,000 ops left 60,000 dead entries and their blocks behind, and building the next
// one cost three to five times as much per op on the fragmented heap. A buffer without its op
// (realized) keeps its entry until the next sweep, as before.
void graph_detail::forgetCacheEntry(const LazyBuffer *b, const std::string &device, DType dtype, OpType optype,
                                    const LazyOp &op, const LazyBuffer *base) {
  if (cacheLocked) return;
  auto &cache = lazyCache();
  size_t h = cacheHash(device, dtype, optype, op, base);
  CacheLock lock(cache.mu);
  cache.index.visit(h, [&](uint32_t i) {
    if (cache.entries[i].raw != b) return LazyCache::Visit::Next;
    cache.release(i);
    if (cache.liveAfterSweep) --cache.liveAfterSweep;
    return LazyCache::Visit::EraseStop;
  });
}

size_t lazyCacheEntries() {
  auto &c = lazyCache();
  CacheLock lock(c.mu);
  return c.index.size();
}

size_t lazyCacheSize() {
  auto &c = lazyCache();
  CacheLock lock(c.mu);
  c.sweep();
  return c.index.size();
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
  size_t h = cacheHash(device, dtype, optype, *op, base.get());
  {
    CacheLock lock(cache.mu);
    LazyBufferRef hit;
    cache.index.visit(h, [&](uint32_t i) {
      const CacheEntry &e = cache.entries[i];
      LazyBufferRef live = e.value.lock();
      if (!live) {
        cache.release(i);
        return LazyCache::Visit::Erase;
      }
      auto eop = e.op.lock();
      if (eop && e.device == device && e.dtype == dtype && e.optype == optype && e.base == base.get() &&
          *eop == *op) {
        hit = std::move(live);
        return LazyCache::Visit::Stop;
      }
      return LazyCache::Visit::Next;
    });
    if (hit) {
      LAZYJIT_LOG(Graph, 2, "lazycache hit: {} reuses an equal {}", hit->repr(), opName(op->op));
      hit->readdAsChild(*op);
      return hit;
    }
  }
  LazyBufferRef ret =
      LazyBuffer::create(device, std::move(st), optype, op, dtype, nullptr, base);
  CacheLock lock(cache.mu);
  cache.insert(h, CacheEntry{device, dtype, optype, op, base.get(), ret, ret.get()});
  // sweep when the inserts since the last sweep outnumber the entries that survived it: a sweep
  // costs the map's size, so a graph of a million live buffers is not swept every 4096 inserts
  if (++cache.insertsSinceSweep > std::max<size_t>(4096, cache.liveAfterSweep)) cache.sweep();
  return ret;
}

} // namespace lazyjit

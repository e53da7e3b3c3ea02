// The dedup cache (the reference's lazycache WeakValueDictionary): createLazyBuffer hands out a
// live buffer equal to the one asked for, and a dying buffer takes its entry with it.
#include "LazyCache.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Support/Logging.h"
#include "lazyjit/Support/Math.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

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

struct LazyCache {
  std::mutex mu;
  std::unordered_multimap<size_t, CacheEntry> map;
  size_t insertsSinceSweep = 0;
  size_t liveAfterSweep = 0;

  void sweep() {
    for (auto it = map.begin(); it != map.end();)
      it = it->second.value.expired() ? map.erase(it) : std::next(it);
    insertsSinceSweep = 0;
    liveAfterSweep = map.size();
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
  auto [lo, hi] = cache.map.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (it->second.raw == b) {
      cache.map.erase(it);
      if (cache.liveAfterSweep) --cache.liveAfterSweep;
      return;
    }
}

size_t lazyCacheEntries() {
  auto &c = lazyCache();
  CacheLock lock(c.mu);
  return c.map.size();
}

size_t lazyCacheSize() {
  auto &c = lazyCache();
  CacheLock lock(c.mu);
  c.sweep();
  return c.map.size();
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
    auto [lo, hi] = cache.map.equal_range(h);
    for (auto it = lo; it != hi;) {
      LazyBufferRef hit = it->second.value.lock();
      if (!hit) {
        it = cache.map.erase(it);
        continue;
      }
      const CacheEntry &e = it->second;
      auto eop = e.op.lock();
      if (eop && e.device == device && e.dtype == dtype && e.optype == optype &&
          e.base == base.get() && *eop == *op) {
        LAZYJIT_LOG(Graph, 2, "lazycache hit: {} reuses an equal {}", hit->repr(),
                    opName(op->op));
        hit->readdAsChild(*op);
        return hit;
      }
      ++it;
    }
  }
  LazyBufferRef ret =
      LazyBuffer::create(device, std::move(st), optype, op, dtype, nullptr, base);
  CacheLock lock(cache.mu);
  cache.map.emplace(h, CacheEntry{device, dtype, optype, op, base.get(), ret, ret.get()});
  // sweep when the inserts since the last sweep outnumber the entries that survived it: a sweep
  // costs the map's size, so a graph of a million live buffers is not swept every 4096 inserts
  if (++cache.insertsSinceSweep > std::max<size_t>(4096, cache.liveAfterSweep)) cache.sweep();
  return ret;
}

} // namespace lazyjit

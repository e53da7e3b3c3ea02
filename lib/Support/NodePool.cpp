// The node pool (NodePool.h): per-thread bump allocation in 64 KiB slabs, each recycled whole once
// every block carved from it is free, and a small per-thread cache of freed blocks per size. Free
// slabs past the warm limit keep their address but offer their pages back (MADV_FREE).
#include "lazyjit/Support/NodePool.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define LAZYJIT_POOL_BYPASS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define LAZYJIT_POOL_BYPASS 1
#endif
#endif

namespace lazyjit {

namespace {

constexpr size_t kGranule = 16;
constexpr size_t kSlabBytes = size_t{64} << 10;
/// Free slabs kept warm for reuse; beyond this many, a free slab's pages are offered back.
std::atomic<size_t> gMaxWarmSlabs{4096}; // 256 MiB
/// A slab's live count while it is some thread's current slab: no number of frees brings it to
/// zero (a slab holds at most 4096 blocks), so only retiring it can.
constexpr uint32_t kCurrentBias = uint32_t{1} << 30;

/// The first bytes of every slab (slabs are aligned to their size, so a block finds its slab by
/// masking its address).
struct alignas(64) Slab {
  std::atomic<uint32_t> live;
};
constexpr size_t kHeaderBytes = sizeof(Slab);
/// How far ahead of the bump pointer carve() asks for lines to write: about a quarter of an
/// element-wise op's nodes, ~0.2 us of building (chains of 20,000 ops, 200 to 2,048 bytes tried:
/// 512 to 2,048 alike).
constexpr size_t kPrefetchAhead = 512;

Slab *slabOf(void *p) {
  return reinterpret_cast<Slab *>(reinterpret_cast<uintptr_t>(p) & ~(uintptr_t{kSlabBytes} - 1));
}

std::atomic<size_t> gReserved{0};

struct Shared {
  std::mutex mu;
  std::vector<Slab *> warm; ///< free slabs, pages as they were
  std::vector<Slab *> cold; ///< free slabs whose pages were offered back with MADV_FREE
};

Shared &shared() {
  static Shared *s = new Shared(); // never destroyed: nodes may be freed during static destruction
  return *s;
}

void recycle(Slab *slab) {
  Shared &s = shared();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.warm.size() < gMaxWarmSlabs.load(std::memory_order_relaxed)) {
      s.warm.push_back(slab);
      return;
    }
  }
#ifdef MADV_FREE
  // The slab is aligned to its size (a multiple of the page size), so the range is whole pages of
  // this slab only. Its contents are dead: carving it again rewrites every block it hands out.
  if (madvise(static_cast<void *>(slab), kSlabBytes, MADV_FREE) == 0) {
    std::lock_guard<std::mutex> lock(s.mu);
    s.cold.push_back(slab);
    return;
  }
#endif
  // (a slab is part of a chunk: it stays the pool's, warm, when its pages cannot be offered back)
  std::lock_guard<std::mutex> lock(s.mu);
  s.warm.push_back(slab);
}

/// Memory for a new slab, carved from 2 MiB chunks that ask for transparent huge pages: a long
/// graph's nodes span thousands of 4 KiB pages, and every walk over them missed the TLB as well as
/// the caches (a system that grants huge pages only where asked, Debian's default, backs these).
void *newSlabMemory() { // (called with shared().mu held)
  constexpr size_t kChunkBytes = size_t{2} << 20;
  static char *chunk = nullptr;
  static size_t used = kChunkBytes;
  if (used == kChunkBytes) {
    chunk = static_cast<char *>(::operator new(kChunkBytes, std::align_val_t{kChunkBytes}));
#ifdef MADV_HUGEPAGE
    madvise(chunk, kChunkBytes, MADV_HUGEPAGE); // (advice: without it the chunk is plain pages)
#endif
    gReserved.fetch_add(kChunkBytes, std::memory_order_relaxed);
    used = 0;
  }
  void *mem = chunk + used;
  used += kSlabBytes;
  return mem;
}

Slab *freshSlab() {
  Shared &s = shared();
  std::lock_guard<std::mutex> lock(s.mu);
  // warm slabs first; a cold one may still have its pages (then it costs no fault either)
  for (std::vector<Slab *> *list : {&s.warm, &s.cold})
    if (!list->empty()) {
      Slab *slab = list->back();
      list->pop_back();
      return slab;
    }
  return new (newSlabMemory()) Slab{};
}

/// A bump allocator over one current slab. Trivially destructible, so a thread's copy stays usable
/// while its other thread-locals and (on the main thread) the statics are destroyed.
struct Bump {
  Slab *slab;
  char *next;
  size_t left;
  uint32_t carved; ///< blocks carved from `slab`

  /// Gives up the current slab: from now on its live count is the number of its blocks not yet
  /// freed, and the free that brings it to zero recycles it.
  void retire() {
    if (!slab) return;
    uint32_t drop = kCurrentBias - carved;
    if (slab->live.fetch_sub(drop, std::memory_order_acq_rel) == drop) recycle(slab);
    slab = nullptr;
    left = 0;
  }
  void *carve(size_t bytes) {
    if (left < bytes) [[unlikely]] {
      retire();
      slab = freshSlab();
      slab->live.store(kCurrentBias, std::memory_order_relaxed);
      next = reinterpret_cast<char *>(slab) + kHeaderBytes;
      left = kSlabBytes - kHeaderBytes;
      carved = 0;
    }
    void *p = next;
    next += bytes;
    left -= bytes;
    ++carved;
    // Ask for the lines the next allocations will write: carving a freed graph's slabs again
    // writes lines long out of the caches, and each write waited for its line in turn (building a
    // chain of 20,000 ops took 1.5 times as long per op as one of 200). A prefetch past the slab's
    // end touches nothing it could fault on.
    for (size_t o = 0; o < bytes; o += 64) __builtin_prefetch(next + kPrefetchAhead + o, 1, 3);
    return p;
  }
};

constexpr size_t kClasses = pool_detail::kMaxPooled / kGranule;
/// A block's size class: its size rounded up to the granule, counted from 0.
size_t classOf(size_t bytes) { return (bytes + kGranule - 1) / kGranule - 1; }
/// Freed blocks a thread keeps per size for its next allocations: a temporary freed and made again
/// reuses the same (cached) memory instead of carving cold memory. Beyond this many, a freed block
/// goes back to its slab, so a freed graph empties its slabs and the next graph is carved afresh,
/// in order.
constexpr uint8_t kCachedPerClass = 16;

struct FreeBlock {
  FreeBlock *next;
};

void release(void *p) {
  Slab *slab = slabOf(p);
  if (slab->live.fetch_sub(1, std::memory_order_acq_rel) == 1) recycle(slab);
}

struct Local {
  Bump bump;
  FreeBlock *cache[kClasses];
  uint8_t cached[kClasses];
  uint64_t allocations;
  bool hooked; ///< the exit hook is registered
  bool exited; ///< the exit hook has run: this thread now allocates from the shared bump
};
thread_local Local tl{};

Bump gSharedBump{}; // guarded by shared().mu

/// Retires the thread's slab when the thread exits.
struct ExitHook {
  bool armed = false;
  ~ExitHook() {
    if (!armed) return;
    for (size_t c = 0; c < kClasses; ++c) {
      while (FreeBlock *b = tl.cache[c]) {
        tl.cache[c] = b->next;
        release(b);
      }
      tl.cached[c] = 0;
    }
    tl.bump.retire();
    tl.exited = true;
  }
};
thread_local ExitHook exitHook;

/// Registers the exit hook before the thread first holds a slab or a kept block.
void arm(Local &l) {
  if (l.hooked) [[likely]]
    return;
  l.hooked = true;
  exitHook.armed = true; // its first use constructs it, so its destructor runs at thread exit
}

} // namespace

void *pool_detail::allocate(size_t bytes) {
#ifdef LAZYJIT_POOL_BYPASS
  return ::operator new(bytes);
#else
  if (bytes == 0 || bytes > kMaxPooled) return ::operator new(bytes);
  size_t cls = classOf(bytes), rounded = (cls + 1) * kGranule;
  Local &l = tl;
  ++l.allocations;
  if (FreeBlock *b = l.cache[cls]) {
    l.cache[cls] = b->next;
    --l.cached[cls];
    return b;
  }
  if (l.exited) [[unlikely]] {
    std::lock_guard<std::mutex> lock(shared().mu);
    return gSharedBump.carve(rounded);
  }
  arm(l);
  return l.bump.carve(rounded);
#endif
}

void pool_detail::deallocate(void *p, size_t bytes) noexcept {
#ifdef LAZYJIT_POOL_BYPASS
  (void)bytes;
  ::operator delete(p);
#else
  if (!p) return;
  if (bytes == 0 || bytes > kMaxPooled) {
    ::operator delete(p);
    return;
  }
  size_t cls = classOf(bytes);
  Local &l = tl;
  if (l.cached[cls] < kCachedPerClass && !l.exited) {
    arm(l);
    auto *b = static_cast<FreeBlock *>(p);
    b->next = l.cache[cls];
    l.cache[cls] = b;
    ++l.cached[cls];
    return;
  }
  release(p);
#endif
}

bool nodePoolActive() {
#ifdef LAZYJIT_POOL_BYPASS
  return false;
#else
  return true;
#endif
}

size_t nodePoolReservedBytes() { return gReserved.load(std::memory_order_relaxed); }
uint64_t nodePoolAllocations() { return tl.allocations; }
size_t nodePoolIdleSlabs() {
  Shared &s = shared();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.warm.size() + s.cold.size();
}
size_t nodePoolColdSlabs() {
  Shared &s = shared();
  std::lock_guard<std::mutex> lock(s.mu);
  return s.cold.size();
}
size_t setNodePoolWarmSlabs(size_t slabs) { return gMaxWarmSlabs.exchange(slabs); }

} // namespace lazyjit

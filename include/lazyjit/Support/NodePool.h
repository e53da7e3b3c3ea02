// NodePool: the allocator of the graph's nodes (LazyBuffer, LazyOp, KernelOp, a tracker's views).
//
// Building a chain of n element-wise ops makes about four nodes per op, each a few hundred bytes,
// and a program builds, schedules and frees such graphs over and over (a training step). Through
// glibc's malloc, freeing one overflowed its per-thread caches into consolidating and unlinking
// chunks on every free, and scattered the next graph's nodes over the freed heap.
//
// The pool carves blocks (rounded to 16 bytes, up to 1 KiB) in order from 64 KiB slabs, one current
// slab per thread, with no lock:
// - nodes built one after another sit next to each other, and a walk over a graph reads its memory
//   in order;
// - a slab counts its live blocks; the free that empties a slab the thread has moved on from
//   recycles it whole, so a freed graph's slabs are carved again, in order, by the next one;
// - a thread keeps up to 16 freed blocks per size for its next allocations (a temporary freed and
//   made again reuses the same memory, still in cache);
// - a block may be freed on any thread (the count is atomic); a thread that exits gives up its
//   slab and its kept blocks;
// - slabs are cut from 2 MiB chunks that ask for transparent huge pages (MADV_HUGEPAGE): a long
//   graph spans thousands of 4 KiB pages, and its walks missed the TLB besides the caches
//   (scheduling a 20,000-op chain 0.73-0.81 -> 0.60-0.71 us/op);
// - free slabs are kept for reuse. Up to 256 MiB of them are kept as they are; past that, a freed
//   slab's pages are offered back to the system with MADV_FREE: the system takes them only when it
//   runs short of memory, and until then the slab is carved again without a page fault. (Handing
//   them back for good, as before, made every graph past 256 MiB fault in and zero its memory
//   afresh: a fifth of the time of a 200,000-op chain.) A live block keeps its whole slab: a few
//   long-lived nodes among many temporaries keep at most 64 KiB each.
// Larger objects, and every object in a sanitizer build, go to operator new, so AddressSanitizer
// still sees each node's lifetime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

namespace lazyjit {

namespace pool_detail {
/// Blocks of up to kMaxPooled bytes come from the pool; larger ones from operator new.
inline constexpr size_t kMaxPooled = 1024;
void *allocate(size_t bytes);
void deallocate(void *p, size_t bytes) noexcept;
} // namespace pool_detail

/// False in a sanitizer build, where every block comes from operator new.
bool nodePoolActive();
/// The bytes the pool holds in slabs, live or free (for tests and the bench).
size_t nodePoolReservedBytes();
/// The blocks the calling thread has taken from the pool (for tests and the bench).
uint64_t nodePoolAllocations();
/// The free slabs kept for reuse, warm or with their pages offered back (for tests).
size_t nodePoolIdleSlabs();
/// The free slabs whose pages were offered back to the system (for tests).
size_t nodePoolColdSlabs();
/// Sets how many free slabs are kept warm before their pages are offered back (default 4096, 256
/// MiB) and returns the previous limit (for tests).
size_t setNodePoolWarmSlabs(size_t slabs);

/// A std allocator over the pool, for std::allocate_shared.
template <typename T> struct NodePoolAllocator {
  using value_type = T;
  NodePoolAllocator() noexcept = default;
  template <typename U> NodePoolAllocator(const NodePoolAllocator<U> &) noexcept {}

  T *allocate(size_t n) {
    static_assert(alignof(T) <= 16, "the pool's blocks are 16-byte aligned");
    return static_cast<T *>(pool_detail::allocate(n * sizeof(T)));
  }
  void deallocate(T *p, size_t n) noexcept { pool_detail::deallocate(p, n * sizeof(T)); }

  template <typename U> bool operator==(const NodePoolAllocator<U> &) const noexcept { return true; }
  template <typename U> bool operator!=(const NodePoolAllocator<U> &) const noexcept { return false; }
};

} // namespace lazyjit

// A caching, 64-byte aligned host allocator.
#include "lazyjit/Runtime/HostAllocator.h"
#include "lazyjit/Support/Error.h"

#include <cstdlib>
#include <cstring>
#include <sys/mman.h>

namespace lazyjit {

namespace {
constexpr size_t kAlign = 64;
// Large buffers are aligned to 2 MiB and advised to use transparent huge pages: kernels that walk
// a matrix by rows of several KiB (matmul's right-hand side) then stay within the TLB's reach.
constexpr size_t kHugeAlign = size_t(2) << 20;
constexpr size_t kHugeMin = size_t(4) << 20;
constexpr size_t kMaxCached = size_t(2) << 30; // keep at most 2 GiB of freed blocks
// Fresh blocks from this size up are page-aligned and populated at once (see prefault).
constexpr size_t kPage = 4096;
constexpr size_t kPrefaultMin = size_t(256) << 10;
size_t roundUp(size_t n, size_t align = kAlign) { return (n + align - 1) / align * align; }

// Maps every page of a fresh block in one system call. Left to page faults, the first kernel that
// writes a new 64 MiB buffer took 50-200 ms more than the next one on this (virtualized) host:
// one trap per 4 KiB page, while MADV_POPULATE_WRITE maps the same 64 MiB in ~5 ms. Kernels
// write every byte of their output, so nothing is populated in vain. Kernels before Linux 5.14
// reject the advice; the pages are then faulted in as before.
void prefault(void *p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  (void)madvise(p, bytes, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)bytes;
#endif
}
} // namespace

HostAllocator::~HostAllocator() { trim(); }

void *HostAllocator::alloc(size_t bytes) {
  size_t sz = roundUp(bytes ? bytes : 1);
  {
    std::lock_guard lock(mu);
    auto it = freeBlocks.find(sz);
    if (it != freeBlocks.end()) {
      void *p = it->second;
      freeBlocks.erase(it);
      cachedBytes -= sz;
      return p;
    }
  }
  bool huge = sz >= kHugeMin, populate = sz >= kPrefaultMin;
  size_t align = huge ? kHugeAlign : populate ? kPage : kAlign;
  size_t allocSz = roundUp(sz, align);
  void *p = std::aligned_alloc(align, allocSz);
  if (!p) {
    trim();
    p = std::aligned_alloc(align, allocSz);
  }
  LAZYJIT_USER_CHECK(p != nullptr, DeviceError, "host: out of memory allocating {} bytes", sz);
  if (huge) madvise(p, allocSz, MADV_HUGEPAGE);
  if (populate) prefault(p, allocSz);
  return p;
}

void HostAllocator::free(void *ptr, size_t bytes) {
  if (!ptr) return;
  size_t sz = roundUp(bytes ? bytes : 1);
  std::lock_guard lock(mu);
  if (cachedBytes + sz > kMaxCached) {
    std::free(ptr);
    return;
  }
  freeBlocks.emplace(sz, ptr);
  cachedBytes += sz;
}

void HostAllocator::copyIn(void *dst, const void *src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}
void HostAllocator::copyOut(void *dst, const void *src, size_t bytes) {
  if (bytes) std::memcpy(dst, src, bytes);
}

void HostAllocator::trim() {
  std::lock_guard lock(mu);
  for (auto &[sz, p] : freeBlocks) std::free(p);
  freeBlocks.clear();
  cachedBytes = 0;
}

HostAllocator &hostAllocator() {
  static HostAllocator *a = new HostAllocator(); // outlives every Buffer
  return *a;
}

} // namespace lazyjit

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
size_t roundUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
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
  bool huge = sz >= kHugeMin;
  size_t align = huge ? kHugeAlign : kAlign;
  size_t allocSz = huge ? (sz + kHugeAlign - 1) / kHugeAlign * kHugeAlign : sz;
  void *p = std::aligned_alloc(align, allocSz);
  if (!p) {
    trim();
    p = std::aligned_alloc(align, allocSz);
  }
  if (p && huge) madvise(p, allocSz, MADV_HUGEPAGE);
  LAZYJIT_USER_CHECK(p != nullptr, DeviceError, "host: out of memory allocating {} bytes", sz);
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

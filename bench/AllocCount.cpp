// The bench's global operator new counts the heap allocations C++ code makes (the library's and the
// bench's; not malloc calls from C or LLVM's own allocators). W9b reports allocations per op: a
// figure that, unlike the time per op on a shared host, is the same in every run.
#include "BenchUtil.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<uint64_t> gNews{0};

void *allocate(std::size_t n) {
  gNews.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
} // namespace

namespace lazyjit::bench {
uint64_t allocationCount() { return gNews.load(std::memory_order_relaxed); }
} // namespace lazyjit::bench

void *operator new(std::size_t n) { return allocate(n); }
void *operator new[](std::size_t n) { return allocate(n); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }

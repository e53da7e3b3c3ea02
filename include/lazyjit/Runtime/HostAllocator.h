// The host memory allocator shared by the host devices (CPU, INTERP): 64-byte aligned blocks,
// cached by size so that repeated realizes reuse memory instead of faulting in fresh pages.
#pragma once

#include "lazyjit/Runtime/Device.h"

#include <map>
#include <mutex>
#include <vector>

namespace lazyjit {

class HostAllocator : public Allocator {
public:
  ~HostAllocator() override;
  void *alloc(size_t bytes) override;
  void free(void *ptr, size_t bytes) override;
  void copyIn(void *dst, const void *src, size_t bytes) override;
  void copyOut(void *dst, const void *src, size_t bytes) override;
  bool hostAccessible() const override { return true; }
  /// Releases every cached block.
  void trim();

private:
  std::mutex mu;
  std::multimap<size_t, void *> freeBlocks;
  size_t cachedBytes = 0;
};

/// The process-wide host allocator.
HostAllocator &hostAllocator();

} // namespace lazyjit

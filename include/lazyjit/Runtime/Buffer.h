// Buffer: a typed allocation on a device, with host copies.
#pragma once

#include "lazyjit/Runtime/Device.h"

#include <cstdint>
#include <span>
#include <string>

namespace lazyjit {

class Buffer {
public:
  /// Allocates `size` elements of `dtype` on `device`.
  Buffer(const std::string &device, int64_t size, DType dtype);
  ~Buffer();
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  const std::string &device() const { return device_; }
  int64_t size() const { return size_; }
  DType dtype() const { return dtype_; }
  size_t nbytes() const { return static_cast<size_t>(size_) * dtype_.itemsize(); }
  /// The device pointer (a host pointer on host devices).
  void *ptr() const { return ptr_; }
  bool hostAccessible() const { return alloc_->hostAccessible(); }

  void copyIn(const void *src, size_t bytes);
  void copyOut(void *dst, size_t bytes) const;
  /// Copies `src` into this buffer (same dtype and size), across devices if needed.
  void copyFrom(const Buffer &src);

private:
  std::string device_;
  int64_t size_;
  DType dtype_;
  Allocator *alloc_;
  void *ptr_;
};

/// Bytes held by live Buffers on every device (the reference's GlobalCounters.mem_used).
int64_t bufferBytesInUse();

} // namespace lazyjit

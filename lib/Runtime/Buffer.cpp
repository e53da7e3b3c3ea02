// Buffers: allocation through the device allocator and copies across devices.
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"

#include <atomic>
#include <vector>

namespace lazyjit {

namespace {
std::atomic<int64_t> &bytesInUse() {
  static std::atomic<int64_t> n{0};
  return n;
}
} // namespace

int64_t bufferBytesInUse() { return bytesInUse().load(std::memory_order_relaxed); }

Buffer::Buffer(const std::string &device, int64_t size, DType dtype)
    : device_(device), size_(size), dtype_(dtype) {
  LAZYJIT_USER_CHECK(size >= 0, Error, "buffer: negative size {}", size);
  int64_t limit = config().maxBufferBytes;
  LAZYJIT_USER_CHECK(limit == 0 || static_cast<double>(size) * dtype.itemsize() <= static_cast<double>(limit),
                     DeviceError, "buffer: {} elements of {} exceed LAZYJIT_MAX_BUFFER_BYTES={}", size, dtype.name(),
                     limit);
  alloc_ = &getDevice(device).allocator();
  ptr_ = alloc_->alloc(nbytes());
  bytesInUse().fetch_add(static_cast<int64_t>(nbytes()), std::memory_order_relaxed);
}

Buffer::~Buffer() {
  bytesInUse().fetch_sub(static_cast<int64_t>(nbytes()), std::memory_order_relaxed);
  alloc_->free(ptr_, nbytes());
}

void Buffer::copyIn(const void *src, size_t bytes) {
  LAZYJIT_USER_CHECK(bytes <= nbytes(), Error, "buffer: copying {} bytes into {} bytes", bytes,
                     nbytes());
  alloc_->copyIn(ptr_, src, bytes);
}

void Buffer::copyOut(void *dst, size_t bytes) const {
  LAZYJIT_USER_CHECK(bytes <= nbytes(), Error, "buffer: copying {} bytes out of {} bytes", bytes,
                     nbytes());
  getDevice(device_).synchronize();
  alloc_->copyOut(dst, ptr_, bytes);
}

void Buffer::copyFrom(const Buffer &src) {
  LAZYJIT_INTERNAL_CHECK(src.dtype() == dtype_ && src.size() >= size_,
                         "copy between mismatched buffers");
  if (src.hostAccessible()) {
    getDevice(src.device()).synchronize();
    copyIn(src.ptr(), nbytes());
  } else if (hostAccessible()) {
    src.copyOut(ptr_, nbytes());
  } else {
    std::vector<char> staging(nbytes());
    src.copyOut(staging.data(), staging.size());
    copyIn(staging.data(), staging.size());
  }
}

} // namespace lazyjit

// Buffers: allocation through the device allocator and copies across devices.
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Support/Error.h"

#include <vector>

namespace lazyjit {

Buffer::Buffer(const std::string &device, int64_t size, DType dtype)
    : device_(device), size_(size), dtype_(dtype) {
  LAZYJIT_USER_CHECK(size >= 0, Error, "buffer: negative size {}", size);
  alloc_ = &getDevice(device).allocator();
  ptr_ = alloc_->alloc(nbytes());
}

Buffer::~Buffer() { alloc_->free(ptr_, nbytes()); }

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

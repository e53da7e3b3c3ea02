// A read-only memory mapping of a whole file: the bytes that lazily loaded weights (safetensors,
// .npy, ONNX models) read from when they are realized.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace lazyjit {

/// A whole regular file mapped read-only, unmapped when the object dies. Move-only; tensors that
/// read from it share it through open()'s shared_ptr, which keeps the mapping alive as long as any
/// of them is. An empty file maps to an empty span (mmap refuses length 0). The file must not
/// shrink while it is mapped (reading a page past its new end raises SIGBUS), as with any mmap.
/// Reading bytes() from several threads at once is safe.
class MappedFile {
public:
  /// Maps `path`. A file that cannot be opened, is not a regular file or cannot be mapped is a
  /// ParseError naming it: "model.onnx: cannot open: No such file or directory".
  explicit MappedFile(const std::string &path);
  /// A shared mapping of `path`, for lazy readers to hold.
  static std::shared_ptr<const MappedFile> open(const std::string &path);

  ~MappedFile();
  MappedFile(MappedFile &&other) noexcept;
  MappedFile &operator=(MappedFile &&other) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  /// The path it was opened with (for messages).
  const std::string &path() const { return path_; }

private:
  void unmap() noexcept;

  std::string path_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
};

} // namespace lazyjit

// The read-only file mapping under lazily loaded weights (see MappedFile.h).
#include "lazyjit/Support/MappedFile.h"
#include "lazyjit/Support/Error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace lazyjit {

namespace {

/// Closes a descriptor on every path out of the constructor.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw ParseError(fmt::format("{}: {}", path, what));
}

} // namespace

MappedFile::MappedFile(const std::string &path) : path_(path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is then rejected as not regular.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, fmt::format("cannot open: {}", std::strerror(errno)));
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, fmt::format("cannot stat: {}", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  if (st.st_size <= 0) return;
  size_t size = static_cast<size_t>(st.st_size);
  void *p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED)
    fail(path, fmt::format("cannot map {} bytes: {}", size, std::strerror(errno)));
  data_ = static_cast<const uint8_t *>(p);
  size_ = size;
}

std::shared_ptr<const MappedFile> MappedFile::open(const std::string &path) {
  return std::make_shared<const MappedFile>(path);
}

MappedFile::~MappedFile() { unmap(); }

MappedFile::MappedFile(MappedFile &&other) noexcept
    : path_(std::move(other.path_)), data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile &MappedFile::operator=(MappedFile &&other) noexcept {
  if (this != &other) {
    unmap();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::unmap() noexcept {
  if (data_) ::munmap(const_cast<uint8_t *>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

} // namespace lazyjit

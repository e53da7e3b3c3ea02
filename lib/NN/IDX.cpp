// IDX reader through zlib's gz* API, which reads gzip and plain files alike.
#include "lazyjit/NN/IDX.h"
#include "lazyjit/Support/Error.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

namespace lazyjit::nn {

namespace {
struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw Error(fmt::format("{}: {}", path, what));
}

// Reads exactly n bytes; returns how many were read before the end of the data.
size_t readSome(gzFile f, const std::string &path, uint8_t *out, size_t n) {
  size_t done = 0;
  while (done < n) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    int got = gzread(f, out + done, chunk);
    if (got < 0) {
      int err = 0;
      const char *msg = gzerror(f, &err);
      fail(path, fmt::format("cannot read the data: {}", err == Z_ERRNO ? std::strerror(errno) : msg));
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

struct IdxType {
  uint8_t code;
  DType dtype;
  const char *name;
};
constexpr IdxType kTypes[] = {
    {0x08, dtypes::uint8, "unsigned byte"}, {0x09, dtypes::int8, "signed byte"},
    {0x0B, dtypes::int16, "short"},         {0x0C, dtypes::int32, "int"},
    {0x0D, dtypes::float32, "float"},       {0x0E, dtypes::float64, "double"},
};
} // namespace

Tensor loadIDX(const std::string &path, const std::optional<std::string> &device) {
  errno = 0;
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) fail(path, fmt::format("cannot open: {}", errno ? std::strerror(errno) : "out of memory"));
  uint8_t magic[4];
  size_t got = readSome(f.get(), path, magic, 4);
  if (got < 4) fail(path, fmt::format("truncated: {} bytes, an IDX header needs at least 4", got));
  if (magic[0] != 0 || magic[1] != 0)
    fail(path, fmt::format("not an IDX file: the magic number starts with {:#04x} {:#04x}, not 0x00 0x00",
                           magic[0], magic[1]));
  const IdxType *type = nullptr;
  for (const auto &t : kTypes)
    if (t.code == magic[2]) type = &t;
  if (!type) fail(path, fmt::format("unknown IDX type code {:#04x}", magic[2]));
  int ndim = magic[3];
  if (ndim == 0) fail(path, "the IDX header has 0 dimensions");
  std::vector<uint8_t> dimBytes(4 * ndim);
  got = readSome(f.get(), path, dimBytes.data(), dimBytes.size());
  if (got < dimBytes.size())
    fail(path, fmt::format("truncated header: {} of the {} dimension sizes", got / 4, ndim));
  Shape shape;
  uint64_t count = 1;
  for (int i = 0; i < ndim; ++i) {
    uint32_t d = (uint32_t(dimBytes[4 * i]) << 24) | (uint32_t(dimBytes[4 * i + 1]) << 16) |
                 (uint32_t(dimBytes[4 * i + 2]) << 8) | uint32_t(dimBytes[4 * i + 3]);
    shape.push_back(static_cast<int64_t>(d));
    if (d != 0 && count > (uint64_t(1) << 40) / d)
      fail(path, fmt::format("the IDX shape has more than 2^40 elements"));
    count *= d;
  }
  size_t itemsize = static_cast<size_t>(type->dtype.itemsize());
  size_t bytes = static_cast<size_t>(count) * itemsize;
  // read in chunks: a header may announce far more data than the file holds, and that must be a
  // "truncated" error, not an allocation of the announced size
  std::vector<uint8_t> data;
  got = 0;
  while (got < bytes) {
    size_t chunk = std::min<size_t>(bytes - got, size_t(16) << 20);
    try {
      data.resize(got + chunk);
    } catch (const std::bad_alloc &) {
      fail(path, fmt::format("out of memory for {} bytes of data", bytes));
    }
    size_t n = readSome(f.get(), path, data.data() + got, chunk);
    got += n;
    if (n < chunk) break;
  }
  if (got < bytes)
    fail(path, fmt::format("truncated: {} of the {} bytes of {} data ({} values)", got, bytes, type->name, count));
  uint8_t extra;
  if (readSome(f.get(), path, &extra, 1) != 0)
    fail(path, fmt::format("malformed: there are bytes after the {} values the header announces", count));
  // IDX is big-endian; lazyjit buffers are host (little-endian) order
  if (itemsize > 1)
    for (size_t i = 0; i < bytes; i += itemsize) std::reverse(data.begin() + i, data.begin() + i + itemsize);
  return Tensor::fromBytes(data.data(), data.size(), shape, type->dtype, device);
}

} // namespace lazyjit::nn

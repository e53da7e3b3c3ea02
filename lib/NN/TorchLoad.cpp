// torchLoad (see TorchLoad.h): the zip, legacy and tar layouts of torch.save, the checkpoint's
// pickle through the restricted unpickler of Pickle.h, and lazy strided tensors over the mapped
// file.
#include "lazyjit/NN/TorchLoad.h"

#include "Pickle.h"
#include "lazyjit/Graph/ShapeText.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/MappedFile.h"

#include <fmt/ranges.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <unordered_map>

namespace lazyjit::nn {

using pickle::Kind;
using pickle::Object;
using pickle::StorageRef;
using pickle::TensorRef;
using pickle::Unpickler;

namespace {

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw ParseError(fmt::format("{}: {}", path, what));
}

/// Bytes that stay alive as long as the handle: a part of the mapped file, or inflated data.
struct Region {
  std::shared_ptr<const uint8_t> data;
  size_t size = 0;
};

Region slice(const std::shared_ptr<const MappedFile> &file, size_t offset, size_t size) {
  return {std::shared_ptr<const uint8_t>(file, file->data() + offset), size};
}

uint64_t le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = (v << 8) | p[i];
  return v;
}

/// What a layout reader gives: the checkpoint's pickle (its objects owned by `unpickler`) and the
/// bytes of each storage key.
struct Checkpoint {
  std::unique_ptr<Unpickler> unpickler;
  Object *root = nullptr;
  std::function<Region(const std::string &key)> storage;
  bool bigEndian = false;
};

/// ('storage', torch.XStorage, key, location, numel) of the zip format; the legacy format adds a
/// sixth element, the view metadata (None since torch 1.0).
Object *storageFromPid(Unpickler &u, const Object &pid, size_t at) {
  const auto &a = pid.items;
  if (pid.kind != Kind::Tuple || a.size() < 5 || a.size() > 6 || a[0]->kind != Kind::Str ||
      a[0]->s != "storage")
    u.fail(at, "a persistent id that is not ('storage', type, key, location, numel)");
  if (a[1]->kind != Kind::Global || !pickle::storageDType(a[1]->s))
    u.fail(at, fmt::format("a storage of {} (lazyjit reads float16/32/64, bfloat16, "
                           "int8/16/32/64, uint8 and bool storages)",
                           a[1]->kind == Kind::Global ? a[1]->s
                                                      : std::string(pickle::kindName(a[1]->kind))));
  if (a[2]->kind != Kind::Str)
    u.fail(at, fmt::format("a storage key that is {}", pickle::kindName(a[2]->kind)));
  if (a[4]->kind != Kind::Int || a[4]->i < 0)
    u.fail(at, "a storage whose numel is not a non-negative int");
  if (a.size() == 6 && a[5]->kind != Kind::None)
    throw UnsupportedError(
        fmt::format("{}: storage '{}' is a view of another storage (torch < 1.0), which lazyjit "
                    "does not read",
                    u.path(), a[2]->s));
  Object *s = u.make(Kind::Storage);
  s->storage = {a[2]->s, *pickle::storageDType(a[1]->s), a[4]->i};
  return s;
}

// ---- zip ----------------------------------------------------------------------------------------

struct ZipEntry {
  uint16_t method = 0, flags = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, size = 0, local = 0;
};

/// The central directory of a zip archive: entry name -> entry.
std::map<std::string, ZipEntry> zipDirectory(const MappedFile &f) {
  const std::string &path = f.path();
  const uint8_t *p = f.data();
  size_t n = f.size();
  if (n < 22)
    fail(path,
         fmt::format("truncated zip archive: {} bytes, no end of central directory record", n));
  size_t eocd = n - 22, lowest = n - 22 > 65535 ? n - 22 - 65535 : 0;
  while (le(p + eocd, 4) != 0x06054b50) {
    if (eocd == lowest)
      fail(path,
           "truncated zip archive: no end of central directory record (is the file cut short?)");
    --eocd;
  }
  uint64_t count = le(p + eocd + 10, 2), cdSize = le(p + eocd + 12, 4),
           cdOffset = le(p + eocd + 16, 4);
  // ZIP64 (torch.save always writes it): the real numbers are in the record its locator names
  if (eocd >= 20 && le(p + eocd - 20, 4) == 0x07064b50) {
    uint64_t at = le(p + eocd - 20 + 8, 8);
    if (n < 56 || at > n - 56 || le(p + at, 4) != 0x06064b50)
      fail(path, "corrupt zip archive: the ZIP64 end of central directory locator points nowhere");
    count = le(p + at + 32, 8), cdSize = le(p + at + 40, 8), cdOffset = le(p + at + 48, 8);
  }
  if (cdOffset > n || cdSize > n - cdOffset)
    fail(
        path,
        fmt::format(
            "truncated zip archive: the central directory (offset {}, {} bytes) is past the file's "
            "{} bytes",
            cdOffset, cdSize, n));
  std::map<std::string, ZipEntry> out;
  size_t at = cdOffset, end = cdOffset + cdSize;
  for (uint64_t i = 0; i < count; ++i) {
    if (end - at < 46 || le(p + at, 4) != 0x02014b50)
      fail(path,
           fmt::format("corrupt zip archive: central directory entry {} at offset {} is damaged", i,
                       at));
    ZipEntry e;
    e.flags = static_cast<uint16_t>(le(p + at + 8, 2));
    e.method = static_cast<uint16_t>(le(p + at + 10, 2));
    e.crc = static_cast<uint32_t>(le(p + at + 16, 4));
    e.compressed = le(p + at + 20, 4), e.size = le(p + at + 24, 4), e.local = le(p + at + 42, 4);
    size_t nameLen = le(p + at + 28, 2), extraLen = le(p + at + 30, 2),
           commentLen = le(p + at + 32, 2);
    if (end - at - 46 < nameLen + extraLen + commentLen)
      fail(path, fmt::format(
                     "corrupt zip archive: central directory entry {} runs past the directory", i));
    std::string name(reinterpret_cast<const char *>(p + at + 46), nameLen);
    // ZIP64 extra field (id 1): the 64-bit values of the fields that hold 0xffffffff, in order
    for (size_t x = at + 46 + nameLen, xEnd = x + extraLen; xEnd - x >= 4;) {
      size_t id = le(p + x, 2), len = le(p + x + 2, 2);
      if (len > xEnd - x - 4) break;
      size_t v = x + 4;
      auto wide = [&](uint64_t &field) {
        if (field != 0xffffffff) return;
        if (v + 8 > x + 4 + len)
          fail(path, fmt::format("corrupt zip archive: entry '{}' lacks its ZIP64 sizes", name));
        field = le(p + v, 8), v += 8;
      };
      if (id == 1) wide(e.size), wide(e.compressed), wide(e.local);
      x += 4 + len;
    }
    out[name] = e;
    at += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

/// The bytes of one entry: a slice of the mapping when stored, inflated when deflated.
Region zipData(const std::shared_ptr<const MappedFile> &file, const std::string &name,
               const ZipEntry &e) {
  const std::string &path = file->path();
  const uint8_t *p = file->data();
  size_t n = file->size();
  if (e.flags & 1) fail(path, fmt::format("zip entry '{}' is encrypted", name));
  if (e.local > n || n - e.local < 30 || le(p + e.local, 4) != 0x04034b50)
    fail(path, fmt::format("corrupt zip archive: the local header of '{}' (offset {}) is missing",
                           name, e.local));
  uint64_t start = e.local + 30 + le(p + e.local + 26, 2) + le(p + e.local + 28, 2);
  if (start > n || e.compressed > n - start)
    fail(path,
         fmt::format("truncated zip archive: the {} bytes of '{}' reach past the end of the file",
                     e.compressed, name));
  if (e.method == 0) {
    if (e.size != e.compressed)
      fail(path, fmt::format("corrupt zip archive: stored entry '{}' has two sizes", name));
    return slice(file, start, e.size);
  }
  if (e.method != 8)
    fail(
        path,
        fmt::format(
            "zip entry '{}' uses compression method {} (lazyjit reads stored and deflated entries)",
            name, e.method));
  // deflate expands at most ~1032:1; a larger claim is damage, not data to allocate for
  if (e.size > e.compressed * 1032 + 64)
    fail(path, fmt::format("corrupt zip archive: '{}' claims {} bytes from {} deflated bytes", name,
                           e.size, e.compressed));
  if (e.size > UINT32_MAX || e.compressed > UINT32_MAX)
    fail(path,
         fmt::format(
             "zip entry '{}' is deflated and larger than 4 GB (lazyjit inflates smaller ones)",
             name));
  auto out = std::make_shared<std::vector<uint8_t>>(e.size);
  uint8_t none = 0; // zlib refuses a null output pointer, even for no output
  z_stream z{};
  if (inflateInit2(&z, -15) != Z_OK)
    throw Error(fmt::format("{}: zlib cannot start inflating", path));
  z.next_in = const_cast<Bytef *>(p + start);
  z.avail_in = static_cast<uInt>(e.compressed);
  z.next_out = e.size ? out->data() : &none;
  z.avail_out = static_cast<uInt>(out->size());
  int rc = inflate(&z, Z_FINISH);
  uint64_t produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != e.size)
    fail(path,
         fmt::format("corrupt zip archive: '{}' does not inflate to its {} bytes", name, e.size));
  if (crc32(0, out->data(), static_cast<uInt>(out->size())) != e.crc)
    fail(path, fmt::format("corrupt zip archive: '{}' fails its CRC check", name));
  const uint8_t *data = out->data();
  return {std::shared_ptr<const uint8_t>(std::move(out), data), e.size};
}

Checkpoint readZip(const std::shared_ptr<const MappedFile> &file) {
  const std::string &path = file->path();
  auto dir = std::make_shared<std::map<std::string, ZipEntry>>(zipDirectory(*file));
  if (dir->empty()) fail(path, "the zip archive is empty");
  // every record sits in one folder, named after the file torch.save wrote ("archive" since 2.0)
  std::string first = dir->begin()->first, prefix = first.substr(0, first.find('/')) + "/";
  auto pkl = dir->find(prefix + "data.pkl");
  if (pkl == dir->end())
    fail(path, fmt::format("the zip archive has no {}data.pkl (not a torch.save file?)", prefix));
  Checkpoint c;
  if (auto order = dir->find(prefix + "byteorder"); order != dir->end()) {
    Region r = zipData(file, order->first, order->second);
    std::string s(reinterpret_cast<const char *>(r.data.get()), r.size);
    if (s != "little" && s != "big") fail(path, fmt::format("the byteorder record says '{}'", s));
    c.bigEndian = s == "big";
  }
  Region data = zipData(file, pkl->first, pkl->second);
  c.unpickler = std::make_unique<Unpickler>(path, storageFromPid);
  size_t pos = 0;
  c.root = c.unpickler->load({data.data.get(), data.size}, pos, "data.pkl");
  auto cache = std::make_shared<std::map<std::string, Region>>();
  c.storage = [file, dir, prefix, cache](const std::string &key) {
    if (auto it = cache->find(key); it != cache->end()) return it->second;
    auto e = dir->find(prefix + "data/" + key);
    if (e == dir->end())
      fail(file->path(), fmt::format("storage '{}' has no record {}data/{}", key, prefix, key));
    return (*cache)[key] = zipData(file, e->first, e->second);
  };
  return c;
}

// ---- legacy -------------------------------------------------------------------------------------

// torch.serialization.MAGIC_NUMBER, 0x1950a86a20f9469cfc6c, as LONG1 stores it (little-endian)
constexpr uint8_t kLegacyMagic[] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

Checkpoint readLegacy(const std::shared_ptr<const MappedFile> &file) {
  const std::string &path = file->path();
  std::span<const uint8_t> bytes = file->bytes();
  // the main pickle's storages, in the order first seen: the data needs their sizes
  auto seen = std::make_shared<std::map<std::string, StorageRef>>();
  Checkpoint c;
  c.unpickler = std::make_unique<Unpickler>(path, [seen](Unpickler &u, const Object &pid,
                                                         size_t at) {
    Object *s = storageFromPid(u, pid, at);
    auto [it, fresh] = seen->emplace(s->storage.key, s->storage);
    if (!fresh && (it->second.dtype != s->storage.dtype || it->second.numel != s->storage.numel))
      u.fail(at, fmt::format("storage '{}' appears with two dtypes or sizes", s->storage.key));
    return s;
  });
  Unpickler &u = *c.unpickler;
  size_t pos = 0;
  Object *magic = u.load(bytes, pos, "the magic number");
  if (magic->kind != Kind::BigInt ||
      magic->s != std::string(std::begin(kLegacyMagic), std::end(kLegacyMagic)))
    fail(path, "not a PyTorch checkpoint: a pickle without torch's magic number");
  Object *protocol = u.load(bytes, pos, "the protocol version");
  if (protocol->kind != Kind::Int || protocol->i != 1001)
    fail(path, "unsupported legacy checkpoint: the protocol version is not 1001");
  Object *sysInfo = u.load(bytes, pos, "sys_info");
  if (sysInfo->kind == Kind::Dict)
    for (size_t i = 0; i + 1 < sysInfo->items.size(); i += 2)
      if (sysInfo->items[i]->kind == Kind::Str && sysInfo->items[i]->s == "little_endian")
        c.bigEndian = sysInfo->items[i + 1]->kind == Kind::Bool && sysInfo->items[i + 1]->i == 0;
  c.root = u.load(bytes, pos, "the checkpoint's pickle");
  Object *keys = u.load(bytes, pos, "the storage keys");
  if (keys->kind != Kind::List) fail(path, "the storage keys are not a list");
  auto regions = std::make_shared<std::map<std::string, Region>>();
  for (const Object *k : keys->items) {
    if (k->kind != Kind::Str) fail(path, "a storage key is not a string");
    auto it = seen->find(k->s);
    if (it == seen->end())
      fail(path, fmt::format("storage '{}' is listed, but no tensor uses it", k->s));
    const StorageRef &s = it->second;
    uint64_t size;
    if (__builtin_mul_overflow(static_cast<uint64_t>(s.numel), s.dtype.itemsize(), &size) ||
        bytes.size() - pos < 8 || size > bytes.size() - pos - 8)
      fail(path,
           fmt::format("truncated: storage '{}' ({} {} elements) reaches past the end of the file",
                       s.key, s.numel, s.dtype.name()));
    uint64_t numel = c.bigEndian ? be(bytes.data() + pos, 8) : le(bytes.data() + pos, 8);
    if (numel != static_cast<uint64_t>(s.numel))
      fail(path,
           fmt::format("storage '{}' records {} elements, its pickle {}", s.key, numel, s.numel));
    (*regions)[s.key] = slice(file, pos + 8, size);
    pos += 8 + size;
  }
  c.storage = [regions, path](const std::string &key) {
    auto it = regions->find(key);
    if (it == regions->end())
      fail(path, fmt::format("storage '{}' is not in the file's list of storages", key));
    return it->second;
  };
  return c;
}

// ---- tar (torch < 0.4) --------------------------------------------------------------------------

uint64_t tarNumber(const std::string &path, const uint8_t *p, size_t n) {
  if (p[0] & 0x80) return be(p + n - 8, 8); // base-256 for sizes beyond 8 GB
  uint64_t v = 0;
  size_t i = 0;
  while (i < n && p[i] == ' ') ++i; // some writers right-align the digits
  for (; i < n && p[i] && p[i] != ' '; ++i) {
    if (p[i] < '0' || p[i] > '7' || v >> 60)
      fail(path, "corrupt tar archive: a header number is not octal");
    v = v * 8 + (p[i] - '0');
  }
  return v;
}

std::string cString(const uint8_t *p, size_t n) {
  return std::string(reinterpret_cast<const char *>(p),
                     strnlen(reinterpret_cast<const char *>(p), n));
}

/// The regular files of a ustar/pax archive by name.
std::map<std::string, Region> tarMembers(const std::shared_ptr<const MappedFile> &file) {
  const std::string &path = file->path();
  const uint8_t *p = file->data();
  size_t n = file->size();
  std::map<std::string, Region> out;
  struct {
    std::string path;
    uint64_t size = 0;
    bool hasPath = false, hasSize = false;
  } pax; // a pax header's overrides for the next member
  for (size_t at = 0; n - at >= 512;) {
    const uint8_t *h = p + at;
    if (std::all_of(h, h + 512, [](uint8_t b) { return b == 0; })) break;
    uint64_t sum = 0;
    for (int i = 0; i < 512; ++i) sum += (i >= 148 && i < 156) ? ' ' : h[i];
    if (sum != tarNumber(path, h + 148, 8))
      fail(path, fmt::format("corrupt tar archive: bad header checksum at offset {}", at));
    uint64_t size = tarNumber(path, h + 124, 12);
    char type = static_cast<char>(h[156]);
    if ((type == '0' || type == '\0') && pax.hasSize) size = pax.size;
    size_t data = at + 512;
    if (size > n - data)
      fail(path, fmt::format(
                     "truncated tar archive: a member of {} bytes at offset {} ends past the file",
                     size, data));
    if (type == 'x') { // pax records "LEN key=value\n"
      for (size_t r = data, end = data + size; r < end;) {
        size_t len = 0, i = r;
        while (i < end && p[i] >= '0' && p[i] <= '9' && len < end) len = len * 10 + (p[i++] - '0');
        if (len == 0 || len > end - r || i > r + len)
          fail(path, "corrupt tar archive: a bad pax record");
        std::string rec(reinterpret_cast<const char *>(p + i), r + len - i);
        if (rec.rfind(" path=", 0) == 0)
          pax.path = rec.substr(6, rec.size() - 7), pax.hasPath = true;
        if (rec.rfind(" size=", 0) == 0)
          pax.size = std::strtoull(rec.c_str() + 6, nullptr, 10), pax.hasSize = true;
        r += len;
      }
    } else if (type == '0' || type == '\0') {
      std::string name = cString(h, 100),
                  prefix = std::memcmp(h + 257, "ustar", 5) == 0 ? cString(h + 345, 155) : "";
      out[pax.hasPath      ? pax.path
          : prefix.empty() ? name
                           : prefix + "/" + name] = slice(file, data, size);
    }
    if (type != 'x' && type != 'g') pax.hasPath = pax.hasSize = false;
    at = data + (size + 511) / 512 * 512;
    if (at > n) break;
  }
  return out;
}

/// A pickled key of the tar format (an int or a string) as a string.
std::string keyText(Unpickler &u, const Object &k, size_t at) {
  if (k.kind == Kind::Int) return std::to_string(k.i);
  if (k.kind == Kind::Str) return k.s;
  u.fail(at, fmt::format("a key that is {}", pickle::kindName(k.kind)));
}

Checkpoint readTar(const std::shared_ptr<const MappedFile> &file) {
  const std::string &path = file->path();
  std::map<std::string, Region> members = tarMembers(file);
  auto member = [&](const char *name) -> std::span<const uint8_t> {
    auto it = members.find(name);
    if (it == members.end())
      fail(path, fmt::format("the tar archive has no '{}' member (not a torch.save file?)", name));
    return {it->second.data.get(), it->second.size};
  };
  auto tensors = std::make_shared<std::map<std::string, Object *>>();
  Checkpoint c;
  c.unpickler =
      std::make_unique<Unpickler>(path, [tensors](Unpickler &u, const Object &pid, size_t at) {
        if (pid.kind != Kind::Str && pid.kind != Kind::Int)
          u.fail(at, "a persistent id that is not a tensor's key");
        auto it = tensors->find(keyText(u, pid, at));
        if (it == tensors->end())
          u.fail(at, fmt::format("no tensor has the key '{}'", keyText(u, pid, at)));
        return it->second;
      });
  Unpickler &u = *c.unpickler;
  auto count = [&](std::span<const uint8_t> m, size_t &pos, const std::string &what) {
    Object *o = u.load(m, pos, what);
    if (o->kind != Kind::Int || o->i < 0)
      fail(path, fmt::format("{}: the count is not a non-negative int", what));
    return o->i;
  };

  std::span<const uint8_t> st = member("storages");
  auto regions = std::make_shared<std::map<std::string, Region>>();
  std::map<std::string, StorageRef> storages;
  size_t pos = 0;
  for (int64_t i = 0, n = count(st, pos, "storages"); i < n; ++i) {
    size_t at = pos;
    Object *rec = u.load(st, pos, "storages");
    if (rec->kind != Kind::Tuple || rec->items.size() != 3 || rec->items[2]->kind != Kind::Global ||
        !pickle::storageDType(rec->items[2]->s))
      u.fail(at, "a storage record that is not (key, location, torch.XStorage)");
    StorageRef s{keyText(u, *rec->items[0], at), *pickle::storageDType(rec->items[2]->s), 0};
    if (st.size() - pos < 8)
      fail(path, fmt::format("storages: truncated: storage '{}' has no element count", s.key));
    uint64_t numel = le(st.data() + pos, 8);
    if (numel > (st.size() - pos - 8) / s.dtype.itemsize())
      fail(path,
           fmt::format("storages: truncated: storage '{}' of {} elements reaches past the member",
                       s.key, numel));
    s.numel = static_cast<int64_t>(numel);
    size_t offset = static_cast<size_t>(st.data() + pos + 8 - file->data());
    (*regions)[s.key] = slice(file, offset, numel * s.dtype.itemsize());
    storages[s.key] = s;
    pos += 8 + numel * s.dtype.itemsize();
  }
  if (Object *views = u.load(st, pos, "storages");
      views->kind != Kind::List || !views->items.empty())
    throw UnsupportedError(
        fmt::format("{}: the checkpoint has storage views, which lazyjit does not read", path));

  std::span<const uint8_t> te = member("tensors");
  pos = 0;
  for (int64_t i = 0, n = count(te, pos, "tensors"); i < n; ++i) {
    size_t at = pos;
    Object *rec = u.load(te, pos, "tensors");
    if (rec->kind != Kind::Tuple || rec->items.size() != 3)
      u.fail(at, "a tensor record that is not (key, storage, type)");
    std::string key = keyText(u, *rec->items[0], at), storage = keyText(u, *rec->items[1], at);
    auto s = storages.find(storage);
    if (s == storages.end())
      u.fail(at, fmt::format("tensor '{}' uses storage '{}', which the file lacks", key, storage));
    if (te.size() - pos < 8)
      fail(path, fmt::format("tensors: truncated: tensor '{}' has no dims", key));
    uint64_t ndim = le(te.data() + pos, 4);
    if (ndim > 64 || te.size() - pos - 8 < (2 * ndim + 1) * 8)
      fail(path,
           fmt::format("tensors: truncated or corrupt: tensor '{}' claims {} dims", key, ndim));
    const uint8_t *q = te.data() + pos + 8;
    Object *t = u.make(Kind::Tensor);
    t->tensor.storage = s->second;
    for (uint64_t d = 0; d < ndim; ++d)
      t->tensor.size.push_back(static_cast<int64_t>(le(q + 8 * d, 8)));
    for (uint64_t d = 0; d < ndim; ++d)
      t->tensor.stride.push_back(static_cast<int64_t>(le(q + 8 * (ndim + d), 8)));
    t->tensor.offset = static_cast<int64_t>(le(q + 16 * ndim, 8));
    (*tensors)[key] = t;
    pos += 8 + (2 * ndim + 1) * 8;
  }
  pos = 0;
  c.root = u.load(member("pickle"), pos, "pickle");
  c.storage = [regions, path](const std::string &key) { return regions->at(key); };
  return c;
}

// ---- tensors ------------------------------------------------------------------------------------

/// Copies the elements of a strided view at `base` into `out`, in C order.
void gather(const uint8_t *base, size_t item, const std::vector<int64_t> &size,
            const std::vector<int64_t> &stride, uint8_t *out) {
  size_t nd = size.size();
  if (nd == 0) {
    std::memcpy(out, base, item);
    return;
  }
  int64_t inner = size[nd - 1], innerStride = stride[nd - 1], rows = 1;
  for (size_t d = 0; d + 1 < nd; ++d) rows *= size[d];
  std::vector<int64_t> idx(nd, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = 0;
    for (size_t d = 0; d + 1 < nd; ++d) off += idx[d] * stride[d];
    const uint8_t *src = base + off * static_cast<int64_t>(item);
    if (innerStride == 1) {
      std::memcpy(out, src, inner * item);
      out += inner * item;
    } else {
      for (int64_t j = 0; j < inner; ++j, out += item)
        std::memcpy(out, src + j * innerStride * static_cast<int64_t>(item), item);
    }
    for (size_t d = nd - 1; d-- > 0;) {
      if (++idx[d] < size[d]) break;
      idx[d] = 0;
    }
  }
}

std::string tensorText(const TensorRef &t) {
  return fmt::format("{}{} with strides ({}) at offset {}", t.storage.dtype.name(),
                     fmt::format("[{}]", fmt::join(t.size, ", ")), fmt::join(t.stride, ", "),
                     t.offset);
}

/// A lazy tensor over `t`'s storage, checked against the storage's bounds.
Tensor makeTensor(const std::string &path, const std::string &name, const TensorRef &t,
                  const Region &storage, bool swap, const std::optional<std::string> &device) {
  DType dt = t.storage.dtype;
  size_t item = dt.itemsize();
  auto bad = [&](const std::string &why) {
    fail(path, fmt::format("tensor '{}' ({}): {}", name, tensorText(t), why));
  };
  if (t.size.size() != t.stride.size()) bad("its size and stride differ in length");
  if (t.size.size() > 64) bad("more than 64 dims");
  if (t.offset < 0) bad("a negative storage offset");
  int64_t numel = 1, last = t.offset, storageBytes;
  for (size_t d = 0; d < t.size.size(); ++d) {
    if (t.size[d] < 0 || t.stride[d] < 0) bad("a negative size or stride");
    if (__builtin_mul_overflow(numel, t.size[d], &numel)) bad("its size overflows 64 bits");
  }
  if (__builtin_mul_overflow(t.storage.numel, static_cast<int64_t>(item), &storageBytes) ||
      static_cast<uint64_t>(storageBytes) > storage.size)
    fail(path, fmt::format("storage '{}' holds {} bytes, fewer than its {} {} elements need",
                           t.storage.key, storage.size, t.storage.numel, dt.name()));
  if (numel > 0) {
    for (size_t d = 0; d < t.size.size(); ++d) {
      int64_t reach;
      if (__builtin_mul_overflow(t.size[d] - 1, t.stride[d], &reach) ||
          __builtin_add_overflow(last, reach, &last))
        bad("its extent overflows 64 bits");
    }
    if (last >= t.storage.numel)
      bad(fmt::format("it reaches element {} of storage '{}', which has {} elements", last,
                      t.storage.key, t.storage.numel));
  }
  bool contiguous = true;
  for (int64_t d = static_cast<int64_t>(t.size.size()) - 1, want = 1; numel > 0 && d >= 0;
       want *= t.size[d--])
    if (t.size[d] != 1 && t.stride[d] != want) contiguous = false;
  Shape shape;
  for (int64_t s : t.size) shape.emplace_back(s);
  // (an empty tensor reads nothing: fromHostFunction never calls it)
  const uint8_t *base =
      numel > 0 ? storage.data.get() + t.offset * static_cast<int64_t>(item) : nullptr;
  size_t bytes = static_cast<size_t>(numel) * item;
  return Tensor::fromHostFunction(
      shape, dt, "torch " + name,
      [keep = storage.data, base, bytes, item, contiguous, swap, size = t.size,
       stride = t.stride](Buffer &out) {
        if (contiguous && !swap) {
          out.copyIn(base, bytes);
          return;
        }
        std::vector<uint8_t> tmp(bytes);
        if (contiguous)
          std::memcpy(tmp.data(), base, bytes);
        else
          gather(base, item, size, stride, tmp.data());
        if (swap && item > 1)
          for (size_t i = 0; i < bytes; i += item)
            std::reverse(tmp.begin() + i, tmp.begin() + i + item);
        out.copyIn(tmp.data(), bytes);
      },
      device);
}

/// The tensors of a nest of dicts, lists and tuples, named by their "."-joined paths.
class Flattener {
public:
  Flattener(const std::string &path, const Checkpoint &c, const std::optional<std::string> &device)
      : path(path), c(c), device(device) {}

  StateDict run() {
    walk(*c.root, "", 0);
    return std::move(out);
  }

private:
  const std::string &path;
  const Checkpoint &c;
  const std::optional<std::string> &device;
  StateDict out;
  // a tensor the pickle holds twice (tied weights) is one lazy tensor under both names
  std::unordered_map<const Object *, Tensor> made;
  size_t visits = 0, nameBytes = 0;
  static constexpr int kMaxDepth = 100;
  static constexpr size_t kMaxVisits = 1u << 20, kMaxNameBytes = 1u << 26;

  static bool holdsTensors(const Object &o) {
    return o.kind == Kind::Tensor || o.kind == Kind::Dict || o.kind == Kind::List ||
           o.kind == Kind::Tuple;
  }

  void child(const Object &o, const std::string &prefix, const std::string &key, int depth) {
    if (!holdsTensors(o)) return; // ints, floats, strings, None: skipped
    std::string name = prefix.empty() ? key : prefix + "." + key;
    // shared containers can make a small pickle name exponentially many paths
    if (++visits > kMaxVisits || (nameBytes += name.size()) > kMaxNameBytes)
      fail(path, fmt::format("the checkpoint has more than {} values or {} bytes of names",
                             kMaxVisits, kMaxNameBytes));
    walk(o, name, depth + 1);
  }

  void walk(const Object &o, const std::string &name, int depth) {
    if (depth > kMaxDepth)
      fail(path,
           fmt::format("the checkpoint nests deeper than {} levels (or is a cycle)", kMaxDepth));
    if (o.kind == Kind::Tensor) {
      if (out.contains(name))
        fail(path, fmt::format("two tensors are named '{}' after flattening", name));
      auto it = made.find(&o);
      if (it == made.end())
        it = made.emplace(&o, makeTensor(path, name, o.tensor, c.storage(o.tensor.storage.key),
                                         c.bigEndian, device))
                 .first;
      out.insert(name, it->second);
    } else if (o.kind == Kind::Dict) {
      for (size_t i = 0; i + 1 < o.items.size(); i += 2) {
        const Object &k = *o.items[i];
        if (k.kind != Kind::Str && k.kind != Kind::Int)
          fail(path, fmt::format("a dict key in '{}' is {}, not a string or an int", name,
                                 pickle::kindName(k.kind)));
        child(*o.items[i + 1], name, k.kind == Kind::Str ? k.s : std::to_string(k.i), depth);
      }
    } else if (o.kind == Kind::List || o.kind == Kind::Tuple) {
      for (size_t i = 0; i < o.items.size(); ++i)
        child(*o.items[i], name, std::to_string(i), depth);
    }
  }
};

} // namespace

StateDict torchLoad(const std::string &path, const std::optional<std::string> &device) {
  auto file = MappedFile::open(path);
  const uint8_t *p = file->data();
  size_t n = file->size();
  Checkpoint c;
  if (n >= 2 && p[0] == 'P' && p[1] == 'K')
    c = readZip(file);
  else if (n >= 512 && std::memcmp(p + 257, "ustar", 5) == 0)
    c = readTar(file);
  else if (n >= 2 && p[0] == 0x80)
    c = readLegacy(file);
  else
    fail(path, "not a PyTorch checkpoint (neither a zip archive, a tar archive nor a pickle)");
  return Flattener(path, c, device).run();
}

} // namespace lazyjit::nn

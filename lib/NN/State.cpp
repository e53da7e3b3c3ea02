// safetensors and .npy files, and state dict loading (see State.h).
#include "lazyjit/NN/State.h"
#include "lazyjit/Graph/ShapeText.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/MappedFile.h"
#include "lazyjit/Support/Math.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

namespace lazyjit {

namespace {

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw ParseError(fmt::format("{}: {}", path, what));
}

/// A tensor that copies `bytes` bytes at `offset` of the mapping when realized (swapping each
/// element's bytes first when the file is big-endian).
Tensor lazyRegion(std::shared_ptr<const MappedFile> file, size_t offset, size_t bytes, const Shape &shape, DType dt,
                  bool byteSwap, const std::optional<std::string> &device, const std::string &name) {
  return Tensor::fromHostFunction(
      shape, dt, name,
      [file = std::move(file), offset, bytes, byteSwap, dt](Buffer &out) {
        if (!byteSwap) {
          out.copyIn(file->data() + offset, bytes);
          return;
        }
        std::vector<uint8_t> tmp(file->data() + offset, file->data() + offset + bytes);
        size_t w = dt.itemsize();
        for (size_t i = 0; i + w <= tmp.size(); i += w) std::reverse(tmp.begin() + i, tmp.begin() + i + w);
        out.copyIn(tmp.data(), tmp.size());
      },
      device);
}

/// Checked element count and byte size of a shape read from a file.
std::pair<int64_t, size_t> sizeOf(const std::string &path, const std::string &what, const std::vector<int64_t> &dims,
                                  DType dt) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) fail(path, fmt::format("{}: negative dimension {}", what, d));
    if (__builtin_mul_overflow(n, d, &n)) fail(path, fmt::format("{}: the shape's size overflows 64 bits", what));
  }
  int64_t bytes;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dt.itemsize()), &bytes))
    fail(path, fmt::format("{}: the tensor's byte size overflows 64 bits", what));
  return {n, static_cast<size_t>(bytes)};
}

bool sameShape(const Shape &a, const Shape &b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!pyEq(a[i], b[i])) return false;
  return true;
}

Shape toShape(const std::vector<int64_t> &dims) {
  Shape s;
  for (int64_t d : dims) s.emplace_back(d);
  return s;
}

// ---- safetensors --------------------------------------------------------------------------------

struct SafeDType {
  const char *name;
  DType dt;
};
constexpr SafeDType kSafeDTypes[] = {
    {"BOOL", dtypes::boolean}, {"I8", dtypes::int8},     {"U8", dtypes::uint8},      {"I16", dtypes::int16},
    {"U16", dtypes::uint16},   {"I32", dtypes::int32},   {"U32", dtypes::uint32},    {"I64", dtypes::int64},
    {"U64", dtypes::uint64},   {"F16", dtypes::float16}, {"BF16", dtypes::bfloat16}, {"F32", dtypes::float32},
    {"F64", dtypes::float64},
};

std::optional<DType> safeDType(const std::string &name) {
  for (const auto &d : kSafeDTypes)
    if (name == d.name) return d.dt;
  return std::nullopt;
}
const char *safeName(DType dt) {
  for (const auto &d : kSafeDTypes)
    if (d.dt == dt) return d.name;
  return nullptr;
}

constexpr uint64_t kMaxHeader = 100u << 20; // safetensors' own limit

} // namespace

nn::StateDict safeLoad(const std::string &path, const std::optional<std::string> &device) {
  auto file = MappedFile::open(path);
  const uint8_t *p = file->data();
  size_t size = file->size();
  if (size < 8) fail(path, fmt::format("truncated: {} bytes, too short for the 8-byte header length", size));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | p[i];
  if (n > size - 8)
    fail(path, fmt::format("the header length {} is beyond the file's {} bytes", n, size));
  if (n > kMaxHeader) fail(path, fmt::format("the header length {} exceeds the limit of {} bytes", n, kMaxHeader));
  nlohmann::ordered_json header =
      nlohmann::ordered_json::parse(p + 8, p + 8 + n, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) fail(path, "the header is not valid JSON");
  if (!header.is_object()) fail(path, "the header is not a JSON object");
  size_t dataStart = 8 + static_cast<size_t>(n), dataSize = size - dataStart;

  struct Entry {
    std::string name;
    DType dt;
    std::vector<int64_t> dims;
    uint64_t begin, end;
  };
  std::vector<Entry> entries;
  for (const auto &[key, v] : header.items()) {
    if (key == "__metadata__") {
      if (!v.is_object()) fail(path, "__metadata__ is not an object");
      continue;
    }
    std::string what = fmt::format("tensor \"{}\"", key);
    if (!v.is_object()) fail(path, what + ": not an object");
    auto field = [&](const char *f) -> const nlohmann::ordered_json & {
      auto it = v.find(f);
      if (it == v.end()) fail(path, fmt::format("{}: no \"{}\"", what, f));
      return *it;
    };
    const auto &dt = field("dtype");
    if (!dt.is_string()) fail(path, what + ": dtype is not a string");
    auto d = safeDType(dt.get<std::string>());
    if (!d) fail(path, fmt::format("{}: unknown dtype \"{}\"", what, dt.get<std::string>()));
    const auto &shape = field("shape");
    if (!shape.is_array()) fail(path, what + ": shape is not a list");
    std::vector<int64_t> dims;
    for (const auto &s : shape) {
      if (!s.is_number_integer()) fail(path, what + ": a dimension is not an integer");
      if (s.is_number_unsigned() && s.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        fail(path, what + ": a dimension is beyond 2^63");
      dims.push_back(s.get<int64_t>());
    }
    const auto &offs = field("data_offsets");
    if (!offs.is_array() || offs.size() != 2 || !offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
      fail(path, what + ": data_offsets is not two non-negative integers");
    uint64_t b = offs[0].get<uint64_t>(), e = offs[1].get<uint64_t>();
    auto [numel, bytes] = sizeOf(path, what, dims, *d);
    (void)numel;
    if (b > e) fail(path, fmt::format("{}: data_offsets [{}, {}] end before they begin", what, b, e));
    if (e > dataSize)
      fail(path, fmt::format("{}: data_offsets [{}, {}] reach past the {} bytes of data", what, b, e, dataSize));
    if (e - b != bytes)
      fail(path, fmt::format("{}: data_offsets [{}, {}] hold {} bytes, but {}{} needs {}", what, b, e, e - b,
                             d->name(), shapeText(toShape(dims)), bytes));
    entries.push_back({key, *d, std::move(dims), b, e});
  }
  std::vector<const Entry *> byOffset;
  for (const auto &e : entries) byOffset.push_back(&e);
  std::sort(byOffset.begin(), byOffset.end(), [](const Entry *a, const Entry *b) { return a->begin < b->begin; });
  for (size_t i = 1; i < byOffset.size(); ++i)
    if (byOffset[i]->begin < byOffset[i - 1]->end)
      fail(path, fmt::format("tensors \"{}\" and \"{}\" overlap", byOffset[i - 1]->name, byOffset[i]->name));

  nn::StateDict out;
  for (const auto &e : entries)
    out.insert(e.name, lazyRegion(file, dataStart + e.begin, e.end - e.begin, toShape(e.dims), e.dt, false, device,
                                  "safetensors " + e.name));
  return out;
}

namespace {
void writeFile(const std::string &path, const std::vector<std::string_view> &parts) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw Error(fmt::format("{}: cannot open for writing: {}", path, std::strerror(errno)));
  for (auto p : parts) f.write(p.data(), static_cast<std::streamsize>(p.size()));
  f.flush();
  if (!f) throw Error(fmt::format("{}: write failed: {}", path, std::strerror(errno)));
}
std::vector<int64_t> concreteDims(const Tensor &t, const std::string &path, const std::string &what) {
  std::vector<int64_t> dims;
  for (const auto &s : t.shape()) {
    if (!s.isInt()) throw ShapeError(fmt::format("{}: {} has the symbolic shape {}", path, what, shapeText(t.shape())));
    dims.push_back(s.asInt());
  }
  return dims;
}
} // namespace

void safeSave(const nn::StateDict &dict, const std::string &path) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  std::vector<std::vector<uint8_t>> data;
  uint64_t offset = 0;
  for (const auto &[name, t] : dict) {
    const char *dt = safeName(t.dtype());
    LAZYJIT_USER_CHECK(dt, DTypeError, "{}: tensor \"{}\" has dtype {}, which safetensors lacks", path, name,
                       t.dtype().name());
    std::vector<int64_t> dims = concreteDims(t, path, "tensor \"" + name + "\"");
    data.push_back(t.toBytes());
    header[name] = {{"dtype", dt}, {"shape", dims}, {"data_offsets", {offset, offset + data.back().size()}}};
    offset += data.back().size();
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' '); // the data starts 8-byte aligned
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(h.size()) >> (8 * i));
  std::vector<std::string_view> parts{{reinterpret_cast<const char *>(len), 8}, h};
  for (const auto &d : data) parts.emplace_back(reinterpret_cast<const char *>(d.data()), d.size());
  writeFile(path, parts);
}

// ---- .npy ---------------------------------------------------------------------------------------

namespace {

struct NpyDType {
  char kind;
  int size;
  DType dt;
};
constexpr NpyDType kNpyDTypes[] = {
    {'b', 1, dtypes::boolean}, {'i', 1, dtypes::int8},    {'u', 1, dtypes::uint8},   {'i', 2, dtypes::int16},
    {'u', 2, dtypes::uint16},  {'i', 4, dtypes::int32},   {'u', 4, dtypes::uint32},  {'i', 8, dtypes::int64},
    {'u', 8, dtypes::uint64},  {'f', 2, dtypes::float16}, {'f', 4, dtypes::float32}, {'f', 8, dtypes::float64},
};

/// The header dict of a .npy file: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct NpyHeader {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
};

class DictParser {
public:
  DictParser(std::string_view s, const std::string &path) : s(s), path(path) {}

  NpyHeader parse() {
    NpyHeader h;
    bool haveDescr = false, haveOrder = false, haveShape = false;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      std::string key = str();
      expect(':');
      if (key == "descr") {
        h.descr = str();
        haveDescr = true;
      } else if (key == "fortran_order") {
        h.fortran = boolean();
        haveOrder = true;
      } else if (key == "shape") {
        h.shape = tuple();
        haveShape = true;
      } else {
        fail(path, fmt::format("the header has an unknown key '{}'", key));
      }
      skip();
      if (peek() == ',') ++i;
      else if (peek() != '}') bad("',' or '}'");
    }
    if (!haveDescr || !haveOrder || !haveShape) fail(path, "the header lacks descr, fortran_order or shape");
    return h;
  }

private:
  std::string_view s;
  const std::string &path;
  size_t i = 0;
  char peek() const { return i < s.size() ? s[i] : '\0'; }
  void skip() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t')) ++i;
  }
  [[noreturn]] void bad(const char *want) {
    fail(path, fmt::format("the header is not a NumPy header dict: expected {} at column {}", want, i + 1));
  }
  void expect(char c) {
    skip();
    if (peek() != c) bad(fmt::format("'{}'", c).c_str());
    ++i;
  }
  std::string str() {
    skip();
    char q = peek();
    if (q != '\'' && q != '"') bad("a string");
    size_t end = s.find(q, i + 1);
    if (end == std::string_view::npos) bad("the end of a string");
    std::string out(s.substr(i + 1, end - i - 1));
    i = end + 1;
    return out;
  }
  bool boolean() {
    skip();
    if (s.substr(i, 4) == "True") return i += 4, true;
    if (s.substr(i, 5) == "False") return i += 5, false;
    bad("True or False");
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> out;
    while (true) {
      skip();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') bad("a dimension");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(v, int64_t(10), &v) || __builtin_add_overflow(v, int64_t(peek() - '0'), &v))
          fail(path, "a dimension of the shape overflows 64 bits");
        ++i;
      }
      out.push_back(v);
      skip();
      if (peek() == ',') ++i;
      else if (peek() != ')') bad("',' or ')'");
    }
    ++i;
    return out;
  }
};

} // namespace

Tensor npyLoad(const std::string &path, const std::optional<std::string> &device) {
  auto file = MappedFile::open(path);
  const uint8_t *p = file->data();
  size_t size = file->size();
  static const char kMagic[] = "\x93NUMPY";
  if (size < 10 || std::memcmp(p, kMagic, 6) != 0) fail(path, "not a .npy file (no \\x93NUMPY magic)");
  int major = p[6];
  size_t headerLen, start;
  if (major == 1) {
    headerLen = p[8] | (size_t(p[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) fail(path, "truncated: the header length is cut off");
    headerLen = p[8] | (size_t(p[9]) << 8) | (size_t(p[10]) << 16) | (size_t(p[11]) << 24);
    start = 12;
  } else {
    fail(path, fmt::format("unsupported .npy format version {}.{}", major, p[7]));
  }
  if (headerLen > size - start)
    fail(path, fmt::format("the header length {} is beyond the file's {} bytes", headerLen, size));
  NpyHeader h = DictParser(std::string_view(reinterpret_cast<const char *>(p + start), headerLen), path).parse();
  // descr: byte order ('<' little, '>' big, '|' not applicable, '=' native) + kind + size
  if (h.descr.size() < 3) fail(path, fmt::format("unsupported dtype '{}'", h.descr));
  char order = h.descr[0], kind = h.descr[1];
  int itemsize = 0;
  for (char c : h.descr.substr(2)) {
    if (c < '0' || c > '9' || itemsize > 1000) fail(path, fmt::format("unsupported dtype '{}'", h.descr));
    itemsize = itemsize * 10 + (c - '0');
  }
  if (order != '<' && order != '>' && order != '|' && order != '=')
    fail(path, fmt::format("unsupported dtype '{}'", h.descr));
  std::optional<DType> dt;
  for (const auto &d : kNpyDTypes)
    if (d.kind == kind && d.size == itemsize) dt = d.dt;
  if (!dt) fail(path, fmt::format("unsupported dtype '{}' (lazyjit reads b1, i1-i8, u1-u8, f2, f4, f8)", h.descr));
  auto [numel, bytes] = sizeOf(path, "the array", h.shape, *dt);
  (void)numel;
  size_t dataStart = start + headerLen;
  if (bytes > size - dataStart)
    fail(path, fmt::format("truncated: {}{} needs {} bytes of data, the file has {}", dt->name(),
                           shapeText(toShape(h.shape)), bytes, size - dataStart));
  bool swap = order == '>' && itemsize > 1;
  if (!h.fortran) return lazyRegion(file, dataStart, bytes, toShape(h.shape), *dt, swap, device, "npy");
  // Fortran order: the data is the transpose, in C order
  std::vector<int64_t> rev(h.shape.rbegin(), h.shape.rend());
  Tensor t = lazyRegion(file, dataStart, bytes, toShape(rev), *dt, swap, device, "npy");
  std::vector<int64_t> axes;
  for (int64_t a = static_cast<int64_t>(rev.size()) - 1; a >= 0; --a) axes.push_back(a);
  return t.permute(axes);
}

void npySave(const Tensor &t, const std::string &path) {
  const char *descr = nullptr;
  DType dt = t.dtype();
  static const std::pair<DType, const char *> kDescr[] = {
      {dtypes::boolean, "|b1"}, {dtypes::int8, "|i1"},    {dtypes::uint8, "|u1"},   {dtypes::int16, "<i2"},
      {dtypes::uint16, "<u2"},  {dtypes::int32, "<i4"},   {dtypes::uint32, "<u4"},  {dtypes::int64, "<i8"},
      {dtypes::uint64, "<u8"},  {dtypes::float16, "<f2"}, {dtypes::float32, "<f4"}, {dtypes::float64, "<f8"}};
  for (const auto &[d, s] : kDescr)
    if (d == dt) descr = s;
  LAZYJIT_USER_CHECK(descr, DTypeError, "{}: NumPy has no dtype for {}", path, dt.name());
  std::vector<int64_t> dims = concreteDims(t, path, "the tensor");
  std::string shape = "(";
  for (size_t i = 0; i < dims.size(); ++i) shape += fmt::format("{}{}", dims[i], dims.size() == 1 ? "," : (i + 1 < dims.size() ? ", " : ""));
  shape += ")";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr, shape);
  // magic + version + length + dict + padding + '\n' is a multiple of 64
  bool v2 = dict.size() + 1 + 10 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string head = std::string("\x93NUMPY", 6) + char(v2 ? 2 : 1) + char(0);
  for (size_t i = 0; i < prefix - 8; ++i) head += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  std::vector<uint8_t> data = t.toBytes();
  writeFile(path, {head, dict, {reinterpret_cast<const char *>(data.data()), data.size()}});
}

// ---- state dicts --------------------------------------------------------------------------------

void nn::loadStateDictInto(const StateDict &own, const StateDict &dict, bool strict) {
  std::vector<std::pair<Tensor, Tensor>> todo;
  for (const auto &[name, t] : own) {
    const Tensor *src = dict.find(name);
    if (!src) {
      LAZYJIT_USER_CHECK(!strict, Error, "load_state_dict: the state dict has no \"{}\" (the model's {}{})", name,
                         t.dtype().name(), shapeText(t.shape()));
      continue;
    }
    LAZYJIT_USER_CHECK(sameShape(src->shape(), t.shape()) && src->dtype() == t.dtype(), ShapeError,
                       "load_state_dict: \"{}\" is {}{} in the state dict, but the model's is {}{}", name,
                       src->dtype().name(), shapeText(src->shape()), t.dtype().name(), shapeText(t.shape()));
    todo.emplace_back(t, *src);
  }
  if (strict)
    for (const auto &[name, t] : dict)
      LAZYJIT_USER_CHECK(own.contains(name), Error, "load_state_dict: unexpected key \"{}\" ({}{}) in the state dict",
                         name, t.dtype().name(), shapeText(t.shape()));
  for (auto &[dst, src] : todo) {
    Tensor mine = dst;
    mine.assign(src.to(mine.device()).detach());
  }
  for (auto &[dst, src] : todo) {
    Tensor mine = dst;
    mine.realize();
  }
}

} // namespace lazyjit

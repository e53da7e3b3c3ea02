// Weights in and out: safetensors and .npy round trips for every dtype, files written by hand from
// the formats' specifications (what PyTorch/NumPy write), lazy reads, every kind of damage as an
// error naming the file, and loadStateDict's checks (nothing half-loaded).
#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/State.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace lazyjit;

namespace {
std::string tempPath(const std::string &name) {
  auto dir = std::filesystem::temp_directory_path() / ("lazyjit-state-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(v >> (8 * i));
  return s;
}

// A safetensors file from a header and data, as the format's specification lays it out.
std::string safetensors(const std::string &header, const std::string &data) { return le64(header.size()) + header + data; }

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

// .npy format 1.0 as NumPy writes it: magic, version, header length, the dict padded with spaces
// and a newline to a multiple of 64 bytes, the data.
std::string npy(const std::string &dict, const std::string &data) {
  std::string d = dict;
  while ((10 + d.size() + 1) % 64) d += ' ';
  d += '\n';
  std::string h = std::string("\x93NUMPY\x01\x00", 8);
  h += static_cast<char>(d.size() & 0xff);
  h += static_cast<char>(d.size() >> 8);
  return h + d + data;
}

Tensor sample(DType dt) {
  std::vector<double> v{0, 1, -2, 3, 100, -7};
  if (dt.isUnsigned()) v = {0, 1, 2, 3, 200, 7};
  if (dt.isBool()) v = {0, 1, 1, 0, 1, 0};
  return Tensor::fromValues(v, Shape{2, 3}, {dt, "CPU"});
}

std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST_CASE("safetensors: every dtype round-trips, in order, and loads lazily") {
  nn::StateDict d;
  for (DType dt : dtypes::all) d.insert(std::string("t_") + std::string(dt.name()), sample(dt));
  d.insert("scalar", Tensor::fromValues({2.5}, Shape{}, {dtypes::float32, "CPU"}));
  d.insert("empty", Tensor::empty(Shape{0, 4}, {dtypes::float32, "CPU"}));
  std::string path = tempPath("all.safetensors");
  safeSave(d, path);
  nn::StateDict back = safeLoad(path, "CPU");
  REQUIRE(back.keys() == d.keys());
  for (const auto &[name, t] : d) {
    CAPTURE(name);
    const Tensor &b = back.at(name);
    CHECK(b.dtype() == t.dtype());
    CHECK(b.shape() == t.shape());
    CHECK(b.toBytes() == t.toBytes());
  }
  // nothing is read before a tensor is used: a fresh load is unrealized
  nn::StateDict lazy = safeLoad(path, "CPU");
  CHECK_FALSE(lazy.at("t_float32").lazydata()->isRealized());
  CHECK(lazy.at("t_float32").toVector<float>() == std::vector<float>{0, 1, -2, 3, 100, -7});
  // the data starts 8-byte aligned
  std::ifstream f(path, std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char *>(&n), 8);
  CHECK(n % 8 == 0);
}

TEST_CASE("safetensors: a file written from the specification, with metadata") {
  std::string header = R"({"__metadata__":{"format":"pt"},"b":{"dtype":"I64","shape":[2],"data_offsets":[8,24]},)"
                       R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string data = floats({1.5f, -2.0f});
  int64_t i64[2] = {-5, 1LL << 40};
  data.append(reinterpret_cast<const char *>(i64), 16);
  std::string path = tempPath("spec.safetensors");
  writeBytes(path, safetensors(header, data));
  nn::StateDict d = safeLoad(path, "CPU");
  CHECK(d.keys() == std::vector<std::string>{"b", "a"});
  CHECK(d.at("a").toVector<float>() == std::vector<float>{1.5f, -2.0f});
  CHECK(d.at("b").dtype() == dtypes::int64);
  CHECK(d.at("b").toVector<int64_t>() == std::vector<int64_t>{-5, 1LL << 40});
}

TEST_CASE("safetensors: damaged files are errors naming the file and the problem") {
  std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string two = floats({1, 2});
  struct Case {
    const char *name;
    std::string bytes;
    const char *error;
  };
  std::vector<Case> cases = {
      {"empty", "", "too short for the 8-byte header length"},
      {"short", "abc", "too short"},
      {"header beyond the file", le64(1000) + "{}", "the header length 1000 is beyond the file's 10 bytes"},
      {"huge header length", le64(~0ull) + "{}", "is beyond the file"},
      {"bad JSON", safetensors("{\"a\": [", ""), "not valid JSON"},
      {"not an object", safetensors("[1, 2]", ""), "not a JSON object"},
      {"unknown dtype", safetensors(R"({"a":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}})", "x"),
       "tensor \"a\": unknown dtype \"F8\""},
      {"no shape", safetensors(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", "xxxx"), "no \"shape\""},
      {"past the data", safetensors(ok, floats({1})), "data_offsets [0, 8] reach past the 4 bytes of data"},
      {"wrong size", safetensors(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", two),
       "hold 8 bytes, but float32[3] needs 12"},
      {"reversed offsets", safetensors(R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", two),
       "end before they begin"},
      {"negative offset", safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", two),
       "not two non-negative integers"},
      {"negative dimension", safetensors(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", two),
       "negative dimension -2"},
      {"size overflow",
       safetensors(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", two),
       "overflows 64 bits"},
      {"overlap",
       safetensors(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                   two),
       "tensors \"a\" and \"b\" overlap"},
  };
  for (const auto &c : cases) {
    CAPTURE(std::string(c.name));
    std::string path = tempPath("bad.safetensors");
    writeBytes(path, c.bytes);
    std::string err = errorOf([&] { safeLoad(path); });
    CHECK(err.find(path) != std::string::npos);
    CHECK(err.find(c.error) != std::string::npos);
  }
  CHECK(errorOf([] { safeLoad(tempPath("missing.safetensors")); }).find("cannot open") != std::string::npos);
  CHECK(errorOf([] { safeLoad(std::filesystem::temp_directory_path().string()); }).find("not a regular file") !=
        std::string::npos);
}

TEST_CASE(".npy: every NumPy dtype round-trips; files as NumPy writes them") {
  for (DType dt : dtypes::all) {
    if (dt == dtypes::bfloat16) continue;
    CAPTURE(dt.name());
    std::string path = tempPath("x.npy");
    Tensor t = sample(dt);
    npySave(t, path);
    Tensor b = npyLoad(path, "CPU");
    CHECK(b.dtype() == dt);
    CHECK(b.shape() == t.shape());
    CHECK(b.toBytes() == t.toBytes());
  }
  CHECK(errorOf([] { npySave(sample(dtypes::bfloat16), tempPath("bf.npy")); }).find("NumPy has no dtype for bfloat16") !=
        std::string::npos);

  std::string path = tempPath("spec.npy");
  writeBytes(path, npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floats({1, 2, 3, 4, 5, 6})));
  Tensor c = npyLoad(path, "CPU");
  CHECK(c.shape() == Shape{2, 3});
  CHECK(c.toVector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  // Fortran order: the same bytes are the columns
  writeBytes(path, npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", floats({1, 2, 3, 4, 5, 6})));
  CHECK(npyLoad(path, "CPU").toVector<float>() == std::vector<float>{1, 3, 5, 2, 4, 6});
  // big-endian int32, and a 0-d array
  std::string be("\x00\x00\x01\x02\xff\xff\xff\xfe", 8);
  writeBytes(path, npy("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", be));
  CHECK(npyLoad(path, "CPU").toVector<int32_t>() == std::vector<int32_t>{258, -2});
  writeBytes(path, npy("{'descr': '<f8', 'fortran_order': False, 'shape': (), }", std::string("\0\0\0\0\0\0\x04\x40", 8)));
  Tensor s = npyLoad(path, "CPU");
  CHECK(s.shape().empty());
  CHECK(s.item<double>() == 2.5);
}

TEST_CASE(".npy: damaged files are errors naming the file and the problem") {
  struct Case {
    const char *name;
    std::string bytes;
    const char *error;
  };
  std::vector<Case> cases = {
      {"no magic", "PK\x03\x04 not numpy", "no \\x93NUMPY magic"},
      {"version", std::string("\x93NUMPY\x07\x00\x10\x00", 10) + "{}", "unsupported .npy format version 7.0"},
      {"header beyond the file", std::string("\x93NUMPY\x01\x00\xff\x7f", 10) + "{", "beyond the file's"},
      {"truncated data", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", floats({1, 2})),
       "float32[4] needs 16 bytes of data, the file has 8"},
      {"unknown dtype", npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "12345678"),
       "unsupported dtype '<c8'"},
      {"not a dict", npy("['descr']", ""), "not a NumPy header dict"},
      {"missing key", npy("{'descr': '<f4', 'shape': (1,), }", "1234"), "lacks descr, fortran_order or shape"},
      {"unknown key", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "1234"),
       "unknown key 'x'"},
      {"shape overflow", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", ""),
       "overflows 64 bits"},
      {"unterminated", npy("{'descr': '<f4", ""), "expected the end of a string"},
  };
  for (const auto &c : cases) {
    CAPTURE(std::string(c.name));
    std::string path = tempPath("bad.npy");
    writeBytes(path, c.bytes);
    std::string err = errorOf([&] { npyLoad(path); });
    CHECK(err.find(path) != std::string::npos);
    CHECK(err.find(c.error) != std::string::npos);
  }
}

namespace {
struct Net : nn::Module {
  nn::Linear l1{3, 4}, l2{4, 2};
  LAZYJIT_MODULE(l1, l2)
};
} // namespace

TEST_CASE("loadStateDict: a saved model loads into a fresh one; mismatches name the key and change nothing") {
  Tensor::manualSeed(1);
  Net a;
  std::string path = tempPath("net.safetensors");
  safeSave(nn::getStateDict(a), path);
  Tensor::manualSeed(2);
  Net b;
  CHECK(b.l1.weight.toVector<float>() != a.l1.weight.toVector<float>());
  nn::loadStateDict(b, safeLoad(path));
  CHECK(b.l1.weight.toVector<float>() == a.l1.weight.toVector<float>());
  CHECK(b.l2.bias->toVector<float>() == a.l2.bias->toVector<float>());
  CHECK(b.l1.weight.lazydata()->isRealized());

  Net c;
  std::vector<float> before = c.l1.weight.toVector<float>();
  nn::StateDict missing = safeLoad(path);
  nn::StateDict partial;
  for (const auto &[k, v] : missing)
    if (k != "l2.bias") partial.insert(k, v);
  CHECK(errorOf([&] { nn::loadStateDict(c, partial); }).find("the state dict has no \"l2.bias\"") != std::string::npos);
  CHECK(c.l1.weight.toVector<float>() == before); // nothing half-loaded
  nn::loadStateDict(c, partial, /*strict=*/false);
  CHECK(c.l1.weight.toVector<float>() == a.l1.weight.toVector<float>());

  nn::StateDict extra = safeLoad(path);
  extra.insert("l3.weight", Tensor::fromValues({1}, Shape{1}));
  CHECK(errorOf([&] { nn::loadStateDict(c, extra); }).find("unexpected key \"l3.weight\"") != std::string::npos);
  nn::loadStateDict(c, extra, false);

  nn::StateDict wrong = safeLoad(path);
  wrong.insert("l1.weight", Tensor::zeros(Shape{3, 4}));
  Net e;
  std::vector<float> eBefore = e.l2.weight.toVector<float>();
  CHECK(errorOf([&] { nn::loadStateDict(e, wrong); })
            .find("\"l1.weight\" is float32[3, 4] in the state dict, but the model's is float32[4, 3]") != std::string::npos);
  CHECK(e.l2.weight.toVector<float>() == eBefore);
  nn::StateDict wrongType = safeLoad(path);
  wrongType.insert("l1.bias", Tensor::zeros(Shape{4}, {dtypes::float64}));
  CHECK(errorOf([&] { nn::loadStateDict(e, wrongType); }).find("\"l1.bias\" is float64[4]") != std::string::npos);
}

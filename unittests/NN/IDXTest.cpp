// The IDX reader: every element type, plain and gzip files, the real Fashion-MNIST files, and a
// clear error naming the file for every kind of damage.
#include "lazyjit/NN/IDX.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace lazyjit;

namespace {
std::string tempPath(const std::string &name) {
  auto dir = std::filesystem::temp_directory_path() / ("lazyjit-idx-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::vector<uint8_t> header(uint8_t type, const std::vector<uint32_t> &dims) {
  std::vector<uint8_t> h{0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) h.push_back(static_cast<uint8_t>(d >> s));
  return h;
}

void writeFile(const std::string &path, const std::vector<uint8_t> &bytes, bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    REQUIRE(f != nullptr);
    REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
  }
}

std::vector<uint8_t> cat(std::vector<uint8_t> a, const std::vector<uint8_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
} // namespace

TEST_CASE("IDX: reads every element type big-endian, plain and gzip") {
  for (bool gz : {false, true}) {
    CAPTURE(gz);
    std::string p = tempPath(gz ? "u8.gz" : "u8");
    writeFile(p, cat(header(0x08, {2, 3}), {1, 2, 3, 250, 5, 6}), gz);
    Tensor t = nn::loadIDX(p);
    CHECK(t.dtype() == dtypes::uint8);
    CHECK(t.shape() == Shape{2, 3});
    CHECK(t.toVector<int>() == std::vector<int>{1, 2, 3, 250, 5, 6});

    p = tempPath(gz ? "i16.gz" : "i16");
    writeFile(p, cat(header(0x0B, {2}), {0x01, 0x02, 0xFF, 0xFE}), gz);
    t = nn::loadIDX(p);
    CHECK(t.dtype() == dtypes::int16);
    CHECK(t.toVector<int>() == std::vector<int>{0x0102, -2});

    p = tempPath(gz ? "i32.gz" : "i32");
    writeFile(p, cat(header(0x0C, {1}), {0x80, 0, 0, 1}), gz);
    CHECK(nn::loadIDX(p).toVector<int64_t>() == std::vector<int64_t>{-2147483647});

    p = tempPath(gz ? "f32.gz" : "f32");
    writeFile(p, cat(header(0x0D, {2}), {0x3F, 0xC0, 0, 0, 0xC0, 0x20, 0, 0}), gz); // 1.5, -2.5
    CHECK(nn::loadIDX(p).toVector<float>() == std::vector<float>{1.5f, -2.5f});

    p = tempPath(gz ? "f64.gz" : "f64");
    writeFile(p, cat(header(0x0E, {1}), {0x40, 0x09, 0x21, 0xFB, 0x54, 0x44, 0x2D, 0x18}), gz);
    CHECK(nn::loadIDX(p).toVector<double>()[0] == 3.141592653589793);

    p = tempPath(gz ? "i8.gz" : "i8");
    writeFile(p, cat(header(0x09, {2}), {0x7F, 0x80}), gz);
    CHECK(nn::loadIDX(p).toVector<int>() == std::vector<int>{127, -128});
  }
}

TEST_CASE("IDX: a missing, truncated or malformed file is an error naming the file") {
  std::string missing = tempPath("does-not-exist.idx");
  CHECK_THROWS_WITH_AS(nn::loadIDX(missing), (missing + ": cannot open: No such file or directory").c_str(), Error);
  struct Case {
    const char *name;
    std::vector<uint8_t> bytes;
    std::string message;
  };
  std::vector<Case> cases = {
      {"empty", {}, "truncated: 0 bytes, an IDX header needs at least 4"},
      {"magic", {1, 0, 8, 1, 0, 0, 0, 1, 7}, "not an IDX file: the magic number starts with 0x01 0x00, not 0x00 0x00"},
      {"type", cat(header(0x0A, {1}), {0}), "unknown IDX type code 0x0a"},
      {"zero-dims", {0, 0, 8, 0}, "the IDX header has 0 dimensions"},
      {"short-header", {0, 0, 8, 2, 0, 0, 0, 3, 0, 0}, "truncated header: 1 of the 2 dimension sizes"},
      {"short-data", cat(header(0x0D, {3}), {0, 0, 0, 0, 1}), "truncated: 5 of the 12 bytes of float data (3 values)"},
      {"extra", cat(header(0x08, {2}), {1, 2, 3}), "malformed: there are bytes after the 2 values the header announces"},
      {"huge", header(0x08, {65536, 65536, 65536}), "the IDX shape has more than 2^40 elements"},
      // found by fuzz-files: the announced size was allocated before reading (46 GB here)
      {"announces-more", cat(header(0x08, {788529154, 59}), {1, 2, 3}),
       "truncated: 3 of the 46523220086 bytes of unsigned byte data (46523220086 values)"},
  };
  for (bool gz : {false, true})
    for (const auto &c : cases) {
      CAPTURE(c.name);
      CAPTURE(gz);
      std::string p = tempPath(std::string(c.name) + (gz ? ".gz" : ""));
      writeFile(p, c.bytes, gz);
      CHECK_THROWS_WITH_AS(nn::loadIDX(p), (p + ": " + c.message).c_str(), Error);
    }
  // a gzip stream cut short
  std::string full = tempPath("cut.gz");
  writeFile(full, cat(header(0x08, {4000}), std::vector<uint8_t>(4000, 7)), true);
  std::string bytes;
  {
    std::ifstream in(full, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string cut = tempPath("cut2.gz");
  std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  CHECK_THROWS_WITH_AS(nn::loadIDX(cut), doctest::Contains((cut + ":").c_str()), Error);
}

TEST_CASE("IDX: Debian's Fashion-MNIST files load with their shapes and labels") {
  const std::string dir = "/usr/share/datasets/fashion-mnist/";
  // installed by scripts/setup-deps.sh (dataset-fashion-mnist)
  REQUIRE(std::filesystem::exists(dir + "t10k-labels-idx1-ubyte.gz"));
  Tensor labels = nn::loadIDX(dir + "t10k-labels-idx1-ubyte.gz");
  CHECK(labels.shape() == Shape{10000});
  std::vector<int> l = labels.toVector<int>();
  CHECK(*std::min_element(l.begin(), l.end()) == 0);
  CHECK(*std::max_element(l.begin(), l.end()) == 9);
  CHECK(std::count(l.begin(), l.end(), 3) == 1000); // the test set is balanced
  Tensor images = nn::loadIDX(dir + "t10k-images-idx3-ubyte.gz");
  CHECK(images.shape() == Shape{10000, 28, 28});
  CHECK(images.dtype() == dtypes::uint8);
}

// The disk kernel cache across processes: a second process compiles nothing, a corrupt or
// truncated entry is detected and recompiled with correct results, and an unwritable cache
// directory degrades to memory-only with one warning.
#include "lazyjit/Runtime/KernelCache.h"

#include <doctest/doctest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

struct ProbeResult {
  int status = -1;
  std::string out, err;
  double sum = 0;
  int compiled = -1, disk = -1;
};

ProbeResult runProbe(const std::string &cacheDir) {
  fs::path errFile = fs::temp_directory_path() / ("lj_probe_err_" + std::to_string(::getpid()));
  std::string cmd = "LAZYJIT_CACHE='" + cacheDir + "' DEBUG=0 '" + LAZYJIT_CACHE_PROBE + "' 2>'" +
                    errFile.string() + "'";
  ProbeResult r;
  FILE *p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 512> buf{};
  while (fgets(buf.data(), buf.size(), p)) r.out += buf.data();
  r.status = pclose(p);
  std::ifstream ef(errFile);
  r.err.assign(std::istreambuf_iterator<char>(ef), std::istreambuf_iterator<char>());
  fs::remove(errFile);
  std::smatch m;
  if (std::regex_search(r.out, m, std::regex("sum=([-0-9.e]+) compiled=(\\d+) disk=(\\d+)"))) {
    r.sum = std::stod(m[1]);
    r.compiled = std::stoi(m[2]);
    r.disk = std::stoi(m[3]);
  }
  return r;
}

fs::path freshDir(const std::string &name) {
  fs::path d = fs::temp_directory_path() / ("lj_cache_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

} // namespace

TEST_CASE("KernelCache: a second process compiles nothing") {
  fs::path dir = freshDir("twice");
  ProbeResult first = runProbe(dir.string());
  REQUIRE(first.status == 0);
  CHECK(first.compiled > 0);
  CHECK(first.disk == 0);
  ProbeResult second = runProbe(dir.string());
  REQUIRE(second.status == 0);
  CHECK(second.compiled == 0);
  CHECK(second.disk == first.compiled);
  CHECK(second.sum == doctest::Approx(first.sum));
  fs::remove_all(dir);
}

TEST_CASE("KernelCache: corrupt and truncated entries are recompiled, results stay correct") {
  fs::path dir = freshDir("corrupt");
  ProbeResult first = runProbe(dir.string());
  REQUIRE(first.status == 0);
  int n = 0;
  for (const auto &e : fs::directory_iterator(dir / "cpu")) {
    auto size = fs::file_size(e.path());
    if (n % 2 == 0) {
      fs::resize_file(e.path(), size / 2); // truncated
    } else {
      std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(static_cast<std::streamoff>(size - 7));
      f.put('\x5a'); // a flipped byte in the payload
    }
    ++n;
  }
  REQUIRE(n > 0);
  ProbeResult second = runProbe(dir.string());
  REQUIRE(second.status == 0);
  CHECK(second.compiled == n);
  CHECK(second.disk == 0);
  CHECK(second.sum == doctest::Approx(first.sum));
  CHECK(second.err.find("is corrupt") != std::string::npos);
  // and the recompiled entries are good again
  ProbeResult third = runProbe(dir.string());
  CHECK(third.compiled == 0);
  CHECK(third.sum == doctest::Approx(first.sum));
  fs::remove_all(dir);
}

TEST_CASE("KernelCache: an unwritable cache directory degrades to memory-only with one warning") {
  fs::path file = freshDir("notadir");
  { std::ofstream(file.string()) << "x"; }
  // a directory below a regular file cannot be created
  ProbeResult r = runProbe((file / "sub").string());
  CHECK(r.status == 0);
  CHECK(r.compiled > 0);
  size_t first = r.err.find("caching in memory only");
  CHECK(first != std::string::npos);
  CHECK(r.err.find("caching in memory only", first + 1) == std::string::npos);
  fs::remove(file);
}

TEST_CASE("KernelCache: entries are verified against their key") {
  fs::path dir = freshDir("unit");
  lazyjit::DiskCache c(dir.string());
  REQUIRE(c.enabled());
  std::vector<uint8_t> payload{1, 2, 3, 4, 5};
  c.store("key-a", payload);
  CHECK(c.load("key-a") == payload);
  CHECK_FALSE(c.load("key-b").has_value());
  fs::remove_all(dir);
}

TEST_CASE("KernelCache: an entry that is not a regular file is a miss, never a hang or a crash") {
  fs::path dir = freshDir("special");
  lazyjit::DiskCache c(dir.string());
  REQUIRE(c.enabled());
  std::vector<uint8_t> payload{9, 8, 7};
  // find the entry paths: store, then replace each file with something odd
  c.store("dir-key", payload);
  c.store("fifo-key", payload);
  c.store("zero-key", payload);
  c.store("link-key", payload);
  std::vector<fs::path> entries;
  for (const auto &e : fs::directory_iterator(dir)) entries.push_back(e.path());
  REQUIRE(entries.size() == 4);
  auto entryFor = [&](const std::string &key) {
    for (const auto &p : entries) {
      lazyjit::DiskCache probe(dir.string());
      fs::path moved = p.string() + ".away";
      fs::rename(p, moved);
      bool gone = !probe.load(key).has_value();
      fs::rename(moved, p);
      if (gone) return p;
    }
    FAIL("no entry for " << key);
    return fs::path();
  };
  fs::path d = entryFor("dir-key"), f = entryFor("fifo-key"), z = entryFor("zero-key"), l = entryFor("link-key");
  fs::remove(d);
  fs::create_directory(d);
  fs::remove(f);
  REQUIRE(mkfifo(f.c_str(), 0600) == 0); // reading it would block forever
  fs::remove(z);
  fs::create_symlink("/dev/zero", z); // reading it would never end
  fs::remove(l);
  fs::create_symlink(dir / "elsewhere", l);
  CHECK_FALSE(c.load("dir-key").has_value());
  CHECK_FALSE(c.load("fifo-key").has_value());
  CHECK_FALSE(c.load("zero-key").has_value());
  CHECK_FALSE(c.load("link-key").has_value());
  fs::remove_all(dir);
}

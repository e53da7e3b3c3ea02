// Fuzz target: lazyjit's file readers on arbitrary bytes. The first byte picks the reader: an IDX
// file (plain or gzip), a kernel-cache entry, a safetensors file, a .npy file or a PyTorch
// checkpoint (each tensor realized, so the lazy reads run too). Readers must reject damage with an
// Error, never crash, hang or read out of bounds.
#include "FuzzCommon.h"
#include "lazyjit/NN/IDX.h"
#include "lazyjit/NN/State.h"
#include "lazyjit/NN/TorchLoad.h"
#include "lazyjit/Runtime/KernelCache.h"
#include "lazyjit/Support/Error.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {
std::string scratchDir() {
  static std::string dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("lazyjit-fuzz-files-" + std::to_string(getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > (1u << 20)) return -1;
  lazyjit::fuzz::setUp();
  using namespace lazyjit;
  int reader = data[0] % 5;
  std::string body(reinterpret_cast<const char *>(data + 1), size - 1);
  try {
    if (reader == 0) {
      std::string path = scratchDir() + "/input.idx";
      std::ofstream(path, std::ios::binary | std::ios::trunc) << body;
      Tensor t = nn::loadIDX(path);
      (void)t.toBytes();
    } else if (reader == 2) {
      std::string path = scratchDir() + "/input.safetensors";
      std::ofstream(path, std::ios::binary | std::ios::trunc) << body;
      for (const auto &[name, t] : safeLoad(path, "CPU")) (void)t.toBytes();
    } else if (reader == 3) {
      std::string path = scratchDir() + "/input.npy";
      std::ofstream(path, std::ios::binary | std::ios::trunc) << body;
      (void)npyLoad(path, "CPU").toBytes();
    } else if (reader == 4) {
      std::string path = scratchDir() + "/input.pt";
      std::ofstream(path, std::ios::binary | std::ios::trunc) << body;
      for (const auto &[name, t] : nn::torchLoad(path, "CPU")) (void)t.toBytes();
    } else {
      // a cache entry with this content under the name of key "k"
      DiskCache cache(scratchDir() + "/cache");
      if (!cache.enabled()) return 0;
      cache.store("k", {1, 2, 3});
      std::string entry;
      for (const auto &e : std::filesystem::directory_iterator(scratchDir() + "/cache")) entry = e.path().string();
      std::ofstream(entry, std::ios::binary | std::ios::trunc) << body;
      auto got = cache.load("k");
      if (got && got->size() > body.size()) std::abort(); // a payload larger than the file
    }
  } catch (const InternalError &e) {
    std::fprintf(stderr, "fuzz-files: internal error: %s\n", e.what());
    std::abort();
  } catch (const Error &) {
  }
  return 0;
}

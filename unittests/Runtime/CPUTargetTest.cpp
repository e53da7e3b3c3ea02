// The CPU device's target: the host's, or the CPU LAZYJIT_CPU names (Config::cpu). A named CPU
// whose instruction sets the host lacks compiles, and running its kernels is an error naming what
// is missing, not an illegal instruction; the device also tells the graph whether a padded
// convolution reads its input through the padding's masks (OPT=5, TensorConv.cpp).
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Runtime/CPUDevice.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/lazyjit.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

using namespace lazyjit;

namespace {

// The host's features as TargetSpec::host reports them: "+name" (has it) or "-name".
std::string hostFeature(const std::string &name) {
  std::stringstream ss(TargetSpec::host().features);
  for (std::string f; std::getline(ss, f, ',');)
    if (f.size() > 1 && f.substr(1) == name) return f;
  return "";
}
bool hostHas(const std::string &name) { return hostFeature(name) == "+" + name; }

// An instruction-set feature the host's CPU reports it does not have (AVX-512 on an AVX2 host,
// AVX10 or AVX-512 FP16 on many AVX-512 ones), or "" when it has every one this test knows.
std::string isaFeatureHostLacks() {
  for (const char *f : {"avx512f", "avx512fp16", "avx512vp2intersect", "avx10.1-512", "avxvnniint16", "avx2", "fma"})
    if (hostFeature(f) == std::string("-") + f) return f;
  return "";
}

} // namespace

TEST_CASE("CPU target: missingOnHost names the instruction sets the host lacks, and only those") {
  TargetSpec host = TargetSpec::host();
  CHECK(host.missingOnHost().empty());
  std::string lacking = isaFeatureHostLacks();
  if (lacking.empty()) {
    MESSAGE("skipped in part: this host has every instruction set the test could ask for");
  } else {
    TargetSpec t = host;
    t.features += ",+" + lacking;
    CHECK(t.missingOnHost() == std::vector<std::string>{lacking});
  }
  // system features a VM may hide, and AMD's SSE4A, are not what a kernel's code is made of
  TargetSpec sys = host;
  for (const char *f : {"pku", "shstk", "sse4a", "clzero"})
    if (!hostHas(f)) sys.features += std::string(",+") + f;
  CHECK(sys.missingOnHost().empty());
  CHECK(TargetSpec::nvptx("sm_90").missingOnHost().empty());
}

TEST_CASE("CPU target: LAZYJIT_CPU names the device's target; a CPU the host cannot run compiles but does "
          "not run") {
  Tensor a = Tensor::empty({16});
  std::vector<ScheduleItem> items = schedule((a + 1).lazydata());
  auto kernel = std::find_if(items.begin(), items.end(), [](const ScheduleItem &s) { return s.isKernel(); });
  REQUIRE(kernel != items.end());
  Config c = config();
  c.diskCache = false;
  SUBCASE("an older CPU runs here") {
    c.cpu = "x86-64";
    ScopedConfig scope(c);
    std::unique_ptr<Device> dev = makeCPUDevice("CPU");
    CHECK(dev->compile(kernel->ast) != nullptr);
    CHECK_FALSE(dev->readsPaddedConvInput(3)); // (no AVX-512)
  }
  SUBCASE("a CPU with instruction sets the host lacks") {
    std::string found;
    for (const char *cpu : {"skylake-avx512", "sapphirerapids", "graniterapids", "znver4", "znver5", "haswell"})
      if (!TargetSpec::namedCPU(cpu).missingOnHost().empty()) {
        found = cpu;
        break;
      }
    if (found.empty()) {
      MESSAGE("skipped: this host runs code for every CPU the test names");
      return;
    }
    c.cpu = found;
    ScopedConfig scope(c);
    std::unique_ptr<Device> dev = makeCPUDevice("CPU");
    std::string expected = "CPU: kernels compiled for " + found + " (LAZYJIT_CPU) cannot run on this machine, which lacks";
    CHECK_THROWS_WITH_AS(dev->compile(kernel->ast), doctest::Contains(expected.c_str()), DeviceError);
  }
  SUBCASE("a name LLVM does not know") {
    c.cpu = "no-such-cpu";
    ScopedConfig scope(c);
    CHECK_THROWS_WITH_AS(makeCPUDevice("CPU"), doctest::Contains("'no-such-cpu' is not a CPU LLVM knows"),
                         UnsupportedError);
  }
}

TEST_CASE("CPU target: a padded convolution reads its input through the masks on AVX-512, a window up to 5 "
          "wide") {
  Config c = config();
  SUBCASE("AVX-512") {
    c.cpu = "skylake-avx512";
    ScopedConfig scope(c);
    std::unique_ptr<Device> dev = makeCPUDevice("CPU");
    CHECK(dev->readsPaddedConvInput(1));
    CHECK(dev->readsPaddedConvInput(3));
    CHECK(dev->readsPaddedConvInput(5));
    CHECK_FALSE(dev->readsPaddedConvInput(6));
  }
  SUBCASE("AVX2") {
    c.cpu = "haswell";
    ScopedConfig scope(c);
    CHECK_FALSE(makeCPUDevice("CPU")->readsPaddedConvInput(3));
  }
  CHECK_FALSE(getDevice("INTERP").readsPaddedConvInput(3));
  CHECK(getDevice("CPU").readsPaddedConvInput(3) == hostHas("avx512f"));
}

// Differential test of the CUDA backend against the reference interpreter: the CPU differential
// test's 300 random programs (RandomPrograms.h), plus programs at GPU scale (grouped reductions,
// matvec, large elementwise kernels, symbolic shapes), built on "CUDA" and compared with INTERP.
// The doctest suite "cuda" (CTest entry RuntimeTests-cuda): without a GPU each test is skipped
// with the reason (test::skip), and CTest reports the entry as skipped.
#include "RandomPrograms.h"
#include "TestSkip.h"
#include "lazyjit/Runtime/Device.h"

#include <doctest/doctest.h>

using namespace lazyjit;

namespace {

bool haveCUDA() {
  std::string why;
  if (deviceAvailable("CUDA", &why)) return true;
  test::skip("no CUDA device: " + why);
  return false;
}

} // namespace

TEST_SUITE_BEGIN("cuda");

TEST_CASE("CUDA differential: 300 random programs give the same values on CUDA and in the interpreter") {
  if (!haveCUDA()) return;
  constexpr uint64_t kSeed = 0x1a2b3c4d2023ULL;
  constexpr int kPrograms = 300;
  auto res = randomprograms::compareWithInterpreter("CUDA", kSeed, kPrograms);
  MESSAGE("seed ", kSeed, ": ", res.checked, " programs, ", res.elements, " elements compared");
  CHECK(res.checked == kPrograms);
}

TEST_CASE("CUDA differential: a second seed, 300 more programs") {
  if (!haveCUDA()) return;
  constexpr uint64_t kSeed = 0x600d5eedULL;
  auto res = randomprograms::compareWithInterpreter("CUDA", kSeed, 300);
  MESSAGE("seed ", kSeed, ": ", res.checked, " programs, ", res.elements, " elements compared");
  CHECK(res.checked == 300);
}

TEST_CASE("CUDA differential: 120 random programs with row operations at OPT=5 give OPT=2's values") {
  if (!haveCUDA()) return;
  randomprograms::compareRowPrograms("CUDA", 0x90e70005ULL, 120);
}

TEST_SUITE_END();

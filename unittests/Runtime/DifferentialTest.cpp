// Differential test of the CPU JIT against the reference interpreter: random tensor programs
// (RandomPrograms.h: shapes with 0, 1 and odd sizes, chains of movement ops, broadcasting,
// reductions over random axes, every dtype) are built once per device from the same seed and must
// produce equal values (integers and booleans exactly, floats within the dtype's tolerance).
#include "RandomPrograms.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Support/Config.h"

#include <doctest/doctest.h>

using namespace lazyjit;

TEST_CASE("Differential: 300 random programs give the same values on CPU and in the interpreter") {
  constexpr uint64_t kSeed = 0x1a2b3c4d2023ULL;
  constexpr int kPrograms = 300;
  int64_t inPlace = globalCounters().inPlaceCount;
  auto res = randomprograms::compareWithInterpreter("CPU", kSeed, kPrograms);
  inPlace = globalCounters().inPlaceCount - inPlace;
  MESSAGE("seed ", kSeed, ": ", res.checked, " programs, ", res.elements, " elements compared, ", inPlace,
          " CPU kernels wrote over a dying input");
  CHECK(res.checked == kPrograms);
  // the comparison covers outputs written over their inputs (the interpreter writes new buffers)
  CHECK(inPlace > 0);
}

using randomprograms::compareRowPrograms;

TEST_CASE("Differential: 200 random programs with row operations at OPT=5 give OPT=2's values in the interpreter") {
  // row operations (softmax, log_softmax, layernorm, reduces broadcast back) fuse into row kernels
  // at OPT=5 on the CPU; the interpreter computes the same programs with the reference's kernels
  compareRowPrograms("CPU", 0x0e7a5f05ULL, 200);
}

TEST_CASE("Differential: the interpreter's row kernels at OPT=5 agree with its OPT=2 kernels") {
  compareRowPrograms("INTERP", 0x5eed0005ULL, 120);
}

// Differential test of the CPU JIT against the reference interpreter: random tensor programs
// (RandomPrograms.h: shapes with 0, 1 and odd sizes, chains of movement ops, broadcasting,
// reductions over random axes, every dtype) are built once per device from the same seed and must
// produce equal values (integers and booleans exactly, floats within the dtype's tolerance).
#include "RandomPrograms.h"

#include <doctest/doctest.h>

using namespace lazyjit;

TEST_CASE("Differential: 300 random programs give the same values on CPU and in the interpreter") {
  constexpr uint64_t kSeed = 0x1a2b3c4d2023ULL;
  constexpr int kPrograms = 300;
  auto res = randomprograms::compareWithInterpreter("CPU", kSeed, kPrograms);
  MESSAGE("seed ", kSeed, ": ", res.checked, " programs, ", res.elements, " elements compared");
  CHECK(res.checked == kPrograms);
}

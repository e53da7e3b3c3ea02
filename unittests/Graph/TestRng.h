// A tiny seeded generator for the randomized tests (Graph, Tensor): splitmix64, whose sequence is
// the same on every platform and standard library, so a failing seed reproduces anywhere. It is
// independent of lazyjit's own generator.
#pragma once

#include <cstdint>

namespace lazyjit::testing {

class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi].
  int64_t range(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool chance(int percent) { return range(0, 99) < percent; }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
  uint64_t state;
};

} // namespace lazyjit::testing

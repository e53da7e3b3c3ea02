// Integer helpers with Python's semantics (floor division, modulo with the divisor's sign).
#pragma once

#include <cstdint>
#include <numeric>
#include <vector>

namespace lazyjit {

inline int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t floorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
inline int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }
inline int64_t gcd64(int64_t a, int64_t b) { return std::gcd(a, b); }

template <typename T> int64_t prodOf(const std::vector<T> &v) {
  int64_t p = 1;
  for (const auto &x : v) p *= static_cast<int64_t>(x);
  return p;
}

/// Combines a hash value into a seed (boost::hash_combine).
inline void hashCombine(size_t &seed, size_t v) {
  seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

} // namespace lazyjit

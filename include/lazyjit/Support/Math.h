// Integer helpers with Python's semantics (floor division, modulo with the divisor's sign).
#pragma once

#include "lazyjit/Support/Error.h"

#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

namespace lazyjit {

// Shape, stride, offset and bound arithmetic is checked: an overflow is a ShapeError (Python's
// integers never overflow; a wrapped size would let a kernel index outside its buffer).
[[noreturn]] inline void throwShapeOverflow(int64_t a, char op, int64_t b) {
  throw ShapeError(fmt::format("shape arithmetic overflows 64 bits: {} {} {}", a, op, b));
}
inline int64_t checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throwShapeOverflow(a, '+', b);
  return r;
}
inline int64_t checkedSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) throwShapeOverflow(a, '-', b);
  return r;
}
inline int64_t checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throwShapeOverflow(a, '*', b);
  return r;
}
inline int64_t checkedNeg(int64_t a) { return checkedSub(0, a); }

inline int64_t floorDiv(int64_t a, int64_t b) {
  if (a == std::numeric_limits<int64_t>::min() && b == -1) throwShapeOverflow(a, '/', b);
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t floorMod(int64_t a, int64_t b) {
  if (b == -1) return 0; // INT64_MIN % -1 traps
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
inline int64_t ceilDiv(int64_t a, int64_t b) { return checkedNeg(floorDiv(checkedNeg(a), b)); }
inline int64_t gcd64(int64_t a, int64_t b) { return std::gcd(a, b); }

template <typename T> int64_t prodOf(const std::vector<T> &v) {
  int64_t p = 1;
  for (const auto &x : v) p = checkedMul(p, static_cast<int64_t>(x));
  return p;
}

/// Combines a hash value into a seed (boost::hash_combine).
inline void hashCombine(size_t &seed, size_t v) {
  seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

} // namespace lazyjit

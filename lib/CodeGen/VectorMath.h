// glibc's vector math (libmvec) on x86-64 Linux: the vector variants of the C math calls CPU
// kernels make. One table serves the loop vectorizer's mapping (Compiler.cpp adds it to the
// TargetLibraryInfo) and vector mode's direct calls (LowerCPUVector.cpp), so both call the same
// code.
#pragma once

#include <optional>
#include <string>

namespace lazyjit {

struct VectorMathFn {
  const char *scalar; ///< the C library name: exp2f, log2, ...
  bool dbl;           ///< float64
};

inline constexpr VectorMathFn kVectorMathFns[] = {
    {"exp2f", false}, {"log2f", false}, {"sinf", false}, {"exp2", true}, {"log2", true}, {"sin", true},
};

/// The libmvec name of `fn` for one AVX2 ('d', 256-bit) or AVX-512 ('e', 512-bit) register:
/// `_ZGVeN16v_exp2f`; `lanes` receives the register's lane count.
inline std::string vectorMathName(const VectorMathFn &fn, bool zmm, unsigned *lanes) {
  unsigned n = (zmm ? 512u : 256u) / (fn.dbl ? 64u : 32u);
  if (lanes) *lanes = n;
  return std::string("_ZGV") + (zmm ? "e" : "d") + "N" + std::to_string(n) + "v_" + fn.scalar;
}

/// The table entry for a scalar name, if libmvec has one.
inline std::optional<VectorMathFn> findVectorMathFn(const std::string &scalar) {
  for (const auto &f : kVectorMathFns)
    if (scalar == f.scalar) return f;
  return std::nullopt;
}

} // namespace lazyjit

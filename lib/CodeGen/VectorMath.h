// glibc's vector math (libmvec) on x86-64 Linux: the vector variants of the C math calls CPU
// kernels make. One table, from Ops.def's libm and Lanes columns, serves the loop vectorizer's
// mapping (Compiler.cpp adds it to the TargetLibraryInfo) and vector mode's direct calls
// (LowerCPUMath.cpp), so both call the same code.
#pragma once

#include "lazyjit/Graph/DType.h"
#include "lazyjit/Graph/Ops.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lazyjit {

struct VectorMathFn {
  std::string scalar; ///< the C library name: exp2f, log2, ...
  bool dbl;           ///< float64
};

/// The C library functions libmvec has vector variants of: the float32 and then the float64
/// function of each op whose Lanes column in Ops.def is VectorMath (opLibm), in table order:
/// exp2f, log2f, sinf, exp2, log2, sin.
inline const std::vector<VectorMathFn> &vectorMathFns() {
  static const std::vector<VectorMathFn> fns = [] {
    std::vector<VectorMathFn> v;
    for (bool dbl : {false, true})
      for (int i = 0; i < kNumOps; ++i)
        if (Op op = static_cast<Op>(i); opLanes(op) == OpLanes::VectorMath)
          v.push_back({std::string(opLibm(op)) + (dbl ? "" : "f"), dbl});
    return v;
  }();
  return fns;
}

/// The libmvec name of `fn` for one AVX2 ('d', 256-bit) or AVX-512 ('e', 512-bit) register:
/// `_ZGVeN16v_exp2f`; `lanes` receives the register's lane count.
inline std::string vectorMathName(const VectorMathFn &fn, bool zmm, unsigned *lanes) {
  unsigned n = (zmm ? 512u : 256u) / (fn.dbl ? 64u : 32u);
  if (lanes) *lanes = n;
  return std::string("_ZGV") + (zmm ? "e" : "d") + "N" + std::to_string(n) + "v_" + fn.scalar;
}

/// The table entry for a scalar name, if libmvec has one.
inline std::optional<VectorMathFn> findVectorMathFn(const std::string &scalar) {
  for (const auto &f : vectorMathFns())
    if (scalar == f.scalar) return f;
  return std::nullopt;
}

/// The libmvec variant of the op's libm function (exp2/log2/sin) for `lanes`-wide vectors of `dt` on a target with
/// `vectorBits`-wide registers, when it has glibc's vector math (`libmvec`: x86-64 Linux): the
/// widest register whose lane count divides `lanes`, as {name, lanes per call}.
inline std::optional<std::pair<std::string, int64_t>> vectorMathFn(Op op, DType dt, int64_t lanes, int vectorBits,
                                                                  bool libmvec) {
  if (!libmvec || vectorBits < 256) return std::nullopt;
  if (dt != dtypes::float32 && dt != dtypes::float64) return std::nullopt;
  bool dbl = dt == dtypes::float64;
  std::string_view base = opLibm(op);
  if (base.empty()) return std::nullopt;
  auto fn = findVectorMathFn(std::string(base) + (dbl ? "" : "f"));
  if (!fn) return std::nullopt;
  for (bool zmm : {true, false}) {
    if (zmm && vectorBits < 512) continue;
    unsigned width = 0;
    std::string name = vectorMathName(*fn, zmm, &width);
    if (lanes % width == 0) return std::make_pair(name, static_cast<int64_t>(width));
  }
  return std::nullopt;
}

} // namespace lazyjit

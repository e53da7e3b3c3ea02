// The scalars of the reference interpreter (Interpreter.cpp): a value in the widest
// representation of its dtype's kind, the conversions, loads and stores between dtypes, and the
// ALU, which together are the value semantics the JIT backends are tested against. Private to
// lib/Runtime.
#pragma once

#include "lazyjit/Graph/DType.h"
#include "lazyjit/Graph/Ops.h"

#include <cstdint>
#include <vector>

namespace lazyjit::interp {

// A scalar in the widest representation of its dtype's kind.
struct Value {
  double f = 0;
  int64_t i = 0;
  uint64_t u = 0;
  bool b = false;
};

enum class Kind { Bool, Signed, Unsigned, Float };

inline Kind kindOf(DType dt) {
  if (dt.isBool()) return Kind::Bool;
  if (dt.isFloating()) return Kind::Float;
  return dt.isUnsigned() ? Kind::Unsigned : Kind::Signed;
}

/// Rounds/wraps a value to the exact set of values of `dt` (used by loads, stores and casts).
Value normalize(Value v, DType dt);
/// Wraps an ALU result to the dtype's width; float16/bfloat16 stay in float32 precision until
/// they are stored or cast.
Value aluNormalize(Value v, DType dt);
double toDouble(const Value &v, Kind k);
bool isTrue(const Value &v, Kind k);
/// Converts between dtypes with the casts of the reference's LLVM renderer. `exact` rounds to the
/// target's values (CAST, STORE, constants); otherwise a float16/bfloat16 target keeps float32
/// precision (operand promotion inside a kernel).
Value convert(const Value &v, DType from, DType to, bool exact = true);
/// Element `idx` of a buffer of `dt` at `base`.
Value loadScalar(const void *base, int64_t idx, DType dt);
void storeScalar(void *base, int64_t idx, DType dt, const Value &v);
Value bitcast(const Value &v, DType from, DType to);
/// One ALU op (unary, binary or ternary) on operands of `dt`, before aluNormalize.
Value alu(Op op, const std::vector<Value> &s, DType dt);

} // namespace lazyjit::interp

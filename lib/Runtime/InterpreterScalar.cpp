// The scalars of the reference interpreter (Interpreter.cpp): normalization to a dtype's values,
// conversions, loads, stores and the ALU.
//
// Value semantics (shared with the JIT backends, which are tested against this file):
//  - each node has the dtype get_lazyop_info gives it; integers wrap at their width; float16 and
//    bfloat16 are computed in float32 and rounded when stored or cast;
//  - integer DIV/MOD truncate toward zero (C semantics); x/0 and x%0 are 0 for integers;
//  - CMPLT on floats is an unordered compare (a NaN operand makes it true), as the reference's
//    LLVM renderer does; MAX is IEEE 754-2019 maximum (NaN if either operand is NaN, +0 over -0),
//    where the reference picked its first operand on NaN; WHERE treats any nonzero (or NaN)
//    condition as true;
//  - transcendental ops on integer dtypes compute in double and truncate back to the dtype;
//  - float -> int conversions saturate to the target's range and map NaN to 0;
//  - SUM starts at 0, MAX at the lowest value of the dtype.
#include "InterpreterScalar.h"
#include "lazyjit/Support/Error.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace lazyjit::interp {

// Rounds/wraps a value to the exact set of values of `dt` (used by loads, stores and casts).
Value normalize(Value v, DType dt) {
  switch (dt.scalar()) {
  case ScalarType::Bool: break;
  case ScalarType::Int8: v.i = static_cast<int8_t>(v.i); break;
  case ScalarType::Int16: v.i = static_cast<int16_t>(v.i); break;
  case ScalarType::Int32: v.i = static_cast<int32_t>(v.i); break;
  case ScalarType::Int64: break;
  case ScalarType::UInt8: v.u = static_cast<uint8_t>(v.u); break;
  case ScalarType::UInt16: v.u = static_cast<uint16_t>(v.u); break;
  case ScalarType::UInt32: v.u = static_cast<uint32_t>(v.u); break;
  case ScalarType::UInt64: break;
  case ScalarType::Float16: v.f = static_cast<float>(Half(static_cast<float>(v.f))); break;
  case ScalarType::BFloat16: v.f = static_cast<float>(BFloat16(static_cast<float>(v.f))); break;
  case ScalarType::Float32: v.f = static_cast<float>(v.f); break;
  case ScalarType::Float64: break;
  }
  return v;
}

// Wraps an ALU result to the dtype's width; float16/bfloat16 stay in float32 precision until
// they are stored or cast.
Value aluNormalize(Value v, DType dt) {
  if (dt.isHalfWidth()) {
    v.f = static_cast<float>(v.f);
    return v;
  }
  return normalize(v, dt);
}

double toDouble(const Value &v, Kind k) {
  switch (k) {
  case Kind::Bool: return v.b ? 1.0 : 0.0;
  case Kind::Signed: return static_cast<double>(v.i);
  case Kind::Unsigned: return static_cast<double>(v.u);
  case Kind::Float: return v.f;
  }
  return 0;
}

bool isTrue(const Value &v, Kind k) {
  switch (k) {
  case Kind::Bool: return v.b;
  case Kind::Signed: return v.i != 0;
  case Kind::Unsigned: return v.u != 0;
  case Kind::Float: return v.f != 0 || std::isnan(v.f);
  }
  return false;
}

// Converts between dtypes with the casts of the reference's LLVM renderer. `exact` rounds to the
// target's values (CAST, STORE, constants); otherwise a float16/bfloat16 target keeps float32
// precision (operand promotion inside a kernel).
Value convert(const Value &v, DType from, DType to, bool exact) {
  Kind fk = kindOf(from), tk = kindOf(to);
  Value r;
  switch (tk) {
  case Kind::Bool: r.b = isTrue(v, fk); break;
  case Kind::Float: r.f = toDouble(v, fk); break;
  case Kind::Signed:
    if (fk == Kind::Float) {
      // saturating, NaN -> 0 (LLVM's fptosi.sat)
      double lo = -std::ldexp(1.0, to.itemsize() * 8 - 1), hi = std::ldexp(1.0, to.itemsize() * 8 - 1);
      double d = std::trunc(v.f);
      if (std::isnan(d)) r.i = 0;
      else if (d <= lo) r.i = to.itemsize() == 8 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(lo);
      else if (d >= hi) r.i = to.itemsize() == 8 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi) - 1;
      else r.i = static_cast<int64_t>(d);
    } else if (fk == Kind::Unsigned) {
      r.i = static_cast<int64_t>(v.u);
    } else if (fk == Kind::Bool) {
      r.i = v.b;
    } else {
      r.i = v.i;
    }
    break;
  case Kind::Unsigned:
    if (fk == Kind::Float) {
      // saturating, NaN -> 0 (LLVM's fptoui.sat)
      double hi = std::ldexp(1.0, to.itemsize() * 8);
      double d = std::trunc(v.f);
      if (std::isnan(d) || d <= 0) r.u = 0;
      else if (d >= hi) r.u = to.itemsize() == 8 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(hi) - 1;
      else r.u = static_cast<uint64_t>(d);
    } else if (fk == Kind::Signed) {
      r.u = static_cast<uint64_t>(v.i);
    } else if (fk == Kind::Bool) {
      r.u = v.b;
    } else {
      r.u = v.u;
    }
    break;
  }
  return exact ? normalize(r, to) : aluNormalize(r, to);
}

Value loadScalar(const void *base, int64_t idx, DType dt) {
  Value v;
  dispatchDType(dt, [&]<typename T>() {
    T x;
    std::memcpy(&x, static_cast<const char *>(base) + idx * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, bool>) v.b = x;
    else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) v.f = static_cast<float>(x);
    else if constexpr (std::is_floating_point_v<T>) v.f = x;
    else if constexpr (std::is_signed_v<T>) v.i = x;
    else v.u = x;
  });
  return v;
}

void storeScalar(void *base, int64_t idx, DType dt, const Value &v) {
  dispatchDType(dt, [&]<typename T>() {
    T x;
    if constexpr (std::is_same_v<T, bool>) x = v.b;
    else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) x = T(static_cast<float>(v.f));
    else if constexpr (std::is_floating_point_v<T>) x = static_cast<T>(v.f);
    else if constexpr (std::is_signed_v<T>) x = static_cast<T>(v.i);
    else x = static_cast<T>(v.u);
    std::memcpy(static_cast<char *>(base) + idx * sizeof(T), &x, sizeof(T));
  });
}

Value bitcast(const Value &v, DType from, DType to) {
  char bytes[8] = {0};
  storeScalar(bytes, 0, from, v);
  return loadScalar(bytes, 0, to);
}

Value alu(Op op, const std::vector<Value> &s, DType dt) {
  Kind k = kindOf(dt);
  Value r;
  const Value &a = s[0];
  auto fl = [&](double (*f)(double)) {
    Value out;
    if (k == Kind::Float) {
      out.f = f(a.f);
      if (dt != dtypes::float64) out.f = static_cast<float>(out.f);
      return out;
    }
    return convert(Value{f(toDouble(a, k)), 0, 0, false}, dtypes::float64, dt);
  };
  const Value &b = s.size() > 1 ? s[1] : a;
  switch (op) {
  case Op::Exp2: return fl([](double x) { return std::exp2(x); });
  case Op::Log2: return fl([](double x) { return std::log2(x); });
  case Op::Sin: return fl([](double x) { return std::sin(x); });
  case Op::Sqrt: return fl([](double x) { return std::sqrt(x); });
  case Op::Recip: return fl([](double x) { return 1.0 / x; });
  case Op::Neg:
    if (k == Kind::Float) r.f = -a.f;
    else if (k == Kind::Signed) r.i = static_cast<int64_t>(0ULL - static_cast<uint64_t>(a.i));
    else if (k == Kind::Unsigned) r.u = 0 - a.u;
    else r.b = !a.b;
    return r;
  case Op::Add:
    if (k == Kind::Float) r.f = a.f + b.f;
    else if (k == Kind::Signed) r.i = static_cast<int64_t>(static_cast<uint64_t>(a.i) + static_cast<uint64_t>(b.i));
    else if (k == Kind::Unsigned) r.u = a.u + b.u;
    else r.b = a.b || b.b;
    return r;
  case Op::Sub:
    if (k == Kind::Float) r.f = a.f - b.f;
    else if (k == Kind::Signed) r.i = static_cast<int64_t>(static_cast<uint64_t>(a.i) - static_cast<uint64_t>(b.i));
    else if (k == Kind::Unsigned) r.u = a.u - b.u;
    else r.b = a.b != b.b;
    return r;
  case Op::Mul:
    if (k == Kind::Float) r.f = a.f * b.f;
    else if (k == Kind::Signed) r.i = static_cast<int64_t>(static_cast<uint64_t>(a.i) * static_cast<uint64_t>(b.i));
    else if (k == Kind::Unsigned) r.u = a.u * b.u;
    else r.b = a.b && b.b;
    return r;
  case Op::Div:
    if (k == Kind::Float) r.f = a.f / b.f;
    else if (k == Kind::Signed) r.i = b.i == 0 ? 0 : (b.i == -1 ? static_cast<int64_t>(0ULL - static_cast<uint64_t>(a.i)) : a.i / b.i);
    else if (k == Kind::Unsigned) r.u = b.u == 0 ? 0 : a.u / b.u;
    else r.b = b.b ? a.b : false;
    return r;
  case Op::Mod:
    if (k == Kind::Float) r.f = std::fmod(a.f, b.f);
    else if (k == Kind::Signed) r.i = (b.i == 0 || b.i == -1) ? 0 : a.i % b.i;
    else if (k == Kind::Unsigned) r.u = b.u == 0 ? 0 : a.u % b.u;
    else r.b = false;
    return r;
  case Op::Max:
    if (k == Kind::Float) {
      if (std::isnan(a.f) || std::isnan(b.f)) r.f = std::nan("");
      else if (a.f == b.f) r.f = std::signbit(a.f) ? b.f : a.f; // +0 over -0
      else r.f = a.f > b.f ? a.f : b.f;
    }
    else if (k == Kind::Signed) r.i = a.i > b.i ? a.i : b.i;
    else if (k == Kind::Unsigned) r.u = a.u > b.u ? a.u : b.u;
    else r.b = a.b || b.b;
    return r;
  case Op::CmpLt: {
    bool lt;
    if (k == Kind::Float) lt = a.f < b.f || std::isnan(a.f) || std::isnan(b.f);
    else if (k == Kind::Signed) lt = a.i < b.i;
    else if (k == Kind::Unsigned) lt = a.u < b.u;
    else lt = !a.b && b.b;
    return convert(Value{0, 0, 0, lt}, dtypes::boolean, dt);
  }
  case Op::Xor:
    if (k == Kind::Signed) r.i = a.i ^ b.i;
    else if (k == Kind::Unsigned) r.u = a.u ^ b.u;
    else if (k == Kind::Bool) r.b = a.b != b.b;
    else LAZYJIT_USER_CHECK(false, DTypeError, "interpreter: XOR of {}", dt.name());
    return r;
  case Op::MulAcc:
    if (k == Kind::Float) r.f = a.f * b.f + s[2].f;
    else return alu(Op::Add, {alu(Op::Mul, {a, b}, dt), s[2]}, dt);
    return r;
  // (CAST and WHERE are evalOp's: they read their operands' dtypes)
  case Op::Cast: case Op::Where: case Op::Sum: case Op::ReduceMax:
  case Op::Load: case Op::Const: case Op::Store:
  case Op::Reshape: case Op::Permute: case Op::Expand: case Op::Pad: case Op::Shrink: case Op::Stride:
  case Op::AsStrided:
  case Op::Empty: case Op::LoadConst: case Op::Copy: case Op::Contiguous: case Op::Custom: break;
  }
  LAZYJIT_USER_CHECK(false, UnsupportedError, "interpreter: {} is not an ALU op", opName(op));
}

} // namespace lazyjit::interp

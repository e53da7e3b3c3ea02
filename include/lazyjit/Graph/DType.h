// Data types of the reference (helpers.py DType): name, itemsize, priority, and the promotion rule
// (the higher priority wins), plus the mapping between dtypes and C++ types.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace lazyjit {

enum class ScalarType : uint8_t {
  Bool,
  Int8,
  UInt8,
  Int16,
  UInt16,
  Int32,
  UInt32,
  Int64,
  UInt64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

/// A scalar dtype. `max(a, b)` in the reference compares (priority, itemsize, name, ...), and every
/// dtype here has its own priority, so promotion is "the higher priority wins".
class DType {
public:
  constexpr DType() : t(ScalarType::Float32) {}
  constexpr DType(ScalarType s) : t(s) {}

  constexpr ScalarType scalar() const { return t; }
  constexpr int priority() const { return info().priority; }
  constexpr int itemsize() const { return info().itemsize; }
  /// The canonical name used in lazyjit's text formats and errors: "float32", "int8", "bool".
  constexpr std::string_view name() const { return info().name; }
  /// The reference's C name ("float", "unsigned char", "__bf16").
  constexpr std::string_view cName() const { return info().cname; }

  /// dtypes.is_float: float16/32/64 (bfloat16 is not, as in the reference).
  constexpr bool isFloat() const {
    return t == ScalarType::Float16 || t == ScalarType::Float32 || t == ScalarType::Float64;
  }
  /// Any floating-point storage, bfloat16 included.
  constexpr bool isFloating() const { return isFloat() || t == ScalarType::BFloat16; }
  /// float16 or bfloat16: stored in 16 bits, computed in float32 registers by every backend.
  constexpr bool isHalfWidth() const { return t == ScalarType::Float16 || t == ScalarType::BFloat16; }
  /// dtypes.is_int: signed and unsigned integers (not bool).
  constexpr bool isInt() const { return t >= ScalarType::Int8 && t <= ScalarType::UInt64; }
  constexpr bool isUnsigned() const {
    return t == ScalarType::UInt8 || t == ScalarType::UInt16 || t == ScalarType::UInt32 ||
           t == ScalarType::UInt64;
  }
  constexpr bool isBool() const { return t == ScalarType::Bool; }

  constexpr bool operator==(const DType &o) const { return t == o.t; }
  constexpr bool operator!=(const DType &o) const { return t != o.t; }

  /// Parses "float32", "float", "half", "int", ... (the reference's aliases), or nullopt.
  static std::optional<DType> fromName(std::string_view name);

private:
  struct Info {
    int priority, itemsize;
    std::string_view name, cname;
  };
  static constexpr Info infoOf(ScalarType s) {
    switch (s) {
    case ScalarType::Bool: return {0, 1, "bool", "bool"};
    case ScalarType::Int8: return {1, 1, "int8", "char"};
    case ScalarType::UInt8: return {2, 1, "uint8", "unsigned char"};
    case ScalarType::Int16: return {3, 2, "int16", "short"};
    case ScalarType::UInt16: return {4, 2, "uint16", "unsigned short"};
    case ScalarType::Int32: return {5, 4, "int32", "int"};
    case ScalarType::UInt32: return {6, 4, "uint32", "unsigned int"};
    case ScalarType::Int64: return {7, 8, "int64", "long"};
    case ScalarType::UInt64: return {8, 8, "uint64", "unsigned long"};
    case ScalarType::Float16: return {9, 2, "float16", "half"};
    case ScalarType::BFloat16: return {10, 2, "bfloat16", "__bf16"};
    case ScalarType::Float32: return {11, 4, "float32", "float"};
    case ScalarType::Float64: return {12, 8, "float64", "double"};
    }
    return {11, 4, "float32", "float"};
  }
  constexpr Info info() const { return infoOf(t); }
  ScalarType t;
};

/// The reference's promotion: max() by priority.
constexpr DType promote(DType a, DType b) { return a.priority() >= b.priority() ? a : b; }

namespace dtypes {
inline constexpr DType boolean{ScalarType::Bool};
inline constexpr DType int8{ScalarType::Int8};
inline constexpr DType uint8{ScalarType::UInt8};
inline constexpr DType int16{ScalarType::Int16};
inline constexpr DType uint16{ScalarType::UInt16};
inline constexpr DType int32{ScalarType::Int32};
inline constexpr DType uint32{ScalarType::UInt32};
inline constexpr DType int64{ScalarType::Int64};
inline constexpr DType uint64{ScalarType::UInt64};
inline constexpr DType float16{ScalarType::Float16};
inline constexpr DType bfloat16{ScalarType::BFloat16};
inline constexpr DType float32{ScalarType::Float32};
inline constexpr DType float64{ScalarType::Float64};
inline constexpr DType all[] = {boolean, int8,    uint8,    int16,   uint16,  int32,  uint32,
                                int64,   uint64,  float16,  bfloat16, float32, float64};
} // namespace dtypes

// ---- half and bfloat16 storage types ------------------------------------------------------------

/// IEEE binary16 storage with round-to-nearest-even conversion from float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(fromFloat(f)) {}
  operator float() const { return toFloat(bits); }
  static uint16_t fromFloat(float f);
  static float toFloat(uint16_t h);
};

/// bfloat16 storage: the top 16 bits of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(fromFloat(f)) {}
  operator float() const { return toFloat(bits); }
  static uint16_t fromFloat(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40); // nan
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
  static float toFloat(uint16_t b) {
    uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

/// C++ storage type of each dtype.
template <ScalarType S> struct CType;
template <> struct CType<ScalarType::Bool> { using type = bool; };
template <> struct CType<ScalarType::Int8> { using type = int8_t; };
template <> struct CType<ScalarType::UInt8> { using type = uint8_t; };
template <> struct CType<ScalarType::Int16> { using type = int16_t; };
template <> struct CType<ScalarType::UInt16> { using type = uint16_t; };
template <> struct CType<ScalarType::Int32> { using type = int32_t; };
template <> struct CType<ScalarType::UInt32> { using type = uint32_t; };
template <> struct CType<ScalarType::Int64> { using type = int64_t; };
template <> struct CType<ScalarType::UInt64> { using type = uint64_t; };
template <> struct CType<ScalarType::Float16> { using type = Half; };
template <> struct CType<ScalarType::BFloat16> { using type = BFloat16; };
template <> struct CType<ScalarType::Float32> { using type = float; };
template <> struct CType<ScalarType::Float64> { using type = double; };

/// The dtype of a C++ type.
template <typename T> constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<bool>() { return dtypes::boolean; }
template <> constexpr DType dtypeOf<int8_t>() { return dtypes::int8; }
template <> constexpr DType dtypeOf<uint8_t>() { return dtypes::uint8; }
template <> constexpr DType dtypeOf<int16_t>() { return dtypes::int16; }
template <> constexpr DType dtypeOf<uint16_t>() { return dtypes::uint16; }
template <> constexpr DType dtypeOf<int32_t>() { return dtypes::int32; }
template <> constexpr DType dtypeOf<uint32_t>() { return dtypes::uint32; }
template <> constexpr DType dtypeOf<int64_t>() { return dtypes::int64; }
template <> constexpr DType dtypeOf<uint64_t>() { return dtypes::uint64; }
template <> constexpr DType dtypeOf<Half>() { return dtypes::float16; }
template <> constexpr DType dtypeOf<BFloat16>() { return dtypes::bfloat16; }
template <> constexpr DType dtypeOf<float>() { return dtypes::float32; }
template <> constexpr DType dtypeOf<double>() { return dtypes::float64; }

/// Calls `f.template operator()<T>()` with the C++ storage type of `dt`.
template <typename F> decltype(auto) dispatchDType(DType dt, F &&f) {
  switch (dt.scalar()) {
  case ScalarType::Bool: return f.template operator()<bool>();
  case ScalarType::Int8: return f.template operator()<int8_t>();
  case ScalarType::UInt8: return f.template operator()<uint8_t>();
  case ScalarType::Int16: return f.template operator()<int16_t>();
  case ScalarType::UInt16: return f.template operator()<uint16_t>();
  case ScalarType::Int32: return f.template operator()<int32_t>();
  case ScalarType::UInt32: return f.template operator()<uint32_t>();
  case ScalarType::Int64: return f.template operator()<int64_t>();
  case ScalarType::UInt64: return f.template operator()<uint64_t>();
  case ScalarType::Float16: return f.template operator()<Half>();
  case ScalarType::BFloat16: return f.template operator()<BFloat16>();
  case ScalarType::Float32: return f.template operator()<float>();
  case ScalarType::Float64: return f.template operator()<double>();
  }
  return f.template operator()<float>();
}

} // namespace lazyjit

// DType name parsing and the float16 conversions.
#include "lazyjit/Graph/DType.h"

#include <cmath>

namespace lazyjit {

std::optional<DType> DType::fromName(std::string_view n) {
  struct Alias {
    std::string_view name;
    DType dt;
  };
  static constexpr Alias aliases[] = {
      {"bool", dtypes::boolean},   {"int8", dtypes::int8},       {"char", dtypes::int8},
      {"uint8", dtypes::uint8},    {"uchar", dtypes::uint8},     {"int16", dtypes::int16},
      {"short", dtypes::int16},    {"uint16", dtypes::uint16},   {"ushort", dtypes::uint16},
      {"int32", dtypes::int32},    {"int", dtypes::int32},       {"uint32", dtypes::uint32},
      {"uint", dtypes::uint32},    {"int64", dtypes::int64},     {"long", dtypes::int64},
      {"uint64", dtypes::uint64},  {"ulong", dtypes::uint64},    {"float16", dtypes::float16},
      {"half", dtypes::float16},   {"bfloat16", dtypes::bfloat16}, {"float32", dtypes::float32},
      {"float", dtypes::float32},  {"float64", dtypes::float64}, {"double", dtypes::float64},
  };
  for (const auto &a : aliases)
    if (a.name == n) return a.dt;
  return std::nullopt;
}

uint16_t Half::fromFloat(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u); // nan
  if (absx >= 0x477ff000u) {                                            // overflow -> inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (absx < 0x38800000u) { // subnormal or zero in half
    // Scale into the subnormal range with round-to-nearest-even through float arithmetic.
    float af;
    std::memcpy(&af, &absx, 4);
    float scaled = af * 16777216.0f; // 2^24: half subnormal unit is 2^-24
    uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t mant = absx & 0x7fffffu;
  int32_t exp = static_cast<int32_t>(absx >> 23) - 127 + 15;
  uint32_t h = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h; // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

float Half::toFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (mant == 0) {
      out = sign;
    } else {
      float f = std::ldexp(static_cast<float>(mant), -24);
      std::memcpy(&out, &f, 4);
      out |= sign;
    }
  } else if (exp == 31) {
    out = sign | 0x7f800000u | (mant << 13);
  } else {
    out = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &out, 4);
  return f;
}

} // namespace lazyjit

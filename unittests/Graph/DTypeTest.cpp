// DType table, promotion and the half/bfloat16 conversions.
#include "lazyjit/Graph/DType.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace lazyjit;

TEST_CASE("DType: names, itemsizes and priorities follow the reference") {
  CHECK(dtypes::float32.name() == "float32");
  CHECK(dtypes::float32.cName() == "float");
  CHECK(dtypes::bfloat16.itemsize() == 2);
  CHECK(dtypes::int64.itemsize() == 8);
  CHECK(dtypes::boolean.priority() == 0);
  CHECK(dtypes::float64.priority() == 12);
  int last = -1;
  for (DType d : dtypes::all) {
    CHECK(d.priority() > last);
    last = d.priority();
  }
}

TEST_CASE("DType: promotion is max priority") {
  CHECK(promote(dtypes::int32, dtypes::float32) == dtypes::float32);
  CHECK(promote(dtypes::uint8, dtypes::int8) == dtypes::uint8);
  CHECK(promote(dtypes::int64, dtypes::float16) == dtypes::float16);
  CHECK(promote(dtypes::boolean, dtypes::int16) == dtypes::int16);
  CHECK(promote(dtypes::bfloat16, dtypes::float16) == dtypes::bfloat16);
}

TEST_CASE("DType: classification") {
  CHECK(dtypes::float16.isFloat());
  CHECK_FALSE(dtypes::bfloat16.isFloat());
  CHECK(dtypes::bfloat16.isFloating());
  CHECK(dtypes::uint32.isInt());
  CHECK(dtypes::uint32.isUnsigned());
  CHECK_FALSE(dtypes::boolean.isInt());
}

TEST_CASE("DType: names parse, aliases included") {
  CHECK(DType::fromName("half") == dtypes::float16);
  CHECK(DType::fromName("float") == dtypes::float32);
  CHECK(DType::fromName("uint64") == dtypes::uint64);
  CHECK_FALSE(DType::fromName("float8").has_value());
}

TEST_CASE("Half: round trip and rounding") {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f})
    CHECK(static_cast<float>(Half(f)) == f);
  CHECK(std::isinf(static_cast<float>(Half(70000.0f))));
  CHECK(std::isnan(static_cast<float>(Half(NAN))));
  CHECK(static_cast<float>(Half(1.0009765625f)) == 1.0009765625f);   // 1 + 2^-10 exact
  CHECK(static_cast<float>(Half(1.00048828125f)) == 1.0f);          // tie rounds to even
  CHECK(static_cast<float>(Half(1.000732421875f)) == 1.0009765625f); // above the tie rounds up
}

TEST_CASE("BFloat16: round trip and rounding") {
  CHECK(static_cast<float>(BFloat16(1.0f)) == 1.0f);
  CHECK(static_cast<float>(BFloat16(3.140625f)) == 3.140625f);
  CHECK(static_cast<float>(BFloat16(1.00390625f)) == 1.0f); // tie to even
  CHECK(std::isnan(static_cast<float>(BFloat16(NAN))));
}

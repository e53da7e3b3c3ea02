// Casts between every pair of dtypes (truncation, wrap-around, saturation, rounding, ->bool),
// float16/bfloat16 rounding against numpy golden data, and bitcasts.
#include "TensorTestUtil.h"
#include "golden/TensorGolden.h"

#include <cstring>

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

// Values every source dtype can hold exactly, chosen to exercise wrap-around between integer
// widths, truncation of fractions and negative values.
Vals castSource(DType from) {
  if (from.isBool()) return {0, 1, 1, 0};
  if (from.isUnsigned())
    return from.itemsize() == 1 ? Vals{0, 1, 100, 200, 255, 128}
                                : Vals{0, 1, 300, 40000, 65535, 255};
  if (from.isInt())
    return from.itemsize() == 1 ? Vals{0, 1, -1, 100, -100, 127, -128}
                                : Vals{0, -1, 300, -300, 32767, -32768, 129};
  return {0, 1, -1, 2.5, -2.5, 100.75, -99.9, 0.375};
}

// The value a cast stores: integers wrap into narrower integers, floats truncate toward zero into
// integers and saturate at the target's range (NaN -> 0), anything nonzero is true.
double castValue(double v, DType from, DType to) {
  if (from.isFloating() && to.isInt()) {
    double t = std::trunc(v);
    int bits = static_cast<int>(to.itemsize()) * 8;
    double lo = to.isUnsigned() ? 0 : -std::ldexp(1.0, bits - 1);
    double hi = to.isUnsigned() ? std::ldexp(1.0, bits) - 1 : std::ldexp(1.0, bits - 1) - 1;
    return std::isnan(t) ? 0 : std::clamp(t, lo, hi);
  }
  return storeAs(v, to);
}

} // namespace

TEST_CASE("Tensor cast: every dtype to every dtype") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (DType from : allDTypes()) {
      CAPTURE(from.name());
      Vals src = storeAll(castSource(from), from);
      auto n = static_cast<int64_t>(src.size());
      Tensor x = make(src, {n}, dev, from);
      for (DType to : allDTypes()) {
        CAPTURE(to.name());
        Vals expected;
        for (double v : src) expected.push_back(castValue(v, from, to));
        Tensor y = x.cast(to);
        expectDType(y, to);
        expectExact(y, {n}, expected);
      }
    }
  }
}

TEST_CASE("Tensor cast: float to int saturates, nan and inf included") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor f = make({1e10, -1e10, 300.7, -300.7, kNaN, kInf, -kInf, -0.9}, {8}, dev);
    for (DType to : intDTypes()) {
      CAPTURE(to.name());
      Vals expected;
      for (double v : {1e10, -1e10, 300.7, -300.7, kNaN, kInf, -kInf, -0.9})
        expected.push_back(castValue(static_cast<float>(v), dtypes::float32, to));
      if (to.itemsize() == 8) {
        // 64-bit limits are beyond double precision: compare exactly as integers
        std::vector<int64_t> got = f.cast(to).toVector<int64_t>();
        CHECK(got[0] == int64_t{10000000000});
        CHECK(got[4] == 0);
        if (to.isUnsigned())
          CHECK(f.cast(to).toVector<uint64_t>()[5] == UINT64_MAX);
        else
          CHECK(got[5] == INT64_MAX);
        if (!to.isUnsigned()) CHECK(got[6] == INT64_MIN);
        continue;
      }
      expectExact(f.cast(to), {8}, expected);
    }
    // trunc/ceil/floor go through int32 as in the reference, so they saturate beyond its range
    expectExact(make({3e9, -3e9}, {2}, dev).trunc(), {2},
                {2147483648.0, -2147483648.0}); // 2^31-1 in float32
  }
}

TEST_CASE("Tensor cast: float16 and bfloat16 round to nearest even (numpy golden data)") {
  auto n = static_cast<int64_t>(golden::kRoundIn.size());
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = make(golden::kRoundIn, {n}, dev);
    expectExact(x.cast(dtypes::float16), {n}, golden::kRoundF16);
    expectExact(x.half(), {n}, golden::kRoundF16);
    expectExact(x.cast(dtypes::bfloat16), {n}, golden::kRoundBF16);
    // back to float32 is exact, and so is float16 -> bfloat16 -> float64 for these values
    expectExact(x.cast(dtypes::float16).toFloat(), {n}, golden::kRoundF16);
    expectExact(x.cast(dtypes::bfloat16).cast(dtypes::float64), {n}, golden::kRoundBF16);
    // the host-side conversion of fromValues rounds the same way
    expectExact(make(golden::kRoundIn, {n}, dev, dtypes::float16), {n}, golden::kRoundF16);
    expectExact(make(golden::kRoundIn, {n}, dev, dtypes::bfloat16), {n}, golden::kRoundBF16);
    // this file's own rounding helper agrees with numpy (it computes the other tests' expectations)
    for (int64_t i = 0; i < n; ++i) {
      CAPTURE(golden::kRoundIn[i]);
      CHECK(closeTo(storeAs(golden::kRoundIn[i], dtypes::float16), golden::kRoundF16[i], {0, 0}));
      CHECK(closeTo(storeAs(golden::kRoundIn[i], dtypes::bfloat16), golden::kRoundBF16[i], {0, 0}));
    }
  }
}

TEST_CASE("Tensor cast: casts of non-contiguous views, 0-d and empty tensors") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals v = randVals(15, 51, -300, 300);
    for (Layout l : allLayouts()) {
      CAPTURE(std::string(layoutName(l)));
      Tensor x = makeView(l, v, {3, 5}, dev);
      expectExact(x.cast(dtypes::int16), {3, 5},
                  hostMap(v, [](double a) { return std::trunc(a); }));
      expectExact(x.cast(dtypes::float16), {3, 5}, storeAll(v, dtypes::float16));
    }
    expectExact(Tensor::scalar(-7.5, {std::nullopt, dev}).cast(dtypes::int8), {}, {-7});
    expectExact(make({}, {0, 3}, dev).cast(dtypes::int32), {0, 3}, {});
    // a cast to the same dtype is the identity
    Tensor same = make({1, 2}, {2}, dev);
    CHECK(same.cast(dtypes::float32).lazydata() == same.lazydata());
  }
}

TEST_CASE("Tensor bitcast: reinterprets the bits between dtypes of one itemsize") {
  auto bitsOf = [](auto v) {
    using T = decltype(v);
    using U = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
    U u;
    std::memcpy(&u, &v, sizeof(T));
    return static_cast<double>(u);
  };
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals f{1, -2, 0.1, 0, -0.0, kInf};
    Vals bits;
    for (double v : f) bits.push_back(bitsOf(static_cast<float>(v)));
    Tensor x = make(f, {2, 3}, dev);
    expectExact(x.bitcast(dtypes::int32), {2, 3}, bits);
    expectExact(x.bitcast(dtypes::int32).bitcast(dtypes::float32), {2, 3},
                storeAll(f, dtypes::float32));
    // uint32 view of the same bits
    Vals ubits;
    for (double b : bits) ubits.push_back(b < 0 ? b + 0x1p32 : b);
    expectExact(x.bitcast(dtypes::uint32), {2, 3}, ubits);
    // a permuted view bitcasts element by element in logical order
    expectExact(makeView(Layout::Permuted, f, {2, 3}, dev).bitcast(dtypes::int32), {2, 3}, bits);
    // int32 -> float32
    expectExact(make({1065353216, -1073741824}, {2}, dev, dtypes::int32).bitcast(dtypes::float32),
                {2}, {1, -2});
    // 16-bit: float16 1.0 = 0x3c00, bfloat16 1.0 = 0x3f80, -2.0 = 0xc000
    expectExact(make({1, -2}, {2}, dev, dtypes::float16).bitcast(dtypes::uint16), {2},
                {0x3c00, 0xc000});
    expectExact(make({1, -2}, {2}, dev, dtypes::bfloat16).bitcast(dtypes::int16), {2},
                {0x3f80, -16384});
    expectExact(make({0x3c00, 0x7c00}, {2}, dev, dtypes::uint16).bitcast(dtypes::float16), {2},
                {1, kInf});
    // 8-bit and 64-bit
    expectExact(make({255, 128, 1}, {3}, dev, dtypes::uint8).bitcast(dtypes::int8), {3},
                {-1, -128, 1});
    std::vector<int64_t> d =
        make({1, -2}, {2}, dev, dtypes::float64).bitcast(dtypes::int64).toVector<int64_t>();
    CHECK(d ==
          std::vector<int64_t>{0x3ff0000000000000, static_cast<int64_t>(0xc000000000000000ULL)});
    std::vector<uint64_t> u =
        make({-1}, {1}, dev, dtypes::int64).bitcast(dtypes::uint64).toVector<uint64_t>();
    CHECK(u == std::vector<uint64_t>{UINT64_MAX});
  }
}

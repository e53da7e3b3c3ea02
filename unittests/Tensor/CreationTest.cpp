// Creation functions: empty, full/zeros/ones, arange, eye, the *Like variants, random numbers,
// tensors from host data in every dtype, and scalars, on every device.
#include "TensorTestUtil.h"

#include <cstring>
#include <map>
#include <set>

using namespace lazyjit;
using namespace lazyjit::testing;

TEST_CASE("Tensor creation: empty has the shape, dtype and device asked for") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (const Ints &shape : {Ints{}, Ints{0}, Ints{1}, Ints{2, 3}, Ints{3, 0, 5}}) {
      CAPTURE(fmtInts(shape));
      Tensor t = Tensor::empty(toShape(shape), {dtypes::int16, dev});
      CHECK(fmtInts(t.intShape()) == fmtInts(shape));
      CHECK(t.numel().asInt() == numelOf(shape));
      CHECK(t.ndim() == static_cast<int64_t>(shape.size()));
      expectDType(t, dtypes::int16);
      CHECK(t.device() == dev);
      CHECK(t.realize().toBytes().size() == static_cast<size_t>(numelOf(shape)) * 2);
    }
    CHECK(Tensor::empty({4}, {std::nullopt, dev}).dtype() == dtypes::float32);
  }
}

TEST_CASE("Tensor creation: full, zeros and ones in every dtype and shape") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (DType dt : allDTypes()) {
      CAPTURE(dt.name());
      for (const Ints &shape : {Ints{}, Ints{0}, Ints{1}, Ints{3, 5}, Ints{2, 0, 3}}) {
        CAPTURE(fmtInts(shape));
        size_t n = static_cast<size_t>(numelOf(shape));
        Tensor z = Tensor::zeros(toShape(shape), {dt, dev});
        expectDType(z, dt);
        expectExact(z, shape, Vals(n, 0));
        expectExact(Tensor::ones(toShape(shape), {dt, dev}), shape, Vals(n, 1));
        // 3.7 is truncated by integer dtypes, rounded by float16/bfloat16, true for bool
        expectExact(Tensor::full(toShape(shape), 3.7, {dt, dev}), shape, Vals(n, storeAs(3.7, dt)));
      }
    }
    // negative fills wrap in unsigned dtypes
    expectExact(Tensor::full({2}, -1, {dtypes::uint8, dev}), {2}, {255, 255});
    expectExact(Tensor::full({2}, -2.5, {dtypes::int8, dev}), {2}, {-2, -2});
    expectExact(Tensor::full({1}, 70000, {dtypes::float16, dev}), {1}, {kInf});
    expectExact(Tensor::full({2, 1}, kInf, {dtypes::float32, dev}), {2, 1}, {kInf, kInf});
  }
}

TEST_CASE("Tensor creation: full with a nan value") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (DType dt : {dtypes::float64, dtypes::float32, dtypes::float16}) {
      CAPTURE(dt.name());
      expectExact(Tensor::full({3}, kNaN, {dt, dev}), {3}, {kNaN, kNaN, kNaN});
      expectExact(make({1, 2}, {2}, dev, dt) + kNaN, {2}, {kNaN, kNaN});
    }
  }
}

TEST_CASE("Tensor creation: fullLike, zerosLike and onesLike keep dtype and device") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor base = make({1, 2, 3, 4, 5, 6}, {2, 3}, dev, dtypes::int32).permute({1, 0});
    Tensor f = base.fullLike(-7);
    expectDType(f, dtypes::int32);
    CHECK(f.device() == dev);
    expectExact(f, {3, 2}, Vals(6, -7));
    expectExact(base.zerosLike(), {3, 2}, Vals(6, 0));
    Tensor o = base.onesLike({dtypes::float16, std::nullopt});
    expectDType(o, dtypes::float16);
    expectExact(o, {3, 2}, Vals(6, 1));
  }
}

TEST_CASE("Tensor creation: arange with start, stop and positive, negative and fractional steps") {
  struct Case {
    double start, stop, step;
  };
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    // arange(stop): float32 by default
    Tensor a = Tensor::arange(5, {std::nullopt, dev});
    expectDType(a, dtypes::float32);
    expectExact(a, {5}, {0, 1, 2, 3, 4});
    for (Case c : {Case{2, 11, 3}, Case{5, -3, -2}, Case{-4, 4, 1}, Case{0.5, 2.0, 0.25},
                   Case{1, 2, 0.3}, Case{10, 9, -0.5}, Case{0, 1, 1}}) {
      CAPTURE(c.start);
      CAPTURE(c.stop);
      CAPTURE(c.step);
      int64_t n = static_cast<int64_t>(std::ceil((c.stop - c.start) / c.step));
      Vals expected;
      for (int64_t i = 0; i < n; ++i) expected.push_back(c.start + c.step * static_cast<double>(i));
      expectValues(Tensor::arange(c.start, c.stop, c.step, {std::nullopt, dev}), {n}, expected);
    }
    // empty ranges
    expectExact(Tensor::arange(3, 3, 1, {std::nullopt, dev}), {0}, {});
    expectExact(Tensor::arange(10, 0, 1, {std::nullopt, dev}), {0}, {});
    expectExact(Tensor::arange(0, 5, -1, {std::nullopt, dev}), {0}, {});
    // integer dtypes
    Tensor ai = Tensor::arange(-6, 7, 4, {dtypes::int32, dev});
    expectDType(ai, dtypes::int32);
    expectExact(ai, {4}, {-6, -2, 2, 6});
    expectExact(Tensor::arange(0, 6, 1, {dtypes::uint8, dev}), {6}, {0, 1, 2, 3, 4, 5});
    expectExact(Tensor::arange(3, 0, -1, {dtypes::int64, dev}), {3}, {3, 2, 1});
    // beyond 512 elements arange goes through the two-stage cumsum
    expectExact(Tensor::arange(1000, {std::nullopt, dev}), {1000}, iotaVals(1000));
    expectExact(Tensor::arange(1, 1200, 2, {dtypes::int32, dev}), {600}, iotaVals(600, 1, 2));
  }
}

TEST_CASE("Tensor creation: eye of sizes 0, 1 and odd sizes in several dtypes") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (DType dt : {dtypes::float32, dtypes::int8, dtypes::boolean, dtypes::bfloat16}) {
      CAPTURE(dt.name());
      for (int64_t n : {0, 1, 2, 5}) {
        CAPTURE(n);
        Vals expected;
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < n; ++j) expected.push_back(i == j ? 1 : 0);
        Tensor e = Tensor::eye(n, {dt, dev});
        expectDType(e, dt);
        expectExact(e, {n, n}, expected);
      }
    }
  }
}

TEST_CASE("Tensor creation: rand is uniform in [0, 1) and reproducible after manualSeed") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor::manualSeed(1234);
    Tensor a = Tensor::rand({40, 101}, {std::nullopt, dev});
    Tensor b = Tensor::rand({40, 101}, {std::nullopt, dev});
    expectDType(a, dtypes::float32);
    CHECK(fmtInts(a.intShape()) == "[40, 101]");
    Vals va = a.toVector<double>(), vb = b.toVector<double>();
    double sum = 0, sq = 0;
    for (double v : va) {
      CHECK_MESSAGE((v >= 0 && v < 1), "rand value " << v);
      sum += v;
      sq += v * v;
    }
    double n = static_cast<double>(va.size()), mean = sum / n, var = sq / n - mean * mean;
    // 4040 samples: the mean's standard error is ~0.0045 and the variance's ~0.0013
    CHECK(mean == doctest::Approx(0.5).epsilon(0.05));
    CHECK(var == doctest::Approx(1.0 / 12).epsilon(0.1));
    CHECK(va != vb); // consecutive calls take new seeds
    CHECK(std::set<double>(va.begin(), va.end()).size() > va.size() * 9 / 10);

    // reseeding replays the same sequence, on either device
    Tensor::manualSeed(1234);
    CHECK(Tensor::rand({40, 101}, {std::nullopt, dev}).toVector<double>() == va);
    CHECK(Tensor::rand({40, 101}, {std::nullopt, dev}).toVector<double>() == vb);
    Tensor::manualSeed(1234);
    CHECK(Tensor::rand({40, 101}, {std::nullopt, devices()[0]}).toVector<double>() == va);
    Tensor::manualSeed(99);
    CHECK(Tensor::rand({40, 101}, {std::nullopt, dev}).toVector<double>() != va);

    // other dtypes and degenerate shapes
    for (DType dt : {dtypes::float16, dtypes::bfloat16, dtypes::float64}) {
      CAPTURE(dt.name());
      Tensor r = Tensor::rand({3, 7}, {dt, dev});
      expectDType(r, dt);
      for (double v : r.toVector<double>()) CHECK((v >= 0 && v <= 1));
    }
    CHECK(Tensor::rand({0, 3}, {std::nullopt, dev}).toVector<double>().empty());
    CHECK(Tensor::rand({}, {std::nullopt, dev}).toVector<double>().size() == 1);
  }
}

TEST_CASE("Tensor creation: randn, normal and uniform have the requested moments and range") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor::manualSeed(42);
    auto moments = [](const Vals &v) {
      double s = 0, q = 0;
      for (double x : v) s += x;
      double m = s / static_cast<double>(v.size());
      for (double x : v) q += (x - m) * (x - m);
      return std::pair{m, std::sqrt(q / static_cast<double>(v.size()))};
    };
    Tensor r = Tensor::randn({50, 81}, {std::nullopt, dev});
    expectDType(r, dtypes::float32);
    Vals v = r.toVector<double>();
    auto [m, s] = moments(v);
    CHECK(std::fabs(m) < 0.08); // 5 standard errors of 4050 samples
    CHECK(s == doctest::Approx(1.0).epsilon(0.06));
    for (double x : v) CHECK(std::isfinite(x));

    auto [nm, ns] = moments(Tensor::normal({4000}, 3, 0.5, {std::nullopt, dev}).toVector<double>());
    CHECK(nm == doctest::Approx(3).epsilon(0.02));
    CHECK(ns == doctest::Approx(0.5).epsilon(0.06));
    expectDType(Tensor::randn({3}, {dtypes::float16, dev}), dtypes::float16);

    Vals u = Tensor::uniform({3000}, -2, 5, {std::nullopt, dev}).toVector<double>();
    for (double x : u) CHECK((x >= -2 && x < 5));
    auto [um, us] = moments(u);
    CHECK(um == doctest::Approx(1.5).epsilon(0.05));
    CHECK(us == doctest::Approx(7 / std::sqrt(12.0)).epsilon(0.05));

    // the initializers stay inside their bounds
    double bound = std::sqrt(3.0) * std::sqrt(2.0 / (1 + 0.01 * 0.01)) / std::sqrt(12.0);
    for (double x : Tensor::kaimingUniform({5, 3, 4}, 0.01, {std::nullopt, dev}).toVector<double>())
      CHECK(std::fabs(x) <= bound + 1e-6);
    double g = std::sqrt(6.0 / (5 + 12));
    for (double x : Tensor::glorotUniform({5, 12}, {std::nullopt, dev}).toVector<double>())
      CHECK(std::fabs(x) <= g + 1e-6);
    for (double x : Tensor::scaledUniform({4, 9}, {std::nullopt, dev}).toVector<double>())
      CHECK(std::fabs(x) <= 1 / 6.0 + 1e-6);
  }
}

TEST_CASE("Tensor creation: randint covers [low, high) as int32") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor::manualSeed(7);
    Tensor r = Tensor::randint({2000}, 2, 9, {std::nullopt, dev});
    expectDType(r, dtypes::int32);
    std::set<int64_t> seen;
    for (int64_t v : r.toVector<int64_t>()) {
      CHECK((v >= 2 && v < 9));
      seen.insert(v);
    }
    CHECK(seen.size() == 7);
    // A negative low stays in range, but the cast truncates toward zero as in the reference, so
    // low itself is (almost) never drawn and 0 is drawn twice as often: a kept reference quirk.
    std::map<int64_t, int> count;
    for (int64_t v : Tensor::randint({2000}, -3, 4, {std::nullopt, dev}).toVector<int64_t>()) {
      CHECK((v >= -3 && v < 4));
      ++count[v];
    }
    CHECK(count[0] > count[1] * 3 / 2);
    Vals d = Tensor::randint({5, 5}, 0, 10, {std::nullopt, dev}).toVector<double>();
    for (double v : d) CHECK((v >= 0 && v < 10 && v == std::trunc(v)));
  }
}

namespace {
// Builds a host vector of T from doubles that are exactly representable in T.
template <typename T> std::vector<T> hostVector(const Vals &v) {
  std::vector<T> out;
  for (double x : v) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      out.push_back(T(static_cast<float>(x)));
    else
      out.push_back(static_cast<T>(x));
  }
  return out;
}
} // namespace

TEST_CASE("Tensor creation: fromValues and fromVector round-trip every dtype") {
  const Vals signedVals{0, 1, -1, 7, -8, 100, -100, 127};
  const Vals unsignedVals{0, 1, 2, 7, 8, 100, 200, 255};
  const Vals floatVals{0, 1, -1, 0.5, -2.25, 1e-3, 3.14159, -65504};
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (DType dt : allDTypes()) {
      CAPTURE(dt.name());
      const Vals &v = dt.isFloating() ? floatVals : dt.isUnsigned() ? unsignedVals : signedVals;
      Tensor t = make(v, {2, 4}, dev, dt);
      expectDType(t, dt);
      CHECK(t.device() == dev);
      expectExact(t, {2, 4}, storeAll(v, dt));
      // a permuted view reads back in logical order
      expectExact(t.permute({1, 0}), {4, 2}, storeAll(hostPermute(v, {2, 4}, {1, 0}), dt));
    }
    // fromVector of each C++ type takes its dtype
    auto roundTrip = [&]<typename T>(const Vals &v) {
      CAPTURE(dtypeOf<T>().name());
      Tensor t = Tensor::fromVector(hostVector<T>(v), {static_cast<int64_t>(v.size())}, dev);
      expectDType(t, dtypeOf<T>());
      expectExact(t, {static_cast<int64_t>(v.size())}, storeAll(v, dtypeOf<T>()));
    };
    roundTrip.operator()<int8_t>(signedVals);
    roundTrip.operator()<uint8_t>(unsignedVals);
    roundTrip.operator()<int16_t>({-32768, 32767, 5});
    roundTrip.operator()<uint16_t>({65535, 0, 5});
    roundTrip.operator()<int32_t>({-2147483648.0, 2147483647, -5});
    roundTrip.operator()<uint32_t>({4294967295.0, 0, 5});
    roundTrip.operator()<Half>({0.099975586, -1.5, 65504});
    roundTrip.operator()<BFloat16>({0.1, -3.0, 1e30});
    roundTrip.operator()<float>(floatVals);
    roundTrip.operator()<double>({0.1, 1e300, -1e-300});
    // 64-bit values beyond double precision survive the round trip
    std::vector<int64_t> i64{INT64_MIN, INT64_MAX, (int64_t{1} << 53) + 1, -3};
    CHECK(Tensor::fromVector(i64, {4}, dev).toVector<int64_t>() == i64);
    std::vector<uint64_t> u64{UINT64_MAX, (uint64_t{1} << 63) + 5, 0};
    CHECK(Tensor::fromVector(u64, {3}, dev).toVector<uint64_t>() == u64);
    // std::vector<bool> is packed: it goes through one byte per element
    std::vector<bool> bools{true, false, false, true, true};
    Tensor tb = Tensor::fromVector(bools, {5}, dev);
    CHECK(tb.dtype() == dtypes::boolean);
    CHECK(tb.toVector<bool>() == bools);
    CHECK(tb.cast(dtypes::int32).sum().item<int32_t>() == 3);
    // empty data
    CHECK(Tensor::fromVector(std::vector<float>{}, {0, 4}, dev).toVector<float>().empty());
    // raw bytes of float32 1.0 and -2.0
    std::vector<uint8_t> bytes = make({1, -2}, {2}, dev).toBytes();
    uint32_t w0, w1;
    std::memcpy(&w0, bytes.data(), 4);
    std::memcpy(&w1, bytes.data() + 4, 4);
    CHECK(w0 == 0x3f800000u);
    CHECK(w1 == 0xc0000000u);
  }
}

TEST_CASE("Tensor creation: scalars are 0-d constants of the requested dtype") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor s = Tensor::scalar(2.5, {std::nullopt, dev});
    CHECK(s.ndim() == 0);
    CHECK(s.numel().asInt() == 1);
    expectDType(s, dtypes::float32);
    CHECK(s.item<double>() == 2.5);
    CHECK(Tensor::scalar(-3.9, {dtypes::int8, dev}).item<int64_t>() == -3);
    CHECK(Tensor::scalar(300, {dtypes::uint8, dev}).item<int64_t>() == 44);
    CHECK(Tensor::scalar(0.1, {dtypes::float64, dev}).item<double>() == 0.1);
    CHECK(Tensor::scalar(2, {dtypes::boolean, dev}).item<bool>());
    // a scalar broadcasts against a tensor and keeps its value after reshape
    expectExact(Tensor::scalar(4, {std::nullopt, dev}).reshape({1, 1}).expand({2, 3}), {2, 3},
                Vals(6, 4));
  }
}

TEST_CASE(
    "Tensor data: host conversions wrap integers like constants and saturate floats like casts") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    // fromValues converts as Tensor(v, dtype) does: integers wrap, fractions truncate
    expectExact(make({-1, 256, 3.7, -3.7}, {4}, dev, dtypes::uint8), {4}, {255, 0, 3, 253});
    expectExact(make({128, -129, 1e3}, {3}, dev, dtypes::int8), {3}, {-128, 127, -24});
    expectExact(make({kNaN, kInf, -kInf}, {3}, dev, dtypes::int32), {3},
                {0, 2147483647.0, -2147483648.0});
    CHECK(Tensor::fromValues({-1}, {1}, {dtypes::uint64, dev}).toVector<uint64_t>()[0] ==
          UINT64_MAX);
    // reading floats back as integers truncates and saturates, nan reads as 0
    Tensor f = make({1e10, -1e10, kNaN, -2.9, 2.9}, {5}, dev);
    CHECK(f.toVector<int32_t>() == std::vector<int32_t>{INT32_MAX, INT32_MIN, 0, -2, 2});
    CHECK(f.toVector<uint8_t>() == std::vector<uint8_t>{255, 0, 0, 0, 2});
    CHECK(f.toVector<int64_t>() == std::vector<int64_t>{10000000000, -10000000000, 0, -2, 2});
    CHECK(f.toVector<bool>() == std::vector<bool>{true, true, true, true, true});
    // integers read back as floats and other integer widths
    Tensor i = make({-1, 300}, {2}, dev, dtypes::int16);
    CHECK(i.toVector<float>() == std::vector<float>{-1, 300});
    CHECK(i.toVector<uint8_t>() == std::vector<uint8_t>{255, 44});
    CHECK(i.getitem({Index::at(1)}).item<int64_t>() == 300);
  }
}

TEST_CASE("Tensor data: assign, realize, corealize and sequential") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor a = make({1, 2, 3}, {3}, dev).realize();
    auto buffer = a.lazydata()->realized();
    a.assign(a * 2 + 1);
    expectExact(a, {3}, {3, 5, 7});
    // assigning to a realized tensor of the same dtype writes into its buffer
    CHECK(a.lazydata()->realized() == buffer);
    a.assign(make({0, 0, 1}, {3}, dev));
    expectExact(a, {3}, {0, 0, 1});
    Tensor x = make({1, 2}, {2}, dev), y = x + 1, z = x * 3;
    Tensor::corealize({y, z});
    CHECK(y.lazydata()->isRealized());
    CHECK(z.lazydata()->isRealized());
    expectExact(y, {2}, {2, 3});
    expectExact(z, {2}, {3, 6});
    std::vector<std::function<Tensor(const Tensor &)>> layers{
        [](const Tensor &t) { return t + 1; }, [](const Tensor &t) { return t.relu(); },
        [](const Tensor &t) { return t * 2; }};
    expectExact(make({-3, 1}, {2}, dev).sequential(layers), {2}, {0, 4});
  }
}

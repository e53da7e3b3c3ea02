// Binary and ternary elementwise ops: add/sub/mul/div/pow/maximum/minimum/xor, comparisons and
// where, with broadcasting, scalars on either side, every dtype, and non-contiguous operands.
#include "TensorTestUtil.h"

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

using TensorFn = std::function<Tensor(const Tensor &, const Tensor &)>;
using HostFn = std::function<double(double, double)>;

struct ShapePair {
  Ints a, b;
};

// Broadcasting pairs, including 0-d, 0-size, size-1 and odd shapes.
const std::vector<ShapePair> &broadcastPairs() {
  static const std::vector<ShapePair> p{
      {{3, 5}, {3, 5}}, {{3, 5}, {5}}, {{3, 1}, {1, 5}}, {{2, 1, 5}, {3, 1}}, {{}, {2, 3}},
      {{1}, {7}},       {{0, 3}, {3}}, {{5, 0}, {1}},    {{4, 1}, {}},        {{1, 1}, {1, 1}}};
  return p;
}

// How much of the shape x layout matrix a check runs. Every distinct kernel is compiled by the CPU
// backend, so the full matrix is kept for a few representative ops; the others run the core cases.
enum class Coverage { Full, Core, Broadcast };

// Checks `op` against `host` on broadcasting pairs, with non-contiguous operands: Full runs every
// pair with `a` in every layout; Core runs a same-shape pair with a flipped `a` and a (3, 1) x
// (2, 1, 5) broadcast with a permuted `b`; Broadcast runs only the latter.
void checkBinary(const TensorFn &op, const HostFn &host, DType dt, const Vals &poolA,
                 const Vals &poolB, Tol tol, DType outDt, Coverage cov = Coverage::Core) {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    auto run = [&](const Ints &as, const Ints &bs, Layout la, Layout lb) {
      CAPTURE(fmtInts(as));
      CAPTURE(fmtInts(bs));
      CAPTURE(std::string(layoutName(la)));
      CAPTURE(std::string(layoutName(lb)));
      Vals a = storeAll(Vals(poolA.begin(), poolA.begin() + numelOf(as)), dt);
      Vals b = storeAll(Vals(poolB.begin(), poolB.begin() + numelOf(bs)), dt);
      Tensor out = op(makeView(la, a, as, dev, dt), makeView(lb, b, bs, dev, dt));
      expectDType(out, outDt);
      expectValues(out, broadcastShape(as, bs), storeAll(hostBinary(a, as, b, bs, host), outDt),
                   tol);
    };
    if (cov != Coverage::Full) {
      if (cov == Coverage::Core) run({3, 5}, {3, 5}, Layout::Flipped, Layout::Contiguous);
      run({3, 1}, {2, 1, 5}, Layout::Contiguous, Layout::Permuted);
      continue;
    }
    for (const auto &[as, bs] : broadcastPairs()) {
      for (Layout l : allLayouts()) run(as, bs, l, Layout::Contiguous);
      run(as, bs, Layout::Contiguous, Layout::Sliced);
    }
  }
}

double cTruncDiv(double a, double b) { return b == 0 ? 0 : std::trunc(a / b); }

} // namespace

TEST_CASE("Tensor binary: float add, sub, mul, div broadcast in every float dtype") {
  Vals pa = randVals(30, 1, -4, 4), pb = randVals(30, 2, 0.5, 3);
  for (DType dt : floatDTypes()) {
    CAPTURE(dt.name());
    Tol t = tolFor(dt, 1);
    Coverage full = dt == dtypes::float32 ? Coverage::Full : Coverage::Core;
    checkBinary([](auto &a, auto &b) { return a.add(b); }, std::plus<>(), dt, pa, pb, t, dt, full);
    checkBinary([](auto &a, auto &b) { return a - b; }, std::minus<>(), dt, pa, pb, t, dt);
    checkBinary([](auto &a, auto &b) { return a * b; }, std::multiplies<>(), dt, pa, pb, t, dt);
    checkBinary([](auto &a, auto &b) { return a.div(b); }, std::divides<>(), dt, pa, pb, t, dt);
  }
}

TEST_CASE("Tensor binary: integer add, sub, mul wrap and div truncates toward zero") {
  Vals pa = randInts(30, 3, -60, 60), pb = randInts(30, 4, -9, 9);
  for (DType dt : intDTypes()) {
    CAPTURE(dt.name());
    Vals ua = pa, ub = pb;
    if (dt.isUnsigned()) {
      ua = randInts(30, 5, 0, 120);
      ub = randInts(30, 6, 0, 9);
    }
    Tol exact{0, 0};
    // every kernel is compiled by the CPU backend: int32 runs the core cases, the other widths one
    Coverage cov = dt == dtypes::int32 ? Coverage::Core : Coverage::Broadcast;
    checkBinary([](auto &a, auto &b) { return a + b; }, std::plus<>(), dt, ua, ub, exact, dt, cov);
    checkBinary([](auto &a, auto &b) { return a.sub(b); }, std::minus<>(), dt, ua, ub, exact, dt,
                cov);
    checkBinary([](auto &a, auto &b) { return a.mul(b); }, std::multiplies<>(), dt, ua, ub, exact,
                dt, cov);
    // int division truncates toward zero; x / 0 is 0 (pools contain zeros)
    checkBinary([](auto &a, auto &b) { return a / b; }, cTruncDiv, dt, ua, ub, exact, dt, cov);
  }
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    // overflow wraps at the dtype's width
    expectExact(make({100, -100, 127}, {3}, dev, dtypes::int8) +
                    make({100, -100, 1}, {3}, dev, dtypes::int8),
                {3}, {-56, 56, -128});
    expectExact(make({3, 0}, {2}, dev, dtypes::uint8) - make({5, 1}, {2}, dev, dtypes::uint8), {2},
                {254, 255});
    expectExact(make({65536, -2147483648.0}, {2}, dev, dtypes::int32) *
                    make({65536, 1}, {2}, dev, dtypes::int32),
                {2}, {0, -2147483648.0});
    // INT_MIN / -1 wraps; signs of truncating division
    expectExact(make({-2147483648.0, -7, 7, -7, 7}, {5}, dev, dtypes::int32) /
                    make({-1, 2, -2, -2, 0}, {5}, dev, dtypes::int32),
                {5}, {-2147483648.0, -3, -3, 3, 0});
    expectExact(make({7, 200}, {2}, dev, dtypes::uint8) / make({2, 0}, {2}, dev, dtypes::uint8),
                {2}, {3, 0});
  }
}

TEST_CASE("Tensor binary: scalars on either side take the tensor's dtype") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals v{-3, -0.5, 0, 1.5, 4};
    Tensor x = make(v, {5}, dev);
    auto host = [&](const std::function<double(double)> &f) {
      return storeAll(hostMap(v, f), dtypes::float32);
    };
    expectValues(x + 2, {5}, host([](double a) { return a + 2; }));
    expectValues(2.0 + x, {5}, host([](double a) { return 2 + a; }));
    expectValues(x - 2, {5}, host([](double a) { return a - 2; }));
    expectValues(2.0 - x, {5}, host([](double a) { return 2 - a; }));
    expectValues(x.sub(2, true), {5}, host([](double a) { return 2 - a; }));
    expectValues(x * 3, {5}, host([](double a) { return a * 3; }));
    expectValues(3.0 * x, {5}, host([](double a) { return 3 * a; }));
    expectValues(x / 4, {5}, host([](double a) { return a / 4; }));
    expectValues(x / 3, {5}, host([](double a) { return a / 3; }));
    expectValues(x.div(-1.0 / 3), {5}, host([](double a) { return a * -3; }));
    // the shortcut identities
    expectExact(x + 0, {5}, v);
    expectExact(x - 0, {5}, v);
    expectExact(0.0 - x, {5}, host([](double a) { return -a; }));
    expectExact(x * 1, {5}, v);
    expectExact(x * -1, {5}, host([](double a) { return -a; }));
    expectExact(x * 0, {5}, Vals(5, 0));
    // reverse division: 1 / x (x contains 0 -> inf)
    expectValues(1.0 / x, {5}, host([](double a) { return 1 / a; }));
    expectValues(x.div(6, true), {5}, host([](double a) { return 6 / a; }));

    // integer tensors: the scalar is converted to the tensor's dtype (2.5 -> 2, as in the
    // reference), and division by a scalar stays an integer division
    Tensor i = make({-7, -1, 0, 5, 9}, {5}, dev, dtypes::int32);
    expectDType(i + 2.5, dtypes::int32);
    expectExact(i + 2.5, {5}, {-5, 1, 2, 7, 11});
    expectExact(i / 2, {5}, {-3, 0, 0, 2, 4});
    expectExact(i.div(2, true), {5}, {0, -2, 0, 0, 0});
    expectExact(10.0 - i, {5}, {17, 11, 10, 5, 1});
    expectExact(i * 3, {5}, {-21, -3, 0, 15, 27});
    expectExact(i / 0, {5}, {0, 0, 0, 0, 0});
    // a negative scalar wraps into an unsigned dtype, as the reference's integer constants do
    Tensor u = make({0, 1, 200}, {3}, dev, dtypes::uint8);
    expectExact(u + (-1), {3}, {255, 0, 199});
    expectExact(u * 2, {3}, {0, 2, 144});
    // bool tensors take float32 scalars
    Tensor b = make({1, 0}, {2}, dev, dtypes::boolean);
    expectDType(b + 1.5, dtypes::float32);
    expectExact(b + 1.5, {2}, {2.5, 1.5});
    // a scalar against an empty tensor
    expectExact(make({}, {0, 2}, dev) + 3, {0, 2}, {});
    // 0-d tensors
    expectExact(Tensor::scalar(3, {std::nullopt, dev}) * Tensor::scalar(-2, {std::nullopt, dev}),
                {}, {-6});
  }
}

TEST_CASE("Tensor binary: a 0-size dim broadcasts against 1 (the reference fails to expand)") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    expectExact(make({}, {0, 3}, dev) + make({1, 2, 3}, {3}, dev), {0, 3}, {});
    expectExact(make({4}, {1, 1}, dev) * make({}, {2, 0}, dev), {2, 0}, {});
    expectExact(make({}, {0}, dev).where(make({1}, {1}, dev), 2), {0}, {});
  }
}

TEST_CASE("Tensor binary: an empty operand off the CPU is a constant folded into a scalar, as in the reference") {
  // The reference's fromCPU makes a realized CPU buffer even with no elements; its copy to another
  // device rewrites the 0-size buffer into a CONST, which a binary op then takes as a Python scalar
  // of the other operand's dtype (Tensor._to_float). So the result's dtype depends on the device:
  // found by the differential test's generator with other seeds (int64(1, 0) * uint64(0,)).
  Tensor cpuA = make({}, {1, 0}, "CPU", dtypes::int64), cpuB = make({}, {0}, "CPU", dtypes::uint64);
  expectDType(cpuA * cpuB, dtypes::uint64);
  expectDType(cpuA + make({}, {0}, "CPU", dtypes::float32), dtypes::float32);
  Tensor a = make({}, {1, 0}, "INTERP", dtypes::int64), b = make({}, {0}, "INTERP", dtypes::uint64);
  expectDType(a * b, dtypes::int64);
  expectDType(b * a, dtypes::uint64);
  Tensor sum = (make({}, {1, 6, 0}, "INTERP", dtypes::int16) + make({}, {6, 0}, "INTERP", dtypes::float32)).sum();
  expectDType(sum, dtypes::int16);
  expectExact(sum, {}, {0});
}

TEST_CASE("Tensor binary: float division by zero gives inf and nan; mul by scalar 0 gives 0") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (DType dt : floatDTypes()) {
      CAPTURE(dt.name());
      Tensor x = make({1, -1, 0, 2.5}, {4}, dev, dt);
      expectExact(x / make({0, 0, 0, -0.0}, {4}, dev, dt), {4}, {kInf, -kInf, kNaN, -kInf});
      expectExact(x / 0, {4}, {kInf, -kInf, kNaN, kInf});
      expectExact(x.div(0, true), {4}, {0, -0.0, kNaN, 0});
    }
    // A Python-scalar 0 multiplies to zeros even for inf and nan (the reference's mlops.Zero);
    // a tensor 0 follows IEEE.
    Tensor s = make({kInf, kNaN, 1}, {3}, dev);
    expectExact(s * 0, {3}, {0, 0, 0});
    expectExact(s * make({0, 0, 0}, {3}, dev).realize(), {3}, {kNaN, kNaN, 0});
  }
}

TEST_CASE("Tensor binary: mixed dtypes promote to the higher-priority dtype") {
  struct Case {
    DType a, b, out;
  };
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (Case c : {Case{dtypes::int32, dtypes::float32, dtypes::float32},
                   Case{dtypes::int8, dtypes::int16, dtypes::int16},
                   Case{dtypes::int8, dtypes::uint8, dtypes::uint8}, // priority, not value range
                   Case{dtypes::float16, dtypes::bfloat16, dtypes::bfloat16},
                   Case{dtypes::float16, dtypes::float32, dtypes::float32},
                   Case{dtypes::boolean, dtypes::int32, dtypes::int32},
                   Case{dtypes::float32, dtypes::float64, dtypes::float64},
                   Case{dtypes::uint64, dtypes::float16, dtypes::float16}}) {
      CAPTURE(c.a.name());
      CAPTURE(c.b.name());
      Vals av = storeAll({1, 2, 3}, c.a), bv = storeAll({1, 0, 1}, c.b);
      Tensor a = make(av, {3}, dev, c.a), b = make(bv, {3}, dev, c.b);
      Tensor sum = a + b;
      expectDType(sum, c.out);
      expectExact(sum, {3}, storeAll(hostBinary(av, {3}, bv, {3}, std::plus<>()), c.out));
      expectDType(b + a, c.out);
    }
    // mixed int8 - uint8 computes in uint8 and wraps
    expectExact(make({-1, 2}, {2}, dev, dtypes::int8) + make({0, 1}, {2}, dev, dtypes::uint8), {2},
                {255, 3});
  }
}

TEST_CASE("Tensor binary: pow with scalar and tensor exponents and negative bases") {
  const Vals bases{-3, -2, -0.5, 0.5, 2, 3};
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = make(bases, {6}, dev);
    // integer exponents: exact sign for negative bases
    for (double e : {0.0, 1.0, 2.0, 3.0, -1.0, -2.0, 4.0, 5.0}) {
      CAPTURE(e);
      Vals expected = hostMap(bases, [&](double b) { return std::pow(b, e); });
      expectValues(x.pow(e), {6}, expected, {1e-5, 1e-6});
      expectValues(x.pow(make(Vals(6, e), {6}, dev)), {6}, expected, {1e-5, 1e-6});
      expectValues(x.pow(make({e}, {1}, dev)), {6}, expected, {1e-5, 1e-6}); // broadcast
    }
    // fractional exponents: nan for negative bases
    for (double e : {0.5, 1.5, 2.5, -0.5, 0.3}) {
      CAPTURE(e);
      Vals expected = hostMap(bases, [&](double b) { return std::pow(b, e); });
      expectValues(x.pow(e), {6}, expected, {1e-5, 1e-6});
      expectValues(x.pow(make(Vals(6, e), {6}, dev)), {6}, expected, {1e-5, 1e-6});
    }
    // zero bases: 0 ** positive = 0, 0 ** negative = inf, 0 ** 0 = 1 for a scalar exponent
    Tensor z = make({0, 0, 0, 0}, {4}, dev);
    expectExact(z.pow(2), {4}, Vals(4, 0));
    expectExact(z.pow(0.5), {4}, Vals(4, 0));
    expectExact(z.pow(1.5), {4}, Vals(4, 0));
    expectExact(z.pow(-1), {4}, Vals(4, kInf));
    expectExact(z.pow(0), {4}, Vals(4, 1));
    // reverse: scalar ** tensor, positive and negative bases
    Vals ex{0, 1, 2, 3, -1, 0.5};
    Tensor e = make(ex, {6}, dev);
    for (double b : {2.0, 0.5, -2.0, -0.5}) {
      CAPTURE(b);
      expectValues(e.pow(b, true), {6}, hostMap(ex, [&](double p) { return std::pow(b, p); }),
                   {1e-5, 1e-6});
    }
    // non-contiguous base and exponent broadcast over rows
    Vals m = randVals(12, 9, 0.1, 3);
    expectValues(makeView(Layout::Flipped, m, {3, 4}, dev).pow(make({1, 2, 0.5}, {3, 1}, dev)),
                 {3, 4},
                 hostBinary(m, {3, 4}, {1, 2, 0.5}, {3, 1},
                            [](double a, double b) { return std::pow(a, b); }),
                 {1e-5, 1e-6});
    // float64 keeps double precision through exp/log
    expectValues(
        make({1.1, 7}, {2}, dev, dtypes::float64).pow(make({3.3, 0.5}, {2}, dev, dtypes::float64)),
        {2}, {std::pow(1.1, 3.3), std::sqrt(7.0)}, {1e-12, 1e-12});
  }
}

TEST_CASE("Tensor binary: maximum and minimum with broadcasting, scalars and ties") {
  Vals pa = randInts(30, 11, -5, 5), pb = randInts(30, 12, -5, 5);
  for (DType dt :
       {dtypes::float32, dtypes::int32, dtypes::float16, dtypes::int8, dtypes::float64}) {
    CAPTURE(dt.name());
    auto mx = [](double a, double b) { return std::max(a, b); };
    auto mn = [](double a, double b) { return std::min(a, b); };
    checkBinary([](auto &a, auto &b) { return a.maximum(b); }, mx, dt, pa, pb, {0, 0}, dt);
    checkBinary([](auto &a, auto &b) { return a.minimum(b); }, mn, dt, pa, pb, {0, 0}, dt);
  }
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = make({-2, 0.5, 3, kInf, -kInf}, {5}, dev);
    expectExact(x.maximum(0.5), {5}, {0.5, 0.5, 3, kInf, 0.5});
    expectExact(x.minimum(0.5), {5}, {-2, 0.5, 0.5, 0.5, -kInf});
    expectExact(make({1, 9, 4}, {3}, dev, dtypes::uint8).maximum(4), {3}, {4, 9, 4});
  }
}

TEST_CASE("Tensor binary: where selects with any condition dtype and broadcasts") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals c{1, 0, 0, 1, 1, 0, 1, 0, 0, 0, 1, 1};
    Vals a = randVals(12, 21), b = randVals(4, 22);
    for (DType cdt : {dtypes::boolean, dtypes::float32, dtypes::int32, dtypes::uint8}) {
      CAPTURE(cdt.name());
      for (Layout l : allLayouts()) {
        CAPTURE(std::string(layoutName(l)));
        Tensor cond = makeView(l, c, {3, 4}, dev, cdt);
        Tensor out = cond.where(makeView(l, a, {3, 4}, dev), make(b, {4}, dev));
        Vals expected(12);
        for (int i = 0; i < 12; ++i) expected[i] = c[i] != 0 ? a[i] : b[i % 4];
        expectExact(out, {3, 4}, expected);
      }
    }
    // scalars on both branches, condition broadcast from (3, 1) against (1, 4)
    Tensor cond = make({1, 0, 1}, {3, 1}, dev, dtypes::boolean);
    Tensor out = cond.where(make({1, 2, 3, 4}, {1, 4}, dev), -1);
    expectExact(out, {3, 4}, {1, 2, 3, 4, -1, -1, -1, -1, 1, 2, 3, 4});
    expectExact(cond.where(5, -5), {3, 1}, {5, -5, 5});
    // the result dtype is the branches' max dtype; nan conditions count as true
    Tensor mixed = make({1, 0}, {2}, dev)
                       .where(make({1, 2}, {2}, dev, dtypes::int32),
                              make({0.5, 0.25}, {2}, dev, dtypes::float64));
    expectDType(mixed, dtypes::float64);
    expectExact(mixed, {2}, {1, 0.25});
    expectExact(make({kNaN, -0.0}, {2}, dev).where(1, 2), {2}, {1, 2});
  }
}

TEST_CASE("Tensor binary: comparisons return the inputs' max dtype with 1 for true") {
  using CmpFn = std::function<Tensor(const Tensor &, const Tensor &)>;
  struct Cmp {
    const char *name;
    CmpFn op;
    std::function<bool(double, double)> host;
  };
  const std::vector<Cmp> cmps{
      {"lt", [](auto &a, auto &b) { return a < b; }, std::less<>()},
      {"gt", [](auto &a, auto &b) { return a.gt(b); }, std::greater<>()},
      {"le", [](auto &a, auto &b) { return a <= b; }, std::less_equal<>()},
      {"ge", [](auto &a, auto &b) { return a.ge(b); }, std::greater_equal<>()},
      {"eq", [](auto &a, auto &b) { return a == b; }, std::equal_to<>()},
      {"ne", [](auto &a, auto &b) { return a.ne(b); }, std::not_equal_to<>()}};
  Vals pa = randInts(30, 31, 0, 4), pb = randInts(30, 32, 0, 4);
  for (const Cmp &c : cmps) {
    CAPTURE(std::string(c.name));
    // the other comparisons are built from lt, so only lt runs in every dtype kind
    std::vector<DType> dts{dtypes::float32, dtypes::int32};
    if (std::string(c.name) == "lt")
      dts.insert(dts.end(), {dtypes::uint8, dtypes::float16, dtypes::int64, dtypes::float64});
    for (DType dt : dts) {
      CAPTURE(dt.name());
      checkBinary(
          c.op, [&](double a, double b) { return c.host(a, b) ? 1.0 : 0.0; }, dt, pa, pb, {0, 0},
          dt);
    }
  }
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = make({-1, 0, 2.5}, {3}, dev);
    expectExact(x < 0, {3}, {1, 0, 0});
    expectExact(x > 0, {3}, {0, 0, 1});
    expectExact(x <= 0, {3}, {1, 1, 0});
    expectExact(x >= 2.5, {3}, {0, 0, 1});
    expectExact(x == 0, {3}, {0, 1, 0});
    expectExact(x != 0, {3}, {1, 0, 1});
    // int tensor against a fractional scalar: the scalar becomes an int first (2.5 -> 2)
    expectExact(make({1, 2, 3}, {3}, dev, dtypes::int32) < 2.5, {3}, {1, 0, 0});
    // Bool operands: lt, gt and ne stay bool; le, ge and eq go through `1.0 - x` and become
    // float32, as in the reference.
    Tensor a = make({1, 0, 1}, {3}, dev, dtypes::boolean),
           b = make({0, 0, 1}, {3}, dev, dtypes::boolean);
    expectDType(a < b, dtypes::boolean);
    expectExact(a < b, {3}, {0, 0, 0});
    expectExact(a > b, {3}, {1, 0, 0});
    expectExact(a != b, {3}, {1, 0, 0});
    expectDType(a == b, dtypes::float32);
    expectExact(a == b, {3}, {0, 1, 1});
    expectExact(a <= b, {3}, {0, 1, 1});
    expectExact(a >= b, {3}, {1, 1, 1});
    // infinities compare as numbers
    Tensor inf = make({-kInf, kInf}, {2}, dev);
    expectExact(inf < make({0, kInf}, {2}, dev), {2}, {1, 0});
    expectExact(inf == make({-kInf, kInf}, {2}, dev), {2}, {1, 1});
  }
}

TEST_CASE("Tensor binary: xor of integers and bools, with scalars and broadcasting") {
  Vals pa = randInts(30, 41, 0, 100), pb = randInts(30, 42, 0, 100);
  auto hx = [](double a, double b) {
    return static_cast<double>(static_cast<int64_t>(a) ^ static_cast<int64_t>(b));
  };
  for (DType dt : intDTypes()) {
    CAPTURE(dt.name());
    checkBinary([](auto &a, auto &b) { return a.xorWith(b); }, hx, dt, pa, pb, {0, 0}, dt,
                Coverage::Broadcast);
  }
  checkBinary([](auto &a, auto &b) { return a.xorWith(b); },
              [](double a, double b) { return double((a != 0) != (b != 0)); }, dtypes::boolean,
              randInts(30, 43, 0, 1), randInts(30, 44, 0, 1), {0, 0}, dtypes::boolean);
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    expectExact(make({0, 15, 240, 255}, {4}, dev, dtypes::uint8).xorWith(255), {4},
                {255, 240, 15, 0});
    expectExact(make({-1, 5, -8}, {3}, dev, dtypes::int16).xorWith(3), {3}, {-4, 6, -5});
    expectExact(make({1, 6}, {2}, dev, dtypes::int32).xorWith(12, true), {2}, {13, 10});
  }
}

TEST_CASE("Tensor binary: integer maximum, minimum and clip at the dtype's edges") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    // ties do not overflow (the reference's (a + b) / 2 gives -28 for int8 100, 100)
    expectExact(make({100, -128, 5}, {3}, dev, dtypes::int8)
                    .maximum(make({100, -128, 7}, {3}, dev, dtypes::int8)),
                {3}, {100, -128, 7});
    expectExact(
        make({200, 255}, {2}, dev, dtypes::uint8).maximum(make({200, 0}, {2}, dev, dtypes::uint8)),
        {2}, {200, 255});
    // unsigned 0 and INT_MIN are no fixed points of the order (the reference's minimum(uint8 0, 3)
    // is 3)
    expectExact(make({0, 5, 3}, {3}, dev, dtypes::uint8).minimum(3), {3}, {0, 3, 3});
    expectExact(
        make({0, 200}, {2}, dev, dtypes::uint16).minimum(make({7, 100}, {2}, dev, dtypes::uint16)),
        {2}, {0, 100});
    expectExact(make({-2147483648.0, 4}, {2}, dev, dtypes::int32).minimum(0), {2},
                {-2147483648.0, 0});
    expectExact(make({0, 9, 250}, {3}, dev, dtypes::uint8).clip(2, 200), {3}, {2, 9, 200});
    // an int tensor against a float tensor still promotes to float
    expectExact(make({1, 5}, {2}, dev, dtypes::int32).minimum(make({2.5, 2.5}, {2}, dev)), {2},
                {1, 2.5});
  }
}

TEST_CASE("Tensor binary: where with a condition of a larger dtype than its values casts to the buffer's dtype") {
  // `bool.gt(0)` is float32 (CMPLT keeps its inputs' max dtype, and the scalar 0 is float32 for a
  // bool tensor), so the WHERE's buffer is float32 while its values are bool; the reference asserts
  // "dtype mismatch" when scheduling this, lazyjit casts the kernel's result
  Tensor a = Tensor::fromValues({1, 0, 1, 0}, Shape{4}, {dtypes::boolean, "CPU"});
  Tensor b = Tensor::fromValues({1, 1, 0, 0}, Shape{4}, {dtypes::boolean, "CPU"});
  Tensor w = a.gt(0).where(a, b);
  CHECK(w.dtype() == dtypes::float32);
  CHECK(w.toVector<float>() == std::vector<float>{1, 1, 1, 0});
  Tensor wi = a.gt(0).where(a, b).cast(dtypes::int32) + 1;
  CHECK(wi.toVector<int32_t>() == std::vector<int32_t>{2, 2, 2, 1});
}

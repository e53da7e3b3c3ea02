// Reductions: sum/max/min over single, multiple and negative axes with keepdim, in several dtypes
// and on empty tensors; mean/var/std; softmax/logSoftmax; argmax/argmin; cumsum, short and long.
#include "KernelTestUtil.h"
#include "TensorTestUtil.h"

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

struct AxisCase {
  std::optional<Ints> axis; // as passed to the op
  Ints norm;                // non-negative
};

// Axis sets for a 3-d tensor, including negative and multiple axes.
const std::vector<AxisCase> &axisCases() {
  static const std::vector<AxisCase> c{
      {std::nullopt, {0, 1, 2}}, {Ints{0}, {0}},         {Ints{1}, {1}},       {Ints{-1}, {2}},
      {Ints{0, 2}, {0, 2}},      {Ints{-3, -2}, {0, 1}}, {Ints{2, 1}, {1, 2}}, {Ints{}, {}}};
  return c;
}

double hostMax(double a, double b) { return std::max(a, b); }

// Index of the first maximum (or minimum) along `axis`, for every other position.
Vals hostArg(const Vals &v, const Ints &shape, int64_t axis, bool max) {
  Ints st = stridesOf(shape);
  Vals out;
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    if ((i / st[axis]) % shape[axis] != 0) continue; // i is the first element of its line
    int64_t best = 0;
    for (int64_t j = 1; j < shape[axis]; ++j) {
      double a = v[i + j * st[axis]], b = v[i + best * st[axis]];
      if (max ? a > b : a < b) best = j;
    }
    out.push_back(static_cast<double>(best));
  }
  return out;
}

Vals hostMean(const Vals &v, const Ints &shape, const Ints &axes) {
  Vals s = hostReduce(v, shape, axes, 0, std::plus<>());
  double n = 1;
  for (int64_t a : axes) n *= static_cast<double>(shape[a]);
  for (auto &x : s) x /= n;
  return s;
}

Vals hostVar(const Vals &v, const Ints &shape, const Ints &axes, int64_t correction) {
  Vals m = hostMean(v, shape, axes);
  Ints ks = shape;
  for (int64_t a : axes) ks[a] = 1;
  Vals sq(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    double d = v[i] - m[broadcastSource(static_cast<int64_t>(i), ks, shape)];
    sq[i] = d * d;
  }
  Vals s = hostReduce(sq, shape, axes, 0, std::plus<>());
  double n = 1;
  for (int64_t a : axes) n *= static_cast<double>(shape[a]);
  for (auto &x : s) x /= (n - static_cast<double>(correction));
  return s;
}

} // namespace

TEST_CASE("Tensor reduce: sum, max and min over every axis set, with and without keepdim") {
  const Ints shape{2, 3, 5};
  Vals v = randVals(30, 61, -10, 10);
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = make(v, shape, dev);
    for (const AxisCase &ac : axisCases()) {
      CAPTURE(fmtInts(ac.norm));
      for (bool keep : {false, true}) {
        CAPTURE(keep);
        Ints os = reducedShape(shape, ac.norm, keep);
        expectValues(x.sum(ac.axis, keep), os, hostReduce(v, shape, ac.norm, 0, std::plus<>()),
                     {1e-5, 1e-5});
        expectExact(x.max(ac.axis, keep), os, hostReduce(v, shape, ac.norm, -kInf, hostMax));
        expectExact(
            x.min(ac.axis, keep), os,
            hostReduce(v, shape, ac.norm, kInf, [](double a, double b) { return std::min(a, b); }));
      }
    }
    // non-contiguous inputs
    for (Layout l : {Layout::Permuted, Layout::Flipped, Layout::Sliced}) {
      CAPTURE(std::string(layoutName(l)));
      Tensor y = makeView(l, v, shape, dev);
      expectValues(y.sum(Ints{1}), {2, 5}, hostReduce(v, shape, {1}, 0, std::plus<>()),
                   {1e-5, 1e-5});
      expectExact(y.max(Ints{0, 2}, true), {1, 3, 1}, hostReduce(v, shape, {0, 2}, -kInf, hostMax));
    }
    // a long odd axis
    Vals w = randVals(2 * 1001, 62, -1, 1);
    expectValues(make(w, {2, 1001}, dev).sum(Ints{1}), {2},
                 hostReduce(w, {2, 1001}, {1}, 0, std::plus<>()), {1e-5, 1e-4});
  }
}

TEST_CASE("Tensor reduce: sum and max keep the input dtype (ints wrap, bool sums are any)") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals v{100, -100, 7, 100, 100, -3};
    for (DType dt : {dtypes::int8, dtypes::int16, dtypes::int32, dtypes::int64, dtypes::float16,
                     dtypes::bfloat16, dtypes::float64}) {
      CAPTURE(dt.name());
      Tensor x = make(v, {2, 3}, dev, dt);
      Tensor s = x.sum(Ints{1});
      expectDType(s, dt);
      // int8 wraps: 100 + 100 - 3 = 197 -> -59, as in the reference
      expectValues(s, {2}, storeAll({7, 197}, dt), tolFor(dt, 1));
      expectExact(x.max(Ints{0}), {3}, {100, 100, 7});
      expectExact(x.min(), {}, {-100});
    }
    Tensor u = make({0, 200, 255, 1}, {2, 2}, dev, dtypes::uint8);
    expectExact(u.max(Ints{1}), {2}, {200, 255});
    expectExact(u.sum(), {}, {200}); // 456 wraps to 200
    // a bool sum is a logical or, and a bool max too
    Tensor b = make({0, 1, 0, 0}, {2, 2}, dev, dtypes::boolean);
    expectDType(b.sum(), dtypes::boolean);
    expectExact(b.sum(Ints{1}), {2}, {1, 0});
    expectExact(b.max(Ints{0}), {2}, {0, 1});
    // all-negative ints start max at the dtype's lowest value
    expectExact(make({-128, -127}, {2}, dev, dtypes::int8).max(), {}, {-127});
    expectExact(make({-5, -9}, {2}, dev, dtypes::int64).max(), {}, {-5});
  }
}

TEST_CASE("Tensor reduce: 0-d, size-1 and empty inputs") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor s = Tensor::scalar(4.5, {std::nullopt, dev});
    expectExact(s.sum(), {}, {4.5});
    expectExact(s.max(), {}, {4.5});
    expectExact(make({-2}, {1}, dev).sum(), {}, {-2});
    expectExact(make({-2}, {1, 1}, dev).max(Ints{1}, true), {1, 1}, {-2});
    // reducing a 0-size axis gives the identity: 0 for sum, -inf for max, +inf for min
    Tensor e = make({}, {4, 0}, dev);
    expectExact(e.sum(Ints{1}), {4}, Vals(4, 0));
    expectExact(e.sum(Ints{1}, true), {4, 1}, Vals(4, 0));
    expectExact(e.max(Ints{1}), {4}, Vals(4, -kInf));
    expectExact(e.min(Ints{-1}), {4}, Vals(4, kInf));
    expectExact(e.sum(), {}, {0});
    expectExact(e.sum(std::nullopt, true), {1, 1}, {0});
    // reducing a non-empty axis of an empty tensor keeps it empty
    expectExact(e.sum(Ints{0}), {0}, {});
    expectExact(e.max(Ints{0}, true), {1, 0}, {});
    // integer empties: the identity in the tensor's dtype
    Tensor ei = make({}, {0, 3}, dev, dtypes::int32);
    expectDType(ei.sum(Ints{0}), dtypes::int32);
    expectExact(ei.sum(Ints{0}), {3}, Vals(3, 0));
    expectExact(ei.max(Ints{0}), {3}, Vals(3, -2147483648.0));
  }
}

TEST_CASE("Tensor reduce: mean, var and std with axes, keepdim and correction") {
  const Ints shape{3, 2, 5};
  Vals v = randVals(30, 71, -3, 5);
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (DType dt : {dtypes::float32, dtypes::float64, dtypes::float16}) {
      CAPTURE(dt.name());
      Vals sv = storeAll(v, dt);
      Tensor x = make(sv, shape, dev, dt);
      Tol tol = dt == dtypes::float16   ? Tol{4e-3, 4e-3}
                : dt == dtypes::float64 ? Tol{1e-12, 1e-12}
                                        : Tol{1e-5, 1e-6};
      for (const AxisCase &ac : {axisCases()[0], axisCases()[3], axisCases()[4], axisCases()[5]}) {
        CAPTURE(fmtInts(ac.norm));
        for (bool keep : {false, true}) {
          CAPTURE(keep);
          Ints os = reducedShape(shape, ac.norm, keep);
          expectDType(x.mean(ac.axis, keep), dt);
          expectValues(x.mean(ac.axis, keep), os, storeAll(hostMean(sv, shape, ac.norm), dt), tol);
          expectValues(x.var(ac.axis, keep), os, storeAll(hostVar(sv, shape, ac.norm, 1), dt), tol);
          Vals sd = hostVar(sv, shape, ac.norm, 0);
          for (auto &d : sd) d = std::sqrt(d);
          expectValues(x.std(ac.axis, keep, 0), os, storeAll(sd, dt), tol);
        }
      }
    }
    // a permuted view, correction 2
    Tensor p = makeView(Layout::Permuted, v, shape, dev);
    expectValues(p.var(Ints{2}, false, 2), {3, 2}, hostVar(v, shape, {2}, 2), {1e-5, 1e-6});
    // one element with correction 1 divides 0 by 0; an empty mean is the sum's 0
    expectExact(make({3}, {1}, dev).var(), {}, {kNaN});
    expectExact(make({3}, {1}, dev).std(std::nullopt, false, 0), {}, {0});
    expectExact(make({}, {0, 2}, dev).mean(Ints{0}), {2}, {0, 0});
    expectExact(Tensor::scalar(2, {std::nullopt, dev}).mean(), {}, {2});
  }
}

TEST_CASE("Tensor reduce: softmax and logSoftmax along each axis, stable for large inputs") {
  auto hostSoftmax = [](const Vals &v, const Ints &shape, int64_t axis, bool log) {
    Vals m = hostReduce(v, shape, {axis}, -kInf, hostMax);
    Ints ks = shape;
    ks[axis] = 1;
    Vals e(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      e[i] = std::exp(v[i] - m[broadcastSource(static_cast<int64_t>(i), ks, shape)]);
    Vals s = hostReduce(e, shape, {axis}, 0, std::plus<>());
    Vals out(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      int64_t k = broadcastSource(static_cast<int64_t>(i), ks, shape);
      out[i] = log ? v[i] - m[k] - std::log(s[k]) : e[i] / s[k];
    }
    return out;
  };
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    const Ints shape{2, 3, 5};
    Vals v = randVals(30, 81, -4, 4);
    for (int64_t axis : {-1, 0, 1}) {
      CAPTURE(axis);
      int64_t a = axis < 0 ? axis + 3 : axis;
      Tensor x = makeView(axis == 1 ? Layout::Permuted : Layout::Contiguous, v, shape, dev);
      expectValues(x.softmax(axis), shape, hostSoftmax(v, shape, a, false), {1e-5, 1e-6});
      expectValues(x.logSoftmax(axis), shape, hostSoftmax(v, shape, a, true), {1e-5, 1e-5});
    }
    // large logits do not overflow
    Vals big{1000, 1001, 1002, -1000, 0, 1000};
    expectValues(make(big, {2, 3}, dev).softmax(), {2, 3}, hostSoftmax(big, {2, 3}, 1, false),
                 {1e-5, 1e-6});
    expectValues(make(big, {2, 3}, dev).logSoftmax(), {2, 3}, hostSoftmax(big, {2, 3}, 1, true),
                 {1e-5, 1e-5});
    // float16 and a size-1 axis
    Vals h = storeAll(randVals(6, 82, -2, 2), dtypes::float16);
    expectValues(make(h, {2, 3}, dev, dtypes::float16).softmax(), {2, 3},
                 storeAll(hostSoftmax(h, {2, 3}, 1, false), dtypes::float16), {4e-3, 2e-3});
    expectExact(make({5, -7}, {2, 1}, dev).softmax(), {2, 1}, {1, 1});
    expectExact(make({5, -7}, {2, 1}, dev).logSoftmax(), {2, 1}, {0, 0});
  }
}

TEST_CASE("Tensor reduce: argmax and argmin return the first extreme index as int32") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    // ties: the first occurrence wins
    Vals v{3, 7, 7, -1, 0, 7, -2, -2, 5, 1, -2, 4, 0, 0, 0};
    Tensor x = make(v, {3, 5}, dev);
    expectDType(x.argmax(), dtypes::int32);
    expectExact(x.argmax(), {}, {1});
    expectExact(x.argmin(), {}, {6});
    expectExact(x.argmax(1), {3}, hostArg(v, {3, 5}, 1, true));
    expectExact(x.argmax(-1, true), {3, 1}, hostArg(v, {3, 5}, 1, true));
    expectExact(x.argmin(1), {3}, hostArg(v, {3, 5}, 1, false));
    expectExact(x.argmax(0), {5}, hostArg(v, {3, 5}, 0, true));
    expectExact(x.argmin(0, true), {1, 5}, hostArg(v, {3, 5}, 0, false));
    // the same on a flipped view: indices are logical
    Tensor f = makeView(Layout::Flipped, v, {3, 5}, dev);
    expectExact(f.argmax(1), {3}, hostArg(v, {3, 5}, 1, true));
    expectExact(f.argmin(), {}, {6});
    // integer and float64 inputs, a 3-d middle axis, a size-1 axis and a 0-d tensor
    expectExact(make({5, -3, 9, 9}, {4}, dev, dtypes::int8).argmax(), {}, {2});
    expectExact(make({5, 3, 9, 9}, {4}, dev, dtypes::uint8).argmin(), {}, {1});
    expectExact(make({5, -3, 9, 9}, {4}, dev, dtypes::float64).argmin(), {}, {1});
    Vals w = randVals(24, 91);
    expectExact(make(w, {2, 3, 4}, dev).argmax(1), {2, 4}, hostArg(w, {2, 3, 4}, 1, true));
    expectExact(make(w, {2, 3, 4}, dev).argmin(-1), {2, 3}, hostArg(w, {2, 3, 4}, 2, false));
    expectExact(make({4, 2}, {2, 1}, dev).argmax(1), {2}, {0, 0});
    expectExact(Tensor::scalar(3, {std::nullopt, dev}).argmax(), {}, {0});
  }
}

TEST_CASE("Tensor reduce: cumsum along each axis, short and beyond the 512 split") {
  auto hostCumsum = [](const Vals &v, const Ints &shape, int64_t axis) {
    Vals out = v;
    Ints st = stridesOf(shape);
    for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i)
      if ((i / st[axis]) % shape[axis] != 0) out[i] = out[i - st[axis]] + v[i];
    return out;
  };
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Vals v = randInts(12, 95, -9, 9);
    for (int64_t axis : {0, 1, -1}) {
      CAPTURE(axis);
      int64_t a = axis < 0 ? axis + 2 : axis;
      expectExact(make(v, {3, 4}, dev).cumsum(axis), {3, 4}, hostCumsum(v, {3, 4}, a));
      expectExact(make(v, {3, 4}, dev, dtypes::int32).cumsum(axis), {3, 4},
                  hostCumsum(v, {3, 4}, a));
    }
    expectExact(makeView(Layout::Flipped, v, {3, 4}, dev).cumsum(1), {3, 4},
                hostCumsum(v, {3, 4}, 1));
    expectExact(make({2.5}, {1}, dev).cumsum(), {1}, {2.5});
    expectExact(make({1, 2, 3}, {3, 1}, dev).cumsum(1), {3, 1}, {1, 2, 3});
    // two-stage cumsum: 1000 (not a multiple of 256) along the only axis and 600 along axis 1;
    // small integers keep float32 sums exact
    Vals l = randInts(1000, 96, -3, 3);
    expectExact(make(l, {1000}, dev).cumsum(), {1000}, hostCumsum(l, {1000}, 0));
    Vals l2 = randInts(1200, 97, -3, 3);
    expectExact(make(l2, {2, 600}, dev).cumsum(1), {2, 600}, hostCumsum(l2, {2, 600}, 1));
    expectExact(make(l2, {600, 2}, dev, dtypes::int32).cumsum(0), {600, 2},
                hostCumsum(l2, {600, 2}, 0));
  }
}

TEST_CASE("Tensor reduce: at OPT=5 a cumsum along another axis than the last sums a copy with that axis last") {
  // the same values as OPT=2's graph (small integers: exact in any order), with one more kernel
  // (the transposing copy) where the windows' work outweighs it, and none for small tensors
  Vals v = randInts(600 * 40, 98, -3, 3);
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (int64_t axis : {0, 1}) {
      CAPTURE(axis);
      Ints shape = axis == 0 ? Ints{600, 40} : Ints{40, 600};
      Tensor x = make(v, shape, dev);
      int opt2Kernels = 0, opt5Kernels = 0;
      std::vector<double> want, got;
      {
        AtOpt opt(2);
        Tensor y = x.cumsum(axis);
        opt2Kernels = kernelCount(y);
        want = y.toVector<double>();
      }
      AtOpt opt(5);
      Tensor y = x.cumsum(axis);
      opt5Kernels = kernelCount(y);
      got = y.toVector<double>();
      CHECK(got == want);
      // along axis 0 (not the last) the copy comes first; along the last axis nothing changes
      CHECK(opt5Kernels == opt2Kernels + (axis == 0 ? 1 : 0));
    }
    // 3 x 40 along axis 0: windows of 3, too little work to pay for a copy
    Tensor small = make(Vals(v.begin(), v.begin() + 120), {3, 40}, dev);
    int opt2 = 0;
    {
      AtOpt opt(2);
      opt2 = kernelCount(small.cumsum(0));
    }
    AtOpt opt(5);
    CHECK(kernelCount(small.cumsum(0)) == opt2);
  }
}

TEST_CASE("Tensor reduce: min and argmin of unsigned and signed integers at the dtype's edges") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    // the reference negates, which maps unsigned 0 to 0 and INT_MIN to itself
    for (DType dt : {dtypes::uint8, dtypes::uint16, dtypes::uint32, dtypes::uint64}) {
      CAPTURE(dt.name());
      Tensor u = make({5, 0, 7, 200, 1, 0}, {2, 3}, dev, dt);
      expectExact(u.min(), {}, {0});
      expectExact(u.min(Ints{1}), {2}, {0, 0});
      expectExact(u.min(Ints{0}, true), {1, 3}, {5, 0, 0});
      expectExact(u.argmin(), {}, {1});
      expectExact(u.argmin(1), {2}, {1, 2});
    }
    Tensor s = make({-2147483648.0, 5, 0, -7}, {2, 2}, dev, dtypes::int32);
    expectExact(s.min(), {}, {-2147483648.0});
    expectExact(s.min(Ints{1}), {2}, {-2147483648.0, -7});
    expectExact(s.argmin(0), {2}, {0, 1});
    expectExact(make({-128, 127}, {2}, dev, dtypes::int8).min(), {}, {-128});
    // an empty integer min is the dtype's largest value
    expectExact(make({}, {0, 2}, dev, dtypes::int16).min(Ints{0}), {2}, {32767, 32767});
  }
}

// Tensors with a symbolic dim: reshape to a bound Variable, compute, realize and read back after
// reshaping to the concrete size (the reference's test_symbolic_ops). One kernel serves every
// bound value.
#include "TensorTestUtil.h"

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {
SInt bound(const char *name, int64_t v) { return SInt(Variable(name, 1, 10)->bind(v)); }
} // namespace

TEST_CASE("Tensor symbolic: elementwise ops on a bound variable dim") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (int64_t i = 1; i <= 4; ++i) {
      CAPTURE(i);
      Vals a = randVals(static_cast<size_t>(3 * i), 900 + i),
           b = randVals(static_cast<size_t>(3 * i), 910 + i);
      SInt vi = bound("i", i);
      Tensor sa = make(a, {3, i}, dev).reshape({3, vi});
      CHECK(!sa.shape()[1].isInt());
      CHECK_THROWS_WITH_AS(sa.intShape(), doctest::Contains("has a symbolic shape"), UnsupportedError);
      Tensor plus1 = (sa + 1).realize();
      expectValues(plus1.reshape({3, i}), {3, i}, hostMap(a, [](double x) { return x + 1; }));
      Tensor sum = (sa * make(b, {3, i}, dev).reshape({3, vi})).realize();
      expectValues(sum.reshape({3, i}), {3, i},
                   hostBinary(a, {3, i}, b, {3, i}, std::multiplies<>()));
      // a unary chain and a broadcast against a concrete (3, 1) column
      Tensor chain = sa.exp().mul(make({1, 2, 3}, {3, 1}, dev)).realize();
      expectValues(chain.reshape({3, i}), {3, i},
                   hostBinary(hostMap(a, [](double x) { return std::exp(x); }), {3, i}, {1, 2, 3},
                              {3, 1}, std::multiplies<>()),
                   {1e-5, 1e-6});
    }
  }
}

TEST_CASE("Tensor symbolic: reductions and matmul over a symbolic axis") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (int64_t i = 1; i <= 4; ++i) {
      CAPTURE(i);
      Vals a = randVals(static_cast<size_t>(3 * i), 920 + i),
           b = randVals(static_cast<size_t>(5 * i), 930 + i);
      SInt vi = bound("i", i);
      Tensor sa = make(a, {3, i}, dev).reshape({3, vi});
      // summing the symbolic axis gives a concrete shape
      expectValues(sa.sum(Ints{1}), {3}, hostReduce(a, {3, i}, {1}, 0, std::plus<>()),
                   {1e-5, 1e-6});
      expectValues(sa.max(Ints{1}), {3}, hostReduce(a, {3, i}, {1}, -kInf, [](double x, double y) {
                     return std::max(x, y);
                   }));
      // (3, i) @ (i, 5)
      Tensor prod = sa.matmul(make(b, {i, 5}, dev).reshape({vi, 5}));
      Vals expected(15, 0);
      for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 5; ++c)
          for (int64_t k = 0; k < i; ++k) expected[r * 5 + c] += a[r * i + k] * b[k * 5 + c];
      expectValues(prod, {3, 5}, expected, {1e-5, 1e-6});
    }
  }
}

TEST_CASE("Tensor symbolic: cat along a symbolic dim, two variables, symbolic shrink") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    for (int64_t i = 1; i <= 3; ++i) {
      for (int64_t j = 1; j <= 3; ++j) {
        CAPTURE(i);
        CAPTURE(j);
        Vals a = randVals(static_cast<size_t>(i * 3), 940 + i),
             b = randVals(static_cast<size_t>(j * 3), 950 + j);
        Tensor c = make(a, {i, 3}, dev)
                       .reshape({bound("i", i), 3})
                       .cat({make(b, {j, 3}, dev).reshape({bound("j", j), 3})});
        c.realize();
        Vals expected = a;
        expected.insert(expected.end(), b.begin(), b.end());
        expectExact(c.reshape({i + j, 3}), {i + j, 3}, expected);
        // (i, 3) @ (3, j) + 1
        Vals w = randVals(static_cast<size_t>(3 * j), 960 + j);
        Tensor m = make(a, {i, 3}, dev)
                       .reshape({bound("i", i), 3})
                       .matmul(make(w, {3, j}, dev).reshape({3, bound("j", j)})) +
                   1;
        m.realize();
        Vals em(static_cast<size_t>(i * j), 1);
        for (int64_t r = 0; r < i; ++r)
          for (int64_t q = 0; q < j; ++q)
            for (int64_t k = 0; k < 3; ++k) em[r * j + q] += a[r * 3 + k] * w[k * j + q];
        expectValues(m.reshape({i, j}), {i, j}, em, {1e-5, 1e-6});
      }
      // shrink((3, 5), (i, i + 2)) of a concrete (7, 12) tensor: i + 2 <= 12 for every i in [1, 10]
      Vals x = iotaVals(84);
      SInt vi = bound("i", i);
      Tensor s = make(x, {7, 12}, dev).shrink({SIntPair(3, 5), SIntPair(vi, vi + 2)});
      // on 11 columns, i = 10 would read past the end, whatever i is bound to now
      CHECK_THROWS_WITH_AS(make(x, {7, 12}, dev).shrink({SIntPair(3, 5), SIntPair(0, 11)})
                               .shrink({std::nullopt, SIntPair(vi, vi + 2)}),
                           "shrink: end (2+i[1-10]) may exceed dimension 11 of float32[2, 11]", ShapeError);
      Vals expected;
      for (int64_t r = 3; r < 5; ++r)
        for (int64_t c = i; c < i + 2; ++c) expected.push_back(x[r * 12 + c]);
      expectExact(s.contiguous(), {2, 2}, expected);
    }
  }
}

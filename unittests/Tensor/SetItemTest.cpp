// Tensor::setItem (x[indices] = v), to_ and default_type, and the autocast scope of mixed
// precision. setItem's expected values come from a host loop over the positions that getitem
// selects (getitem is checked against numpy in IndexingTest): position k of the selection takes
// value k of the broadcast value, in order, so a repeated position keeps the last write, as
// numpy's x[idx] = v does.
#include "lazyjit/Runtime/Realize.h"
#include "TensorTestUtil.h"

using namespace lazyjit;
using namespace lazyjit::testing;
using doctest::Contains;

namespace {

/// numpy's x[indices] = value on host values: the positions come from getitem over arange.
Vals expectedSet(const Vals &x, const Ints &shape, const std::vector<Index> &idx, const Vals &value,
                 const Ints &valueShape) {
  Tensor pos = Tensor::arange(0, static_cast<double>(x.size()), 1, {dtypes::int32, "CPU"})
                   .reshape(toShape(shape))
                   .getitem(idx);
  std::vector<int64_t> p = pos.toVector<int64_t>();
  Ints selShape = pos.intShape();
  Vals out = x;
  for (size_t k = 0; k < p.size(); ++k)
    out[static_cast<size_t>(p[k])] = value[static_cast<size_t>(broadcastSource(static_cast<int64_t>(k), valueShape, selShape))];
  return out;
}

struct Case {
  const char *what;
  std::vector<Index> idx;
  Ints valueShape; // the value's shape (broadcast to the selection)
};

std::vector<Case> basicCases() {
  using I = Index;
  return {
      {"x[1]", {I::at(1)}, {}},
      {"x[-1, 2]", {I::at(-1), I::at(2)}, {5}},
      {"x[:, 1:3]", {I::all(), I::range(1, 3)}, {2, 5}},
      {"x[::2, :, 1::2]", {I::range({}, {}, 2), I::all(), I::range(1, {}, 2)}, {1, 2}},
      {"x[::-1]", {I::range({}, {}, -1)}, {3, 4, 5}},
      {"x[..., ::-2]", {I::ellipsis(), I::range({}, {}, -2)}, {3}},
      {"x[2, None, 3:0:-1, 4]", {I::at(2), I::newAxis(), I::range(3, 0, -1), I::at(4)}, {3}},
      {"x[0, ..., 1:5:3]", {I::at(0), I::ellipsis(), I::range(1, 5, 3)}, {4, 2}},
      {"x[-2:, -3::-3]", {I::range(-2, {}), I::range(-3, {}, -3)}, {2, 1, 5}},
      {"x[None]", {I::newAxis()}, {4, 5}},
  };
}

std::vector<Case> tensorCases() {
  using I = Index;
  return {
      {"x[[0, 2]]", {I::of(std::vector<int64_t>{0, 2})}, {2, 4, 5}},
      {"x[[2, -1]] (one row twice: the last write wins)", {I::of(std::vector<int64_t>{2, -1})}, {2, 1, 1}},
      {"x[1, [3, 0, 3]]", {I::at(1), I::of(std::vector<int64_t>{3, 0, 3})}, {3, 5}},
      {"x[:, [1, 2], 1::2]", {I::all(), I::of(std::vector<int64_t>{1, 2}), I::range(1, {}, 2)}, {}},
      {"x[[0, 1], [2, 3]]", {I::of(std::vector<int64_t>{0, 1}), I::of(std::vector<int64_t>{2, 3})}, {5}},
  };
}

void runCases(const std::vector<Case> &cases, const std::string &dev, DType dt) {
  const Ints shape{3, 4, 5};
  Vals x0 = iotaVals(60, 100);
  for (const Case &c : cases) {
    CAPTURE(std::string(c.what));
    // fractional values for floats (a value promoted through an int would lose them)
    Vals v = iotaVals(static_cast<size_t>(numelOf(c.valueShape)), dt.isFloating() ? -0.5 : -1, -1);
    Tensor x = make(x0, shape, dev, dt).contiguous().realize();
    x.setItem(c.idx, make(v, c.valueShape, dev, dtypes::float32));
    expectDType(x, dt);
    expectExact(x, shape, expectedSet(x0, shape, c.idx, v, c.valueShape));
  }
}

} // namespace

TEST_CASE("SetItem: basic indices write the selection numpy writes, in one kernel over the buffer") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    runCases(basicCases(), dev, dtypes::float32);
    runCases(basicCases(), dev, dtypes::int32); // the value is cast to the tensor's dtype
    // a realized tensor is updated in place by one kernel: no copy, the same buffer
    Tensor x = make(iotaVals(60), {3, 4, 5}, dev).contiguous().realize();
    auto before = x.lazydata()->realized();
    int64_t k0 = globalCounters().kernelCount;
    x.setItem({Index::range(1, {}), Index::range({}, {}, 2)}, 7.0).realize();
    CHECK(globalCounters().kernelCount - k0 == 1);
    CHECK(x.lazydata()->realized() == before);
    // a scalar in a 1-d tensor (numpy's docs: a[1:4:2] = 7)
    Tensor a = Tensor::zeros({5}, {dtypes::float32, dev}).contiguous();
    a.setItem({Index::range(1, 4, 2)}, 7.0);
    expectExact(a, {5}, {0, 7, 0, 7, 0});
  }
}

TEST_CASE("SetItem: tensor indices write through one-hot masks, the last write winning") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    runCases(tensorCases(), dev, dtypes::float32);
    runCases(tensorCases(), dev, dtypes::int16);
    // an index tensor (not a list), with a negative entry
    Tensor v = Tensor::zeros({4}, {dtypes::float32, dev}).contiguous();
    v.setItem({Index::of(make({3, -4}, {2}, dev, dtypes::int32))}, make({1, 2}, {2}, dev));
    expectExact(v, {4}, {2, 0, 0, 1});
  }
}

TEST_CASE("SetItem: lazy and aliased tensors, empty selections, and the errors") {
  // an unrealized tensor: the where joins its graph; every handle sees the write
  Tensor x = Tensor::arange(6).reshape({2, 3});
  Tensor alias = x;
  x.setItem({Index::at(1), Index::range(1, {})}, make({-1, -2}, {2}, "CPU"));
  expectExact(alias, {2, 3}, {0, 1, 2, 3, -1, -2});
  // an empty slice changes nothing
  x.setItem({Index::range(2, 1)}, 5.0);
  expectExact(x, {2, 3}, {0, 1, 2, 3, -1, -2});
  // the value must broadcast to the selection
  CHECK_THROWS_WITH_AS(x.setItem({Index::at(0)}, make({1, 2}, {2}, "CPU")),
                       Contains("setitem: cannot broadcast the value float32[2] to the selection [3] of float32[2, 3]"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(x.setItem({Index::at(2)}, 1.0), Contains("index 2 is out of bounds for dimension 0 with size 2"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(x.setItem({Index::at(0), Index::at(0), Index::at(0)}, 1.0), Contains("too many indices"),
                       ShapeError);
  // no gradient flows through a setitem, so a tensor that wants one is refused
  Tensor p = Tensor::zeros({3}, {dtypes::float32, "CPU", true});
  CHECK_THROWS_WITH_AS(p.setItem({Index::at(0)}, 1.0), Contains("requires a gradient"), Error);
  expectExact(x, {2, 3}, {0, 1, 2, 3, -1, -2}); // failed writes change nothing
}

TEST_CASE("SetItem: to_ moves a tensor and its gradient in place; default_type types creation") {
  Tensor w = make({1, 2, 3}, {3}, "CPU", dtypes::float32);
  w.setRequiresGrad(true);
  w.mul(w).sum().backward();
  Tensor alias = w;
  w.to_("INTERP");
  CHECK(alias.device() == "INTERP");
  REQUIRE(alias.grad().has_value());
  CHECK(alias.grad()->device() == "INTERP");
  expectExact(alias, {3}, {1, 2, 3});
  w.to_(std::nullopt); // no device: nothing moves
  CHECK(w.device() == "INTERP");

  DType saved = Tensor::defaultType;
  Tensor::defaultType = dtypes::float16;
  Tensor a = Tensor::ones({2}), r = Tensor::rand({2}), s = Tensor::scalar(1.5);
  Tensor::defaultType = saved;
  expectDType(a, dtypes::float16);
  expectDType(r, dtypes::float16);
  expectDType(s, dtypes::float16);
  expectDType(Tensor::ones({2}), dtypes::float32);
}

TEST_CASE("Autocast: matmul-like ops compute in the low dtype, losses in float32, grads of float32 params") {
  Tensor::manualSeed(3);
  Tensor x = Tensor::randn({4, 8}).realize(), w = Tensor::randn({8, 3}).realize();
  Tensor img = Tensor::randn({2, 3, 6, 6}).realize(), k = Tensor::randn({4, 3, 3, 3}).realize();
  for (DType low : {dtypes::bfloat16, dtypes::float16}) {
    CAPTURE(low.name());
    Tensor y, c, loss, lsm, outside;
    {
      Tensor::AutocastGuard ac(low);
      CHECK(Tensor::autocastType()->name() == low.name());
      y = x.matmul(w);
      c = img.conv2d(k, make({1, 2, 3, 4}, {4}, "CPU"));
      lsm = y.logSoftmax();
      loss = y.sparseCategoricalCrossentropy(make({0, 1, 2, 1}, {4}, "CPU"));
      Tensor::AutocastGuard off(low, false);
      outside = x.matmul(w);
    }
    CHECK(!Tensor::autocastType());
    expectDType(y, low);
    expectDType(c, low);
    expectDType(lsm, dtypes::float32);
    expectDType(loss, dtypes::float32);
    expectDType(outside, dtypes::float32);
    // the values are the float32 ones within the low dtype's precision
    expectValues(y, {4, 3}, x.cast(low).cast(dtypes::float32).matmul(w.cast(low).cast(dtypes::float32)).toVector<double>(),
                 Tol{low.name() == std::string("bfloat16") ? 1e-2 : 2e-3, 1e-2});
  }
  // float32 master weights get float32 gradients through the casts
  Tensor p = Tensor::randn({8, 3}, {std::nullopt, std::nullopt, true});
  {
    Tensor::AutocastGuard ac(dtypes::bfloat16);
    x.matmul(p).sparseCategoricalCrossentropy(make({0, 1, 2, 1}, {4}, "CPU")).backward();
  }
  REQUIRE(p.grad().has_value());
  expectDType(*p.grad(), dtypes::float32);
  CHECK_THROWS_WITH_AS([] { Tensor::AutocastGuard guard(dtypes::float32); }(), Contains("float16 or bfloat16"),
                       DTypeError);
}

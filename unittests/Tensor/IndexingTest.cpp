// Indexing: getitem with ints, slices with positive and negative steps, newAxis and ellipsis, and
// an integer index tensor; gather. Expected values are numpy's (golden/gen_golden.py).
#include "TensorTestUtil.h"
#include "golden/TensorGolden.h"

using namespace lazyjit;
using namespace lazyjit::testing;

TEST_CASE("Tensor indexing: getitem matches numpy basic indexing") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = Tensor::arange(60, {std::nullopt, dev}).reshape({3, 4, 5});
    Tensor xt = x.permute({2, 0, 1});
    for (const golden::IndexCase &c : golden::kIndexCases) {
      CAPTURE(std::string(c.expr));
      expectExact((c.transposed ? xt : x).getitem(c.index), c.shape, c.values);
    }
    // int dtypes and views index the same way
    Tensor xi = make(iotaVals(60), {3, 4, 5}, dev, dtypes::int16).flip({0}).flip({0});
    for (const golden::IndexCase &c : golden::kIndexCases) {
      if (c.transposed) continue;
      CAPTURE(std::string(c.expr));
      Tensor r = xi.getitem(c.index);
      expectDType(r, dtypes::int16);
      expectExact(r, c.shape, c.values);
    }
    // a 1-d tensor: single elements and strided reversal
    Tensor v = make({10, 11, 12, 13, 14}, {5}, dev);
    expectExact(v.getitem({Index::at(-2)}), {}, {13});
    expectExact(v.getitem({Index::range(std::nullopt, std::nullopt, -2)}), {3}, {14, 12, 10});
    expectExact(v.getitem({Index::range(3, 0, -1)}), {3}, {13, 12, 11});
    expectExact(v.getitem({Index::newAxis(), Index::range(1, 3)}), {1, 2}, {11, 12});
    // a 0-d tensor with an ellipsis and a new axis
    expectExact(
        Tensor::scalar(5, {std::nullopt, dev}).getitem({Index::ellipsis(), Index::newAxis()}), {1},
        {5});
  }
}

TEST_CASE("Tensor indexing: an integer index tensor selects along dim 0 (negatives from the end)") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = Tensor::arange(60, {std::nullopt, dev}).reshape({3, 4, 5});
    for (const golden::TensorIndexCase &c : golden::kTensorIndexCases) {
      CAPTURE(fmtInts(c.idxShape));
      expectExact(x.getitem(make(c.idx, c.idxShape, dev, dtypes::int32)), c.shape, c.values);
    }
    // int64 indices, a flipped source and a permuted index view
    Tensor src = make(iotaVals(12), {4, 3}, dev).flip({0});
    expectExact(src.getitem(make({0, 3}, {2}, dev, dtypes::int64)), {2, 3}, {9, 10, 11, 0, 1, 2});
    Tensor idx = make({0, 1, 2, 3}, {2, 2}, dev, dtypes::int32).permute({1, 0});
    expectExact(make({5, 6, 7, 8}, {4}, dev).getitem(idx), {2, 2}, {5, 7, 6, 8});
  }
}

TEST_CASE("Tensor indexing: gather along every dim with smaller index tensors") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = make(golden::kGatherX, {3, 4, 5}, dev);
    for (const golden::GatherCase &c : golden::kGatherCases) {
      CAPTURE(c.dim);
      CAPTURE(fmtInts(c.idxShape));
      expectExact(x.gather(make(c.idx, c.idxShape, dev, dtypes::int32), c.dim), c.idxShape,
                  c.values);
    }
    // torch's doc example: gather(t, 1, [[0, 0], [1, 0]]) of [[1, 2], [3, 4]]
    Tensor t = make({1, 2, 3, 4}, {2, 2}, dev);
    expectExact(t.gather(make({0, 0, 1, 0}, {2, 2}, dev, dtypes::int32), 1), {2, 2}, {1, 1, 4, 3});
    expectExact(t.gather(make({1, 0}, {1, 2}, dev, dtypes::int64), 0), {1, 2}, {3, 2});
    // a non-contiguous source
    expectExact(t.T().gather(make({1, 1}, {2, 1}, dev, dtypes::int32), 1), {2, 1}, {3, 4});
  }
}

namespace {

/// PyTorch's F.interpolate along one axis of a row-major [rows, in] array, written out from its
/// definition (the source coordinate of each output index, and the two neighbours' weights).
std::vector<double> interpolateRef(const std::vector<double> &x, int64_t rows, int64_t in,
                                   int64_t out, const std::string &mode, bool align) {
  std::vector<double> y;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < out; ++i) {
      const double *row = x.data() + r * in;
      if (mode == "nearest") {
        y.push_back(row[std::min(in - 1, int64_t(std::floor(double(i) * in / out)))]);
        continue;
      }
      double src = align ? (out > 1 ? double(i) * (in - 1) / (out - 1) : 0)
                         : std::max(0.0, (i + 0.5) * in / out - 0.5);
      int64_t lo = std::min<int64_t>(in - 1, int64_t(src)), hi = std::min(in - 1, lo + 1);
      y.push_back(row[lo] + (row[hi] - row[lo]) * (src - double(lo)));
    }
  return y;
}

} // namespace

TEST_CASE("interpolate: PyTorch's nearest and linear (align_corners both ways) on known values") {
  Tensor x = Tensor::fromVector(std::vector<float>{1, 2, 3, 4}, Shape{1, 1, 4});
  // (the values F.interpolate gives for these calls)
  CHECK(x.interpolate({8}, "linear").toVector<float>() ==
        std::vector<float>{1, 1.25, 1.75, 2.25, 2.75, 3.25, 3.75, 4});
  CHECK(x.interpolate({7}, "linear", true).toVector<float>() ==
        std::vector<float>{1, 1.5, 2, 2.5, 3, 3.5, 4});
  CHECK(x.interpolate({6}, "nearest").toVector<float>() == std::vector<float>{1, 1, 2, 3, 3, 4});
  CHECK(x.interpolate({2}, "linear").toVector<float>() == std::vector<float>{1.5, 3.5});
}

TEST_CASE("interpolate: bilinear up and down against the definition, per axis, and its errors") {
  Vals v = randVals(2 * 3 * 5 * 7, 11);
  Tensor x = make(v, {2, 3, 5, 7}, "CPU", dtypes::float32);
  for (bool align : {false, true})
    for (auto [oh, ow] : std::vector<std::pair<int64_t, int64_t>>{{9, 4}, {3, 12}, {5, 7}}) {
      CAPTURE(align);
      CAPTURE(oh);
      CAPTURE(ow);
      // along W for every row, then along H (transposed) for every column
      std::vector<double> w = interpolateRef(v, 2 * 3 * 5, 7, ow, "linear", align), t;
      for (int64_t p = 0; p < 6; ++p)
        for (int64_t c = 0; c < ow; ++c)
          for (int64_t r = 0; r < 5; ++r) t.push_back(w[size_t((p * 5 + r) * ow + c)]);
      std::vector<double> h = interpolateRef(t, 6 * ow, 5, oh, "linear", align), want;
      for (int64_t p = 0; p < 6; ++p)
        for (int64_t r = 0; r < oh; ++r)
          for (int64_t c = 0; c < ow; ++c) want.push_back(h[size_t((p * ow + c) * oh + r)]);
      Tensor y = x.interpolate({oh, ow}, "linear", align);
      REQUIRE(y.intShape() == Ints{2, 3, oh, ow});
      std::vector<float> got = y.toVector<float>();
      for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
    }
  Tensor ints = Tensor::fromVector(std::vector<int32_t>{1, 5}, Shape{2});
  CHECK(ints.interpolate({4}, "nearest").dtype() == dtypes::int32);
  CHECK(ints.interpolate({3}, "linear", true).toVector<float>() == std::vector<float>{1, 3, 5});
  CHECK_THROWS_WITH_AS(x.interpolate({4}, "cubic"), doctest::Contains("mode 'cubic'"), Error);
  CHECK_THROWS_AS(x.interpolate({1, 2, 3, 4, 5}), ShapeError);
  CHECK_THROWS_AS(x.interpolate({0}), ShapeError);
  CHECK_THROWS_WITH_AS(x.interpolate({4}, "nearest", true), doctest::Contains("align_corners"),
                       Error);
}

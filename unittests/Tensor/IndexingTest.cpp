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

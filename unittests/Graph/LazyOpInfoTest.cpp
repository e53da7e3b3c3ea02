// get_lazyop_info: the abstract interpretation the scheduler and the runtime use for kernel
// stats and for threading decisions. Flops follow the reference's FlopCounter (an elementwise op
// costs one flop per output element, a reduce one per input element, a repeated subtree is
// counted once); bytes are per buffer, the last LOAD of a buffer winning.
#include "lazyjit/Graph/LazyOp.h"
#include "lazyjit/Graph/NodeDType.h"

#include <doctest/doctest.h>

using namespace lazyjit;

namespace {
LazyOpRef load(int idx, Shape shape, DType dt = dtypes::float32) {
  return LazyOp::make(Op::Load, {}, MemBuffer{idx, dt, ShapeTracker::fromShape(shape)});
}
LazyOpRef loadView(int idx, ShapeTracker st, DType dt = dtypes::float32) {
  return LazyOp::make(Op::Load, {}, MemBuffer{idx, dt, std::move(st)});
}
LazyOpRef bin(Op op, LazyOpRef a, LazyOpRef b) { return LazyOp::make(op, {LazySrc(a), LazySrc(b)}); }
} // namespace

TEST_CASE("getLazyOpInfo: a matmul costs 2*N^3 flops and reads both operands once") {
  const int64_t n = 16;
  // (n,n,1) x (1,n,n) -> expand to (n,n,n), multiply, sum the last axis
  ShapeTracker a = ShapeTracker::fromShape({n, 1, n}).expand({n, n, n});
  ShapeTracker b = ShapeTracker::fromShape({1, n, n}).permute({0, 2, 1}).expand({n, n, n});
  LazyOpRef mul = bin(Op::Mul, loadView(1, a), loadView(2, b));
  LazyOpRef sum = LazyOp::make(Op::Sum, {LazySrc(mul)}, Shape{n, n, 1});
  LazyOpRef store = LazyOp::make(Op::Store, {LazySrc(sum)}, MemBuffer{0, dtypes::float32, ShapeTracker::fromShape({n, n, 1})});
  LazyOpInfo info = getLazyOpInfo(*store);
  CHECK(info.shape == Shape{n, n, 1});
  CHECK(info.dtype == dtypes::float32);
  CHECK(info.flops.asInt() == 2 * n * n * n);
  REQUIRE(info.mem.size() == 3);
  CHECK(info.mem.at(0) == 4 * n * n);
  CHECK(info.mem.at(1) == 4 * n * n); // an expanded view reads its real extent, not n^3
  CHECK(info.mem.at(2) == 4 * n * n);
  CHECK(info.memEstimate() == 12 * n * n);
}

TEST_CASE("getLazyOpInfo: a repeated subtree is counted once; dtypes promote; casts are free") {
  const int64_t n = 10;
  LazyOpRef x = bin(Op::Mul, load(1, {n}), load(1, {n}));
  LazyOpRef y = bin(Op::Mul, load(1, {n}), load(1, {n})); // structurally equal to x
  LazyOpRef add = bin(Op::Add, x, y);
  LazyOpInfo info = getLazyOpInfo(*add);
  CHECK(info.flops.asInt() == 2 * n); // one MUL (memoized) + the ADD
  LazyOpRef cast = LazyOp::make(Op::Cast, {LazySrc(add)}, CastArg{dtypes::float64, false});
  LazyOpInfo ci = getLazyOpInfo(*cast);
  CHECK(ci.dtype == dtypes::float64);
  CHECK(ci.flops.asInt() == 2 * n);
  LazyOpRef mixed = bin(Op::Add, load(1, {n}, dtypes::int8), load(2, {n}, dtypes::float16));
  CHECK(getLazyOpInfo(*mixed).dtype == dtypes::float16);
}

TEST_CASE("getLazyOpInfo: the last LOAD of a buffer decides its bytes; the STORE its own") {
  // buffer 1 read first as one element broadcast to 8, then whole (8 elements)
  LazyOpRef part = loadView(1, ShapeTracker::fromShape({1}).expand({8}));
  LazyOpRef whole = load(1, {8});
  LazyOpInfo first = getLazyOpInfo(*bin(Op::Add, part, whole));
  CHECK(first.mem.at(1) == 4 * 8);
  LazyOpInfo second = getLazyOpInfo(*bin(Op::Add, whole, part));
  CHECK(second.mem.at(1) == 4 * 1);
  LazyOpRef store = LazyOp::make(Op::Store, {LazySrc(whole)}, MemBuffer{1, dtypes::float16, ShapeTracker::fromShape({8})});
  CHECK(getLazyOpInfo(*store).mem.at(1) == 2 * 8);
}

TEST_CASE("kernelNodeDType: the one dtype rule the FlopCounter, the code generator and the interpreter read") {
  LazyOpRef f = load(1, {4}), h = load(2, {4}, dtypes::float16), i = load(3, {4}, dtypes::int32);
  LazyOpRef cond = bin(Op::CmpLt, f, h);
  auto of = [](const LazyOpRef &op, std::vector<DType> srcs) { return kernelNodeDType(*op, srcs); };
  CHECK(of(f, {}) == dtypes::float32);                                          // a buffer's own
  CHECK(of(bin(Op::Add, h, i), {dtypes::float16, dtypes::int32}) == dtypes::float16); // promoted
  CHECK(of(cond, {dtypes::float32, dtypes::float16}) == dtypes::float32);      // CMPLT keeps the max
  LazyOpRef where = LazyOp::make(Op::Where, {LazySrc(cond), LazySrc(i), LazySrc(h)});
  CHECK(of(where, {dtypes::float32, dtypes::int32, dtypes::float16}) == dtypes::float16); // the values'
  LazyOpRef cast = LazyOp::make(Op::Cast, {LazySrc(f)}, CastArg{dtypes::int8});
  CHECK(of(cast, {dtypes::float32}) == dtypes::int8);
  LazyOpRef sum = LazyOp::make(Op::Sum, {LazySrc(h)}, Shape{1});
  CHECK(of(sum, {dtypes::float16}) == dtypes::float16);
  CHECK(of(LazyOp::make(Op::Expand, {LazySrc(sum)}, Shape{4}), {dtypes::float16}) == dtypes::float16);
  CHECK_FALSE(of(LazyOp::make(Op::Reshape, {LazySrc(f)}, Shape{2, 2}), {dtypes::float32}).has_value());
  CHECK_FALSE(of(LazyOp::make(Op::Contiguous, {LazySrc(f)}), {dtypes::float32}).has_value());
  // and getLazyOpInfo agrees: a WHERE over a float32 condition stores its values' dtype
  LazyOpRef store = LazyOp::make(Op::Store, {LazySrc(where)}, MemBuffer{0, dtypes::float16, ShapeTracker::fromShape({4})});
  CHECK(getLazyOpInfo(*store).dtype == dtypes::float16);
}

// get_lazyop_info: the abstract interpretation the scheduler and the runtime use for kernel
// stats and for threading decisions. Flops follow the reference's FlopCounter (an elementwise op
// costs one flop per output element, a reduce one per input element, a repeated subtree is
// counted once); bytes are per buffer, the last LOAD of a buffer winning.
#include "lazyjit/Schedule/KernelOp.h"
#include "lazyjit/Schedule/NodeDType.h"

#include <doctest/doctest.h>

using namespace lazyjit;

namespace {
KernelOpRef load(int idx, Shape shape, DType dt = dtypes::float32) {
  return KernelOp::make(Op::Load, {}, MemBuffer{idx, dt, ShapeTracker::fromShape(shape)});
}
KernelOpRef loadView(int idx, ShapeTracker st, DType dt = dtypes::float32) {
  return KernelOp::make(Op::Load, {}, MemBuffer{idx, dt, std::move(st)});
}
KernelOpRef bin(Op op, KernelOpRef a, KernelOpRef b) { return KernelOp::make(op, {a, b}); }
} // namespace

TEST_CASE("getLazyOpInfo: a matmul costs 2*N^3 flops and reads both operands once") {
  const int64_t n = 16;
  // (n,n,1) x (1,n,n) -> expand to (n,n,n), multiply, sum the last axis
  ShapeTracker a = ShapeTracker::fromShape({n, 1, n}).expand({n, n, n});
  ShapeTracker b = ShapeTracker::fromShape({1, n, n}).permute({0, 2, 1}).expand({n, n, n});
  KernelOpRef mul = bin(Op::Mul, loadView(1, a), loadView(2, b));
  KernelOpRef sum = KernelOp::make(Op::Sum, {mul}, Shape{n, n, 1});
  KernelOpRef store = KernelOp::make(Op::Store, {sum}, MemBuffer{0, dtypes::float32, ShapeTracker::fromShape({n, n, 1})});
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
  KernelOpRef x = bin(Op::Mul, load(1, {n}), load(1, {n}));
  KernelOpRef y = bin(Op::Mul, load(1, {n}), load(1, {n})); // structurally equal to x
  KernelOpRef add = bin(Op::Add, x, y);
  LazyOpInfo info = getLazyOpInfo(*add);
  CHECK(info.flops.asInt() == 2 * n); // one MUL (memoized) + the ADD
  KernelOpRef cast = KernelOp::make(Op::Cast, {add}, CastArg{dtypes::float64, false});
  LazyOpInfo ci = getLazyOpInfo(*cast);
  CHECK(ci.dtype == dtypes::float64);
  CHECK(ci.flops.asInt() == 2 * n);
  KernelOpRef mixed = bin(Op::Add, load(1, {n}, dtypes::int8), load(2, {n}, dtypes::float16));
  CHECK(getLazyOpInfo(*mixed).dtype == dtypes::float16);
}

TEST_CASE("getLazyOpInfo: the last LOAD of a buffer decides its bytes; the STORE its own") {
  // buffer 1 read first as one element broadcast to 8, then whole (8 elements)
  KernelOpRef part = loadView(1, ShapeTracker::fromShape({1}).expand({8}));
  KernelOpRef whole = load(1, {8});
  LazyOpInfo first = getLazyOpInfo(*bin(Op::Add, part, whole));
  CHECK(first.mem.at(1) == 4 * 8);
  LazyOpInfo second = getLazyOpInfo(*bin(Op::Add, whole, part));
  CHECK(second.mem.at(1) == 4 * 1);
  KernelOpRef store = KernelOp::make(Op::Store, {whole}, MemBuffer{1, dtypes::float16, ShapeTracker::fromShape({8})});
  CHECK(getLazyOpInfo(*store).mem.at(1) == 2 * 8);
}

TEST_CASE("kernelNodeDType: the one dtype rule the FlopCounter, the code generator and the interpreter read") {
  KernelOpRef f = load(1, {4}), h = load(2, {4}, dtypes::float16), i = load(3, {4}, dtypes::int32);
  KernelOpRef cond = bin(Op::CmpLt, f, h);
  // the rule, and the dtype each node computed from its sources' when it was built
  auto of = [](const KernelOpRef &op, std::vector<DType> srcs) {
    std::optional<DType> d = kernelNodeDType(op->op, op->arg, srcs);
    CHECK(op->kernelDType() == d);
    return d;
  };
  CHECK(of(f, {}) == dtypes::float32);                                          // a buffer's own
  CHECK(of(bin(Op::Add, h, i), {dtypes::float16, dtypes::int32}) == dtypes::float16); // promoted
  CHECK(of(cond, {dtypes::float32, dtypes::float16}) == dtypes::float32);      // CMPLT keeps the max
  KernelOpRef where = KernelOp::make(Op::Where, {cond, i, h});
  CHECK(of(where, {dtypes::float32, dtypes::int32, dtypes::float16}) == dtypes::float16); // the values'
  KernelOpRef cast = KernelOp::make(Op::Cast, {f}, CastArg{dtypes::int8});
  CHECK(of(cast, {dtypes::float32}) == dtypes::int8);
  KernelOpRef sum = KernelOp::make(Op::Sum, {h}, Shape{1});
  CHECK(of(sum, {dtypes::float16}) == dtypes::float16);
  CHECK(of(KernelOp::make(Op::Expand, {sum}, Shape{4}), {dtypes::float16}) == dtypes::float16);
  CHECK_FALSE(of(KernelOp::make(Op::Reshape, {f}, Shape{2, 2}), {dtypes::float32}).has_value());
  CHECK_FALSE(kernelNodeDType(Op::Contiguous, {}, std::vector<DType>{dtypes::float32}).has_value());
  CHECK_FALSE(kernelNodeDType(Op::Cast, Shape{4}, std::vector<DType>{dtypes::float32}).has_value()); // no CastArg
  // and getLazyOpInfo agrees: a WHERE over a float32 condition stores its values' dtype
  KernelOpRef store = KernelOp::make(Op::Store, {where}, MemBuffer{0, dtypes::float16, ShapeTracker::fromShape({4})});
  CHECK(getLazyOpInfo(*store).dtype == dtypes::float16);
}

// The verifier rules (Verifier.h) that ASTTextTest.cpp, VerifierBoundsTest.cpp and the
// test/lit/Schedule/error-ast-*.ast tests do not reach: each breaks one rule in an AST built by
// hand (the parser refuses most of these before the verifier sees them) and checks the message.
#include "KernelTestUtil.h"
#include "lazyjit/Schedule/Verifier.h"

#include <doctest/doctest.h>

using namespace lazyjit;
using lazyjit::testing::verifyError;

namespace {

ShapeTracker st(std::initializer_list<int64_t> shape) {
  return ShapeTracker::fromShape(Shape(shape.begin(), shape.end()));
}

// A view exactly as given: no normalization, and the contiguous flag as stated.
View rawView(Shape shape, Shape strides, std::optional<Mask> mask = std::nullopt, bool contiguous = false) {
  View v;
  v.shape = std::move(shape);
  v.strides = std::move(strides);
  v.offset = 0;
  v.mask = std::move(mask);
  v.contiguous = contiguous;
  return v;
}

KernelOpRef load(int idx, ShapeTracker s = st({10})) {
  return KernelOp::make(Op::Load, {}, MemBuffer{idx, dtypes::float32, std::move(s)});
}

// STORE (10,) of `value`
KernelOpRef store(KernelOpRef value, ShapeTracker s = st({10})) {
  return KernelOp::make(Op::Store, {std::move(value)}, MemBuffer{0, dtypes::float32, std::move(s)});
}

} // namespace

TEST_CASE("Verifier rule: the hand-built ASTs below are valid until one rule is broken") {
  CHECK(verifyError(store(KernelOp::make(Op::Neg, {load(1)}))) == "<accepted>");
  CHECK(verifyError(store(load(1, ShapeTracker{{rawView({10}, {1}, std::nullopt, true)}}))) == "<accepted>");
}

TEST_CASE("Verifier rule: every ShapeTracker has at least one view") {
  CHECK(verifyError(store(KernelOp::make(Op::Neg, {load(1, ShapeTracker{})}))) ==
        "verifyAst: BufferOps.LOAD has a ShapeTracker without views");
}

TEST_CASE("Verifier rule: no dimension is negative") {
  ShapeTracker neg{{rawView({-10}, {1})}};
  CHECK(verifyError(store(KernelOp::make(Op::Neg, {load(1, neg)}))) ==
        "verifyAst: BufferOps.LOAD has a negative dimension in " + neg.views[0].repr());
}

TEST_CASE("Verifier rule: a view has one stride and one mask pair per dimension") {
  ShapeTracker strides{{rawView({10}, {1, 1})}};
  CHECK(verifyError(store(KernelOp::make(Op::Neg, {load(1, strides)}))) ==
        "verifyAst: BufferOps.LOAD: " + strides.views[0].repr() + " has 2 strides and 0 mask pairs for 1 dims");
  ShapeTracker mask{{rawView({10}, {1}, Mask{{0, 5}, {0, 1}})}};
  CHECK(verifyError(store(KernelOp::make(Op::Neg, {load(1, mask)}))) ==
        "verifyAst: BufferOps.LOAD: " + mask.views[0].repr() + " has 1 strides and 2 mask pairs for 1 dims");
}

TEST_CASE("Verifier rule: a view marked contiguous has the contiguous layout") {
  // the other direction (contiguous=False on a contiguous layout) is in VerifierBoundsTest.cpp
  ShapeTracker flipped{{rawView({10}, {-1}, std::nullopt, true)}};
  CHECK(verifyError(store(KernelOp::make(Op::Neg, {load(1, flipped)}))) ==
        "verifyAst: BufferOps.LOAD: " + flipped.views[0].repr() +
            " is marked contiguous=True but its strides, offset and mask are not the contiguous layout of its shape");
}

TEST_CASE("Verifier rule: a LOAD reads an input buffer, numbered from 1") {
  CHECK(verifyError(store(KernelOp::make(Op::Neg, {load(0)}))) ==
        "verifyAst: LOAD reads buffer 0; inputs start at 1");
}

TEST_CASE("Verifier rule: a CONST carries a ConstBuffer") {
  CHECK(verifyError(store(KernelOp::make(Op::Add, {load(1), KernelOp::make(Op::Const, {}, 2.0)}))) ==
        "verifyAst: BufferOps.CONST needs a ConstBuffer argument");
  // with one, the same AST is valid
  CHECK(verifyError(store(KernelOp::make(Op::Add, {load(1), KernelOp::make(Op::Const, {}, ConstBuffer{2.0, dtypes::float32,
                                                                                                  st({10})})}))) ==
        "<accepted>");
}

TEST_CASE("Verifier rule: a reduce carries its output shape") {
  KernelOpRef noShape = KernelOp::make(Op::Sum, {load(1)});
  CHECK(verifyError(store(noShape, st({1}))) == "verifyAst: ReduceOps.SUM needs its output shape as argument");
  KernelOpRef withShape = KernelOp::make(Op::Sum, {load(1)}, Shape{1});
  CHECK(verifyError(store(withShape, st({1}))) == "<accepted>");
}

TEST_CASE("Verifier rule: every op's argument is of the kind the op table gives it") {
  // an element-wise op takes none (CAST takes a dtype)
  CHECK(verifyError(store(KernelOp::make(Op::Neg, {load(1)}, 2.0))) ==
        "verifyAst: UnaryOps.NEG takes no argument, got a value argument");
  CHECK(verifyError(store(KernelOp::make(Op::Add, {load(1), load(2)}, Shape{10}))) ==
        "verifyAst: BinaryOps.ADD takes no argument, got its output shape as argument");
  CHECK(verifyError(store(KernelOp::make(Op::Cast, {load(1)}, Shape{10}))) == "verifyAst: UnaryOps.CAST needs a dtype argument");
  CHECK(verifyError(store(KernelOp::make(Op::Cast, {load(1)}, CastArg{dtypes::float32}))) == "<accepted>");
  // EXPAND (of a row value) takes its output shape
  CHECK(verifyError(store(KernelOp::make(Op::Expand, {load(1)}, std::vector<int64_t>{10}))) ==
        "verifyAst: MovementOps.EXPAND needs its output shape as argument");
}

TEST_CASE("Verifier rule: a STORE carries a MemBuffer") {
  CHECK(verifyError(KernelOp::make(Op::Store, {load(1)}, 1.0)) == "verifyAst: BufferOps.STORE needs a MemBuffer argument");
}

TEST_CASE("Verifier bounds rule: no view of a stack may give the view below it a negative index") {
  // the top view starts 2 elements before the view below it
  View top = rawView({4}, {1});
  top.offset = -2;
  ShapeTracker s{{View::create({10}), top}};
  std::string want = "verifyAst: view " + top.repr() + " may give the view below it the negative element index -2";
  CHECK_THROWS_WITH_AS(accessRange(s, {}), doctest::Contains(want.c_str()), Error);
  // from offset 0 it is fine; the view below wraps its coordinates, so it bounds the reads
  top.offset = 0;
  CHECK(accessRange(ShapeTracker{{View::create({10}), top}}, {}) == std::pair<int64_t, int64_t>{0, 9});
}

// The bounds proof of the AST verifier: the element ranges view stacks may access (padding,
// shrink, flips, expands, multi-view stacks, symbolic ranges), the contiguous-flag rule, and that
// every kernel the scheduler produces passes the proof against its real buffers.
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Schedule/Verifier.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

using namespace lazyjit;

namespace {
using Range = std::pair<int64_t, int64_t>;
Range rangeOfSt(const ShapeTracker &st, const VarRanges &r = {}) { return accessRange(st, r); }
ShapeTracker st(Shape s) { return ShapeTracker::fromShape(s); }
} // namespace

TEST_CASE("Verifier bounds: the element range of each movement op's view") {
  CHECK(rangeOfSt(st({4, 6})) == Range{0, 23});
  CHECK(rangeOfSt(st({4, 6}).shrink({{1, 3}, {2, 5}})) == Range{8, 16});
  // padding: the mask keeps the reads inside the original 24 elements
  CHECK(rangeOfSt(st({4, 6}).pad({{2, 2}, {1, 1}})) == Range{0, 23});
  // a flip reads the same elements backwards
  CHECK(rangeOfSt(st({4, 6}).stride({-1, 1})) == Range{0, 23});
  CHECK(rangeOfSt(st({4, 6}).stride({2, -3})) == Range{2, 17}); // elements 5, 2, 17, 14
  // an expand reads its one row again and again
  CHECK(rangeOfSt(st({1, 6}).expand({5, 6})) == Range{0, 5});
  // a permuted reshape needs two views; the lower one bounds the reads
  ShapeTracker two = st({4, 6}).permute({1, 0}).reshape({3, 8});
  REQUIRE(two.views.size() == 2);
  CHECK(rangeOfSt(two) == Range{0, 23});
  // an empty shape accesses nothing
  Range empty = rangeOfSt(st({0, 3}));
  CHECK(empty.first > empty.second);
}

TEST_CASE("Verifier bounds: symbolic views are proven for every value of their variables") {
  NodeRef n = variable("n", 1, 64);
  ShapeTracker s = st({3, SInt(n)});
  VarRanges all{{"n", {1, 64}}}, one{{"n", {10, 10}}};
  CHECK(rangeOfSt(s, all) == Range{0, 191});
  CHECK(rangeOfSt(s, one) == Range{0, 29});
  // a shrink by a variable offset
  NodeRef i = variable("i", 1, 7);
  ShapeTracker sh = st({7, 11}).shrink({{3, 5}, {SInt(i), SInt(i) + 2}});
  CHECK(rangeOfSt(sh, {{"i", {1, 7}}}) == Range{34, 52}); // 33 + i + {0, 1} + {0, 11}
}

TEST_CASE("Verifier bounds: requiredSizes and verifyAstBounds name the buffer and the range") {
  auto parse = [](const std::string &text) { return parseAst(text, "test.ast"); };
  KernelOpRef ast = parse(R"(BufferOps.STORE idx=0 dtype=float32
  view shape=(4,) strides=(1,) offset=0 mask=None contiguous=True
  BinaryOps.ADD
    BufferOps.LOAD idx=1 dtype=float32
      view shape=(4,) strides=(2,) offset=1 mask=None contiguous=False
    BufferOps.LOAD idx=2 dtype=float32
      view shape=(4,) strides=(0,) offset=0 mask=None contiguous=False
)");
  auto sizes = requiredSizes(*ast, {});
  CHECK(sizes == std::map<int, int64_t>{{0, 4}, {1, 8}, {2, 1}});
  verifyAstBounds(*ast, sizes, {});
  CHECK_THROWS_WITH_AS(verifyAstBounds(*ast, {{0, 4}, {1, 7}, {2, 1}}, {}),
                       doctest::Contains("verifyAst: BufferOps.LOAD of buffer 1 may access elements 1..7 outside its 7 elements"),
                       Error);
  KernelOpRef neg = parse(R"(BufferOps.STORE idx=0 dtype=float32
  view shape=(4,) strides=(1,) offset=0 mask=None contiguous=True
  UnaryOps.NEG
    BufferOps.LOAD idx=1 dtype=float32
      view shape=(4,) strides=(-1,) offset=2 mask=None contiguous=False
)");
  CHECK_THROWS_WITH_AS(requiredSizes(*neg, {}),
                       doctest::Contains("BufferOps.LOAD of buffer 1 may access the negative element index -1"), Error);
  // the contiguous flag must match the strides
  CHECK_THROWS_WITH_AS(verifyAst(*parse(R"(BufferOps.STORE idx=0 dtype=float32
  view shape=(4,) strides=(1,) offset=0 mask=None contiguous=False
  UnaryOps.NEG
    BufferOps.LOAD idx=1 dtype=float32
      view shape=(4,) strides=(1,) offset=0 mask=None contiguous=True
)")),
                       doctest::Contains("is marked contiguous=False but its strides, offset and mask are the contiguous layout"),
                       Error);
}

TEST_CASE("Verifier bounds: the scheduler's kernels pass the proof against their buffers") {
  // LAZYJIT_VERIFY_AST (set for every unit test) runs verifyAstBounds before each kernel with the
  // real buffer sizes; these programs cover pads, shrinks, flips, expands, reduces and two views
  Tensor a = Tensor::arange(24).reshape({4, 6});
  std::vector<Tensor> outs = {
      a.pad({SIntPair(1, 2), SIntPair(0, 3)}) + 1,
      a.shrink({SIntPair(1, 3), SIntPair(2, 5)}).flip({0, 1}) * 2,
      a.permute({1, 0}).reshape({3, 8}).sum(std::vector<int64_t>{1}),
      a.reshape({4, 1, 6}).expand({4, 5, 6}).max(std::vector<int64_t>{2}),
      a.getitem({Index::range(std::nullopt, std::nullopt, -2), Index::range(1, std::nullopt, 3)}).contiguous(),
  };
  for (auto &o : outs) CHECK_NOTHROW(o.realize());
}

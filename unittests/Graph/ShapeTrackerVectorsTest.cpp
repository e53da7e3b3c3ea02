// The reference's ShapeTracker cases (tinygrad-cases.md §4): the generated 4b vectors pinned
// verbatim, and the error messages of bad movement-op arguments.
#include "Graph/ShapeTrackerHelpers.h"
#include "lazyjit/Support/Config.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

using namespace lazyjit;
using namespace lazyjit::testing;

// ---- 4b: generated expression vectors -----------------------------------------------------------

namespace {

struct Vector4b {
  const char *name;
  std::function<ShapeTracker()> build;
  size_t views;
  bool contiguous;
  int64_t size;
  const char *realStrides;
  const char *viewsRepr;
  const char *idx, *valid;         // exprIdxs over idx0..idxN-1
  const char *nodeIdx, *nodeValid; // exprNode over idx
};

ShapeTracker from74() { return ShapeTracker::fromShape(toShape({7, 4})); }
ShapeTracker from110() { return ShapeTracker::fromShape(toShape({1, 10})); }

} // namespace

TEST_CASE("ShapeTracker: 4b generated vectors match verbatim") {
  const std::vector<Vector4b> vectors = {
      {"contiguous 7x4 noop", from74, 1, true, 28, "(4, 1)",
       "View(shape=(7, 4), strides=(4, 1), offset=0, mask=None, contiguous=True)",
       "((idx0*4)+idx1)", "1", "idx", "1"},
      {"permute",
       [] {
         return from74().permute({1, 0});
       },
       1, false, 28, "(1, 4)",
       "View(shape=(4, 7), strides=(1, 4), offset=0, mask=None, contiguous=False)",
       "((idx1*4)+idx0)", "1", "(((idx%7)*4)+(idx//7))", "1"},
      {"reshape adds 1",
       [] {
         return from74().reshape(toShape({7, 1, 4}));
       },
       1, true, 28, "(4, 0, 1)",
       "View(shape=(7, 1, 4), strides=(4, 0, 1), offset=0, mask=None, contiguous=True)",
       "((idx0*4)+idx2)", "1", "idx", "1"},
      {"reshape (4,7) then permute: not contiguous",
       [] {
         return from74().reshape(toShape({4, 7})).permute({1, 0});
       },
       1, false, 28, "(1, 7)",
       "View(shape=(7, 4), strides=(1, 7), offset=0, mask=None, contiguous=False)",
       "((idx1*7)+idx0)", "1", "(((idx%4)*7)+(idx//4))", "1"},
      {"double permute -> contiguous",
       [] {
         return from74().permute({1, 0}).permute({1, 0});
       },
       1, true, 28, "(4, 1)",
       "View(shape=(7, 4), strides=(4, 1), offset=0, mask=None, contiguous=True)",
       "((idx0*4)+idx1)", "1", "idx", "1"},
      {"shrink",
       [] {
         return from74().shrink({{1, 2}, {0, 4}});
       },
       1, false, 8, "(0, 1)",
       "View(shape=(1, 4), strides=(0, 1), offset=4, mask=None, contiguous=False)", "(4+idx1)", "1",
       "(4+idx)", "1"},
      {"pad 1 each side",
       [] {
         return from74().pad({{1, 1}, {1, 1}});
       },
       1, false, 33, "(None, None)",
       "View(shape=(9, 6), strides=(4, 1), offset=-5, mask=((1, 8), (1, 5)), contiguous=False)",
       "((idx0*4)+-5+idx1)", "(((idx0*-1)<0) and ((idx1*-1)<0) and (idx0<8) and (idx1<5))",
       "(((idx//6)*4)+(idx%6)+-5)",
       "((((idx%6)*-1)<0) and (((idx//6)*-1)<0) and ((idx%6)<5) and ((idx//6)<8))"},
      {"pad then shrink",
       [] {
         return from74().pad({{1, 1}, {1, 1}}).shrink({{0, 4}, {0, 4}});
       },
       1, false, 11, "(None, None)",
       "View(shape=(4, 4), strides=(4, 1), offset=-5, mask=((1, 4), (1, 4)), contiguous=False)",
       "((idx0*4)+-5+idx1)", "(((idx0*-1)<0) and ((idx1*-1)<0))", "(-5+idx)",
       "((((idx%4)*-1)<0) and (((idx//4)*-1)<0))"},
      {"pad one-sided then reshape to 1D",
       [] {
         return from74().pad({{0, 1}, {0, 0}}).reshape(toShape({32}));
       },
       1, false, 32, "(None,)",
       "View(shape=(32,), strides=(1,), offset=0, mask=((0, 28),), contiguous=False)", "idx0",
       "(idx0<28)", "idx", "(idx<28)"},
      {"flip axis 0 (stride -1)",
       [] {
         return from74().stride({-1, 1});
       },
       1, false, 28, "(-4, 1)",
       "View(shape=(7, 4), strides=(-4, 1), offset=24, mask=None, contiguous=False)",
       "((idx0*-4)+24+idx1)", "1", "(((idx//4)*-4)+(idx%4)+24)", "1"},
      {"stride (-2,-2)",
       [] {
         return from74().stride({-2, -2});
       },
       1, false, 28, "(-8, -2)",
       "View(shape=(4, 2), strides=(-8, -2), offset=27, mask=None, contiguous=False)",
       "((idx0*-8)+(idx1*-2)+27)", "1", "(((idx%2)*-2)+((idx//2)*-8)+27)", "1"},
      {"reshape+expand",
       [] {
         return from74().reshape(toShape({7, 1, 4})).expand(toShape({7, 2, 4}));
       },
       1, false, 28, "(4, 0, 1)",
       "View(shape=(7, 2, 4), strides=(4, 0, 1), offset=0, mask=None, contiguous=False)",
       "((idx0*4)+idx2)", "1", "(((idx//8)*4)+(idx%4))", "1"},
      {"expand+reshape(100): 2 views",
       [] {
         return from110().expand(toShape({10, 10})).reshape(toShape({100}));
       },
       2, false, 10, "(None,)",
       "View(shape=(10, 10), strides=(0, 1), offset=0, mask=None, contiguous=False); "
       "View(shape=(100,), "
       "strides=(1,), offset=0, mask=None, contiguous=True)",
       "(idx0%10)", "1", "(idx%10)", "1"},
      {"expand, reshape(100), reshape(10,10), simplify -> 1 view",
       [] {
         return from110()
             .expand(toShape({10, 10}))
             .reshape(toShape({100}))
             .reshape(toShape({10, 10}))
             .simplify();
       },
       1, false, 10, "(0, 1)",
       "View(shape=(10, 10), strides=(0, 1), offset=0, mask=None, contiguous=False)", "idx1", "1",
       "(idx%10)", "1"},
      {"expand, reshape(100), reshape(5,20), simplify -> still 2 views",
       [] {
         return from110()
             .expand(toShape({10, 10}))
             .reshape(toShape({100}))
             .reshape(toShape({5, 20}))
             .simplify();
       },
       2, false, 10, "(0, None)",
       "View(shape=(10, 10), strides=(0, 1), offset=0, mask=None, contiguous=False); "
       "View(shape=(5, 20), "
       "strides=(20, 1), offset=0, mask=None, contiguous=True)",
       "(idx1%10)", "1", "(idx%10)", "1"},
      {"permute (2,0,1) reshape(16,4): 2 views (super_complex_2_fail)",
       [] {
         return ShapeTracker::fromShape(toShape({4, 4, 4}))
             .permute({2, 0, 1})
             .reshape(toShape({16, 4}));
       },
       2, false, 64, "(None, None)",
       "View(shape=(4, 4, 4), strides=(1, 16, 4), offset=0, mask=None, contiguous=False); "
       "View(shape=(16, 4), strides=(4, 1), offset=0, mask=None, contiguous=True)",
       "(((((idx0*4)+idx1)%16)*4)+(idx0//4))", "1", "(((idx%16)*4)+(idx//16))", "1"},
      {"factorize_split: contiguous again",
       [] {
         return ShapeTracker::fromShape(toShape({4, 4}))
             .permute({1, 0})
             .reshape(toShape({2, 2, 2, 2}))
             .permute({2, 3, 0, 1});
       },
       1, true, 16, "(8, 4, 2, 1)",
       "View(shape=(2, 2, 2, 2), strides=(8, 4, 2, 1), offset=0, mask=None, contiguous=True)",
       "((idx0*8)+(idx1*4)+(idx2*2)+idx3)", "1", "idx", "1"},
      {"reshape_combining_3: pad then flatten (mask (31,35))",
       [] {
         return ShapeTracker::fromShape(toShape({1, 1, 4}))
             .pad({{3, 6}, {0, 0}, {1, 5}})
             .reshape(toShape({100}));
       },
       1, false, 69, "(None,)",
       "View(shape=(100,), strides=(1,), offset=-31, mask=((31, 35),), contiguous=False)",
       "(-31+idx0)", "(((idx0*-1)<-30) and (idx0<35))", "(-31+idx)",
       "(((idx*-1)<-30) and (idx<35))"},
      {"splitting_big",
       [] {
         return ShapeTracker::fromShape(toShape({1, 5, 1, 15, 1}))
             .pad({{0, 0}, {0, 5}, {0, 0}, {0, 15}, {0, 0}})
             .reshape(toShape({10, 1, 30}))
             .permute({2, 1, 0})
             .reshape(toShape({2, 3, 5, 2, 5}));
       },
       1, false, 165, "(None, 5, 1, None, 15)",
       "View(shape=(2, 3, 5, 2, 5), strides=(15, 5, 1, 75, 15), offset=0, mask=((0, 1), (0, 3), "
       "(0, 5), "
       "(0, 1), (0, 5)), contiguous=False)",
       "((idx0*15)+(idx1*5)+(idx3*75)+(idx4*15)+idx2)", "((idx0<1) and (idx3<1))",
       "(((idx%10)*15)+(idx//10))", "((((idx//5)%2)<1) and ((idx//150)<1))"},
  };
  for (const auto &v : vectors) {
    INFO(v.name);
    ShapeTracker st = v.build();
    CHECK(st.views.size() == v.views);
    CHECK(st.contiguous() == v.contiguous);
    CHECK(st.size() == v.size);
    CHECK(stridesStr(st.realStrides()) == v.realStrides);
    CHECK(viewsStr(st) == v.viewsRepr);
    auto [idx, valid] = st.exprIdxs();
    CHECK(idx->render() == v.idx);
    CHECK(valid->render() == v.valid);
    auto [nidx, nvalid] = st.exprNode();
    CHECK(nidx->render() == v.nodeIdx);
    CHECK(nvalid->render() == v.nodeValid);
  }
}

// ---- errors -------------------------------------------------------------------------------------

TEST_CASE("ShapeTracker: bad movement-op arguments throw ShapeError naming the op and the shapes") {
  ShapeTracker st = ShapeTracker::fromShape(toShape({4, 6}));
  CHECK_THROWS_WITH_AS(
      st.reshape(toShape({5, 5})),
      doctest::Contains("reshape: cannot reshape [4, 6] (24 elements) to [5, 5] (25 elements)"),
      ShapeError);
  CHECK_THROWS_WITH_AS(
      st.permute({0, 0}),
      doctest::Contains("permute: (0, 0) is not a permutation of the 2 dims of shape [4, 6]"),
      ShapeError);
  CHECK_THROWS_WITH_AS(st.permute({1, 0, 2}), doctest::Contains("permute: (1, 0, 2)"), ShapeError);
  CHECK_THROWS_WITH_AS(st.expand(toShape({8, 6})),
                       doctest::Contains("expand: cannot expand shape [4, 6] to [8, 6]"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(st.expand(toShape({4, 6, 1})),
                       doctest::Contains("expand: cannot expand shape [4, 6] to [4, 6, 1]"),
                       ShapeError);
  CHECK_THROWS_WITH_AS(
      st.shrink({{0, 5}, {0, 6}}),
      doctest::Contains("shrink: bounds ((0, 5), (0, 6)) are outside shape [4, 6]"), ShapeError);
  CHECK_THROWS_WITH_AS(st.shrink({{2, 1}, {0, 6}}),
                       doctest::Contains("shrink: bounds ((2, 1), (0, 6))"), ShapeError);
  CHECK_THROWS_WITH_AS(
      st.pad({{-1, 0}, {0, 0}}),
      doctest::Contains("pad: negative padding ((-1, 0), (0, 0)) for shape [4, 6]"), ShapeError);
  CHECK_THROWS_WITH_AS(st.stride({0, 1}),
                       doctest::Contains("stride: stride 0 in (0, 1) for shape [4, 6]"),
                       ShapeError);
  // The size check runs whether or not the reshape needs a second view.
  ShapeTracker multi = st.permute({1, 0});
  CHECK_THROWS_WITH_AS(multi.reshape(toShape({5, 5})),
                       doctest::Contains("reshape: cannot reshape [6, 4]"), ShapeError);
  // Symbolic reshapes: the bound value counts, and only Variables may stand in a new shape.
  SInt vi = variable("i", 1, 10)->bind(4);
  CHECK(ShapeTracker::fromShape(toShape({4, 6})).reshape({vi, 6}).shape() == Shape{vi, 6});
  CHECK_THROWS_WITH_AS(
      ShapeTracker::fromShape(toShape({4, 6})).reshape({vi, 7}),
      doctest::Contains("reshape: cannot reshape [4, 6] (24 elements) to [i, 7] (28 elements)"),
      ShapeError);
  CHECK_THROWS_WITH_AS(
      ShapeTracker::fromShape(toShape({4, 6})).reshape({variable("j", 1, 10), 6}),
      doctest::Contains("reshape: cannot reshape [4, 6] to [j, 6]: variable j is not bound"),
      ShapeError);
  CHECK_THROWS_WITH_AS(ShapeTracker::fromShape(toShape({3, 4})).reshape({3, vi + 1}),
                       doctest::Contains("reshape: cannot reshape [3, 4] to [3, (1+i)]"),
                       ShapeError);
}

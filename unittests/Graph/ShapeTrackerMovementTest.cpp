// The reference's ShapeTracker cases (tinygrad-cases.md §4), T45-T53: movement-op sequences on
// (7, 4) against the CheckingShapeTracker oracle, get_contraction, size, symbolic shapes, and the
// two reference bugs lazyjit fixes.
#include "Graph/ShapeTrackerHelpers.h"
#include "lazyjit/Support/Config.h"

#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

using namespace lazyjit;
using namespace lazyjit::testing;

TEST_CASE("ShapeTracker: T45 TestShapeTracker movement ops on (7, 4)") {
  using Op = std::function<void(CheckingShapeTracker &)>;
  auto permute = [](CheckingShapeTracker &s) {
    if (s.t.shape.size() == 2)
      s.permute({1, 0});
    else if (s.t.shape.size() == 3)
      s.permute({2, 0, 1});
  };
  auto reshapeReversed = [](CheckingShapeTracker &s) {
    Ints ns(s.t.shape.rbegin(), s.t.shape.rend());
    s.reshape(ns);
  };
  auto reshapeWith1 = [](CheckingShapeTracker &s) { s.reshape({s.t.shape[0], 1, s.t.shape[1]}); };
  auto expand = [&](CheckingShapeTracker &s) {
    reshapeWith1(s);
    Ints ns = s.t.shape;
    ns[1] = 2;
    s.expand(ns);
  };
  auto slice1 = [](CheckingShapeTracker &s) { s.shrink({{0, s.t.shape[0]}, {1, s.t.shape[1]}}); };
  const std::vector<std::pair<const char *, Op>> cases = {
      {"noop", [](CheckingShapeTracker &) {}},
      {"simple_split",
       [&](CheckingShapeTracker &s) {
         permute(s);
         s.reshape({s.t.numel()});
       }},
      {"simple_pad",
       [](CheckingShapeTracker &s) {
         s.pad({{1, 1}, {1, 1}});
       }},
      {"pad_shrink",
       [](CheckingShapeTracker &s) {
         s.pad({{1, 1}, {1, 1}}).shrink({{0, 4}, {0, 4}});
       }},
      {"pad_one_sided",
       [](CheckingShapeTracker &s) {
         s.pad({{0, 1}, {0, 0}});
       }},
      {"pad_reshape",
       [](CheckingShapeTracker &s) {
         s.pad({{0, 1}, {0, 0}}).reshape({32});
       }},
      {"pad_pad",
       [](CheckingShapeTracker &s) {
         s.pad({{1, 1}, {1, 1}}).pad({{1, 1}, {1, 1}});
       }},
      {"pad_permute",
       [](CheckingShapeTracker &s) {
         s.pad({{1, 1}, {2, 2}}).permute({1, 0});
       }},
      {"pad_expand",
       [](CheckingShapeTracker &s) {
         s.reshape({7, 4, 1}).pad({{1, 1}, {1, 1}, {0, 0}}).expand({9, 6, 4});
       }},
      {"pad_expand_alt",
       [](CheckingShapeTracker &s) {
         s.pad({{1, 1}, {1, 1}}).reshape({9, 6, 1}).expand({9, 6, 4});
       }},
      {"pad_stride",
       [](CheckingShapeTracker &s) {
         s.pad({{1, 4}, {1, 3}}).stride({2, 2});
       }},
      {"pad_stride_neg",
       [](CheckingShapeTracker &s) {
         s.pad({{1, 2}, {1, 0}}).stride({-1, -1});
       }},
      {"pad_stride_both",
       [](CheckingShapeTracker &s) {
         s.pad({{1, 2}, {1, 0}}).stride({-2, -2});
       }},
      {"shrink_pad",
       [](CheckingShapeTracker &s) {
         s.shrink({{0, 4}, {0, 4}}).pad({{1, 1}, {1, 1}});
       }},
      {"reshape", reshapeReversed},
      {"permute", permute},
      {"reshape_with_1", reshapeWith1},
      {"expand", expand},
      {"flip_0", [](CheckingShapeTracker &s) { s.flip({0}); }},
      {"flip_1", [](CheckingShapeTracker &s) { s.flip({1}); }},
      {"flip_01",
       [](CheckingShapeTracker &s) {
         s.flip({0, 1});
       }},
      {"slice_0",
       [](CheckingShapeTracker &s) {
         s.shrink({{1, s.t.shape[0]}, {0, s.t.shape[1]}});
       }},
      {"slice_1", slice1},
      {"slice_1c1",
       [](CheckingShapeTracker &s) {
         s.shrink({{0, 1}, {0, 1}});
       }},
      {"slice_1c2",
       [](CheckingShapeTracker &s) {
         s.shrink({{1, 2}, {1, 2}});
       }},
      {"double_permute",
       [](CheckingShapeTracker &s) {
         s.permute({1, 0}).permute({1, 0});
       }},
      {"slice_permute",
       [](CheckingShapeTracker &s) {
         s.shrink({{0, 2}, {2, 4}}).permute({1, 0});
       }},
      {"slice_expand",
       [](CheckingShapeTracker &s) {
         s.shrink({{0, 2}, {3, 4}}).expand({2, 10});
       }},
      {"double_stride",
       [](CheckingShapeTracker &s) {
         s.stride({1, 2}).stride({2, 1});
       }},
      {"stride",
       [](CheckingShapeTracker &s) {
         s.stride({2, 1});
       }},
      {"stride_int",
       [](CheckingShapeTracker &s) {
         s.stride({1, 2});
       }},
      {"stride_2",
       [](CheckingShapeTracker &s) {
         s.stride({2, 2});
       }},
      {"stride_n",
       [](CheckingShapeTracker &s) {
         s.stride({-2, 1});
       }},
      {"stride_int_n",
       [](CheckingShapeTracker &s) {
         s.stride({-1, 2});
       }},
      {"stride_2_n",
       [](CheckingShapeTracker &s) {
         s.stride({-2, -2});
       }},
      {"reshape_then_permute",
       [&](CheckingShapeTracker &s) {
         reshapeReversed(s);
         permute(s);
       }},
      {"reshape_then_expand",
       [&](CheckingShapeTracker &s) {
         reshapeReversed(s);
         expand(s);
       }},
      {"permute_then_reshape",
       [&](CheckingShapeTracker &s) {
         permute(s);
         reshapeReversed(s);
       }},
      {"expand_then_reshape",
       [&](CheckingShapeTracker &s) {
         expand(s);
         reshapeReversed(s);
       }},
      {"combo",
       [&](CheckingShapeTracker &s) {
         permute(s);
         reshapeReversed(s);
         slice1(s);
         expand(s);
         permute(s);
       }},
  };
  for (const auto &[name, op] : cases) {
    INFO("test_", name);
    CheckingShapeTracker st({7, 4});
    op(st);
    st.assertSame();
  }
}

// ---- T46-T53: contraction, size and symbolic shapes ---------------------------------------------

TEST_CASE("ShapeTracker: T46 get_contraction groups old axes under new ones") {
  using Groups = std::vector<std::vector<int64_t>>;
  auto contraction = [](const Ints &a, const Ints &b) {
    return getContraction(toShape(a), toShape(b));
  };
  const std::vector<std::tuple<Ints, Ints, Groups>> cases = {
      {{1, 2, 3, 4}, {2, 3, 4}, {{0, 1}, {2}, {3}}},
      {{2, 1, 3, 4}, {2, 3, 4}, {{0}, {1, 2}, {3}}},
      {{1, 2, 3, 1, 4}, {1, 2, 3, 4}, {{}, {0, 1}, {2}, {3, 4}}},
      {{1, 2, 3, 1, 4, 1, 1}, {2, 3, 4}, {{0, 1}, {2}, {3, 4, 5, 6}}},
      {{1, 2, 3, 4}, {1, 2, 12}, {{}, {0, 1}, {2, 3}}},
      {{1, 2, 3, 4}, {2, 1, 3, 4}, {{0, 1}, {}, {2}, {3}}},
      {{1, 2, 3, 4}, {1, 1, 24, 1}, {{}, {}, {0, 1, 2, 3}, {}}},
      {{2, 1, 3, 4}, {1, 2, 3, 4}, {{}, {0}, {1, 2}, {3}}},
      {{1, 2, 3, 4}, {24, 1, 1, 1}, {{0, 1, 2, 3}, {}, {}, {}}},
      {{4, 4, 4, 4}, {16, 1, 16}, {{0, 1}, {}, {2, 3}}},
      {{1, 2, 3, 4, 1, 1, 1}, {2, 3, 4}, {{0, 1}, {2}, {3, 4, 5, 6}}},
      {{1, 2, 3, 4}, {1, 2, 3, 4, 1}, {{}, {0, 1}, {2}, {3}, {}}},
      {{14, 1, 384, 14, 1, 1, 1, 1}, {1, 14, 384, 14}, {{}, {0}, {1, 2}, {3, 4, 5, 6, 7}}},
      {{14, 1, 384, 1, 14, 1, 1, 1, 1}, {1, 14, 384, 14}, {{}, {0}, {1, 2}, {3, 4, 5, 6, 7, 8}}},
      {{512, 512}, {1, 1, 512, 1, 1, 1, 1, 512}, {{}, {}, {0}, {}, {}, {}, {}, {1}}},
      {{1}, {1, 1, 1}, {{}, {}, {0}}},
      {{1, 1}, {1, 1, 1}, {{}, {}, {0, 1}}},
      {{1, 1, 1, 1}, {1}, {{0, 1, 2, 3}}},
      {{1, 1, 1, 1}, {1, 1}, {{}, {0, 1, 2, 3}}},
      {{1, 1, 1, 1}, {1, 1, 1}, {{}, {}, {0, 1, 2, 3}}},
      {{1, 1, 1, 1}, {1, 1, 1, 1}, {{}, {}, {}, {0, 1, 2, 3}}},
  };
  for (const auto &[from, to, want] : cases) {
    auto got = contraction(from, to);
    REQUIRE(got.has_value());
    CHECK(*got == want);
  }
  CHECK_FALSE(contraction({1, 2, 3, 4}, {1, 2, 6, 2}).has_value());
}

TEST_CASE("ShapeTracker: T47 size is max(idx)+1 and ignores masks") {
  ShapeTracker st = ShapeTracker::fromShape(toShape({100, 100}));
  CHECK(st.size() == 10000);
  ShapeTracker ex = st.reshape(toShape({100, 100, 1})).expand(toShape({100, 100, 100}));
  CHECK(ex.size() == 10000);
  CHECK(ex.reshape(toShape({1000000})).size() == 10000);
  CHECK(st.shrink({{0, 50}, {0, 100}}).size() == 5000);
  CHECK(st.shrink({{0, var("a", 0, 50)}, {0, 100}}).size() == 5000);
  CHECK(st.shrink({{0, 100}, {0, 50}}).size() == 9950);
  CHECK(ShapeTracker::fromShape(toShape({7, 4})).pad({{1, 1}, {1, 1}}).size() == 33);
}

TEST_CASE("ShapeTracker: T48 a symbolic dimension") {
  SInt x = var("x", 1, 100);
  ShapeTracker st = ShapeTracker::fromShape({x, 3});
  CHECK(st.shape() == Shape{x, 3});
  CHECK(stridesStr(st.realStrides()) == "(3, 1)");
  std::vector<NodeRef> idxs = {variable("x", 0, 100), variable("y", 0, 100)};
  auto [idx, valid] = st.exprIdxs(idxs);
  CHECK(idx->render() == "((x*3)+y)");
  CHECK(valid->render() == "1");
  auto [pidx, pvalid] = st.permute({1, 0}).exprIdxs(idxs);
  CHECK(pidx->render() == "((y*3)+x)");
  CHECK(pvalid->render() == "1");
}

TEST_CASE("ShapeTracker: T49 var_vals collects the bound variables of shape, offset and mask") {
  CHECK(ShapeTracker::fromShape(toShape({3, 4, 5})).varVals().empty());
  auto bound = [](const char *name, int64_t v) { return SInt(variable(name, 1, 100)->bind(v)); };
  auto valsOf = [](const ShapeTracker &st) {
    std::map<std::string, int64_t> out;
    for (const auto &[name, vv] : st.varVals()) {
      CHECK(vv.first->key() == name + "[1-100]"); // the unbound variable
      out[name] = vv.second;
    }
    return out;
  };
  using Vals = std::map<std::string, int64_t>;
  SInt x = bound("x", 3);
  CHECK(valsOf(ShapeTracker::fromShape({x, 3})) == Vals{{"x", 3}});

  ShapeTracker off = ShapeTracker::fromShape(toShape({4, 3})).shrink({{x, x + 1}, {0, 3}});
  CHECK(off.views.back().offset == x * 3);
  CHECK(valsOf(off) == Vals{{"x", 3}});

  View masked = View::create(toShape({3, 4}), toShape({4, 1}), 0, Mask{{0, x}, {0, 4}});
  CHECK(valsOf(ShapeTracker{{masked}}) == Vals{{"x", 3}});

  SInt y = bound("y", 4), z = bound("z", 5);
  ShapeTracker cx = ShapeTracker::fromShape({x, 5, y}).shrink({{0, x}, {z, z + 1}, {0, 3}});
  CHECK(cx.views.back().offset == y * z);
  CHECK(valsOf(cx) == Vals{{"x", 3}, {"y", 4}, {"z", 5}});

  ShapeTracker sr = ShapeTracker::fromShape(toShape({10, 10, 10}))
                        .shrink({{x, x + 3}, {3, 7}, {2, 5}})
                        .reshape(toShape({36}));
  CHECK(valsOf(sr) == Vals{{"x", 3}});
}

TEST_CASE("ShapeTracker: T50 unbind replaces bound variables with unbound ones") {
  SInt v = var("v", 1, 100);
  SInt bv = variable("v", 1, 100)->bind(3);
  CHECK(View::create({bv, 4}).unbind() == View::create({v, 4}));
  // Tensor.rand(3, 4).reshape(bv, 4)
  ShapeTracker r = ShapeTracker::fromShape(toShape({3, 4})).reshape({bv, 4});
  CHECK(r.shape() == Shape{bv, 4});
  CHECK(r.unbind() == ShapeTracker{{View::create({v, 4})}});
  // Tensor.rand(3, 4).shrink(((bv, bv+1), (0, 4))) with bv bound to 2
  SInt bv2 = variable("v", 1, 100)->bind(2);
  ShapeTracker s = ShapeTracker::fromShape(toShape({3, 4})).shrink({{bv2, bv2 + 1}, {0, 4}});
  CHECK(s.unbind() == ShapeTracker{{View::create(toShape({1, 4}), std::nullopt, 4 * v)}});
  // TestSymbolicReshape: into symbols and back to ints
  for (int64_t i = 1; i <= 5; ++i) {
    SInt vi = variable("i", 1, 5)->bind(i);
    ShapeTracker a = ShapeTracker::fromShape(toShape({i, 4})).reshape({vi, 4});
    CHECK(a.shape() == Shape{vi, 4});
    CHECK(a.reshape(toShape({i, 4})).shape() == toShape({i, 4}));
    CHECK(ShapeTracker::fromShape(toShape({i, 6})).reshape({vi, 2, 3}).shape() == Shape{vi, 2, 3});
  }
}

TEST_CASE("ShapeTracker: T51 reshapes of symbolic masked views need a second view") {
  auto startPos = [] { return SInt(variable("start_pos", 1, 128)); };
  SInt bsp = startPos().node()->bind(2);
  View a;
  a.shape = {1, SInt(numNode(1)) + bsp, 16, 64};
  a.strides = toShape({0, 0, 64, 1});
  a.offset = numNode(1024);
  a.mask = Mask{{0, 1}, {bsp, SInt(numNode(1)) + bsp}, {0, 16}, {0, 64}};
  a.contiguous = false;
  CHECK_FALSE(a.reshape({1, 1, SInt(numNode(1)) + bsp, 16, 64}).has_value());

  SInt sp = startPos();
  View b;
  b.shape = {2, 1, SInt(numNode(1)) + sp, 16, 64};
  b.strides = toShape({0, 0, 1024, 64, 1});
  b.offset = 131072;
  b.mask = Mask{{1, 2}, {0, 1}, {0, SInt(numNode(1)) + sp}, {0, 16}, {0, 64}};
  b.contiguous = false;
  CHECK_FALSE(b.reshape({2, SInt(numNode(1)) + sp, 16, 64}).has_value());
}

TEST_CASE("ShapeTracker: T52 symbolic strides render like llama's") {
  SInt i = var("i", 1, 120);
  NodeRef gidx0 = variable("gidx0", 0, i), lidx1 = variable("lidx1", 0, 7);
  Shape shape = {i + 1, 8, 4};
  Shape strides = {1, i * 4 + 4, i + 1};
  ShapeTracker st{{View::create(shape, strides)}};
  auto [idx, valid] = st.exprIdxs(std::vector<NodeRef>{gidx0, lidx1, numNode(1)});
  CHECK(idx->render() == "((lidx1*((i*4)+4))+1+gidx0+i)");
}

TEST_CASE("ShapeTracker: T53 cat of symbolic tensors pads to a symbolic total") {
  // Tensor.cat pads every input to the total size along the axis and adds them.
  auto bound = [](const char *name, int64_t v) { return SInt(variable(name, 1, 5)->bind(v)); };
  SInt i = bound("i", 3), j = bound("j", 3), k = bound("k", 3);
  SInt total = i + j + k;
  CHECK(total.render() == "(i+j+k)");
  std::vector<SInt> sizes = {i, j, k}, starts = {0, i, i + j};
  const char *wantOffsets[] = {"0", "(i*-4)", "((i*-4)+(j*-4))"};
  const char *wantMasks[] = {"(0, i)", "(i, (i+j))", "((i+j), (i+j+k))"};
  for (size_t n = 0; n < 3; ++n) {
    ShapeTracker p = ShapeTracker::fromShape(toShape({3, 4}))
                         .reshape({sizes[n], 4})
                         .pad({{starts[n], total - starts[n] - sizes[n]}, {0, 0}});
    CHECK(p.shape() == Shape{total, 4});
    CHECK(p.views.back().offset.render() == wantOffsets[n]);
    REQUIRE(p.views.back().mask.has_value());
    const auto &m0 = (*p.views.back().mask)[0];
    CHECK("(" + m0.first.render() + ", " + m0.second.render() + ")" == wantMasks[n]);
    CHECK(stridesStr(p.realStrides()) == "(None, 1)");
  }
  CHECK(stridesStr(ShapeTracker::fromShape({total, 4}).realStrides()) == "(4, 1)");
  SInt i4 = bound("i", 4), j4 = bound("j", 4), k4 = bound("k", 4);
  CHECK(stridesStr(ShapeTracker::fromShape({3, i4 + j4 + k4}).realStrides()) == "((i+j+k), 1)");
}

// ---- reference bugs lazyjit fixes ----------------------------------------------------------------

// The reference indexes the wrong elements in these two corners (checked against tinygrad at the
// anchor: it merges to strides (2, 6) reading [0, 6, 2, 8], and keeps one masked view with offset
// -64 / a mask two elements late). lazyjit keeps a second view instead, which indexes correctly.
TEST_CASE("ShapeTracker: simplify does not merge through strides that ignore a var inside // and %") {
  CheckingShapeTracker st({6, 3});
  st.stride({2, 2}).reshape({2, 3}).stride({1, 2});
  CHECK(viewsStr(st.st) ==
        "View(shape=(3, 2), strides=(6, 2), offset=0, mask=None, contiguous=False); "
        "View(shape=(2, 2), strides=(3, 2), offset=0, mask=None, contiguous=False)");
  CHECK(st.st.exprNode().first->render() == "(((((idx//2)*3)//2)*6)+((idx%2)*6)+((idx//2)*2))");
  st.assertSame();
  // real_strides still reports idx0's top-level term (the reference's real_strides)...
  CHECK(stridesStr(st.st.realStrides()) == "(2, 6)");
  // ...but simplify() refuses the merge, so the mapping stays [0, 6, 8, 14].
  ShapeTracker simplified = st.st.simplify();
  CHECK(simplified.views.size() == 2);
  CHECK(lazyjit::testing::trackerElements(simplified, false) == std::vector<int64_t>{0, 6, 8, 14});
  CHECK(st.t.data == std::vector<int64_t>{0, 6, 8, 14});
}

TEST_CASE("ShapeTracker: a reshape of a padded view that cannot keep its mask exact adds a view") {
  SUBCASE("the reference shifts the offset (-64 where -32 is right)") {
    CheckingShapeTracker st({1, 1, 2, 4});
    st.pad({{1, 0}, {2, 2}, {0, 2}, {0, 0}}).reshape({2, 2, 20, 2});
    CHECK(st.st.views.size() == 2);
    st.assertSame();
  }
  SUBCASE("the reference moves the mask two elements late") {
    CheckingShapeTracker st({1, 2});
    st.pad({{1, 0}, {2, 2}}).reshape({3, 2, 1, 2});
    CHECK(st.st.views.size() == 2);
    CHECK(lazyjit::testing::trackerElements(st.st, false) ==
          std::vector<int64_t>{-1, -1, -1, -1, -1, -1, -1, -1, 0, 1, -1, -1});
    st.assertSame();
  }
}

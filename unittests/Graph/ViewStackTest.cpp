// A tracker's views are immutable and shared by its copies (ViewStack): copies share one views
// object, every movement op and simplify() builds a new one and leaves the original as it was,
// and equality and hashing are by value whichever object holds the views.
#include "Graph/ShapeTrackerHelpers.h"

#include <doctest/doctest.h>

using namespace lazyjit;
using namespace lazyjit::testing;

TEST_CASE("ViewStack: copies share the views; movement ops leave the original unchanged") {
  ShapeTracker a = ShapeTracker::fromShape(toShape({4, 6}));
  ShapeTracker b = a;
  CHECK(b.views.sameAs(a.views));
  std::string before = a.repr();

  ShapeTracker p = a.permute({1, 0});
  ShapeTracker r = p.reshape(toShape({24}));
  CHECK(r.views.size() == 2);
  CHECK(a.repr() == before);
  CHECK(p.views.size() == 1);
  CHECK(p.shape() == toShape({6, 4}));

  // simplify of a copy builds new views and leaves the stack it was called on as it was
  ShapeTracker two = trackerOf({viewOf({2, 4}, {4, 1}), viewOf({8}, {1})});
  ShapeTracker keep = two;
  ShapeTracker merged = two.simplify();
  CHECK(merged.views.size() == 1);
  CHECK(two.views.size() == 2);
  CHECK(keep.views.sameAs(two.views));
  ShapeTracker moved = std::move(keep).simplify();
  CHECK(moved == merged);
  CHECK(two.views.size() == 2);
}

TEST_CASE("ViewStack: equality and hash are by value across separately built stacks") {
  ShapeTracker x = ShapeTracker::fromShape(toShape({3, 5})).expand(toShape({3, 5}));
  ShapeTracker y = trackerOf({viewOf({3, 5}, {5, 1})});
  CHECK_FALSE(x.views.sameAs(y.views));
  CHECK(x == y);
  CHECK(x.hash() == y.hash());
  CHECK(x.hash() == x.hash()); // computed once, then read back

  ShapeTracker z = trackerOf({viewOf({3, 5}, {1, 3})});
  CHECK(x != z);
  ShapeTracker padded = x.pad({{SInt(0), SInt(1)}, {SInt(0), SInt(0)}});
  CHECK(padded != x);
  CHECK(padded.shape() == toShape({4, 5}));
  CHECK(x.shape() == toShape({3, 5}));

  // an empty tracker equals only another empty one
  CHECK(ShapeTracker{} == ShapeTracker{});
  CHECK(ShapeTracker{} != x);
}

TEST_CASE("ViewStack: plain trackers of one concrete shape are shared, symbolic ones are built") {
  ShapeTracker a = ShapeTracker::fromShape(toShape({1024}));
  ShapeTracker b = ShapeTracker::fromShape(toShape({1024}));
  CHECK(a.views.sameAs(b.views));
  ShapeTracker c = ShapeTracker::fromShape(toShape({1023}));
  CHECK_FALSE(c.views.sameAs(a.views));
  CHECK(c.views[0].strides == toShape({1}));

  SInt n = var("n", 1, 64);
  ShapeTracker s1 = ShapeTracker::fromShape({n, SInt(4)});
  ShapeTracker s2 = ShapeTracker::fromShape({n, SInt(4)});
  CHECK_FALSE(s1.views.sameAs(s2.views));
  CHECK(s1 == s2);
  CHECK(s1.views[0].strides[0].render() == "4");
}

TEST_CASE("ViewStack: unbind keeps the views of a tracker without variables") {
  ShapeTracker a = ShapeTracker::fromShape(toShape({2, 3}));
  CHECK(a.unbind().views.sameAs(a.views));
  SInt bound = var("i", 1, 10).node()->bind(3);
  ShapeTracker s = ShapeTracker::fromShape({bound, SInt(2)});
  ShapeTracker u = s.unbind();
  CHECK_FALSE(u.views.sameAs(s.views));
  CHECK(u.shape()[0].render() == "i");
  CHECK(s.shape()[0].node()->boundValue());
}

TEST_CASE("ViewStack: a stack is symbolic when any shape, stride, offset or mask bound is a node") {
  CHECK_FALSE(ShapeTracker::fromShape(toShape({4, 4})).views.symbolic());
  CHECK(ShapeTracker::fromShape(toShape({4, 4})).vars().empty());
  SInt n = var("n", 1, 8);
  ShapeTracker shaped = ShapeTracker::fromShape({n, SInt(4)});
  CHECK(shaped.views.symbolic());
  REQUIRE(shaped.vars().size() == 1);
  CHECK(shaped.vars()[0]->render() == "n");
  // a symbolic offset only (a shrink starting at a variable), and a symbolic mask only (a pad by one)
  ShapeTracker shrunk = ShapeTracker::fromShape(toShape({16})).shrink({{n, n + 4}});
  CHECK(shrunk.views.symbolic());
  CHECK(shrunk.vars().size() == 1);
  ShapeTracker padded = ShapeTracker::fromShape(toShape({4})).pad({{n, SInt(0)}});
  CHECK(padded.views.symbolic());
  CHECK(padded.vars().size() == 1);
}

TEST_CASE("ViewStack: a plain tracker reshaped is the new shape's plain tracker, shared") {
  // the reference's View.reshape: a contiguous view reshapes to View.create(new_shape)
  ShapeTracker scalar = ShapeTracker::fromShape(Shape{});
  ShapeTracker ones = scalar.reshape(toShape({1, 1}));
  CHECK(ones.views.sameAs(ShapeTracker::fromShape(toShape({1, 1})).views));
  CHECK(ones == ShapeTracker::fromShape(toShape({1, 1})));
  ShapeTracker m = ShapeTracker::fromShape(toShape({6, 4})).reshape(toShape({3, 8}));
  CHECK(m.views.sameAs(ShapeTracker::fromShape(toShape({3, 8})).views));
  CHECK(m.views.size() == 1);
  CHECK(m.views.back().contiguous);
  // not plain: a permuted view goes through View::reshape (here it cannot merge: a second view)
  ShapeTracker t = ShapeTracker::fromShape(toShape({6, 4})).permute({1, 0}).reshape(toShape({24}));
  CHECK(t.views.size() == 2);
  // a bad size still throws, and a zero-size shape takes View::reshape's path
  CHECK_THROWS_WITH_AS(ShapeTracker::fromShape(toShape({6, 4})).reshape(toShape({5, 5})),
                       doctest::Contains("reshape"), Error);
  CHECK(ShapeTracker::fromShape(toShape({0, 4})).reshape(toShape({4, 0})).shape() == toShape({4, 0}));
}

TEST_CASE("ViewStack: expanding one stack to one shape again shares the first result") {
  // a scalar operand: the 0-d constant's (1, 1) plain tracker expanded to the other operand's shape
  ShapeTracker ones = ShapeTracker::fromShape(Shape{}).reshape(toShape({1, 1}));
  ShapeTracker a = ones.expand(toShape({4, 8})), b = ones.expand(toShape({4, 8}));
  CHECK(a.views.sameAs(b.views));
  CHECK(a.shape() == toShape({4, 8}));
  CHECK(a.views.back().strides == toShape({0, 0}));
  // another shape, or another source stack with equal views, builds its own (equal by value)
  ShapeTracker c = ones.expand(toShape({4, 9}));
  CHECK_FALSE(c.views.sameAs(a.views));
  ShapeTracker other = ShapeTracker::fromShape(toShape({1, 1})).permute({1, 0});
  REQUIRE(other == ones);
  ShapeTracker d = other.expand(toShape({4, 8}));
  CHECK_FALSE(d.views.sameAs(a.views));
  CHECK(d == a);
  // symbolic shapes are not memoized
  SInt n = var("n", 1, 8);
  ShapeTracker s1 = ones.expand({n, SInt(8)}), s2 = ones.expand({n, SInt(8)});
  CHECK_FALSE(s1.views.sameAs(s2.views));
  CHECK(s1 == s2);
}

// The lazy graph's bookkeeping: children counts (childCount over the graph links) and
// merged chains. Fusion decisions read these counts, so they must match Python's WeakSet exactly.
#include "lazyjit/Graph/LazyBuffer.h"

#include <doctest/doctest.h>

using namespace lazyjit;

namespace {
LazyBufferRef emptyBuf(int64_t n) {
  return LazyBuffer::loadop(Op::Empty, {SInt(n)}, dtypes::float32, "CPU");
}
} // namespace

TEST_CASE("LazyBuffer children: a child counts while it lives and leaves when it dies") {
  auto a = emptyBuf(8);
  auto b = emptyBuf(8);
  CHECK(a->childCount() == 0);
  {
    auto c = a->e(Op::Add, {b});
    CHECK(a->childCount() == 1);
    CHECK(b->childCount() == 1);
    auto d = a->e(Op::Mul, {b});
    CHECK(a->childCount() == 2);
  }
  CHECK((a->childCount() == 0));
  CHECK((b->childCount() == 0));
}

TEST_CASE("LazyBuffer children: discard removes one member; a dying parent unlinks its children") {
  auto a = emptyBuf(4);
  auto c = a->e(Op::Neg);
  auto d = a->e(Op::Sqrt);
  REQUIRE(a->childCount() == 2);
  a->discardChild(c.get());
  CHECK(a->childCount() == 1);
  a->discardChild(c.get()); // discarded already: nothing changes
  CHECK(a->childCount() == 1);
  // the parent dies first (its op is dropped as realize does); the child must not touch it later
  auto parentOnly = emptyBuf(4);
  auto child = parentOnly->e(Op::Neg);
  CHECK(parentOnly->childCount() == 1);
  std::weak_ptr<LazyBuffer> watch = parentOnly;
  child->dropOp();
  parentOnly.reset();
  CHECK(watch.expired());
  child.reset(); // would touch freed memory (ASan) if the link had survived
}

TEST_CASE("LazyBuffer children: merged elementwise chains register with every leaf once") {
  auto x = emptyBuf(16);
  LazyBufferRef t = x;
  std::vector<LazyBufferRef> consts;
  for (int i = 0; i < 300; ++i) {
    consts.push_back(x->constLike(1.0 + i));
    t = t->e(i % 2 ? Op::Add : Op::Mul, {consts.back()});
  }
  // the intermediate results died as the chain grew: every leaf has exactly the final op as child
  CHECK(x->childCount() == 1);
  for (const auto &c : consts) CHECK(c->childCount() == 1);
  // buffers() is the deduplicated leaf list in first-seen order: x, then the constants
  const auto &bufs = t->op->buffers();
  REQUIRE(bufs.size() == consts.size() + 1);
  CHECK(bufs[0] == x.get());
  for (size_t i = 0; i < consts.size(); ++i) CHECK(bufs[i + 1] == consts[i].get());
  // lazyops() is preorder with every node: the 300 merged elementwise ops
  auto ops = t->op->lazyops();
  CHECK(ops.size() == 300);
  CHECK(ops.front() == t->op.get());
  t.reset();
  CHECK((x->childCount() == 0));
  for (const auto &c : consts) CHECK((c->childCount() == 0));
}

TEST_CASE("LazyOp::buffers deduplicates a buffer used by several merged sources") {
  auto x = emptyBuf(8);
  auto y = emptyBuf(8);
  auto l = x->e(Op::Add, {y});
  auto r = y->e(Op::Mul, {x});
  auto lop = l->op, rop = r->op;
  l.reset(); // childless elementwise sources are merged into the consumer
  r.reset();
  auto s = LazyBuffer::create("CPU", ShapeTracker::fromShape({SInt(8)}), OpType::Binary,
                              LazyOp::make(Op::Sub, {LazySrc(lop), LazySrc(rop)}), dtypes::float32);
  const auto &bufs = s->op->buffers();
  REQUIRE(bufs.size() == 2);
  CHECK(bufs[0] == x.get());
  CHECK(bufs[1] == y.get());
  CHECK(x->childCount() == 1);
}

TEST_CASE("LazyBuffer children: a child whose op was dropped at realization still counts") {
  auto a = emptyBuf(4);
  auto c = a->e(Op::Neg);
  auto d = a->e(Op::Sqrt);
  c->dropOp(); // what realize does (the reference's `del op`)
  CHECK(a->childCount() == 2);
  a->discardChild(c.get());
  CHECK(a->childCount() == 1);
  d.reset();
  CHECK(a->childCount() == 0);
}

TEST_CASE("LazyBuffer children: a merged source that is still alive counts beside its consumer") {
  auto x = emptyBuf(8);
  auto one = x->constLike(1.0);
  auto t1 = x->e(Op::Add, {one});
  auto t2 = t1->e(Op::Mul, {x}); // t1 has no children: its op is merged into t2's
  CHECK(t1->childCount() == 0);
  CHECK(x->childCount() == 2);   // t1 (x + 1) and t2 ((x + 1) * x)
  CHECK(one->childCount() == 2);
  CHECK(x->childCount(1) == 1);  // the walk stops at the limit
  CHECK_FALSE(x->atMostOneChild());
  t1.reset();
  CHECK(x->childCount() == 1);
  CHECK(one->childCount() == 1);
  CHECK(x->atMostOneChild());
  t2.reset();
  CHECK(x->childless());
  CHECK(one->childless());
}

TEST_CASE("LazyBuffer children: the dedup cache hands out a discarded child again") {
  auto a = emptyBuf(4);
  auto r = a->reshape({SInt(2), SInt(2)});
  a->discardChild(r.get());
  CHECK(a->childCount() == 0);
  auto again = a->reshape({SInt(2), SInt(2)}); // an equal op over the same source: a cache hit
  CHECK(again == r);
  CHECK(a->childCount() == 1); // the reference adds the hit to its leaves' children again
}

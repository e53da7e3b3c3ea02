// The lazy graph's bookkeeping: the `children` weak sets and LazyOp::buffers()/lazyops() on long
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
  CHECK(a->children.size() == 0);
  {
    auto c = a->e(Op::Add, {b});
    CHECK(a->children.size() == 1);
    CHECK(b->children.size() == 1);
    CHECK(a->children.live().front() == c);
    auto d = a->e(Op::Mul, {b});
    CHECK(a->children.size() == 2);
  }
  CHECK(a->children.empty());
  CHECK(b->children.empty());
}

TEST_CASE("LazyBuffer children: discard removes one member; a dying parent unlinks its children") {
  auto a = emptyBuf(4);
  auto c = a->e(Op::Neg);
  auto d = a->e(Op::Sqrt);
  REQUIRE(a->children.size() == 2);
  a->children.discard(c.get());
  CHECK(a->children.size() == 1);
  a->children.discard(c.get()); // not a member any more: nothing happens
  CHECK(a->children.size() == 1);
  // the parent dies first (its op is dropped as realize does); the child must not touch it later
  auto parentOnly = emptyBuf(4);
  auto child = parentOnly->e(Op::Neg);
  CHECK(parentOnly->children.size() == 1);
  std::weak_ptr<LazyBuffer> watch = parentOnly;
  child->op = nullptr;
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
  CHECK(x->children.size() == 1);
  for (const auto &c : consts) CHECK(c->children.size() == 1);
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
  CHECK(x->children.empty());
  for (const auto &c : consts) CHECK(c->children.empty());
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
  CHECK(x->children.size() == 1);
}

// The lazy graph's bookkeeping: children counts (childCount over the graph links) and
// merged chains. Fusion decisions read these counts, so they must match Python's WeakSet exactly.
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Graph/WalkMarks.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/Config.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

using namespace lazyjit;

namespace {
const GraphOptions opts; // the reference's defaults (OPT=2)

LazyBufferRef emptyBuf(int64_t n) {
  return LazyBuffer::loadop(opts, Op::Empty, {SInt(n)}, dtypes::float32, "CPU");
}
} // namespace

TEST_CASE("LazyBuffer children: a child counts while it lives and leaves when it dies") {
  auto a = emptyBuf(8);
  auto b = emptyBuf(8);
  CHECK(a->childCount() == 0);
  {
    auto c = a->e(opts, Op::Add, {b});
    CHECK(a->childCount() == 1);
    CHECK(b->childCount() == 1);
    auto d = a->e(opts, Op::Mul, {b});
    CHECK(a->childCount() == 2);
  }
  CHECK((a->childCount() == 0));
  CHECK((b->childCount() == 0));
}

TEST_CASE("LazyBuffer children: discard removes one member; a dying parent unlinks its children") {
  auto a = emptyBuf(4);
  auto c = a->e(opts, Op::Neg);
  auto d = a->e(opts, Op::Sqrt);
  REQUIRE(a->childCount() == 2);
  a->discardChild(c.get());
  CHECK(a->childCount() == 1);
  a->discardChild(c.get()); // discarded already: nothing changes
  CHECK(a->childCount() == 1);
  // the parent dies first (its op is dropped as realize does); the child must not touch it later
  auto parentOnly = emptyBuf(4);
  auto child = parentOnly->e(opts, Op::Neg);
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
    consts.push_back(x->constLike(opts, 1.0 + i));
    t = t->e(opts, i % 2 ? Op::Add : Op::Mul, {consts.back()});
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
  auto l = x->e(opts, Op::Add, {y});
  auto r = y->e(opts, Op::Mul, {x});
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
  auto c = a->e(opts, Op::Neg);
  auto d = a->e(opts, Op::Sqrt);
  c->dropOp(); // what realize does (the reference's `del op`)
  CHECK(a->childCount() == 2);
  a->discardChild(c.get());
  CHECK(a->childCount() == 1);
  d.reset();
  CHECK(a->childCount() == 0);
}

TEST_CASE("LazyBuffer children: a merged source that is still alive counts beside its consumer") {
  auto x = emptyBuf(8);
  auto one = x->constLike(opts, 1.0);
  auto t1 = x->e(opts, Op::Add, {one});
  auto t2 = t1->e(opts, Op::Mul, {x}); // t1 has no children: its op is merged into t2's
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
  auto r = a->reshape(opts, {SInt(2), SInt(2)});
  a->discardChild(r.get());
  CHECK(a->childCount() == 0);
  auto again = a->reshape(opts, {SInt(2), SInt(2)}); // an equal op over the same source: a cache hit
  CHECK(again == r);
  CHECK(a->childCount() == 1); // the reference adds the hit to its leaves' children again
}

TEST_CASE("LazyBuffer ops are built under the options they are given, not the configuration") {
  // the configuration says OPT=2 with the cache and view merging on; each op below is given
  // other options and must follow them
  Config c = config();
  c.opt = 2;
  c.lazyCache = true;
  c.mergeView = true;
  c.reduceSplitThreshold = 32768;
  ScopedConfig scope(c);
  auto a = emptyBuf(8);

  SUBCASE("fusion flags: OPT=0 keeps a childless elementwise source a buffer, OPT=2 merges it") {
    const GraphOptions level0 = GraphOptions::forLevel(0);
    auto t = a->e(level0, Op::Neg);
    auto u = t->e(level0, Op::Sqrt);
    CHECK(u->op->src[0].isBuffer());
    auto v = a->e(opts, Op::Exp2);
    auto w = v->e(opts, Op::Sqrt);
    CHECK_FALSE(w->op->src[0].isBuffer());
  }
  SUBCASE("LAZYCACHE: equal ops share a buffer only with the cache on") {
    GraphOptions noCache;
    noCache.lazyCache = false;
    CHECK(a->e(noCache, Op::Neg) != a->e(noCache, Op::Neg));
    auto n1 = a->e(opts, Op::Neg);
    CHECK(a->e(opts, Op::Neg) == n1);
  }
  SUBCASE("MERGE_VIEW: a reshape adds a view only when merging is off") {
    GraphOptions noMerge;
    noMerge.mergeView = false;
    CHECK(a->reshape(opts, {SInt(2), SInt(4)})->st.views.size() == 1);
    auto b = emptyBuf(8); // (an equal op over `a` would be a cache hit, whatever its view)
    CHECK(b->reshape(noMerge, {SInt(2), SInt(4)})->st.views.size() == 2);
  }
  SUBCASE("REDUCEOP_SPLIT_THRESHOLD: a reduce splits in two at or above the threshold only") {
    auto big = emptyBuf(1 << 16);
    auto split = big->r(opts, Op::Sum, {SInt(1)});
    REQUIRE(split->op->src[0].isBuffer());
    CHECK(split->op->src[0].buf->shape == Shape{SInt(256)}); // the second stage reduces 256 partials
    GraphOptions noSplit;
    noSplit.reduceSplitThreshold = int64_t(1) << 20;
    auto whole = big->r(noSplit, Op::Sum, {SInt(1)});
    REQUIRE(whole->op->src[0].isBuffer());
    CHECK(whole->op->src[0].buf->shape == Shape{SInt(1 << 16)});
    // the ops a split builds inside r() follow the options too: without MERGE_VIEW the reshape
    // of the first stage's partials keeps its own view
    GraphOptions noMerge;
    noMerge.mergeView = false;
    auto unmerged = emptyBuf(1 << 16)->r(noMerge, Op::Sum, {SInt(1)});
    REQUIRE(unmerged->op->src[0].isBuffer());
    CHECK(unmerged->op->src[0].buf->st.views.size() == 2);
    CHECK(split->op->src[0].buf->st.views.size() == 1);
  }
}

TEST_CASE("LazyBuffer dedup cache: a buffer that dies takes its entry with it") {
  // the entry's weak references would keep the dead buffer's memory until a sweep
  auto a = emptyBuf(8);
  size_t before = lazyCacheSize();
  auto n = a->e(opts, Op::Neg);
  auto r = a->reshape(opts, {SInt(2), SInt(4)});
  CHECK(lazyCacheSize() == before + 2);
  CHECK(a->e(opts, Op::Neg) == n); // a hit: no new entry
  CHECK(lazyCacheSize() == before + 2);
  n.reset();
  CHECK(lazyCacheSize() == before + 1);
  r.reset();
  CHECK(lazyCacheSize() == before);
  GraphOptions noCache;
  noCache.lazyCache = false;
  auto u = a->e(noCache, Op::Sqrt); // never cached: nothing to take out
  CHECK(lazyCacheSize() == before);
  u.reset();
  CHECK(lazyCacheSize() == before);
}

TEST_CASE("LazyBuffer dedup cache: a leaf read by many ops finds each of them") {
  // the cache files a buffer under its op's newest leaf, in a list of at most 16 there; the rest
  // go to its table, where a lookup must look too
  auto a = emptyBuf(64);
  size_t before = lazyCacheSize();
  std::vector<LazyBufferRef> views; // 63 views (a shrink to the whole of `a` is `a` itself)
  for (int i = 1; i < 64; ++i) views.push_back(a->shrink(opts, {{SInt(0), SInt(i)}}));
  CHECK(lazyCacheSize() == before + 63);
  for (int i = 1; i < 64; ++i) CHECK(a->shrink(opts, {{SInt(0), SInt(i)}}) == views[i - 1]);
  CHECK(lazyCacheSize() == before + 63);
  // free a listed one and a tabled one: equal ops made again are new entries, in either place
  views[3].reset();
  views[40].reset();
  CHECK(lazyCacheSize() == before + 61);
  auto again3 = a->shrink(opts, {{SInt(0), SInt(4)}}), again40 = a->shrink(opts, {{SInt(0), SInt(41)}});
  CHECK(lazyCacheSize() == before + 63);
  CHECK(a->shrink(opts, {{SInt(0), SInt(4)}}) == again3);
  CHECK(a->shrink(opts, {{SInt(0), SInt(41)}}) == again40);
  // an op over two leaves is filed under the newer: the same buffer is found either way round
  auto b = emptyBuf(64);
  auto sum = a->e(opts, Op::Add, {b});
  CHECK(a->e(opts, Op::Add, {b}) == sum);
  CHECK(sum->op->newestLeaf() == b.get());
  CHECK(b->e(opts, Op::Add, {a}) != sum); // (a different op: its sources are the other way round)
  views.clear();
  again3.reset();
  again40.reset();
  sum.reset();
  CHECK(lazyCacheSize() == before);
}

TEST_CASE("LazyBuffer dedup cache: a leaf that dies takes the entries filed under it") {
  // a realized buffer drops its op, so its leaf may die first; no live op can equal the entry's
  // then, and the entry leaves the cache with the leaf (its own death finds nothing to take out)
  size_t before = lazyCacheSize();
  auto a = emptyBuf(8);
  auto n = a->e(opts, Op::Neg);
  CHECK(lazyCacheSize() == before + 1);
  n->dropOp();
  a.reset();
  CHECK(lazyCacheSize() == before);
  n.reset();
  CHECK(lazyCacheSize() == before);
}

TEST_CASE("LazyBuffer dedup cache: hits survive the table's growth and sweeps, and a freed graph leaves nothing") {
  auto a = emptyBuf(8);
  size_t before = lazyCacheSize();
  // 30,000 entries: the table rehashes several times and sweeps on the way
  std::vector<LazyBufferRef> chain{a->e(opts, Op::Neg)};
  for (int i = 0; i < 30000; ++i) chain.push_back(chain.back()->e(opts, i % 2 ? Op::Sqrt : Op::Neg));
  CHECK(lazyCacheSize() == before + chain.size());
  CHECK(a->e(opts, Op::Neg) == chain[0]);
  CHECK(chain[20000]->e(opts, Op::Neg) == chain[20001]);
  auto other = chain[20000]->e(opts, Op::Sqrt); // another op: a new buffer, an entry
  CHECK(other != chain[20001]);
  CHECK(lazyCacheSize() == before + chain.size() + 1);
  other.reset();
  CHECK(lazyCacheSize() == before + chain.size());
  // the chain's last 10,000 buffers die (the ones before are their sources): their entries go
  chain.resize(chain.size() - 10000);
  CHECK(lazyCacheSize() == before + 20001);
  CHECK(chain[1000]->e(opts, chain[1001]->op->op) == chain[1001]);
  chain.clear();
  CHECK(lazyCacheSize() == before);
}

TEST_CASE("LazyBuffer dedup cache: threads building graphs of their own share the cache's lock") {
  // the cache is global behind a spin lock: each thread's hits are its own buffers, and every
  // entry leaves with its buffer whichever thread frees it
  size_t before = lazyCacheSize();
  std::atomic<int> wrongHits{0}, wrongSizes{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        auto a = emptyBuf(8 + t);
        std::vector<LazyBufferRef> chain{a->e(opts, Op::Neg)};
        for (int i = 0; i < 500; ++i) chain.push_back(chain.back()->e(opts, i % 2 ? Op::Sqrt : Op::Neg));
        for (int i = 0; i < 500; i += 50)
          if (chain[i]->e(opts, chain[i + 1]->op->op) != chain[i + 1]) ++wrongHits;
        if (chain.back()->shape != Shape{SInt(8 + t)}) ++wrongSizes;
      }
    });
  for (auto &th : threads) th.join();
  CHECK(wrongHits == 0);
  CHECK(wrongSizes == 0);
  CHECK(lazyCacheSize() == before);
}

TEST_CASE("LazyBuffer nodes: one interned device name, small nodes, an output buffer set and cleared") {
  // a long graph's build and schedule time follows its bytes per node: these are the sizes the
  // bench's W9b figures were measured with (libstdc++ on x86-64)
  CHECK(sizeof(LazyBuffer) <= 224);
  CHECK(sizeof(LazyOp) <= 272);
  auto a = emptyBuf(4), b = emptyBuf(4);
  auto c = LazyBuffer::loadop(opts, Op::Empty, {SInt(4)}, dtypes::float32, std::string("CP") + "U");
  CHECK(&a->device == &b->device);
  CHECK(&a->device == &c->device); // equal names share one copy, however the caller made theirs
  auto g = LazyBuffer::loadop(opts, Op::Empty, {SInt(4)}, dtypes::float32, "CPU:1");
  CHECK(g->device == "CPU:1");
  CHECK(&g->device != &a->device);
  CHECK(&internDevice("CPU:1") == &g->device);
  // the output buffer lives in the part made on first use: unset, set, cleared
  CHECK(a->outputBuffer() == nullptr);
  auto storage = std::shared_ptr<Buffer>(reinterpret_cast<Buffer *>(new int(0)), [](Buffer *p) {
    delete reinterpret_cast<int *>(p);
  });
  a->setOutputBuffer(storage);
  CHECK(a->outputBuffer() == storage);
  CHECK(b->outputBuffer() == nullptr);
  a->setOutputBuffer(nullptr);
  CHECK(a->outputBuffer() == nullptr);
}

TEST_CASE("WalkMarks: a walk's marks live in the nodes, one walk per thread, cleared when it ends") {
  auto x = emptyBuf(8), y = emptyBuf(8);
  auto s = x->e(opts, Op::Add, {y});
  const LazyOp &op = *s->op;
  {
    WalkMarks marks;
    CHECK(marks.of(op) == 0);
    CHECK_FALSE(marks.flagged(*x));
    marks.set(op, 7);
    CHECK(marks.of(op) == 7);
    marks.set(op, 9); // (renumbering a node records it once)
    CHECK(marks.of(op) == 9);
    CHECK(marks.flag(*x));
    CHECK_FALSE(marks.flag(*x)); // flagged already
    CHECK(marks.flagged(*x));
    CHECK_FALSE(marks.flagged(*y));
    // a second walk on this thread would read the first one's marks as its own
    CHECK_THROWS_WITH_AS(WalkMarks(), doctest::Contains("inside another walk"), InternalError);
    // another thread's walk is its own (over nodes of its own: the graph is not thread-safe)
    bool otherThread = false;
    std::thread([&] {
      auto z = emptyBuf(8);
      WalkMarks theirs;
      otherThread = theirs.flag(*z) && theirs.flagged(*z);
    }).join();
    CHECK(otherThread);
  }
  WalkMarks next; // the first walk's marks were cleared when it ended
  CHECK(next.of(op) == 0);
  CHECK_FALSE(next.flagged(*x));
}

TEST_CASE("WalkMarks: a walk that throws leaves no marks behind") {
  auto x = emptyBuf(8);
  auto s = x->e(opts, Op::Neg);
  try {
    WalkMarks marks;
    marks.set(*s->op, 1);
    marks.flag(*x);
    throw Error("stop the walk");
  } catch (const Error &) {
  }
  WalkMarks next;
  CHECK(next.of(*s->op) == 0);
  CHECK_FALSE(next.flagged(*x));
}

TEST_CASE("LazyOp::buffers: shared subtrees and repeated leaves, and no marks left after") {
  auto x = emptyBuf(8), y = emptyBuf(8), z = emptyBuf(8);
  auto xy = x->e(opts, Op::Mul, {y});      // read twice below: a shared subtree
  auto u = xy->e(opts, Op::Add, {xy});     // (x*y) + (x*y)
  auto v = z->e(opts, Op::Sub, {x});       // x again, after z
  auto w = u->e(opts, Op::Mul, {v});
  xy.reset();
  u.reset();
  v.reset();
  const auto &bufs = w->op->buffers();
  REQUIRE(bufs.size() == 3);
  CHECK(bufs[0] == x.get());
  CHECK(bufs[1] == y.get());
  CHECK(bufs[2] == z.get());
  WalkMarks after;
  for (LazyBuffer *b : bufs) CHECK_FALSE(after.flagged(*b));
  for (const LazyOp *o : w->op->uniqueOps()) CHECK(after.of(*o) == 0);
}

TEST_CASE("LazyBuffer::isUnrealizedConst: a constant whose base drops its op is no longer one") {
  auto x = emptyBuf(8);
  auto c = x->constLike(opts, 2.0);
  REQUIRE(c->isView());
  auto v = c->reshape(opts, {SInt(2), SInt(4)});
  CHECK(c->isUnrealizedConst());
  CHECK(v->isUnrealizedConst());
  CHECK(c->base()->isUnrealizedConst());
  CHECK_FALSE(x->isUnrealizedConst());
  c->dropOp(); // a view's own op: the base still is a constant
  CHECK(c->isUnrealizedConst());
  c->base()->dropOp();
  CHECK_FALSE(c->base()->isUnrealizedConst());
  CHECK_FALSE(c->isUnrealizedConst());
  CHECK_FALSE(v->isUnrealizedConst());
}

TEST_CASE("LazyOp hashes: a long chain of one op has no two ops with one hash") {
  // a chain of `-x` hashes each op from its source's hash by one and the same function; with 32
  // bits of hash that iteration fell into a cycle after ~2^16 ops, distinct ops shared a hash, and
  // the dedup cache compared each new op with an old one node by node (quadratic building)
  auto x = emptyBuf(4);
  LazyBufferRef t = x;
  constexpr int kDepth = 150000;
  for (int i = 0; i < kDepth; ++i) t = t->e(opts, Op::Neg);
  std::vector<size_t> hashes;
  for (const LazyOp *o = t->op.get(); o; o = srcOp(o->src[0])) hashes.push_back(o->hash());
  REQUIRE(hashes.size() == kDepth);
  std::sort(hashes.begin(), hashes.end());
  CHECK(std::adjacent_find(hashes.begin(), hashes.end()) == hashes.end());
}

// The kernel IR (KernelOp): one node per structure, with its dtype and shape computed when it is
// built, and no way to put a load op or a host function into a kernel.
#include "lazyjit/Schedule/KernelOp.h"
#include "lazyjit/Schedule/NodeDType.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <thread>

using namespace lazyjit;

namespace {
KernelOpRef load(int idx, Shape shape, DType dt = dtypes::float32) {
  return KernelOp::load(idx, dt, ShapeTracker::fromShape(shape));
}
KernelOpRef constant(double v, Shape shape) {
  return KernelOp::constant(v, dtypes::float32, ShapeTracker::fromShape(shape));
}
} // namespace

TEST_CASE("KernelOp: equal structures are one node; any difference is another") {
  KernelOpRef a = KernelOp::make(Op::Add, {load(1, {4, 8}), constant(2, {4, 8})});
  KernelOpRef b = KernelOp::make(Op::Add, {load(1, {4, 8}), constant(2, {4, 8})});
  CHECK(a == b); // the same object: equality is identity
  CHECK(a->hash() == b->hash());
  CHECK(a->src[0] == b->src[0]);
  // each difference makes another node: the op, an operand's order, a buffer index, a dtype, a view
  CHECK(KernelOp::make(Op::Mul, {load(1, {4, 8}), constant(2, {4, 8})}) != a);
  CHECK(KernelOp::make(Op::Add, {constant(2, {4, 8}), load(1, {4, 8})}) != a);
  CHECK(KernelOp::make(Op::Add, {load(2, {4, 8}), constant(2, {4, 8})}) != a);
  CHECK(load(1, {4, 8}, dtypes::float16) != load(1, {4, 8}));
  CHECK(load(1, {8, 4}) != load(1, {4, 8}));
  CHECK(KernelOp::make(Op::Sum, {load(1, {4, 8})}, Shape{4, 1}) != KernelOp::make(Op::Sum, {load(1, {4, 8})}, Shape{1, 8}));
  CHECK(KernelOp::make(Op::Cast, {a}, CastArg{dtypes::int32, false}) != KernelOp::make(Op::Cast, {a}, CastArg{dtypes::int32, true}));
}

TEST_CASE("KernelOp: constants are identical values: -0.0 is not 0.0, NaNs of one sign are one NaN") {
  // Python's equality (the lazy graph's) says -0.0 == 0.0; a kernel that adds -0.0 keeps a -0.0
  // input's sign, so the two constants must stay two nodes
  CHECK(constant(0.0, {4}) != constant(-0.0, {4}));
  CHECK(std::signbit(constant(-0.0, {4})->constBuffer().val));
  CHECK(constant(std::nan("1"), {4}) == constant(std::nan("2"), {4}));
  CHECK(constant(std::nan("1"), {4}) != constant(-std::nan("1"), {4})); // printed `nan` and `-nan`
  CHECK(constant(1.5, {4}) == constant(1.5, {4}));
}

TEST_CASE("KernelOp: the dtype and shape of each node are computed when it is built") {
  KernelOpRef h = load(1, {4, 8}, dtypes::float16), i = load(2, {4, 8}, dtypes::int32);
  KernelOpRef add = KernelOp::make(Op::Add, {h, i});
  CHECK(add->kernelDType() == dtypes::float16);
  REQUIRE(add->shape() != nullptr);
  CHECK(*add->shape() == Shape{4, 8});
  KernelOpRef sum = KernelOp::make(Op::Sum, {add}, Shape{4, 1});
  CHECK(*sum->shape() == Shape{4, 1});
  CHECK(sum->kernelDType() == dtypes::float16);
  KernelOpRef back = KernelOp::make(Op::Expand, {sum}, Shape{4, 8});
  CHECK(*back->shape() == Shape{4, 8});
  KernelOpRef cast = KernelOp::make(Op::Cast, {back}, CastArg{dtypes::float32, false});
  CHECK(cast->kernelDType() == dtypes::float32);
  KernelOpRef store = KernelOp::store(cast, 0, dtypes::float32, ShapeTracker::fromShape({4, 8}));
  CHECK(store->kernelDType() == dtypes::float32);
  CHECK(kernelDTypeOf(*store) == dtypes::float32);

  // a malformed node has neither, and neither has anything built over it; kernelDTypeOf names it
  KernelOpRef reshape = KernelOp::make(Op::Reshape, {h}, Shape{32});
  CHECK_FALSE(reshape->kernelDType().has_value());
  CHECK(reshape->shape() == nullptr);
  KernelOpRef over = KernelOp::store(KernelOp::make(Op::Exp2, {reshape}), 0, dtypes::float16, ShapeTracker::fromShape({32}));
  CHECK_FALSE(over->kernelDType().has_value());
  const KernelOp *bad = nullptr;
  CHECK_FALSE(kernelDTypeOf(*over, &bad).has_value());
  CHECK(bad == reshape.get());
  CHECK_FALSE(KernelOp::make(Op::Add, {h})->kernelDType().has_value());          // one operand of two
  CHECK_FALSE(KernelOp::make(Op::Cast, {h}, Shape{4})->kernelDType().has_value()); // not a CastArg
  KernelOpRef noView = KernelOp::load(1, dtypes::float32, ShapeTracker{}); // (the verifier names it)
  CHECK_FALSE(noView->kernelDType().has_value());
  CHECK(noView->shape() == nullptr);
}

TEST_CASE("KernelOp: a kernel holds no load op and no host function") {
  KernelOpRef ld = load(1, {4});
  for (Op op : {Op::Empty, Op::Copy, Op::Custom, Op::Contiguous, Op::LoadConst}) {
    std::string want = "a kernel cannot hold " + std::string(opName(op));
    CHECK_THROWS_WITH_AS(KernelOp::make(op, {ld}), doctest::Contains(want.c_str()), InternalError);
  }
  auto fill = std::make_shared<const CustomOp>(CustomOp{"fill", [](Buffer &) {}});
  CHECK_THROWS_WITH_AS(KernelOp::make(Op::Exp2, {ld}, fill), doctest::Contains("cannot hold a host function"),
                       InternalError);
  CHECK_THROWS_WITH_AS(KernelOp::make(Op::Exp2, {nullptr}), doctest::Contains("has a null source"), InternalError);
}

TEST_CASE("KernelOp: a node leaves the table when its last owner drops it") {
  size_t before = kernelOpCount();
  {
    KernelOpRef x = KernelOp::make(Op::Sqrt, {KernelOp::make(Op::Add, {load(7, {3, 5}), load(8, {3, 5})})});
    CHECK(kernelOpCount() == before + 4);
    KernelOpRef again = KernelOp::make(Op::Sqrt, {KernelOp::make(Op::Add, {load(7, {3, 5}), load(8, {3, 5})})});
    CHECK(kernelOpCount() == before + 4);
    CHECK(again == x);
  }
  CHECK(kernelOpCount() == before);
}

TEST_CASE("KernelOp: nodes filed under their first source stay one node per structure past a full list") {
  // a node with sources is filed in a short list on its first source (KeyedList.h, 16 at most);
  // the others go to the table: 40 users of one source, found again wherever they were filed,
  // some dropped from the middle of the list and of the table, then built again
  size_t before = kernelOpCount();
  KernelOpRef x = load(9, {6, 7});
  std::vector<KernelOpRef> users;
  for (int i = 0; i < 40; ++i) users.push_back(KernelOp::make(Op::Add, {x, constant(i, {6, 7})}));
  size_t all = kernelOpCount();
  CHECK(all == before + 1 + 40 + 40);
  for (int i = 0; i < 40; ++i) CHECK(KernelOp::make(Op::Add, {x, constant(i, {6, 7})}) == users[i]);
  CHECK(kernelOpCount() == all);
  // (the list holds the newest first: index 38 is in it, 3 in the table)
  for (int i : {3, 20, 38}) users[i].reset();
  CHECK(kernelOpCount() == all - 6);
  for (int i = 0; i < 40; ++i) {
    KernelOpRef again = KernelOp::make(Op::Add, {x, constant(i, {6, 7})});
    if (users[i]) CHECK(again == users[i]);
    else users[i] = again;
  }
  CHECK(kernelOpCount() == all);
  // a source with its users gone files new ones in its list again
  users.clear();
  CHECK(kernelOpCount() == before + 1);
  KernelOpRef y = KernelOp::make(Op::Add, {x, constant(1, {6, 7})});
  CHECK(KernelOp::make(Op::Add, {x, constant(1, {6, 7})}) == y);
  y.reset();
  x.reset();
  CHECK(kernelOpCount() == before);
}

TEST_CASE("KernelOp: threads building and dropping the same nodes share them") {
  // every thread builds the same trees over and over while the others drop theirs: a node found
  // while it is dying is replaced by a new one, and no thread ever gets two nodes for one structure
  size_t before = kernelOpCount();
  std::atomic<int> mismatches{0};
  auto build = [](int i) {
    KernelOpRef x = load(1, {16});
    for (int k = 0; k < 8; ++k) x = KernelOp::make(k % 2 ? Op::Exp2 : Op::Add, k % 2 ? std::vector<KernelOpRef>{x} : std::vector<KernelOpRef>{x, constant(i % 5, {16})});
    return x;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        KernelOpRef a = build(i), b = build(i);
        if (a != b) ++mismatches;
      }
    });
  for (auto &t : threads) t.join();
  CHECK(mismatches == 0);
  CHECK(kernelOpCount() == before);
}

TEST_CASE("KernelOp: a chain 200,000 nodes deep is freed without recursion") {
  size_t before = kernelOpCount();
  {
    KernelOpRef x = load(1, {4}); // (another test's kernel may hold this one)
    size_t leaves = kernelOpCount();
    for (int i = 0; i < 200000; ++i) x = KernelOp::make(i % 2 ? Op::Neg : Op::Exp2, {x});
    CHECK(kernelOpCount() == leaves + 200000);
    CHECK(x->uniqueOps().size() == 200001);
  }
  CHECK(kernelOpCount() == before);
}

TEST_CASE("KernelOp: a kernel that reads the constants 0.0 and -0.0 keeps both") {
  // 1/0.0 + 1/-0.0 is inf + -inf = NaN; 1/0.0 + 1/0.0 is inf. With the constants equal (Python's
  // equality, the lazy graph's), both programs were one AST: one text, one cache entry, and the
  // second program run got the first one's kernel.
  for (const char *device : {"CPU", "INTERP"}) {
    CAPTURE(device);
    auto program = [&](double zero) {
      auto full = [&](double v) { return Tensor::full({4}, v, TensorOptions(dtypes::float32, std::string(device))); };
      return full(1.0) / full(0.0) + full(1.0) / full(zero);
    };
    Tensor same = program(0.0), signed_ = program(-0.0);
    KernelOpRef a = schedule(same.lazydata()).back().ast, b = schedule(signed_.lazydata()).back().ast;
    CHECK(a != b);
    CHECK(astKey(*a) != astKey(*b));
    int zeros = 0, negZeros = 0;
    for (const KernelOp *x : b->uniqueOps())
      if (x->op == Op::Const && x->constBuffer().val == 0) ++(std::signbit(x->constBuffer().val) ? negZeros : zeros);
    CHECK(zeros == 1);
    CHECK(negZeros == 1);
    for (float v : same.toVector<float>()) CHECK(v == INFINITY);
    for (float v : signed_.toVector<float>()) CHECK(std::isnan(v));
  }
}

TEST_CASE("KernelOp: a kernel whose lazy tree reads leaves and subtrees again builds each node once") {
  // replaceBufferOps builds a leaf's node where its walk meets it, and again at its second meeting
  // (then keeps it): equal leaves must be one node, and the inputs numbered in buffers() order
  Tensor x = Tensor::arange(8).cast(dtypes::float32), y = Tensor::arange(8).cast(dtypes::float32) * 2.0f;
  x.realize();
  y.realize();
  Tensor t = y;
  for (int i = 0; i < 6; ++i) t = (t * x + x) * y; // x read twice per step, y once
  Tensor shared = t * t;                              // the whole chain twice: a shared subtree
  std::vector<ScheduleItem> items = schedule(shared.lazydata());
  REQUIRE(items.size() == 1);
  const ScheduleItem &k = items.back();
  // the inputs in the leaves' first-seen order: y (the chain's start), then x
  REQUIRE(k.inputs.size() == 2);
  CHECK(k.inputs[0].get() == y.lazydata()->base());
  CHECK(k.inputs[1].get() == x.lazydata()->base());
  // the same tree built by hand from interned nodes is the same object
  ShapeTracker st = ShapeTracker::fromShape({8});
  KernelOpRef lx = KernelOp::load(2, dtypes::float32, st), ly = KernelOp::load(1, dtypes::float32, st);
  KernelOpRef e = ly;
  for (int i = 0; i < 6; ++i)
    e = KernelOp::make(Op::Mul, {KernelOp::make(Op::Add, {KernelOp::make(Op::Mul, {e, lx}), lx}), ly});
  e = KernelOp::make(Op::Mul, {e, e});
  REQUIRE(k.ast->src.size() == 1);
  CHECK(k.ast->src[0] == e);
  int loads = 0;
  for (const KernelOp *n : k.ast->uniqueOps()) loads += n->op == Op::Load;
  CHECK(loads == 2);
  // and it computes what the tree says
  std::vector<float> got = shared.toVector<float>();
  for (int j = 0; j < 8; ++j) {
    double xv = j, yv = 2.0 * j, v = yv;
    for (int i = 0; i < 6; ++i) v = (v * xv + xv) * yv;
    CHECK(got[j] == doctest::Approx(v * v).epsilon(1e-5));
  }
}

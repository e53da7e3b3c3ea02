// Autograd semantics (the reference's tensor.py): requires_grad's three states and how they
// propagate, handles that alias, backward's walk and accumulation, detach and no-grad, the errors
// where the reference would assert, custom Functions, and that a used graph is freed.
#include "TensorTestUtil.h"

#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Tensor/Function.h"

#include <pthread.h>

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {
Tensor leaf(const Vals &v, const Ints &shape, std::optional<bool> rg, const std::string &dev,
            DType dt = dtypes::float32) {
  return Tensor::fromValues(v, toShape(shape), {dt, dev, rg});
}

Vals valuesOf(const Tensor &t) { return t.toVector<double>(); }

// Runs `fn` on a thread with a small stack: freeing a graph through nested destructors would
// overflow it long before the graph's depth.
void onSmallStack(void (*fn)()) {
  pthread_attr_t attr;
  REQUIRE(pthread_attr_init(&attr) == 0);
  REQUIRE(pthread_attr_setstacksize(&attr, size_t(512) << 10) == 0);
  pthread_t th;
  REQUIRE(pthread_create(&th, &attr, [](void *f) -> void * {
            reinterpret_cast<void (*)()>(f)();
            return nullptr;
          }, reinterpret_cast<void *>(fn)) == 0);
  REQUIRE(pthread_join(th, nullptr) == 0);
  pthread_attr_destroy(&attr);
}
} // namespace

TEST_CASE("Autograd: requires_grad has three states and propagates as the reference's Function") {
  for (const auto &dev : devices()) {
    CAPTURE(dev);
    Tensor unset = leaf({1, 2}, {2}, std::nullopt, dev);
    Tensor yes = leaf({1, 2}, {2}, true, dev);
    Tensor no = leaf({1, 2}, {2}, false, dev);
    CHECK_FALSE(unset.requiresGrad().has_value());
    CHECK(yes.requiresGrad() == true);
    CHECK(no.requiresGrad() == false);
    // True if any input requires a gradient, else None if any is None, else False
    CHECK((unset + no).requiresGrad() == std::nullopt);
    CHECK((no + no).requiresGrad() == false);
    CHECK((yes + unset).requiresGrad() == true);
    CHECK((no * yes).requiresGrad() == true);
    // only a result a gradient can flow through keeps its Function
    CHECK((yes * 2).gradFn() != nullptr);
    CHECK((yes * 2).gradFn()->name() == "Mul");
    CHECK((unset * 2).gradFn() == nullptr);
    CHECK(yes.detach().requiresGrad() == false);
    CHECK(yes.detach().gradFn() == nullptr);
    // creation options reach the loadop; the reshape after it carries them on
    Tensor r = Tensor::rand({2, 3}, {std::nullopt, dev, true});
    CHECK(r.requiresGrad() == true);
    CHECK(Tensor::zeros({2}, {std::nullopt, dev, false}).requiresGrad() == false);
    // scalars of binary ops never require a gradient
    CHECK((unset + 1).requiresGrad() == std::nullopt);
  }
}

TEST_CASE("Autograd: copies of a Tensor alias one tensor, as Python names do") {
  Tensor a = leaf({1, 2, 3}, {3}, true, "CPU");
  Tensor b = a; // same object
  CHECK(b.sameAs(a));
  (a * a).sum().backward();
  REQUIRE(b.grad().has_value());
  CHECK(valuesOf(*b.grad()) == Vals{2, 4, 6});
  b.setGrad(std::nullopt);
  CHECK_FALSE(a.grad().has_value());
  a.assign(leaf({7, 8, 9}, {3}, false, "CPU"));
  CHECK(valuesOf(b) == Vals{7, 8, 9});
  // rebinding a name makes a new tensor, as in Python
  b = b + 1;
  CHECK_FALSE(b.sameAs(a));
  CHECK(valuesOf(a) == Vals{7, 8, 9});
}

TEST_CASE("Autograd: backward accumulates, reaches intermediates and frees the walked graph") {
  for (const auto &dev : devices()) {
    CAPTURE(dev);
    Tensor x = leaf({1, -2, 3}, {3}, true, dev);
    Tensor y = x * x; // intermediate: gets a grad too, as in the reference
    Tensor loss = y.sum();
    CHECK(loss.gradFn() != nullptr);
    loss.backward();
    CHECK(loss.gradFn() == nullptr); // del t0._ctx
    CHECK(valuesOf(*x.grad()) == Vals{2, -4, 6});
    CHECK(valuesOf(*y.grad()) == Vals{1, 1, 1});
    // a second loss accumulates into the same grads
    (x * 3).sum().backward();
    CHECK(valuesOf(*x.grad()) == Vals{5, -1, 9});
    // a tensor used twice gets the sum of both paths
    Tensor z = leaf({2}, {1}, true, dev);
    (z * z * z).sum().backward(); // d/dz z^3 = 3 z^2
    CHECK(valuesOf(*z.grad()) == Vals{12});
    // only inputs that require a gradient get one
    Tensor c = leaf({1, 1, 1}, {3}, false, dev);
    Tensor u = leaf({1, 1, 1}, {3}, std::nullopt, dev);
    Tensor w = leaf({2, 2, 2}, {3}, true, dev);
    (c * w + u * w).sum().backward();
    CHECK_FALSE(c.grad().has_value());
    CHECK_FALSE(u.grad().has_value());
    CHECK(valuesOf(*w.grad()) == Vals{2, 2, 2});
  }
}

TEST_CASE("Autograd: the gradient has the dtype of the float loss") {
  Tensor x = leaf({1, 2}, {2}, true, "CPU", dtypes::float64);
  x.sum().backward();
  CHECK(x.grad()->dtype() == dtypes::float64);
  Tensor h = leaf({1, 2}, {2}, true, "CPU", dtypes::float16);
  h.toFloat().sum().backward(); // Cast's backward casts back to the input dtype
  CHECK(h.grad()->dtype() == dtypes::float16);
  CHECK(valuesOf(*h.grad()) == Vals{1, 1});
}

TEST_CASE("Autograd: no-grad mode records no graph; detach cuts it") {
  Tensor x = leaf({1, 2}, {2}, true, "CPU");
  {
    Tensor::NoGradGuard ng;
    Tensor y = x * 2;
    CHECK(y.requiresGrad() == true); // the reference still reports it
    CHECK(y.gradFn() == nullptr);
  }
  CHECK_FALSE(Tensor::noGrad);
  Tensor y = (x.detach() * x).sum();
  y.backward();
  CHECK(valuesOf(*x.grad()) == Vals{1, 2}); // only the non-detached factor
}

TEST_CASE("Autograd: contiguousBackward makes the gradient contiguous, Contiguous passes it") {
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3}, true, "CPU");
  Tensor y = x.contiguousBackward();
  CHECK(y.gradFn()->name() == "ContiguousBackward");
  CHECK(x.contiguous().gradFn()->name() == "Contiguous");
  (y.permute({1, 0}) * leaf({1, 2, 3, 4, 5, 6}, {3, 2}, false, "CPU")).sum().backward();
  // the gradient reaching x is the transpose of the weights, realized contiguously
  CHECK(valuesOf(*x.grad()) == Vals{1, 3, 5, 2, 4, 6});
}

TEST_CASE("Autograd: errors where the reference asserts name the op and the reason") {
  Tensor x = leaf({1, 2, 3}, {3}, true, "CPU");
  CHECK_THROWS_WITH_AS((x * 2).backward(), doctest::Contains("backward: can only be called on a scalar (0-d) tensor, but it is float32[3]"),
                       ShapeError);
  Tensor nograd = leaf({1}, {1}, std::nullopt, "CPU").sum();
  CHECK_THROWS_WITH_AS(nograd.backward(), doctest::Contains("does not require a gradient and has no graph"), Error);
  // a gradient through a comparison that was not detached
  CHECK_THROWS_WITH_AS(x.lt(2).mul(x).sum().backward(),
                       doctest::Contains("backward: Less has no gradient (comparisons and xor are not differentiable)"),
                       UnsupportedError);
  // a comparison used only as a where condition never gets its gradient
  Tensor x2 = leaf({1, 2, 3}, {3}, true, "CPU");
  CHECK_THROWS_WITH_AS(x2.gt(1.5).where(x2, 0.0).sum().backward(),
                       doctest::Contains("backward: no gradient reached the output of Less"), Error);
  // ... and detached it works
  Tensor x3 = leaf({1, 2, 3}, {3}, true, "CPU");
  x3.gt(1.5).detach().where(x3, 0.0).sum().backward();
  CHECK(valuesOf(*x3.grad()) == Vals{0, 1, 1});
  // a graph walks once
  Tensor x4 = leaf({1, 2}, {2}, true, "CPU");
  Tensor l = (x4 * x4).sum();
  l.backward();
  CHECK_THROWS_WITH_AS(l.backward(), doctest::Contains("already used and freed by an earlier backward()"), Error);
  // assign takes no gradient
  Tensor p = leaf({1, 2}, {2}, false, "CPU");
  CHECK_THROWS_WITH_AS(p.assign(x4 * 2), doctest::Contains("assign: the new value float32[2] requires a gradient"), Error);
  CHECK_THROWS_WITH_AS(p.setGrad(leaf({1}, {1}, false, "CPU")), doctest::Contains("setGrad: gradient float32[1] does not match"),
                       ShapeError);
}

TEST_CASE("Autograd: a symbolic shrink has no backward") {
  NodeRef n = Variable("n", 1, 4);
  Tensor x = leaf({1, 2, 3, 4}, {4}, true, "CPU");
  Tensor s = x.shrink({SIntPair(SInt(0), SInt(n->bind(2)))});
  CHECK_THROWS_WITH_AS(s.sum().backward(), doctest::Contains("backward: Shrink: a symbolic shrink has no backward"),
                       UnsupportedError);
}

namespace {
// A user-defined primitive: y = x^3 with dy/dx = 3x^2.
struct Cube : Function {
  LazyBufferRef x;
  std::string_view name() const override { return "Cube"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override {
    x = in[0];
    return x->e(opts, Op::Mul, {x})->e(opts, Op::Mul, {x});
  }
  std::vector<LazyBufferRef> backward(const LazyBufferRef &g) override {
    return {x->e(opts, Op::Mul, {x})->e(opts, Op::Mul, {x->constLike(opts, 3)})->e(opts, Op::Mul, {g})};
  }
};
struct BadShape : Function {
  std::string_view name() const override { return "BadShape"; }
  LazyBufferRef forward(const LazyBufferRefs &in) override { return in[0]; }
  std::vector<LazyBufferRef> backward(const LazyBufferRef &g) override { return {g->reshape(opts, {1, 3})}; }
};
} // namespace

TEST_CASE("Autograd: custom Functions take part in backward") {
  for (const auto &dev : devices()) {
    CAPTURE(dev);
    Tensor x = leaf({1, 2, -1}, {3}, true, dev);
    Tensor y = Function::apply(std::make_shared<Cube>(), {x});
    CHECK(valuesOf(y) == Vals{1, 8, -1});
    y.sum().backward();
    CHECK(valuesOf(*x.grad()) == Vals{3, 12, 3});
    Tensor z = leaf({1, 2, 3}, {3}, true, dev);
    CHECK_THROWS_WITH_AS(Function::apply(std::make_shared<BadShape>(), {z}).sum().backward(),
                         doctest::Contains("backward: BadShape returned a gradient of shape [1, 3] for input 0 of shape [3]"),
                         ShapeError);
  }
}

TEST_CASE("Autograd: floor and ceil pass no gradient through their comparison") {
  Tensor x = leaf({0.5, 1.5}, {2}, true, "CPU");
  x.floor().add(x.ceil()).sum().backward(); // the reference trips its assertion here
  REQUIRE(x.grad().has_value());
}

TEST_CASE("Autograd: backward of a long chain walks iteratively") {
  // 20000 Functions deep (Python's recursion limit is 1000); reshapes keep the lazy graph flat
  Tensor x = leaf({1, 2, 3}, {3}, true, "CPU");
  Tensor y = x;
  for (int i = 0; i < 20000; ++i) y = i % 2 ? y.reshape({3}) : y.reshape({1, 3});
  (y * leaf({1, 2, 3}, {3}, false, "CPU")).sum().backward();
  CHECK(valuesOf(*x.grad()) == Vals{1, 2, 3});
}

TEST_CASE("Autograd: a graph 100000 ops deep is freed without recursion") {
  static constexpr int kDepth = 100000;
  static size_t before, built;
  before = liveLazyBufferCount();
  onSmallStack([] {
    // a lazy graph 100000 unrealized ops deep (one merged elementwise tree: no constant leaves),
    // each op's Function keeping its parent Tensor
    Tensor x = Tensor::fromValues({1, 2, 3}, Shape{3}, {dtypes::float32, "CPU", true});
    Tensor y = x;
    for (int i = 0; i < kDepth; ++i) y = -y;
    built = liveLazyBufferCount();
  });
  CHECK(built > before + kDepth);
  CHECK(liveLazyBufferCount() <= before + 2);
}

TEST_CASE("Autograd: the graph of a backward pass is freed once the gradients are realized") {
  size_t before = liveLazyBufferCount();
  {
    Tensor w = leaf({1, 2, 3, 4}, {2, 2}, true, "CPU");
    w.realize();
    size_t withW = liveLazyBufferCount();
    std::weak_ptr<LazyBuffer> act;
    {
      Tensor h = w.matmul(w).relu();
      act = h.lazydata();
      h.sum().backward();
    }
    CHECK_FALSE(act.expired()); // the unrealized gradient still needs the activation
    w.grad()->realize();        // realizing drops the ops that reference the forward graph
    CHECK(act.expired());
    w.setGrad(std::nullopt);
    CHECK(liveLazyBufferCount() <= withW + 2);
  }
  CHECK(liveLazyBufferCount() <= before + 2);
}

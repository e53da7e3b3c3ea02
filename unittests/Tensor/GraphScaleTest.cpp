// Graphs as long as a user can build: a chain of a million element-wise ops is built, scheduled
// and freed on a 1 MiB stack (every graph walk of the library is iterative), the kernel of a
// 100,000-op chain is lowered to LLVM IR and interpreted there too, and a chain of thousands of
// kernels schedules and runs with results equal to the closed form.
#include "KernelTestUtil.h"
#include "TensorTestUtil.h"

#include "lazyjit/Support/Config.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Schedule/Schedule.h"

#include <pthread.h>

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {
// Runs `fn` on a thread with a 1 MiB stack (an eighth of the default) and rethrows its failure.
template <typename F> void onSmallStack(F fn) {
  struct Job {
    F *fn;
    std::exception_ptr error;
  } job{&fn, nullptr};
  pthread_attr_t attr;
  REQUIRE(pthread_attr_init(&attr) == 0);
  REQUIRE(pthread_attr_setstacksize(&attr, size_t(1) << 20) == 0);
  pthread_t th;
  REQUIRE(pthread_create(&th, &attr, [](void *p) -> void * {
            auto *j = static_cast<Job *>(p);
            try {
              (*j->fn)();
            } catch (...) {
              j->error = std::current_exception();
            }
            return nullptr;
          }, &job) == 0);
  REQUIRE(pthread_join(th, nullptr) == 0);
  pthread_attr_destroy(&attr);
  if (job.error) std::rethrow_exception(job.error);
}

// The sanitizer build checks the same walks at a quarter of the length (it is ~4x slower and larger).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kMillion = 250000;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int kMillion = 250000;
#else
constexpr int kMillion = 1000000;
#endif
#else
constexpr int kMillion = 1000000;
#endif

size_t countOps(const KernelOp &ast, Op op) {
  size_t n = 0;
  for (const KernelOp *x : ast.lazyops()) n += x->op == op;
  return n;
}
} // namespace

TEST_CASE("Graph scale: a chain of a million element-wise ops is one kernel, built on a small stack") {
  constexpr int kOps = kMillion;
  size_t liveBefore = liveLazyBufferCount();
  size_t adds = 0, muls = 0, negs = 0, kernels = 0, loads = 0, opsInKernel = 0;
  onSmallStack([&] {
    Tensor y = Tensor::empty({16});
    Tensor x = y;
    for (int i = 0; i < kOps; ++i) x = i % 3 == 0 ? x + y : i % 3 == 1 ? x.neg() : x * y;
    auto items = schedule(x.lazydata());
    for (const auto &si : items) {
      if (!si.isKernel()) continue;
      ++kernels;
      adds = countOps(*si.ast, Op::Add);
      muls = countOps(*si.ast, Op::Mul);
      negs = countOps(*si.ast, Op::Neg);
      loads = countOps(*si.ast, Op::Load);
      opsInKernel = si.ast->lazyops().size();
      CHECK(si.inputs.size() == 1); // y, read once per use through one buffer
    }
    // x, y and the schedule are freed here, on the small stack
  });
  CHECK(kernels == 1);
  CHECK(adds == (kOps + 2) / 3);
  CHECK(negs == (kOps + 1) / 3);
  CHECK(muls == kOps / 3);
  CHECK(loads == adds + muls + 1); // y is read by every binary op and as the chain's start
  CHECK(opsInKernel == kOps + loads + 1); // the ops, the loads and the store
  CHECK(liveLazyBufferCount() == liveBefore);
}

TEST_CASE("Graph scale: thousands of kernels in a chain schedule on a small stack and run") {
  // x <- mean(x) + 1, broadcast back: one reduce per step, so every step is a kernel boundary
  auto build = [](int steps) {
    Tensor x = Tensor::full({16}, 3.0);
    for (int i = 0; i < steps; ++i) x = (x.mean(std::vector<int64_t>{0}, true) + 1).expand({16});
    return x;
  };
  int one = kernelCount(build(1)), two = kernelCount(build(2));
  REQUIRE(two > one);
  constexpr int kSteps = 20000;
  int many = 0;
  onSmallStack([&] { many = kernelCount(build(kSteps)); });
  CHECK(many == one + (kSteps - 1) * (two - one)); // the per-step kernels of the short chains
  std::vector<float> got;
  onSmallStack([&] { got = build(2000).realize().toVector<float>(); });
  REQUIRE(got.size() == 16);
  for (float v : got) CHECK(v == doctest::Approx(3.0 + 2000));
}

TEST_CASE("Graph scale: the kernel of a 100,000-op chain lowers to LLVM IR and is interpreted on a small stack") {
  // the code generator's evaluator, the dtype walk, the verifier and the interpreter are
  // iterative: one fused expression as deep as the chain needs no native frame per op
  constexpr int kOps = kMillion / 10;
  std::vector<double> xs(16);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<double>(i);
  auto chain = [&](const std::string &dev) {
    Tensor x = Tensor::fromValues(xs, {16}, TensorOptions(dtypes::float32, dev));
    for (int i = 0; i < kOps; ++i) x = i % 2 ? x - 1 : x + 2; // exact in float32
    return x;
  };
  std::string ir;
  size_t kernels = 0;
  std::vector<float> got;
  onSmallStack([&] {
    Tensor x = chain("CPU");
    for (const auto &si : schedule(x.lazydata())) {
      if (!si.isKernel()) continue;
      ++kernels;
      ir = emitKernelText(si.ast, TargetSpec::host(), CompileOptions::from(config()), IRStage::LLVM);
    }
    got = chain("INTERP").realize().toVector<float>();
  });
  CHECK(kernels == 1);
  auto count = [&](const std::string &what) {
    size_t n = 0;
    for (size_t at = ir.find(what); at != std::string::npos; at = ir.find(what, at + 1)) ++n;
    return n;
  };
  // one instruction per op of the chain and vector or unrolled element of the kernel
  size_t adds = count(" fadd "), subs = count(" fsub ");
  CHECK(adds > 0);
  CHECK(adds % ((kOps + 1) / 2) == 0);
  CHECK(subs * ((kOps + 1) / 2) == adds * (kOps / 2));
  REQUIRE(got.size() == xs.size());
  for (size_t i = 0; i < xs.size(); ++i) CHECK(got[i] == static_cast<float>(xs[i] + (kOps + 1) / 2 * 2 - kOps / 2));
}

TEST_CASE("Graph scale: a constant's kept answer follows its base through realization") {
  // isUnrealizedConst() is a bit kept in each buffer (the scheduler asks it of every leaf); it
  // must equal its definition: not realized, and the base's op a LOAD CONST
  auto definition = [](const LazyBuffer &b) {
    return !b.isRealized() && b.base()->op && b.base()->op->op == Op::LoadConst;
  };
  Tensor c = Tensor::full({1}, 3.0f);
  Tensor row = c.reshape({1, 1}).expand({4, 1}), grid = row.expand({4, 5});
  std::vector<const LazyBuffer *> bufs{c.lazydata().get(), row.lazydata().get(), grid.lazydata().get()};
  LazyBuffer &base = *c.lazydata()->base();
  bufs.push_back(&base);
  for (const LazyBuffer *b : bufs) {
    CHECK(b->isUnrealizedConst());
    CHECK(b->isUnrealizedConst() == definition(*b));
  }
  // inlined: the kernel of `grid + 1` reads no buffer, and realizing a constant makes no kernel
  Tensor sum = grid + 1.0f;
  std::vector<ScheduleItem> before = schedule(sum.lazydata());
  REQUIRE(before.size() == 1);
  CHECK(before.back().inputs.empty());
  CHECK(schedule(c.lazydata()).empty());
  // the base given storage as realization gives it (Realize.cpp: storage, then the op dropped):
  // neither it nor its views are constants from then on, nor a view made later
  auto storage = std::make_shared<Buffer>("CPU", 1, dtypes::float32);
  float three = 3.0f;
  storage->copyIn(&three, sizeof three);
  base.setRealized(storage);
  for (const LazyBuffer *b : bufs) {
    CHECK_FALSE(b->isUnrealizedConst());
    CHECK(b->isUnrealizedConst() == definition(*b));
  }
  base.dropOp();
  for (const LazyBuffer *b : bufs) CHECK(b->isUnrealizedConst() == definition(*b));
  CHECK_FALSE(c.reshape({1, 1}).lazydata()->isUnrealizedConst());
  // and the scheduler loads it
  Tensor again = grid * 2.0f;
  std::vector<ScheduleItem> after = schedule(again.lazydata());
  REQUIRE(after.size() == 1);
  REQUIRE(after.back().inputs.size() == 1);
  CHECK(after.back().inputs[0].get() == &base);
  CHECK(again.toVector<float>() == std::vector<float>(20, 6.0f));
}

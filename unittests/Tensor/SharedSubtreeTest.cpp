// ASTs whose subtrees are shared: `y = sqrt(y * y)` reads y twice, and the scheduler inlines the
// same op node into both operands, so a chain of n such steps is a DAG of ~2n nodes whose tree has
// 2^n leaves. Every walk of a kernel (the Kernel's buffer and reduce search, the verifier, the
// heuristics, the code generator's evaluator, the interpreter) must visit each distinct node once:
// these programs hung in Kernel construction before (KernelOp::lazyops() lists 2^60 nodes).
#include "TensorTestUtil.h"

#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Config.h"

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {
constexpr int kSteps = 60;

Tensor squareRootChain(Tensor y, int steps) {
  for (int i = 0; i < steps; ++i) y = (y * y).sqrt();
  return y;
}
} // namespace

TEST_CASE("Shared subtrees: sqrt(y * y) sixty times is one kernel of ~120 distinct nodes, equal to |x|") {
  for (const auto &dev : devices()) {
    // 7 elements: scalar code; 1024: the CPU's vector mode
    for (int64_t n : {int64_t{7}, int64_t{1024}}) {
      CAPTURE(dev);
      CAPTURE(n);
      Vals xs = randVals(static_cast<size_t>(n), 0x5ba7edULL + static_cast<uint64_t>(n));
      Tensor x = Tensor::fromValues(xs, {n}, TensorOptions(dtypes::float32, dev));
      Tensor y = squareRootChain(x, kSteps);
      auto items = schedule(y.lazydata());
      size_t kernels = 0;
      for (const auto &si : items) {
        if (!si.isKernel()) continue;
        ++kernels;
        size_t distinct = si.ast->uniqueOps().size();
        CHECK(distinct >= 2 * kSteps); // a MUL and a SQRT per step: the sharing is in the AST
        CHECK(distinct <= 2 * kSteps + 4);
      }
      CHECK(kernels == 1);
      std::vector<float> got = y.realize().toVector<float>();
      REQUIRE(got.size() == xs.size());
      for (size_t i = 0; i < xs.size(); ++i)
        CHECK(got[i] == doctest::Approx(std::fabs(xs[i])).epsilon(1e-4)); // 60 roundings of x*x
    }
  }
}

TEST_CASE("Shared subtrees: uniqueOps lists lazyops' first occurrences, each once") {
  Tensor x = Tensor::empty({5});
  Tensor y = squareRootChain(x + 1, 6);
  auto items = schedule(y.lazydata());
  REQUIRE(items.size() == 2); // the EMPTY and the kernel
  const KernelOp &ast = *items.back().ast;
  std::vector<const KernelOp *> all = ast.lazyops(), firsts;
  for (const KernelOp *o : all)
    if (std::find(firsts.begin(), firsts.end(), o) == firsts.end()) firsts.push_back(o);
  CHECK(ast.uniqueOps() == firsts);
  CHECK(firsts.size() == 2 * 6 + 4); // STORE, 6 x (SQRT, MUL), ADD, LOAD, CONST
  CHECK(all.size() > 64 * 3);        // 2^6 copies of x + 1 in the tree
  CHECK(astDepth(ast) == 2 * 6 + 3);  // STORE, the chain, ADD, a leaf
  // the text form labels the shared subtrees: it stays linear and reads back to an equal AST
  std::string text = printAst(ast);
  CHECK(std::count(text.begin(), text.end(), '\n') < 60);
  CHECK(*parseAst(text, "<dag>") == ast);
}

TEST_CASE("Shared subtrees: a reduce over a shared chain compiles and matches the interpreter") {
  Vals xs = randVals(64, 0xda9ULL, 0.5, 1.5);
  std::vector<float> out;
  for (const auto &dev : devices()) {
    CAPTURE(dev);
    Tensor x = Tensor::fromValues(xs, {8, 8}, TensorOptions(dtypes::float32, dev));
    std::vector<float> got = squareRootChain(x, kSteps).sum(std::vector<int64_t>{1}).realize().toVector<float>();
    REQUIRE(got.size() == 8);
    for (size_t r = 0; r < 8; ++r) {
      double want = 0;
      for (size_t c = 0; c < 8; ++c) want += xs[r * 8 + c];
      CHECK(got[r] == doctest::Approx(want).epsilon(1e-4));
    }
    if (out.empty()) out = got;
    else for (size_t r = 0; r < 8; ++r) CHECK(got[r] == doctest::Approx(out[r]).epsilon(1e-5));
  }
}

TEST_CASE("Shared subtrees: a movement op after a shared chain is pushed through it once") {
  // permute and shrink of an element-wise result with no other reader move into its leaves
  // (replace_with_movement_ops); the chain's tree has 2^60 copies of x, its DAG 120 nodes
  Vals xs = randVals(12, 0x9e3ULL);
  for (const auto &dev : devices()) {
    CAPTURE(dev);
    Tensor x = Tensor::fromValues(xs, {3, 4}, TensorOptions(dtypes::float32, dev));
    std::vector<float> t = squareRootChain(x, kSteps).permute({1, 0}).realize().toVector<float>();
    std::vector<float> s = squareRootChain(x, kSteps).shrink({SIntPair{1, 3}, std::nullopt}).realize().toVector<float>();
    REQUIRE(t.size() == 12);
    REQUIRE(s.size() == 8);
    for (size_t r = 0; r < 3; ++r)
      for (size_t c = 0; c < 4; ++c) {
        CHECK(t[c * 3 + r] == doctest::Approx(std::fabs(xs[r * 4 + c])).epsilon(1e-4));
        if (r >= 1) CHECK(s[(r - 1) * 4 + c] == doctest::Approx(std::fabs(xs[r * 4 + c])).epsilon(1e-4));
      }
  }
}

TEST_CASE("Shared subtrees: the AST text of a chain reads back at any depth; the chains realize") {
  // a chain of n element-wise ops over a LOAD is STORE, n ops and the leaf: n + 2 deep; beyond
  // kAstTextBlockDepth it prints as blocks (ASTTextTest), never nested as deep as kMaxAstTextDepth,
  // which only hand-written text reaches (ASTTextTest checks that it is rejected)
  Config c = config();
  c.verifyAst = true; // the round trip through the text, where it has one
  ScopedConfig verify(c);
  for (int n : {kAstTextBlockDepth - 3, kAstTextBlockDepth - 2, kAstTextBlockDepth - 1, kMaxAstTextDepth - 1}) {
    CAPTURE(n);
    Tensor x = Tensor::fromValues({1.0, 2.0}, {2}, TensorOptions(dtypes::float32, "CPU"));
    Tensor y = x;
    for (int i = 0; i < n; ++i) y = i % 2 ? y - 1 : y + 1;
    auto items = schedule(y.lazydata());
    const KernelOp &ast = *items.back().ast;
    CHECK(astDepth(ast) == n + 2);
    std::string text = printAst(ast);
    CHECK(*parseAst(text, "<chain>") == ast);
    CHECK((text[0] == '$') == (astDepth(ast) > kAstTextBlockDepth)); // blocks only when deeper
    std::vector<float> got = y.realize().toVector<float>();
    CHECK(got == std::vector<float>{n % 2 ? 2.0f : 1.0f, n % 2 ? 3.0f : 2.0f});
  }
}

// astKey, the compile caches' identity of a kernel: equal ASTs give equal keys, different ones
// different keys, and its size grows with the AST's size, not with the square of its depth (the
// indentation of printAst does); printing walks the AST without recursion.
#include "KernelTestUtil.h"
#include "lazyjit/Schedule/ASTText.h"

#include <doctest/doctest.h>

using namespace lazyjit;
using lazyjit::testing::lastKernel;

namespace {
Tensor E(Shape s) { return Tensor::empty(std::move(s)); }

KernelOpRef chain(int ops) {
  Tensor y = E({16});
  Tensor x = y;
  for (int i = 0; i < ops; ++i) x = i % 2 ? x + y : x * y;
  return lastKernel(x);
}
} // namespace

TEST_CASE("astKey: equal ASTs, equal keys; different ASTs, different keys") {
  Tensor a = E({4, 8}), b = E({4, 8});
  std::vector<KernelOpRef> asts = {lastKernel(a + b), lastKernel(a * b), lastKernel(a.sum(std::vector<int64_t>{1})),
                                 lastKernel(a.sum(std::vector<int64_t>{0})), lastKernel((a + b) * a),
                                 lastKernel(a + b * a), lastKernel(a.permute({1, 0}) + 1)};
  for (size_t i = 0; i < asts.size(); ++i)
    for (size_t j = 0; j < asts.size(); ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK((astKey(*asts[i]) == astKey(*asts[j])) == (*asts[i] == *asts[j]));
    }
  CHECK(astKey(*lastKernel(E({4, 8}) + E({4, 8}))) == astKey(*asts[0])); // built again: same key
  // and the same kernel: the scheduler builds the one KernelOp of that structure, which is what the
  // in-memory program cache finds (by identity) for new buffers of the same program
  CHECK(lastKernel(E({4, 8}) + E({4, 8})) == asts[0]);
  CHECK(lastKernel(E({4, 8}) + E({4, 9}).shrink({SIntPair{0, 4}, SIntPair{0, 8}})) != asts[0]);
}

TEST_CASE("astKey: the key of a deep chain grows linearly; printAst stays the readable form") {
  KernelOpRef shallow = chain(100), deep = chain(10000);
  size_t perOpShallow = astKey(*shallow).size() / 100, perOpDeep = astKey(*deep).size() / 10000;
  CHECK(perOpDeep <= perOpShallow + 1);
  // the text form still reads back (and was printed without recursion)
  KernelOpRef mid = chain(800); // deeper than kAstTextBlockDepth: printed as blocks
  CHECK(*parseAst(printAst(*mid), "<deep>") == *mid);
  std::string text = printAst(*shallow);
  CHECK(text.find("\n    BinaryOps.") != std::string::npos); // indented by depth
  CHECK(astKey(*shallow).find("\n ") == std::string::npos);   // the key is not
}

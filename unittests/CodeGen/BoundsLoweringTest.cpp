// Bounds mode (CompileOptions::bounds) on every load and store path of the CPU lowering: kernels
// compiled with chosen optimizations run on buffers smaller than their ASTs need and must stop at
// the first element outside one (KernelRunner throws with buffer and index), never touching the
// guard zones; with buffers of the right size the same kernels run and match NOOPT.
#include "KernelRunner.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

#include <string>

using namespace lazyjit;
using lazyjit::testing::KernelRun;
using lazyjit::testing::KernelRunner;

namespace {

struct Case {
  const char *name;
  std::string ast;
  std::vector<Opt> opts;
  std::vector<int64_t> fullSizes;  ///< the sizes the AST needs
  std::vector<int64_t> shortSizes; ///< one buffer too small
  std::string error;               ///< what running with shortSizes reports
};

std::string elementwise(const std::string &shape, const std::string &loadView) {
  return "BufferOps.STORE idx=0 dtype=float32\n"
         "  view shape=" + shape + " strides=(1,) offset=0 mask=None contiguous=True\n"
         "  UnaryOps.NEG\n"
         "    BufferOps.LOAD idx=1 dtype=float32\n"
         "      " + loadView + "\n";
}

std::vector<Case> cases() {
  std::string broadcast = "BufferOps.STORE idx=0 dtype=float32\n"
                          "  view shape=(8, 16) strides=(16, 1) offset=0 mask=None contiguous=True\n"
                          "  BufferOps.LOAD idx=1 dtype=float32\n"
                          "    view shape=(8, 16) strides=(1, 0) offset=0 mask=None contiguous=False\n";
  std::string dot = "BufferOps.STORE idx=0 dtype=float32\n"
                    "  view shape=(64, 1) strides=(1, 0) offset=0 mask=None contiguous=True\n"
                    "  ReduceOps.SUM shape=(64, 1)\n"
                    "    BinaryOps.MUL\n"
                    "      BufferOps.LOAD idx=1 dtype=float32\n"
                    "        view shape=(64, 32) strides=(32, 1) offset=0 mask=None contiguous=True\n"
                    "      BufferOps.LOAD idx=2 dtype=float32\n"
                    "        view shape=(64, 32) strides=(0, 1) offset=0 mask=None contiguous=False\n";
  return {
      {"contiguous vector load", elementwise("(64,)", "view shape=(64,) strides=(1,) offset=0 mask=None contiguous=True"),
       {{OptOp::Upcast, 0, 8}}, {64, 64}, {64, 40}, "buffer 1 accessed at index 40, outside its 40 elements"},
      {"gathered vector load", elementwise("(32,)", "view shape=(32,) strides=(3,) offset=0 mask=None contiguous=False"),
       {{OptOp::Upcast, 0, 8}}, {32, 94}, {32, 32}, "buffer 1 accessed at index 33, outside its 32 elements"},
      {"masked vector load",
       elementwise("(64,)", "view shape=(64,) strides=(1,) offset=-1 mask=((1, 64),) contiguous=False"),
       {{OptOp::Upcast, 0, 16}}, {64, 63}, {64, 60}, "buffer 1 accessed at index 60, outside its 60 elements"},
      {"broadcast (splat) load", broadcast, {{OptOp::Upcast, 1, 16}}, {128, 8}, {128, 5},
       "buffer 1 accessed at index 5, outside its 5 elements"},
      {"vector store", broadcast, {{OptOp::Upcast, 1, 16}}, {128, 8}, {100, 8},
       "buffer 0 accessed at index 100, outside its 100 elements"},
      {"scalar store and loads", broadcast, {}, {128, 8}, {100, 8},
       "buffer 0 accessed at index 100, outside its 100 elements"},
      {"dot-product vector load", dot, {{OptOp::Unroll, 0, 32}}, {64, 2048, 32}, {64, 2048, 20},
       "buffer 2 accessed at index 20, outside its 20 elements"},
      // rows 60..63 load together at each k: row 63's first element (2016) is the first access out
      {"upcast rows of a dot product", dot, {{OptOp::Upcast, 0, 4}}, {64, 2048, 32}, {64, 2000, 32},
       "buffer 1 accessed at index 2016, outside its 2000 elements"},
  };
}

} // namespace

TEST_CASE("Bounds mode: every lowering path stops at the first element outside a buffer") {
  KernelRunner runner;
  for (const Case &c : cases()) {
    std::string name = c.name;
    CAPTURE(name);
    KernelOpRef ast = parseAst(c.ast, c.name);
    CompileOptions checked;
    checked.bounds = true;
    checked.applyOpts = c.opts;
    // the right sizes: the checked kernel runs and matches the unoptimized one
    CompileOptions plain;
    plain.noopt = true;
    KernelRun ref = runner.run(ast, plain, 7, &c.fullSizes);
    KernelRun got = runner.run(ast, checked, 7, &c.fullSizes);
    CHECK(got.applied == c.opts);
    CHECK(got.guardsIntact);
    REQUIRE(got.bufs.size() == ref.bufs.size());
    for (size_t b = 0; b < ref.bufs.size(); ++b) {
      REQUIRE(got.bufs[b].size() == ref.bufs[b].size());
      for (size_t i = 0; i < ref.bufs[b].size(); ++i)
        CHECK(got.bufs[b][i] == doctest::Approx(ref.bufs[b][i]).epsilon(1e-5));
    }
    // one buffer too small: stopped and reported, nothing outside the buffers written
    CHECK_THROWS_WITH_AS(runner.run(ast, checked, 7, &c.shortSizes), doctest::Contains(c.error.c_str()), Error);
  }
}

// Bounds mode of the CPU JIT (LAZYJIT_BOUNDS / CompileOptions::bounds): kernels given buffers
// smaller than their ASTs need (what a verifier bug or a lowering bug would produce) stop at the
// first access outside a buffer, and the runtime reports kernel, buffer and index. Every load and
// store path is driven: scalar (NOOPT), vector, broadcast, gather, masked and the store; accesses
// that masks keep inside their buffers and correct kernels run unchanged.
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/Device.h"
#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

#include <memory>
#include <numeric>
#include <string>
#include <vector>

using namespace lazyjit;

namespace {

// A kernel adding 1 to buffer 1 read through `loadView`, into a 1-D float32 output of `outShape`.
std::string unaryAst(const std::string &outShape, const std::string &outStrides, const std::string &loadView) {
  return "BufferOps.STORE idx=0 dtype=float32\n"
         "  view shape=" + outShape + " strides=" + outStrides + " offset=0 mask=None contiguous=True\n"
         "  BinaryOps.ADD\n"
         "    BufferOps.LOAD idx=1 dtype=float32\n"
         "      " + loadView + "\n"
         "    BufferOps.CONST val=1 dtype=float32\n"
         "      view shape=" + outShape + " strides=(0,) offset=0 mask=None contiguous=False\n";
}

struct Run {
  std::vector<float> out;
  std::string error; ///< empty when the kernel ran
};

// Compiles `ast` on the CPU (with or without kernel optimizations) and runs it on buffers of the
// given sizes; buffer i > 0 holds 1, 2, 3, ...
Run runAst(const std::string &ast, std::vector<int64_t> sizes, bool bounds, bool noopt, VarVals vars = {}) {
  Config c = config();
  c.bounds = bounds;
  c.noopt = noopt;
  ScopedConfig scoped(c);
  KernelOpRef op = parseAst(ast, "<test>");
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<Buffer *> raw;
  for (size_t i = 0; i < sizes.size(); ++i) {
    bufs.push_back(std::make_unique<Buffer>("CPU", sizes[i], dtypes::float32));
    std::vector<float> init(static_cast<size_t>(sizes[i]), i == 0 ? -7.0f : 0.0f);
    if (i > 0) std::iota(init.begin(), init.end(), 1.0f);
    bufs.back()->copyIn(init.data(), init.size() * sizeof(float));
    raw.push_back(bufs.back().get());
  }
  Run r;
  try {
    getDevice("CPU").compile(op)->run(raw, vars);
  } catch (const Error &e) {
    r.error = e.what();
  }
  r.out.resize(static_cast<size_t>(sizes[0]));
  bufs[0]->copyOut(r.out.data(), r.out.size() * sizeof(float));
  return r;
}

} // namespace

TEST_CASE("Bounds mode: a load past the end stops the kernel and names kernel, buffer and index") {
  // the AST reads 64 elements of buffer 1, which holds 40
  std::string ast = unaryAst("(64,)", "(1,)", "view shape=(64,) strides=(1,) offset=0 mask=None contiguous=True");
  for (bool noopt : {true, false}) {
    CAPTURE(noopt);
    Run r = runAst(ast, {64, 40}, true, noopt);
    CHECK(r.error.find("kernel E_64") != std::string::npos);
    CHECK(r.error.find("reads buffer 1 at index 40, outside its 40 elements") != std::string::npos);
    CHECK(r.error.find("LAZYJIT_BOUNDS") != std::string::npos);
  }
}

TEST_CASE("Bounds mode: a negative offset is caught before the first element") {
  std::string ast = unaryAst("(16,)", "(1,)", "view shape=(16,) strides=(1,) offset=-3 mask=None contiguous=False");
  for (bool noopt : {true, false}) {
    CAPTURE(noopt);
    Run r = runAst(ast, {16, 16}, true, noopt);
    CHECK(r.error.find("reads buffer 1 at index -3, outside its 16 elements") != std::string::npos);
  }
}

TEST_CASE("Bounds mode: a strided (gathered) load past the end") {
  // element i reads 3*i: 3*11 = 33 is the first index past 32 elements
  std::string ast = unaryAst("(32,)", "(1,)", "view shape=(32,) strides=(3,) offset=0 mask=None contiguous=False");
  for (bool noopt : {true, false}) {
    CAPTURE(noopt);
    Run r = runAst(ast, {32, 32}, true, noopt);
    CHECK(r.error.find("reads buffer 1 at index 33, outside its 32 elements") != std::string::npos);
  }
}

TEST_CASE("Bounds mode: a broadcast load and a store past the end") {
  // (8, 16) output reading row i of a (8,) buffer broadcast along 16; buffer 1 holds 5 rows
  std::string bcast = "BufferOps.STORE idx=0 dtype=float32\n"
                      "  view shape=(8, 16) strides=(16, 1) offset=0 mask=None contiguous=True\n"
                      "  BufferOps.LOAD idx=1 dtype=float32\n"
                      "    view shape=(8, 16) strides=(1, 0) offset=0 mask=None contiguous=False\n";
  for (bool noopt : {true, false}) {
    CAPTURE(noopt);
    Run r = runAst(bcast, {128, 5}, true, noopt);
    CHECK(r.error.find("reads buffer 1 at index 5, outside its 5 elements") != std::string::npos);
    // the output holds 100 of the 128 elements the STORE writes
    Run w = runAst(bcast, {100, 8}, true, noopt);
    CHECK(w.error.find("writes buffer 0 at index 100, outside its 100 elements") != std::string::npos);
  }
}

TEST_CASE("Bounds mode: masked-off accesses are not out of bounds, and correct kernels run unchanged") {
  // padded on both sides: positions 0 and 9 are masked off and would read -1 and 8
  std::string padded =
      unaryAst("(10,)", "(1,)", "view shape=(10,) strides=(1,) offset=-1 mask=((1, 9),) contiguous=False");
  std::string strided = unaryAst("(12,)", "(1,)", "view shape=(12,) strides=(2,) offset=1 mask=None contiguous=False");
  for (bool noopt : {true, false}) {
    CAPTURE(noopt);
    Run checked = runAst(padded, {10, 8}, true, noopt), plain = runAst(padded, {10, 8}, false, noopt);
    CHECK(checked.error.empty());
    CHECK(checked.out == plain.out);
    CHECK(checked.out == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 1});
    Run s = runAst(strided, {12, 24}, true, noopt);
    CHECK(s.error.empty());
    CHECK(s.out[11] == 24.0f + 1.0f); // element 2*11+1 = 23 holds 24
  }
}

TEST_CASE("Bounds mode: sizes that depend on a variable's value") {
  std::string ast = "BufferOps.STORE idx=0 dtype=float32\n"
                    "  view shape=(n[1-64],) strides=(1,) offset=0 mask=None contiguous=True\n"
                    "  BufferOps.LOAD idx=1 dtype=float32\n"
                    "    view shape=(n[1-64],) strides=(1,) offset=0 mask=None contiguous=True\n";
  NodeRef n = variable("n", 1, 64);
  for (bool noopt : {true, false}) {
    CAPTURE(noopt);
    Run ok = runAst(ast, {64, 20}, true, noopt, {{"n", {n, 20}}});
    CHECK(ok.error.empty());
    CHECK(ok.out[19] == 20.0f);
    CHECK(ok.out[20] == -7.0f);
    Run bad = runAst(ast, {64, 20}, true, noopt, {{"n", {n, 30}}});
    CHECK(bad.error.find("reads buffer 1 at index 20, outside its 20 elements") != std::string::npos);
  }
}

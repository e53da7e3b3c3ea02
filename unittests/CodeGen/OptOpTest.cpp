// One test per OptOp (Kernel::applyOpt): how it reshapes and permutes the kernel's axes, that the
// CPU ones compute what the unoptimized kernel computes (KernelRunner against NOOPT, guard zones
// intact), and the message when it does not apply. PADTO has its own file (PadToTest.cpp).
#include "KernelTestUtil.h"
#include "KernelRunner.h"
#include "lazyjit/CodeGen/Kernel.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace lazyjit;
using lazyjit::testing::lastKernel;
using lazyjit::testing::KernelRun;
using lazyjit::testing::KernelRunner;

namespace {

// a 16x8 @ 8x12 matmul: full shape (16, 12, 8), output (16, 12, 1), the reduce axis is 2
KernelOpRef matmul() { return lastKernel(Tensor::empty({16, 8}).matmul(Tensor::empty({8, 12}))); }

KernelOptions gpu() {
  KernelOptions o;
  o.hasLocal = o.hasShared = true;
  return o;
}

Shape ints(std::initializer_list<int64_t> xs) { return Shape(xs.begin(), xs.end()); }

// The strides of buffer `b` as ints (the kernels here have no variables).
std::vector<int64_t> strides(const Kernel &k, size_t b) {
  std::vector<int64_t> out;
  for (const auto &s : k.sts[b].views.back().strides) out.push_back(s.asInt());
  return out;
}

// Runs `ast` with exactly `opts` and without optimizations on the same random inputs; the outputs
// must agree and no access may leave its buffer.
void checkSameAsNoopt(const KernelOpRef &ast, const std::vector<Opt> &opts) {
  KernelRunner runner;
  CompileOptions noopt, with;
  noopt.noopt = true;
  with.applyOpts = opts;
  KernelRun ref = runner.run(ast, noopt, 11), got = runner.run(ast, with, 11);
  CHECK(got.applied == opts);
  CHECK(got.guardsIntact);
  REQUIRE(ref.bufs[0].size() == got.bufs[0].size());
  for (size_t i = 0; i < ref.bufs[0].size(); ++i) {
    float x = ref.bufs[0][i], y = got.bufs[0][i];
    if (std::fabs(x - y) > 1e-4f * std::max(1.0f, std::fabs(x))) {
      FAIL_CHECK("element ", i, ": noopt=", x, " opt=", y);
      return;
    }
  }
}

} // namespace

TEST_CASE("OptOp UPCAST: splits an output axis and moves the amount to the upcast axes") {
  KernelOpRef ast = matmul();
  Kernel k(ast);
  REQUIRE(k.fullShape() == ints({16, 12, 8}));
  k.applyOpt({OptOp::Upcast, 0, 4});
  CHECK(k.fullShape() == ints({4, 12, 8, 4}));
  CHECK(k.outputShape() == ints({4, 12, 1, 4}));
  CHECK(k.upcasted == 1);
  CHECK(k.firstReduce() == 2);
  CHECK(k.appliedOpts == std::vector<Opt>{{OptOp::Upcast, 0, 4}});
  checkSameAsNoopt(ast, {{OptOp::Upcast, 0, 4}});
  checkSameAsNoopt(ast, {{OptOp::Upcast, 1, 4}, {OptOp::Upcast, 0, 2}});

  Kernel bad(ast);
  CHECK_THROWS_WITH_AS(bad.applyOpt({OptOp::Upcast, 2, 2}),
                       doctest::Contains("opt UPCAST(2,2): upcast is for non-reduce axes"), UnsupportedError);
  CHECK_THROWS_WITH_AS(bad.applyOpt({OptOp::Upcast, 0, 3}),
                       doctest::Contains("opt UPCAST(0,3): 3 does not divide axis 0 of size 16"), UnsupportedError);
  CHECK_THROWS_WITH_AS(bad.applyOpt({OptOp::Upcast, 5, 2}),
                       doctest::Contains("opt UPCAST(5,2): axis 5 is out of range for r_16_12_8"), UnsupportedError);
  CHECK(bad.appliedOpts.empty());
}

TEST_CASE("OptOp UNROLL: splits a reduce axis (counted from the first reduce) into upcast lanes") {
  KernelOpRef ast = matmul();
  Kernel k(ast);
  k.applyOpt({OptOp::Unroll, 0, 4});
  CHECK(k.fullShape() == ints({16, 12, 2, 4}));
  CHECK(k.outputShape() == ints({16, 12, 1, 1}));
  CHECK(k.upcasted == 1);
  CHECK(k.firstReduce() == 2);
  checkSameAsNoopt(ast, {{OptOp::Unroll, 0, 4}});
  // the whole reduce axis (amount 0 means all of it)
  checkSameAsNoopt(ast, {{OptOp::Unroll, 0, 0}});

  Kernel all(ast);
  all.applyOpt({OptOp::Unroll, 0, 8});
  CHECK(all.fullShape() == ints({16, 12, 8}));
  CHECK(all.upcasted == 1);
  CHECK_THROWS_WITH_AS(all.applyOpt({OptOp::Unroll, 0, 2}),
                       doctest::Contains("opt UNROLL(0,2): can't unroll an already upcasted axis"), UnsupportedError);
  Kernel wide(lastKernel(Tensor::empty({4, 64}).sum(std::vector<int64_t>{1})));
  CHECK_THROWS_WITH_AS(wide.applyOpt({OptOp::Unroll, 0, 64}),
                       doctest::Contains("opt UNROLL(0,64): don't unroll more than 32"), UnsupportedError);
}

TEST_CASE("OptOp LOCAL: moves part of a global axis to the end of the local axes (GPU only)") {
  KernelOpRef ast = matmul();
  Kernel k(ast, gpu());
  k.applyOpt({OptOp::Local, 0, 2});
  CHECK(k.fullShape() == ints({8, 12, 2, 8}));
  CHECK(k.localDims == 1);
  CHECK(k.globalDims() == 2);
  CHECK(k.firstReduce() == 3);
  // a second LOCAL goes after the first
  k.applyOpt({OptOp::Local, 1, 3});
  CHECK(k.fullShape() == ints({8, 4, 2, 3, 8}));
  CHECK(k.localDims == 2);

  Kernel cpu(ast);
  CHECK_THROWS_WITH_AS(cpu.applyOpt({OptOp::Local, 0, 2}),
                       doctest::Contains("opt LOCAL(0,2): target does not support local"), UnsupportedError);
  Kernel reduce(ast, gpu());
  CHECK_THROWS_WITH_AS(reduce.applyOpt({OptOp::Local, 2, 2}), doctest::Contains("opt LOCAL(2,2): can't local a reduce"),
                       UnsupportedError);
  // on the NVPTX target the local axis is the thread block
  CompileOptions o;
  o.applyOpts = std::vector<Opt>{{OptOp::Local, 0, 16}};
  KernelSignature sig = describeKernel(ast, TargetSpec::nvptx("sm_90"), o);
  CHECK(sig.localSize == std::vector<int64_t>{16});
  CHECK(sig.opts == std::vector<Opt>{{OptOp::Local, 0, 16}});
}

TEST_CASE("OptOp LASTLOCAL: moves part of a global axis to the front of the local axes (GPU only)") {
  Kernel k(matmul(), gpu());
  k.applyOpt({OptOp::Local, 0, 2});
  k.applyOpt({OptOp::LastLocal, 1, 3});
  // LOCAL(1,3) would give (8, 4, 2, 3, 8); LASTLOCAL puts the 3 before the first local axis
  CHECK(k.fullShape() == ints({8, 4, 3, 2, 8}));
  CHECK(k.localDims == 2);
  CHECK(k.firstReduce() == 4);
  Kernel cpu(matmul());
  CHECK_THROWS_WITH_AS(cpu.applyOpt({OptOp::LastLocal, 0, 2}),
                       doctest::Contains("opt LASTLOCAL(0,2): target does not support local"), UnsupportedError);
}

TEST_CASE("OptOp GROUP and GROUPTOP: split a reduce axis into a group reduced through shared memory") {
  KernelOpRef ast = matmul();
  // GROUP takes the inner part of the reduce axis (stride 1 in A) as the group of 4 ...
  Kernel group(ast, gpu());
  group.applyOpt({OptOp::Group, 0, 4});
  CHECK(group.fullShape() == ints({16, 12, 4, 2}));
  CHECK(group.groupForReduce == std::vector<int64_t>{4});
  CHECK(group.firstReduce() == 2);
  CHECK(strides(group, 1) == std::vector<int64_t>{8, 0, 1, 4});
  // ... GROUPTOP the outer part (stride 2)
  Kernel top(ast, gpu());
  top.applyOpt({OptOp::GroupTop, 0, 4});
  CHECK(top.fullShape() == ints({16, 12, 4, 2}));
  CHECK(top.groupForReduce == std::vector<int64_t>{4});
  CHECK(strides(top, 1) == std::vector<int64_t>{8, 0, 2, 1});

  Kernel cpu(ast);
  CHECK_THROWS_WITH_AS(cpu.applyOpt({OptOp::Group, 0, 4}),
                       doctest::Contains("opt GROUP(0,4): target does not support local or shared memory"),
                       UnsupportedError);
  Kernel output(ast, gpu());
  CHECK_THROWS_WITH_AS(output.applyOpt({OptOp::GroupTop, -1, 2}),
                       doctest::Contains("opt GROUPTOP(-1,2): must be a reduce axis to group"), UnsupportedError);
  // on the NVPTX target the group is the thread block, reducing through shared memory
  CompileOptions o;
  o.applyOpts = std::vector<Opt>{{OptOp::GroupTop, 0, 8}};
  KernelSignature sig = describeKernel(ast, TargetSpec::nvptx("sm_90"), o);
  CHECK(sig.localSize == std::vector<int64_t>{8});
  CHECK(sig.sharedBytes == 8 * 4);
}

TEST_CASE("OptOp NOLOCALS: is not implemented, and says so instead of doing nothing") {
  Kernel k(matmul(), gpu());
  CHECK_THROWS_WITH_AS(k.applyOpt({OptOp::NoLocals, 0, 0}), doctest::Contains("opt NOLOCALS(0,0) is not supported"),
                       UnsupportedError);
  CHECK(k.appliedOpts.empty());
  CHECK(k.localDims == 0);
}

TEST_CASE("OptOp SWAP: exchanges two global axes, changing the loop order only (CPU)") {
  KernelOpRef ast = matmul();
  Kernel k(ast);
  k.applyOpt({OptOp::Swap, 0, 1});
  CHECK(k.fullShape() == ints({12, 16, 8}));
  CHECK(k.outputShape() == ints({12, 16, 1}));
  // the output is still written where it belongs: rows of 12 in memory
  CHECK(strides(k, 0) == std::vector<int64_t>{1, 12, 0});
  checkSameAsNoopt(ast, {{OptOp::Swap, 0, 1}});
  checkSameAsNoopt(ast, {{OptOp::Upcast, 1, 4}, {OptOp::Swap, 0, 1}});
  Kernel bad(ast);
  CHECK_THROWS_WITH_AS(bad.applyOpt({OptOp::Swap, 0, 2}),
                       doctest::Contains("opt SWAP(0,2): can only swap two global axes of r_16_12_8"),
                       UnsupportedError);
}

// The heuristics try an OptOp by asking whether it is refused (optRefusal, tryApplyOpt in
// lib/CodeGen/Heuristics.h) instead of catching Kernel::applyOpt's UnsupportedError: the refusal
// is the message applyOpt throws, word for word, and a refused opt leaves the kernel as it was.
#include "Heuristics.h"
#include "KernelTestUtil.h"
#include "lazyjit/Tensor/Tensor.h"

#include <doctest/doctest.h>

using namespace lazyjit;
using lazyjit::testing::lastKernel;

namespace {

KernelOptions gpu() {
  KernelOptions o;
  o.hasLocal = o.hasShared = true;
  return o;
}

// What applyOpt throws for `opt` on a copy of `k` (empty when it applies).
std::string thrown(const Kernel &k, const Opt &opt) {
  Kernel c = k;
  try {
    c.applyOpt(opt);
  } catch (const UnsupportedError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("OptRefusal: a refusal is applyOpt's message and leaves the kernel unchanged") {
  // a 16x8 @ 8x12 matmul: full shape (16, 12, 8), the reduce axis is 2; and a sum over rows of 64
  KernelOpRef matmul = lastKernel(Tensor::empty({16, 8}).matmul(Tensor::empty({8, 12})));
  KernelOpRef rowSum = lastKernel(Tensor::empty({4, 64}).sum(std::vector<int64_t>{1}));
  KernelOpRef rowMax = lastKernel(Tensor::empty({4, 5}).max(std::vector<int64_t>{1}));
  struct Case {
    KernelOpRef ast;
    KernelOptions target;
    Opt opt;
    const char *message;
  };
  const Case cases[] = {
      {matmul, {}, {OptOp::Upcast, 2, 2}, "opt UPCAST(2,2): upcast is for non-reduce axes"},
      {matmul, {}, {OptOp::Upcast, 0, 3}, "opt UPCAST(0,3): 3 does not divide axis 0 of size 16"},
      {matmul, {}, {OptOp::Upcast, 5, 2}, "opt UPCAST(5,2): axis 5 is out of range for r_16_12_8"},
      {matmul, {}, {OptOp::Upcast, 0, 1}, "opt UPCAST(0,1): an amount of 1 is meaningless"},
      {matmul, gpu(), {OptOp::Upcast, 0, 16}, "opt UPCAST(0,16): don't upcast more than 8"},
      {rowSum, {}, {OptOp::Unroll, 0, 64}, "opt UNROLL(0,64): don't unroll more than 32"},
      {matmul, {}, {OptOp::Local, 0, 2}, "opt LOCAL(0,2): target does not support local"},
      {matmul, gpu(), {OptOp::LastLocal, 2, 2}, "opt LASTLOCAL(2,2): can't local a reduce"},
      {matmul, {}, {OptOp::Group, 0, 4}, "opt GROUP(0,4): target does not support local or shared memory"},
      {matmul, {}, {OptOp::Swap, 0, 2}, "opt SWAP(0,2): can only swap two global axes of r_16_12_8"},
      {matmul, {}, {OptOp::NoLocals, 0, 2}, "opt NOLOCALS(0,2) is not supported"},
      {matmul, {}, {OptOp::PadTo, 0, 4}, "opt PADTO(0,4): axis 0 of size 16 needs no padding"},
      {matmul, {}, {OptOp::PadTo, 1, 32}, "opt PADTO(1,32): padding axis 1 of size 12 to 32 more than doubles the work"},
      {rowMax, {}, {OptOp::PadTo, 1, 8},
       "opt PADTO(1,8): padding reduce axis 1 needs a SUM of ops that keep 0 at 0"},
  };
  for (const Case &c : cases) {
    INFO(c.opt.str());
    Kernel k(c.ast, c.target);
    const Shape before = k.fullShape();
    std::optional<std::string> why = optRefusal(k, c.opt);
    REQUIRE(why.has_value());
    CHECK(*why == c.message);
    CHECK(thrown(k, c.opt) == *why);
    CHECK_FALSE(tryApplyOpt(k, c.opt));
    CHECK(k.fullShape() == before);
    CHECK(k.appliedOpts.empty());
    CHECK(k.upcasted == 0);
  }
}

TEST_CASE("OptRefusal: an opt that applies is applied as applyOpt applies it") {
  KernelOpRef matmul = lastKernel(Tensor::empty({16, 8}).matmul(Tensor::empty({8, 12})));
  for (const Opt &opt : {Opt{OptOp::Upcast, 0, 4}, Opt{OptOp::Unroll, 0, 0}, Opt{OptOp::Swap, 0, 1},
                         Opt{OptOp::PadTo, 1, 8}}) {
    INFO(opt.str());
    Kernel viaTry(matmul), viaApply(matmul);
    CHECK_FALSE(optRefusal(viaTry, opt).has_value());
    CHECK(tryApplyOpt(viaTry, opt));
    viaApply.applyOpt(opt);
    CHECK(viaTry.appliedOpts == std::vector<Opt>{opt});
    CHECK(viaTry.fullShape() == viaApply.fullShape());
    CHECK(viaTry.upcasted == viaApply.upcasted);
    CHECK(viaTry.sts == viaApply.sts);
  }
}

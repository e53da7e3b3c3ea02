// The loop nest (LoopNest.h): what each axis of an optimized Kernel becomes, the unrolled
// combinations and accumulators both lowerings take from it, and the CPU's vector axis, a decision
// recorded in the Kernel before lowering (chooseVectorAxis) that the lowering follows.
#include "LoopNest.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Tensor/Tensor.h"
#include "TestSkip.h"

#include <doctest/doctest.h>

using namespace lazyjit;

namespace {

KernelOpRef lastAst(const Tensor &t) {
  auto sched = schedule(t.lazydata());
  REQUIRE(sched.back().isKernel());
  return sched.back().ast;
}

using Role = LoopNest::Role;

std::string roles(const LoopNest &n) {
  std::string s;
  for (Role r : n.roles) s += std::string(s.empty() ? "" : " ") + LoopNest::roleName(r);
  return s;
}

CompileOptions withOpts(std::vector<Opt> opts) {
  CompileOptions o;
  o.applyOpts = std::move(opts);
  return o;
}

} // namespace

TEST_CASE("Loop nest: a float matmul's tile is unrolled around one vector axis, and the lowering follows it") {
  Tensor a = Tensor::empty({64, 64}), b = Tensor::empty({64, 64});
  KernelOpRef ast = lastAst(a.matmul(b));
  TargetSpec host = TargetSpec::host();
  Kernel k = buildKernel(ast, host, {});
  LoopNest nest = LoopNest::of(k);
  CAPTURE(roles(nest));
  REQUIRE(k.vectorAxis >= 0);
  CHECK_FALSE(k.vectorReduce);
  CHECK(nest.vecAxis == k.vectorAxis);
  CHECK(nest.roles[static_cast<size_t>(k.vectorAxis)] == Role::Vector);
  CHECK(nest.lanes == k.fullShape()[static_cast<size_t>(k.vectorAxis)].asInt());
  // the register tile: output rows unrolled (one accumulator each), the reduce unrolled inside
  REQUIRE(nest.outUp.size() == 1);
  REQUIRE(nest.redUp.size() == 1);
  CHECK(nest.roles[static_cast<size_t>(nest.outUp[0])] == Role::Upcast);
  CHECK(nest.roles[static_cast<size_t>(nest.redUp[0])] == Role::Unroll);
  CHECK(nest.accumulators() == static_cast<size_t>(k.fullShape()[static_cast<size_t>(nest.outUp[0])].asInt()));
  CHECK(nest.redCombos.size() == static_cast<size_t>(k.fullShape()[static_cast<size_t>(nest.redUp[0])].asInt()));
  // the kernel summary shows the decision, and the lowering emits that axis as that many lanes
  CHECK(describeKernel(ast, host, {}).kernelSummary.find(":vector") != std::string::npos);
  std::string loops = emitKernelText(ast, host, {}, IRStage::Loops);
  CHECK(loops.find(fmt::format("vector: axis {} as {} lanes\n", k.vectorAxis, nest.lanes)) != std::string::npos);
  CHECK(loops.find(fmt::format("{} accumulators", nest.accumulators())) != std::string::npos);
  // setUpcast puts each combination's values on the unrolled axes and vidx on the vector axis
  std::vector<NodeRef> ix(k.shapeLen(), numNode(7));
  NodeRef vidx = variable("vidx", 0, nest.lanes - 1);
  nest.setUpcast(ix, nest.outCombos.back(), &nest.redCombos[1], vidx);
  CHECK(ix[static_cast<size_t>(nest.outUp[0])]->key() == numNode(nest.outCombos.back()[0])->key());
  CHECK(ix[static_cast<size_t>(nest.redUp[0])]->key() == numNode(1)->key());
  CHECK(ix[static_cast<size_t>(k.vectorAxis)] == vidx);
  nest.setUpcast(ix, nest.outCombos[0], nullptr, vidx);
  CHECK(ix[static_cast<size_t>(nest.redUp[0])]->key() == numNode(0)->key());
}

TEST_CASE("Loop nest: no vector axis where the lanes cannot compute or store it") {
  TargetSpec host = TargetSpec::host();
  SUBCASE("integer arithmetic stays scalar; its upcast axes are unrolled") {
    Tensor a = Tensor::empty({64, 64}, TensorOptions(dtypes::int32)), b = Tensor::empty({64, 64}, TensorOptions(dtypes::int32));
    KernelOpRef ast = lastAst(a.matmul(b));
    // (the heuristics tile float kernels only: the same tile as a float matmul's columns, by hand)
    auto opts = withOpts({{OptOp::Upcast, 1, 8}});
    Kernel k = buildKernel(ast, host, opts);
    LoopNest nest = LoopNest::of(k);
    CAPTURE(roles(nest));
    REQUIRE(k.upcasted == 1);
    CHECK(k.vectorAxis == -1);
    CHECK(nest.lanes == 0);
    CHECK(nest.outUp.size() == 1);
    CHECK(nest.accumulators() == 8);
    CHECK(describeKernel(ast, host, opts).kernelSummary.find(":vector") == std::string::npos);
    std::string loops = emitKernelText(ast, host, opts, IRStage::Loops);
    CHECK(loops.find("vector:") == std::string::npos);
    CHECK(loops.find("8 accumulators") != std::string::npos);
    // the same tile of a float matmul is a vector of 8 lanes with one accumulator
    Tensor f = Tensor::empty({64, 64});
    Kernel fk = buildKernel(lastAst(f.matmul(f)), host, opts);
    CHECK(fk.vectorAxis == static_cast<int>(fk.shapeLen()) - 1);
    CHECK(LoopNest::of(fk).accumulators() == 1);
  }
  SUBCASE("an upcast axis the output is strided along is unrolled, not a vector") {
    Tensor a = Tensor::empty({64, 64});
    KernelOpRef ast = lastAst(a.mul(2).add(1));
    // the element-wise kernel's one axis of 4096: upcast by 8, its last 8 elements are the vector
    Kernel contiguous = buildKernel(ast, host, withOpts({{OptOp::Upcast, 0, 8}}));
    CHECK(contiguous.vectorAxis == static_cast<int>(contiguous.shapeLen()) - 1);
    CHECK(LoopNest::of(contiguous).outCombos.size() == 1);
    // upcast again by 4: the new last axis steps 8 elements in the output, so neither is a vector
    // and all 32 combinations are unrolled
    Kernel strided = buildKernel(ast, host, withOpts({{OptOp::Upcast, 0, 8}, {OptOp::Upcast, 0, 4}}));
    LoopNest nest = LoopNest::of(strided);
    CAPTURE(roles(nest));
    CHECK(strided.vectorAxis == -1);
    CHECK(nest.outUp.size() == 2);
    CHECK(nest.outCombos.size() == 32);
  }
  SUBCASE("exp2 on lanes needs the target's vector math library") {
    if (host.triple.find("x86_64") == std::string::npos || host.triple.find("linux") == std::string::npos) {
      test::skip("libmvec's exp2 exists for x86-64 Linux hosts only; this host is " + host.triple);
      return;
    }
    Tensor a = Tensor::empty({4096});
    KernelOpRef ast = lastAst(a.mul(3).exp());
    auto opts = withOpts({{OptOp::Upcast, 0, 8}});
    Kernel linux = buildKernel(ast, host, opts);
    CHECK(linux.vectorAxis == static_cast<int>(linux.shapeLen()) - 1);
    TargetSpec other = host;
    other.triple = "x86_64-pc-windows-msvc"; // no libmvec: exp2 has no vector form
    Kernel noMath = buildKernel(ast, other, opts);
    CHECK(noMath.upcasted == 1);
    CHECK(noMath.vectorAxis == -1);
    // without the exp the same kernel vectorizes there too
    Kernel plain = buildKernel(lastAst(a.mul(3).add(1)), other, opts);
    CHECK(plain.vectorAxis == static_cast<int>(plain.shapeLen()) - 1);
  }
}

TEST_CASE("Loop nest: a reduce axis unrolled last becomes vector partial sums (dot products)") {
  Tensor a = Tensor::empty({16, 32});
  KernelOpRef ast = lastAst(a.sum(std::vector<int64_t>{1}));
  TargetSpec host = TargetSpec::host();
  Kernel k = buildKernel(ast, host, withOpts({{OptOp::Unroll, 0, 32}}));
  LoopNest nest = LoopNest::of(k);
  CAPTURE(roles(nest));
  REQUIRE(k.vectorAxis == static_cast<int>(k.shapeLen()) - 1);
  CHECK(k.vectorReduce);
  CHECK(nest.vecReduce);
  CHECK(nest.lanes == 32);
  CHECK(nest.redUp.empty());
  CHECK(nest.accumulators() == 1);
  std::string loops = emitKernelText(ast, host, withOpts({{OptOp::Unroll, 0, 32}}), IRStage::Loops);
  CHECK(loops.find("as 32 lanes of partial sums") != std::string::npos);
  // where the reduce is done (no reduce combination), the vector axis is at 0
  std::vector<NodeRef> ix(k.shapeLen(), numNode(3));
  NodeRef vidx = variable("vidx", 0, 31);
  nest.setUpcast(ix, nest.outCombos[0], nullptr, vidx);
  CHECK(ix.back()->key() == numNode(0)->key());
  nest.setUpcast(ix, nest.outCombos[0], &nest.redCombos[0], vidx);
  CHECK(ix.back() == vidx);
  // an integer sum keeps the unrolled reduce as scalars
  Tensor i = Tensor::empty({16, 32}, TensorOptions(dtypes::int32));
  Kernel ik = buildKernel(lastAst(i.sum(std::vector<int64_t>{1})), host, withOpts({{OptOp::Unroll, 0, 32}}));
  CHECK(ik.vectorAxis == -1);
  CHECK(LoopNest::of(ik).redCombos.size() == 32);
}

TEST_CASE("Loop nest: row kernels and the GPU keep their own plans") {
  Tensor a = Tensor::empty({64, 64}), b = Tensor::empty({64, 64});
  KernelOpRef ast = lastAst(a.matmul(b));
  TargetSpec gpu = TargetSpec::nvptx("sm_90");
  Kernel k = buildKernel(ast, gpu, {});
  LoopNest nest = LoopNest::of(k);
  CAPTURE(roles(nest));
  CHECK(k.vectorAxis == -1); // (the NVPTX lowering has no vector mode)
  for (Role r : nest.roles) CHECK(r != Role::Vector);
  CHECK(nest.outUp.size() + nest.redUp.size() == static_cast<size_t>(k.upcasted));
  CHECK(nest.accumulators() == nest.outCombos.size());
}

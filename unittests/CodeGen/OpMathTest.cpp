// The math lowerings call the functions the op table (Ops.def) names: CPU kernels the libm column's
// C function (float32 with an "f"), vector mode and the loop vectorizer its libmvec variants for
// the ops whose Lanes column is VectorMath, the NVPTX lowering the NVPTX column's float64 function.
#include "LowerCPU.h"
#include "NVPTXMath.h"
#include "VectorMath.h"

#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

#include <llvm/IR/Module.h>

#include <string>
#include <vector>

using namespace lazyjit;

namespace {

// The name of the function `math` calls for `op` on a scalar of type `t` (empty if it calls none).
std::string calledFor(MathLowering &math, Op op, llvm::Type *(*type)(llvm::LLVMContext &)) {
  llvm::LLVMContext ctx;
  llvm::Module m("op-math", ctx);
  llvm::Type *t = type(ctx);
  auto *f = llvm::Function::Create(llvm::FunctionType::get(t, {t}, false), llvm::GlobalValue::ExternalLinkage,
                                   "t", &m);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value *r = math.unary(b, op, f->getArg(0));
  // (a float32 value through a float64 helper is a call between two conversions)
  if (auto *trunc = llvm::dyn_cast<llvm::FPTruncInst>(r)) r = trunc->getOperand(0);
  auto *call = llvm::dyn_cast<llvm::CallInst>(r);
  return call && call->getCalledFunction() ? call->getCalledFunction()->getName().str() : "";
}

llvm::Type *floatTy(llvm::LLVMContext &c) { return llvm::Type::getFloatTy(c); }
llvm::Type *doubleTy(llvm::LLVMContext &c) { return llvm::Type::getDoubleTy(c); }

} // namespace

TEST_CASE("Op table: CPU kernels call the libm column's function") {
  KernelOptions o;
  CPUMath math(o, llvm::Triple("x86_64-unknown-linux-gnu"), false);
  int withLibm = 0;
  for (int i = 0; i < kNumOps; ++i) {
    Op op = static_cast<Op>(i);
    std::string libm(opLibm(op));
    if (libm.empty()) continue;
    ++withLibm;
    CHECK_MESSAGE(calledFor(math, op, floatTy) == libm + "f", opName(op));
    CHECK_MESSAGE(calledFor(math, op, doubleTy) == libm, opName(op));
  }
  CHECK(withLibm == 3); // exp2, log2, sin
  CHECK_THROWS_AS(calledFor(math, Op::Recip, floatTy), InternalError);
}

TEST_CASE("Op table: the libmvec variants are those of the VectorMath ops' libm functions") {
  // what the loop vectorizer maps (Compiler.cpp), in this order
  std::vector<std::string> names;
  for (const VectorMathFn &f : vectorMathFns()) names.push_back(f.scalar + (f.dbl ? " f64" : " f32"));
  CHECK(names == std::vector<std::string>{"exp2f f32", "log2f f32", "sinf f32", "exp2 f64", "log2 f64", "sin f64"});
  for (int i = 0; i < kNumOps; ++i) {
    Op op = static_cast<Op>(i);
    auto zmm = vectorMathFn(op, dtypes::float32, 32, 512, true);
    auto ymm = vectorMathFn(op, dtypes::float64, 8, 256, true);
    if (opLanes(op) != OpLanes::VectorMath) {
      CHECK_MESSAGE(!zmm.has_value(), opName(op));
      continue;
    }
    std::string libm(opLibm(op));
    REQUIRE_MESSAGE(zmm.has_value(), opName(op));
    CHECK(*zmm == std::pair<std::string, int64_t>{"_ZGVeN16v_" + libm + "f", 16});
    REQUIRE_MESSAGE(ymm.has_value(), opName(op));
    CHECK(*ymm == std::pair<std::string, int64_t>{"_ZGVdN4v_" + libm, 4});
    // no vector library (not x86-64 Linux): no variant
    CHECK_FALSE(vectorMathFn(op, dtypes::float32, 16, 512, false).has_value());
  }
}

TEST_CASE("Op table: the NVPTX lowering emits the NVPTX column's float64 function") {
  NVPTXMath math;
  int withFn = 0;
  for (int i = 0; i < kNumOps; ++i) {
    Op op = static_cast<Op>(i);
    std::string fn(opNVPTXFn(op));
    if (fn.empty()) continue;
    ++withFn;
    CHECK_MESSAGE(calledFor(math, op, doubleTy) == fn, opName(op));
    // float32 exp2 is a PTX instruction; log2 and sin go through the float64 function
    if (op != Op::Exp2) CHECK_MESSAGE(calledFor(math, op, floatTy) == fn, opName(op));
  }
  CHECK(withFn == 3); // exp2, log2, sin
  CHECK_THROWS_AS(calledFor(math, Op::Add, doubleTy), InternalError);
}

// The CPU lowering's vector math: exp2/log2/sin on vectors as calls into glibc's libmvec (split
// into the widths it provides), and the inline exp2 of row kernels.
#include "LowerCPU.h"
#include "VectorMath.h"
#include "lazyjit/Support/Error.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/TargetParser/Triple.h>

namespace lazyjit {

using namespace llvm;

Value *CPUMath::vectorCall(IRBuilder<> &b, Op op, Value *a) {
  auto *vt = cast<FixedVectorType>(a->getType());
  auto lanes = static_cast<int64_t>(vt->getNumElements());
  bool isFloat = vt->getElementType()->isFloatTy();
  if (op == Op::Exp2 && rowKernel && isFloat) return inlineExp2F32(b, a, vectorBits >= 512 && triple.isX86(), avx512dq);
  auto fn = vectorMathFn(op, isFloat ? dtypes::float32 : dtypes::float64, lanes, static_cast<int>(vectorBits),
                         vectorMath);
  LAZYJIT_INTERNAL_CHECK(fn.has_value(), "codegen: no vector {} for {} lanes", opName(op), lanes);
  auto [name, width] = *fn;
  Module *m = b.GetInsertBlock()->getModule();
  Type *part = VectorType::get(vt->getElementType(), static_cast<unsigned>(width), false);
  FunctionCallee f = m->getOrInsertFunction(name, FunctionType::get(part, {part}, false));
  if (auto *fnDecl = dyn_cast<Function>(f.getCallee())) {
    fnDecl->setDoesNotAccessMemory();
    fnDecl->setDoesNotThrow();
    fnDecl->addFnAttr(Attribute::WillReturn);
  }
  // one call per `width` lanes, the pieces put back together
  Value *out = PoisonValue::get(a->getType());
  for (int64_t lo = 0; lo < lanes; lo += width) {
    llvm::SmallVector<int, 16> pick, put;
    for (int64_t i = 0; i < width; ++i) pick.push_back(static_cast<int>(lo + i));
    Value *piece = width == lanes ? a : b.CreateShuffleVector(a, pick);
    CallInst *call = b.CreateCall(f, {piece});
    call->setDoesNotAccessMemory();
    if (width == lanes) return call;
    for (int64_t i = 0; i < lanes; ++i) put.push_back(i >= lo && i < lo + width ? static_cast<int>(lanes + i - lo) : static_cast<int>(i));
    llvm::SmallVector<int, 64> grow;
    for (int64_t i = 0; i < lanes; ++i) grow.push_back(i < width ? static_cast<int>(i) : -1);
    Value *wide = b.CreateShuffleVector(call, PoisonValue::get(part), grow);
    out = b.CreateShuffleVector(out, wide, put);
  }
  return out;
}

// exp2 of a float vector without a call: row kernels (OPT=5) evaluate it in passes whose other
// values would be spilled around each libmvec call. 2^x = 2^k * 2^f with k = round(x), |f| <= 1/2,
// 2^f from Cephes' exp2f polynomial (relative error below 2e-7, about 1.5 ulp; libmvec's is below
// 1 ulp), and 2^k applied as two factors 2^(k/2) so that every k in [-160, 130] (results from 0
// through the subnormals to inf) has normal factors. NaN stays NaN, +-inf give inf and 0: the
// clamps are compare-and-selects that keep a NaN x (x86's vmaxps/vminps with x second), so the
// polynomial, and the product, are NaN with no select at the end (whatever the frozen integer
// conversion of a NaN k gives, NaN times it is NaN). On AVX2 that select and its zero register
// were two instructions of about twenty, and one register of the sixteen softmax's pass needs.
//
// With AVX-512 and DQ on 16 lanes: k = vrndscaleps(x) and f = vreduceps(x) (x - round(x), +0 for
// +-inf), independent of each other, and vscalefps(p, k) gives inf, 0 or NaN for k = +inf, -inf,
// NaN and saturates for any finite k: no clamp and no NaN select (9 vector instructions where the
// clamped form takes 13; softmax's sum pass is bound by them).
Value *inlineExp2F32(IRBuilder<> &b, Value *x, bool avx512, bool dq) {
  Type *ft = x->getType();
  auto *vt = cast<VectorType>(ft);
  Type *it = VectorType::get(b.getInt32Ty(), vt->getElementCount());
  auto c = [&](double v) { return ConstantFP::get(ft, v); };
  auto ci = [&](int64_t v) { return ConstantInt::get(it, static_cast<uint64_t>(v)); };
  static const double poly[] = {1.535336188319500e-4, 1.339887440266574e-3, 9.618437357674640e-3,
                                5.550332471162809e-2, 2.402264791363012e-1, 6.931472028550421e-1, 1.0};
  auto polynomial = [&](Value *f) {
    Value *p = c(poly[0]);
    for (size_t i = 1; i < std::size(poly); ++i) p = b.CreateIntrinsic(Intrinsic::fma, {ft}, {p, f, c(poly[i])});
    return p;
  };
  bool avx512x16 = avx512 && vt->getElementCount().getFixedValue() == 16;
  if (avx512x16 && dq) {
    // (imm 8: keep no fraction bits, round to nearest even, no precision exception)
    Value *kf = b.CreateUnaryIntrinsic(Intrinsic::roundeven, x);
    Value *f = b.CreateIntrinsic(Intrinsic::x86_avx512_mask_reduce_ps_512, {},
                                 {x, b.getInt32(8), PoisonValue::get(ft), b.getInt16(0xffff), b.getInt32(4)});
    return b.CreateIntrinsic(Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                             {polynomial(f), kf, PoisonValue::get(ft), b.getInt16(0xffff), b.getInt32(4)});
  }
  Value *lo = b.CreateSelect(b.CreateFCmpOLT(x, c(-160.0)), c(-160.0), x);
  Value *xc = b.CreateSelect(b.CreateFCmpOGT(lo, c(130.0)), c(130.0), lo);
  Value *kf = b.CreateUnaryIntrinsic(Intrinsic::roundeven, xc);
  Value *p = polynomial(b.CreateFSub(xc, kf));
  Value *r;
  if (avx512x16) {
    // vscalefps: p * 2^k in one instruction, overflow to inf and underflow through the subnormals
    // to 0 included
    r = b.CreateIntrinsic(Intrinsic::x86_avx512_mask_scalef_ps_512, {},
                          {p, kf, PoisonValue::get(ft), b.getInt16(0xffff), b.getInt32(4)});
  } else {
    Value *k = b.CreateFreeze(b.CreateFPToSI(kf, it)); // (NaN: any value, not poison)
    Value *k1 = b.CreateAShr(k, ci(1)), *k2 = b.CreateSub(k, k1);
    auto pow2 = [&](Value *e) { return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, ci(127)), ci(23)), ft); };
    r = b.CreateFMul(b.CreateFMul(p, pow2(k1)), pow2(k2));
  }
  return r;
}

} // namespace lazyjit

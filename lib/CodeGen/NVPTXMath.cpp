// NVPTX math without libdevice (see NVPTXMath.h). The float64 functions are emitted once per
// module as internal functions; LLVM inlines them where it pays off.
#include "NVPTXMath.h"
#include "lazyjit/Support/Error.h"

#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <cmath>

namespace lazyjit {

using namespace llvm;

namespace {

Value *fconst(IRBuilder<> &b, double v) { return ConstantFP::get(b.getDoubleTy(), v); }

// c[0] + x*(c[1] + x*(c[2] + ...)).
Value *horner(IRBuilder<> &b, Value *x, const std::vector<double> &c) {
  Value *acc = fconst(b, c.back());
  for (size_t i = c.size() - 1; i-- > 0;) acc = b.CreateFAdd(b.CreateFMul(acc, x), fconst(b, c[i]));
  return acc;
}

Value *fma(IRBuilder<> &b, Value *x, Value *y, Value *z) {
  return b.CreateIntrinsic(Intrinsic::fma, {b.getDoubleTy()}, {x, y, z});
}

// 2^n for an i64 n in [-1022, 1023], built from its exponent bits.
Value *pow2(IRBuilder<> &b, Value *n) {
  Value *bits = b.CreateShl(b.CreateAdd(n, b.getInt64(1023)), 52);
  return b.CreateBitCast(bits, b.getDoubleTy());
}

// Creates `double name(double)` once per module and fills it with `body`.
Function *helper(Module &m, std::string_view name, const std::function<Value *(IRBuilder<> &, Value *)> &body) {
  if (Function *f = m.getFunction(name)) return f;
  LLVMContext &ctx = m.getContext();
  Type *d = Type::getDoubleTy(ctx);
  Function *f = Function::Create(FunctionType::get(d, {d}, false), GlobalValue::InternalLinkage, name, &m);
  f->addFnAttr(Attribute::NoUnwind);
  f->setDoesNotAccessMemory();
  IRBuilder<> b(BasicBlock::Create(ctx, "entry", f)); // no fast-math flags: exact IEEE steps
  Argument *x = f->getArg(0);
  x->setName("x");
  b.CreateRet(body(b, x));
  return f;
}

//   exp2(x) = 2^n * e^(f*ln2),  n = rint(x), |f| <= 1/2
// e^t is its Taylor series to t^13 (|t| <= 0.347, error < 5e-18); 2^n is applied as two factors
// so that results down to the subnormals and up to inf come out right.
Value *exp2Body(IRBuilder<> &b, Value *x) {
  Value *isNan = b.CreateFCmpUNO(x, x);
  Value *clamped = b.CreateSelect(b.CreateFCmpOGT(x, fconst(b, 1100)), fconst(b, 1100),
                                  b.CreateSelect(b.CreateFCmpOLT(x, fconst(b, -1100)), fconst(b, -1100), x));
  Value *xc = b.CreateSelect(isNan, fconst(b, 0), clamped);
  Value *n = b.CreateUnaryIntrinsic(Intrinsic::rint, xc);
  Value *t = b.CreateFMul(b.CreateFSub(xc, n), fconst(b, M_LN2));
  std::vector<double> c{1.0};
  for (int k = 1; k <= 13; ++k) c.push_back(c.back() / k);
  Value *p = horner(b, t, c);
  Value *ni = b.CreateFPToSI(n, b.getInt64Ty());
  Value *h = b.CreateAShr(ni, 1);
  Value *r = b.CreateFMul(b.CreateFMul(p, pow2(b, h)), pow2(b, b.CreateSub(ni, h)));
  return b.CreateSelect(isNan, x, r);
}

//   log2(x) = e + log(m)/ln2,  x = m * 2^e,  m in [sqrt(1/2), sqrt(2))
//   log(m) = 2 atanh(s) = 2 (s + s^3/3 + ... + s^23/23),  s = (m-1)/(m+1), |s| <= 0.172
// Subnormals are scaled by 2^54 first; x < 0 gives nan, 0 gives -inf, inf and nan themselves.
Value *log2Body(IRBuilder<> &b, Value *x) {
  Type *i64 = b.getInt64Ty();
  Value *sub = b.CreateFCmpOLT(x, fconst(b, 0x1p-1022));
  Value *xs = b.CreateSelect(sub, b.CreateFMul(x, fconst(b, 0x1p54)), x);
  Value *bits = b.CreateBitCast(xs, i64);
  Value *e = b.CreateSub(b.CreateAnd(b.CreateLShr(bits, 52), 0x7ff), b.getInt64(1023));
  e = b.CreateSub(e, b.CreateSelect(sub, b.getInt64(54), b.getInt64(0)));
  Value *mbits = b.CreateOr(b.CreateAnd(bits, b.getInt64(0x000fffffffffffffULL)), b.getInt64(0x3ff0000000000000ULL));
  Value *m = b.CreateBitCast(mbits, b.getDoubleTy());
  Value *big = b.CreateFCmpOGT(m, fconst(b, M_SQRT2));
  m = b.CreateSelect(big, b.CreateFMul(m, fconst(b, 0.5)), m);
  e = b.CreateAdd(e, b.CreateZExt(big, i64));
  Value *s = b.CreateFDiv(b.CreateFSub(m, fconst(b, 1)), b.CreateFAdd(m, fconst(b, 1)));
  Value *z = b.CreateFMul(s, s);
  std::vector<double> c;
  for (int k = 0; k <= 11; ++k) c.push_back(1.0 / (2 * k + 1));
  Value *lnm = b.CreateFMul(b.CreateFMul(fconst(b, 2), s), horner(b, z, c));
  Value *r = b.CreateFAdd(b.CreateSIToFP(e, b.getDoubleTy()), b.CreateFMul(lnm, fconst(b, M_LOG2E)));
  // special values, last match wins: nan -> nan, +inf -> inf, 0 -> -inf, < 0 -> nan
  r = b.CreateSelect(b.CreateFCmpOLT(x, fconst(b, 0)), fconst(b, NAN), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, fconst(b, 0)), fconst(b, -INFINITY), r);
  r = b.CreateSelect(b.CreateFCmpOEQ(x, fconst(b, INFINITY)), x, r);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, r);
}

//   sin(x): k = rint(x * 2/pi), r = x - k*pi/2 (pi/2 in three parts, each step an fma), then
// sin(r) or cos(r) by the quadrant k mod 4, as Taylor series to r^17 / r^16 (|r| <= pi/4).
// inf and nan give nan (r is nan).
Value *sinBody(IRBuilder<> &b, Value *x) {
  Value *k = b.CreateUnaryIntrinsic(Intrinsic::rint, b.CreateFMul(x, fconst(b, M_2_PI)));
  Value *negK = b.CreateFNeg(k);
  Value *r = fma(b, negK, fconst(b, 1.570796310901641845703125), x);
  r = fma(b, negK, fconst(b, 1.589325471229585672428e-8), r);
  r = fma(b, negK, fconst(b, 6.12323399573676588613e-17), r);
  // the quadrant; k is replaced by 0 where it is not a small integer (inf, nan), r is nan there
  Value *small = b.CreateFCmpOLT(b.CreateUnaryIntrinsic(Intrinsic::fabs, k), fconst(b, 0x1p52));
  Value *q = b.CreateAnd(b.CreateFPToSI(b.CreateSelect(small, k, fconst(b, 0)), b.getInt64Ty()), 3);
  Value *z = b.CreateFMul(r, r);
  std::vector<double> sc, cc;
  double f = 1;
  for (int i = 0; i <= 8; ++i) {
    // sc[i] = (-1)^i / (2i+1)!, cc[i] = (-1)^i / (2i)!
    double fc = f;                      // (2i)!
    double fs = f * (2 * i + 1);        // (2i+1)!
    cc.push_back((i % 2 ? -1.0 : 1.0) / fc);
    sc.push_back((i % 2 ? -1.0 : 1.0) / fs);
    f = fs * (2 * i + 2);
  }
  Value *s = b.CreateFMul(r, horner(b, z, sc));
  Value *c = horner(b, z, cc);
  Value *odd = b.CreateICmpNE(b.CreateAnd(q, 1), b.getInt64(0));
  Value *neg = b.CreateICmpNE(b.CreateAnd(q, 2), b.getInt64(0));
  Value *v = b.CreateSelect(odd, c, s);
  return b.CreateSelect(neg, b.CreateFNeg(v), v);
}

} // namespace

Value *NVPTXMath::unary(IRBuilder<> &b, Op op, Value *x) {
  Module &m = *b.GetInsertBlock()->getModule();
  bool dbl = x->getType()->isDoubleTy();
  LAZYJIT_INTERNAL_CHECK(dbl || x->getType()->isFloatTy(), "codegen: NVPTX math on a non-float value");
  auto viaDouble = [&](Function *f) -> Value * {
    if (dbl) return b.CreateCall(f, {x});
    return b.CreateFPTrunc(b.CreateCall(f, {b.CreateFPExt(x, b.getDoubleTy())}), b.getFloatTy());
  };
  // (the helpers' names are Ops.def's NVPTX column)
  switch (op) {
  case Op::Sqrt: return b.CreateIntrinsic(dbl ? Intrinsic::nvvm_sqrt_rn_d : Intrinsic::nvvm_sqrt_rn_f, {}, {x});
  case Op::Exp2:
    if (!dbl) return b.CreateIntrinsic(Intrinsic::nvvm_ex2_approx_f, {}, {x});
    return viaDouble(helper(m, opNVPTXFn(op), exp2Body));
  case Op::Log2: return viaDouble(helper(m, opNVPTXFn(op), log2Body));
  case Op::Sin: return viaDouble(helper(m, opNVPTXFn(op), sinBody));
  // (RECIP is a division, NEG a negation: ValueBuilder::alu's)
  case Op::Cast: case Op::Recip: case Op::Neg:
  case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Max: case Op::Mod: case Op::CmpLt:
  case Op::Xor: case Op::MulAcc: case Op::Where: case Op::Sum: case Op::ReduceMax:
  case Op::Load: case Op::Const: case Op::Store:
  case Op::Reshape: case Op::Permute: case Op::Expand: case Op::Pad: case Op::Shrink: case Op::Stride:
  case Op::AsStrided:
  case Op::Empty: case Op::LoadConst: case Op::Copy: case Op::Contiguous: case Op::Custom: break;
  }
  LAZYJIT_INTERNAL_CHECK(false, "codegen: {} is not a math op", opName(op));
}

} // namespace lazyjit

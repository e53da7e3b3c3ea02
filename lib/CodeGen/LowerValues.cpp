// Lowering of dtypes, casts and ALU ops to LLVM IR, with the interpreter's semantics:
// float16/bfloat16 computed in float32 and rounded on store/cast, saturating float->int casts,
// C-style integer division with x/0 = 0, an unordered compare for CMPLT, NaN-propagating MAX.
#include "LowerValues.h"
#include "lazyjit/Support/Error.h"

#include <llvm/IR/Intrinsics.h>

#include <cmath>
#include <limits>

namespace lazyjit {

using namespace llvm;

Type *ValueBuilder::regType(DType dt) const {
  LLVMContext &c = b.getContext();
  switch (dt.scalar()) {
  case ScalarType::Bool: return Type::getInt1Ty(c);
  case ScalarType::Int8:
  case ScalarType::UInt8: return Type::getInt8Ty(c);
  case ScalarType::Int16:
  case ScalarType::UInt16: return Type::getInt16Ty(c);
  case ScalarType::Int32:
  case ScalarType::UInt32: return Type::getInt32Ty(c);
  case ScalarType::Int64:
  case ScalarType::UInt64: return Type::getInt64Ty(c);
  case ScalarType::Float16:
  case ScalarType::BFloat16:
  case ScalarType::Float32: return Type::getFloatTy(c);
  case ScalarType::Float64: return Type::getDoubleTy(c);
  }
  return Type::getFloatTy(c);
}

Type *ValueBuilder::memType(DType dt) const {
  LLVMContext &c = b.getContext();
  switch (dt.scalar()) {
  case ScalarType::Bool: return Type::getInt8Ty(c);
  case ScalarType::Float16: return Type::getHalfTy(c);
  case ScalarType::BFloat16: return Type::getInt16Ty(c);
  default: return regType(dt);
  }
}

Type *ValueBuilder::withLanesOf(Type *scalar, const Value *like) {
  if (auto *vt = dyn_cast<VectorType>(like->getType())) return VectorType::get(scalar, vt->getElementCount());
  return scalar;
}

Value *ValueBuilder::fastFlags(Value *v) { return v; }

// Rounds a float register to the values of float16 or bfloat16 (round to nearest even).
Value *ValueBuilder::roundToHalfPrecision(Value *f, DType dt) {
  // casts carry no fast-math flags, as in the reference
  IRBuilderBase::FastMathFlagGuard noFlags(b);
  b.clearFastMathFlags();
  if (dt == dtypes::float16)
    return b.CreateFPExt(b.CreateFPTrunc(f, withLanesOf(b.getHalfTy(), f)), withLanesOf(b.getFloatTy(), f));
  // bfloat16: the top 16 bits of the float, rounded to nearest even; NaN stays a quiet NaN
  Value *u = b.CreateBitCast(f, withLanesOf(b.getInt32Ty(), f));
  auto c = [&](uint32_t v) { return ConstantInt::get(u->getType(), v); }; // (a splat for vectors)
  Value *lsb = b.CreateAnd(b.CreateLShr(u, 16), 1);
  Value *rounded = b.CreateAnd(b.CreateAdd(b.CreateAdd(u, c(0x7fff)), lsb), c(0xffff0000u));
  Value *nan = b.CreateOr(b.CreateAnd(u, c(0xffff0000u)), c(0x400000));
  Value *isNan = b.CreateFCmpUNO(f, f);
  return b.CreateBitCast(b.CreateSelect(isNan, nan, rounded), f->getType());
}

Val ValueBuilder::load(Value *ptr, Value *idx, DType dt, bool aligned) {
  Type *mt = memType(dt);
  Value *gep = b.CreateInBoundsGEP(mt, ptr, idx);
  LoadInst *ld = b.CreateAlignedLoad(mt, gep, Align(aligned ? dt.itemsize() : 1));
  return fromMemory(ld, dt);
}

std::vector<Val> ValueBuilder::loadVector(Value *ptr, Value *idx, DType dt, unsigned width) {
  Type *mt = memType(dt);
  Type *vt = FixedVectorType::get(mt, width);
  Value *gep = b.CreateInBoundsGEP(mt, ptr, idx);
  LoadInst *ld = b.CreateAlignedLoad(vt, gep, Align(dt.itemsize() * width));
  std::vector<Val> out;
  for (unsigned i = 0; i < width; ++i) out.push_back(fromMemory(b.CreateExtractElement(ld, i), dt));
  return out;
}

Val ValueBuilder::fromMemory(Value *ld, DType dt) {
  switch (dt.scalar()) {
  case ScalarType::Bool: return {b.CreateICmpNE(ld, Constant::getNullValue(ld->getType())), dt};
  case ScalarType::Float16: return {b.CreateFPExt(ld, withLanesOf(b.getFloatTy(), ld)), dt};
  case ScalarType::BFloat16:
    return {b.CreateBitCast(b.CreateShl(b.CreateZExt(ld, withLanesOf(b.getInt32Ty(), ld)), 16),
                            withLanesOf(b.getFloatTy(), ld)),
            dt};
  default: return {ld, dt};
  }
}

void ValueBuilder::store(Value *ptr, Value *idx, Val v, DType bufDType) {
  Value *out = toMemory(v, bufDType);
  Type *mt = memType(bufDType);
  b.CreateAlignedStore(out, b.CreateInBoundsGEP(mt, ptr, idx), Align(bufDType.itemsize()));
}

Value *ValueBuilder::toMemory(Val v, DType dt) {
  Value *out = convert(v, dt, true).v;
  switch (dt.scalar()) {
  case ScalarType::Bool: return b.CreateZExt(out, withLanesOf(b.getInt8Ty(), out));
  case ScalarType::Float16: return b.CreateFPTrunc(out, withLanesOf(b.getHalfTy(), out));
  case ScalarType::BFloat16:
    return b.CreateTrunc(b.CreateLShr(b.CreateBitCast(out, withLanesOf(b.getInt32Ty(), out)), 16),
                         withLanesOf(b.getInt16Ty(), out));
  default: return out;
  }
}

namespace {
// The interpreter's saturating double -> integer conversion.
int64_t satSigned(double d, int bytes) {
  if (std::isnan(d)) return 0;
  d = std::trunc(d);
  double lo = -std::ldexp(1.0, bytes * 8 - 1), hi = std::ldexp(1.0, bytes * 8 - 1);
  if (d <= lo) return bytes == 8 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(lo);
  if (d >= hi) return bytes == 8 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(hi) - 1;
  return static_cast<int64_t>(d);
}
uint64_t satUnsigned(double d, int bytes) {
  if (std::isnan(d)) return 0;
  d = std::trunc(d);
  if (d <= 0) return 0;
  double hi = std::ldexp(1.0, bytes * 8);
  if (d >= hi) return bytes == 8 ? std::numeric_limits<uint64_t>::max() : static_cast<uint64_t>(hi) - 1;
  return static_cast<uint64_t>(d);
}
} // namespace

Val ValueBuilder::constant(double v, DType dt) {
  switch (dt.scalar()) {
  case ScalarType::Bool: return {b.getInt1(v != 0 || std::isnan(v)), dt};
  case ScalarType::Float16:
    return {ConstantFP::get(b.getFloatTy(), static_cast<float>(Half(static_cast<float>(v)))), dt};
  case ScalarType::BFloat16:
    return {ConstantFP::get(b.getFloatTy(), static_cast<float>(BFloat16(static_cast<float>(v)))), dt};
  case ScalarType::Float32: return {ConstantFP::get(b.getFloatTy(), static_cast<float>(v)), dt};
  case ScalarType::Float64: return {ConstantFP::get(b.getDoubleTy(), v), dt};
  default: break;
  }
  Type *t = regType(dt);
  if (dt.isUnsigned()) return {ConstantInt::get(t, satUnsigned(v, dt.itemsize()), false), dt};
  return {ConstantInt::get(t, static_cast<uint64_t>(satSigned(v, dt.itemsize())), true), dt};
}

Value *ValueBuilder::truthy(Val x) {
  if (x.dt.isBool()) return x.v;
  if (x.dt.isFloating()) return b.CreateFCmpUNE(x.v, ConstantFP::get(x.v->getType(), 0.0));
  return b.CreateICmpNE(x.v, ConstantInt::get(x.v->getType(), 0));
}

Val ValueBuilder::convert(Val x, DType to, bool exact) {
  // casts carry no fast-math flags, as in the reference
  IRBuilderBase::FastMathFlagGuard noFlags(b);
  b.clearFastMathFlags();
  DType from = x.dt;
  Type *tt = withLanesOf(regType(to), x.v);
  auto finish = [&](Value *v) -> Val {
    if (exact && to.isHalfWidth()) v = roundToHalfPrecision(v, to);
    return {v, to};
  };
  if (from == to) return finish(x.v);
  if (to.isBool()) return {truthy(x), to};
  if (to.isFloating()) {
    if (from.isFloating()) {
      Value *v = x.v;
      if (v->getType() != tt)
        v = v->getType()->getScalarType()->isDoubleTy() ? b.CreateFPTrunc(v, tt) : b.CreateFPExt(v, tt);
      return finish(v);
    }
    Value *v = (from.isBool() || from.isUnsigned()) ? b.CreateUIToFP(x.v, tt) : b.CreateSIToFP(x.v, tt);
    return finish(v);
  }
  // integer target
  if (from.isFloating()) {
    Intrinsic::ID id = to.isUnsigned() ? Intrinsic::fptoui_sat : Intrinsic::fptosi_sat;
    return {b.CreateIntrinsic(id, {tt, x.v->getType()}, {x.v}), to};
  }
  unsigned fw = x.v->getType()->getScalarSizeInBits(), tw = tt->getScalarSizeInBits();
  if (fw == tw) return {x.v, to};
  if (fw > tw) return {b.CreateTrunc(x.v, tt), to};
  return {(from.isBool() || from.isUnsigned()) ? b.CreateZExt(x.v, tt) : b.CreateSExt(x.v, tt), to};
}

Val ValueBuilder::bitcast(Val x, DType to) {
  // casts carry no fast-math flags, as in the reference
  IRBuilderBase::FastMathFlagGuard noFlags(b);
  b.clearFastMathFlags();
  LAZYJIT_USER_CHECK(x.dt.itemsize() == to.itemsize(), DTypeError, "bitcast: {} to {}", x.dt.name(),
                     to.name());
  // go through the memory representation: store type of `from`, reinterpret as `to`
  Value *bits = x.v;
  LLVMContext &c = b.getContext();
  Type *intTy = Type::getIntNTy(c, x.dt.itemsize() * 8);
  switch (x.dt.scalar()) {
  case ScalarType::Bool: bits = b.CreateZExt(bits, intTy); break;
  case ScalarType::Float16: bits = b.CreateBitCast(b.CreateFPTrunc(bits, b.getHalfTy()), intTy); break;
  case ScalarType::BFloat16:
    bits = b.CreateTrunc(b.CreateLShr(b.CreateBitCast(bits, b.getInt32Ty()), 16), intTy);
    break;
  default: bits = b.CreateBitCast(bits, intTy); break;
  }
  switch (to.scalar()) {
  case ScalarType::Bool: return {b.CreateICmpNE(bits, ConstantInt::get(intTy, 0)), to};
  case ScalarType::Float16: return {b.CreateFPExt(b.CreateBitCast(bits, b.getHalfTy()), b.getFloatTy()), to};
  case ScalarType::BFloat16:
    return {b.CreateBitCast(b.CreateShl(b.CreateZExt(bits, b.getInt32Ty()), 16), b.getFloatTy()), to};
  default: return {b.CreateBitCast(bits, regType(to)), to};
  }
}

Val ValueBuilder::reduceInit(Op rop, DType dt) {
  if (rop == Op::Sum) return constant(0, dt);
  if (dt.isFloating()) return constant(-INFINITY, dt);
  if (dt.isBool()) return {b.getInt1(false), dt};
  if (dt.isUnsigned()) return {ConstantInt::get(regType(dt), 0), dt};
  return {ConstantInt::get(regType(dt), APInt::getSignedMinValue(regType(dt)->getIntegerBitWidth())), dt};
}

Val ValueBuilder::alu(Op op, const std::vector<Val> &s, DType dt) {
  bool fl = dt.isFloating(), boolean = dt.isBool(), uns = dt.isUnsigned();
  // the operands' type: a register type, or a vector of them
  Type *t = withLanesOf(regType(dt), s[0].v);
  Value *a = s[0].v, *c = s.size() > 1 ? s[1].v : nullptr;
  switch (op) {
  case Op::Exp2:
  case Op::Log2:
  case Op::Sin:
  case Op::Sqrt:
  case Op::Recip: {
    if (fl) {
      if (op == Op::Recip) return {b.CreateFDiv(ConstantFP::get(t, 1.0), s[0].v), dt};
      return {math.unary(b, op, s[0].v), dt};
    }
    // integer and bool inputs: compute in double and convert back (saturating)
    Val d = convert(s[0], dtypes::float64, false);
    Value *r = op == Op::Recip ? b.CreateFDiv(ConstantFP::get(d.v->getType(), 1.0), d.v)
                               : math.unary(b, op, d.v);
    return convert({r, dtypes::float64}, dt, true);
  }
  case Op::Neg:
    if (fl) return {b.CreateFNeg(s[0].v), dt};
    if (boolean) return {b.CreateNot(s[0].v), dt};
    return {b.CreateNeg(s[0].v), dt};
  case Op::Add:
    if (fl) return {b.CreateFAdd(a, c), dt};
    if (boolean) return {b.CreateOr(a, c), dt};
    return {b.CreateAdd(a, c), dt};
  case Op::Sub:
    if (fl) return {b.CreateFSub(a, c), dt};
    if (boolean) return {b.CreateXor(a, c), dt};
    return {b.CreateSub(a, c), dt};
  case Op::Mul:
    if (fl) return {b.CreateFMul(a, c), dt};
    if (boolean) return {b.CreateAnd(a, c), dt};
    return {b.CreateMul(a, c), dt};
  case Op::Div:
  case Op::Mod: {
    if (fl) return {op == Op::Div ? b.CreateFDiv(a, c) : b.CreateFRem(a, c), dt};
    if (boolean) return {op == Op::Div ? b.CreateAnd(a, c) : ConstantInt::get(t, 0), dt};
    Value *zero = ConstantInt::get(t, 0), *one = ConstantInt::get(t, 1);
    Value *bz = b.CreateICmpEQ(c, zero);
    if (uns) {
      Value *safe = b.CreateSelect(bz, one, c);
      Value *r = op == Op::Div ? b.CreateUDiv(a, safe) : b.CreateURem(a, safe);
      return {b.CreateSelect(bz, zero, r), dt};
    }
    Value *bm1 = b.CreateICmpEQ(c, ConstantInt::getSigned(t, -1));
    Value *special = b.CreateOr(bz, bm1);
    Value *safe = b.CreateSelect(special, one, c);
    if (op == Op::Div) {
      Value *q = b.CreateSDiv(a, safe);
      return {b.CreateSelect(bz, zero, b.CreateSelect(bm1, b.CreateNeg(a), q)), dt};
    }
    return {b.CreateSelect(special, zero, b.CreateSRem(a, safe)), dt};
  }
  case Op::Max:
    // IEEE 754-2019 maximum: NaN if either operand is NaN, +0 over -0 (vectorizes as a reduction)
    if (fl) return {b.CreateBinaryIntrinsic(Intrinsic::maximum, a, c), dt};
    if (boolean) return {b.CreateOr(a, c), dt};
    return {b.CreateSelect(uns ? b.CreateICmpUGT(a, c) : b.CreateICmpSGT(a, c), a, c), dt};
  case Op::CmpLt:
    if (fl) return {b.CreateFCmpULT(a, c), dtypes::boolean};
    if (boolean || uns) return {b.CreateICmpULT(a, c), dtypes::boolean};
    return {b.CreateICmpSLT(a, c), dtypes::boolean};
  case Op::Xor:
    LAZYJIT_USER_CHECK(!fl, DTypeError, "codegen: XOR of {}", dt.name());
    return {b.CreateXor(a, c), dt};
  case Op::MulAcc:
    if (fl) return {b.CreateFAdd(b.CreateFMul(a, c), s[2].v), dt};
    return {b.CreateAdd(b.CreateMul(a, c), s[2].v), dt};
  // (CAST and WHERE are the caller's: they read their operands' dtypes)
  case Op::Cast: case Op::Where: case Op::Sum: case Op::ReduceMax:
  case Op::Load: case Op::Const: case Op::Store:
  case Op::Reshape: case Op::Permute: case Op::Expand: case Op::Pad: case Op::Shrink: case Op::Stride:
  case Op::AsStrided:
  case Op::Empty: case Op::LoadConst: case Op::Copy: case Op::Contiguous: case Op::Custom: break;
  }
  LAZYJIT_USER_CHECK(false, UnsupportedError, "codegen: {} is not an ALU op", opName(op));
}

} // namespace lazyjit

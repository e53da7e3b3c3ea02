// Typed values during lowering: the IR types of each dtype in registers and in memory, casts
// between dtypes, and the ALU ops with the semantics of the reference interpreter
// (lib/Runtime/InterpreterScalar.cpp is the oracle these must match).
#pragma once

#include "lazyjit/Graph/DType.h"
#include "lazyjit/Graph/Ops.h"

#include <llvm/IR/IRBuilder.h>

namespace lazyjit {

/// A value of a dtype. float16/bfloat16 values live in float registers (computed in float32);
/// bool is i1. `v` may be a vector of such values (one per lane): truthy, alu and convert between
/// float32, float64 and bool work on either, with the same semantics per lane (vector mode uses
/// no other dtype: the rounding of float16/bfloat16, bitcast, load and store are scalar).
struct Val {
  llvm::Value *v = nullptr;
  DType dt;
};

/// Hooks a target provides for math it lowers differently (CPU: LLVM intrinsics; NVPTX: PTX
/// approximations).
class MathLowering {
public:
  virtual ~MathLowering() = default;
  /// exp2, log2, sin, sqrt of a float or double register value.
  virtual llvm::Value *unary(llvm::IRBuilder<> &b, Op op, llvm::Value *x) = 0;
};

class ValueBuilder {
public:
  ValueBuilder(llvm::IRBuilder<> &b, MathLowering &math) : b(b), math(math) {}

  llvm::Type *regType(DType dt) const;
  llvm::Type *memType(DType dt) const;

  /// Loads element `idx` of `ptr` (a buffer of `dt`) into a register value.
  Val load(llvm::Value *ptr, llvm::Value *idx, DType dt, bool aligned = true);
  /// Loads elements idx..idx+width-1 with one vector load aligned to the whole vector (the caller
  /// proves the alignment), as register values.
  std::vector<Val> loadVector(llvm::Value *ptr, llvm::Value *idx, DType dt, unsigned width);
  /// A value as loaded from memory (memType, or a vector of it) turned into its register value.
  Val fromMemory(llvm::Value *raw, DType dt);
  /// A value (or a vector of them) converted to `dt` as a store converts it (rounded to `dt`'s
  /// values) and turned into what memory holds (memType).
  llvm::Value *toMemory(Val v, DType dt);
  void store(llvm::Value *ptr, llvm::Value *idx, Val v, DType bufDType);
  Val constant(double v, DType dt);
  /// `scalar`, or a vector of it with as many lanes as `like` has.
  static llvm::Type *withLanesOf(llvm::Type *scalar, const llvm::Value *like);
  /// Converts a value to another dtype. `exact` rounds to the target's values (CAST, STORE);
  /// otherwise float16/bfloat16 targets keep float32 precision (operand promotion).
  Val convert(Val x, DType to, bool exact);
  Val bitcast(Val x, DType to);
  /// Truthiness for WHERE and ->bool casts: nonzero, and NaN counts as true.
  llvm::Value *truthy(Val x);
  /// An ALU op on operands already converted to `dt` (CMPLT returns bool).
  Val alu(Op op, const std::vector<Val> &s, DType dt);
  /// The identity of a reduce: 0 for SUM, the lowest value of `dt` for MAX.
  Val reduceInit(Op rop, DType dt);

  llvm::IRBuilder<> &b;

private:
  MathLowering &math;
  llvm::Value *roundToHalfPrecision(llvm::Value *f, DType dt);
  llvm::Value *fastFlags(llvm::Value *v);
};

} // namespace lazyjit

// Math for NVPTX without the CUDA toolkit's libdevice: exp2, log2, sin and sqrt of float32 and
// float64 from PTX instructions and IR polynomials, with the IEEE special values the CPU gives.
#pragma once

#include "LowerValues.h"

namespace lazyjit {

/// float32: exp2 is `ex2.approx.f32` (2 ulp; exp2(-inf) = 0), sqrt is `sqrt.rn.f32`; log2 and sin
/// are computed in float64 and rounded, so they match the CPU to the last bit or two.
/// float64: sqrt is `sqrt.rn.f64`; exp2, log2 and sin are the internal functions
/// `lazyjit.exp2.f64`, `lazyjit.log2.f64`, `lazyjit.sin.f64` (Ops.def's NVPTX column; range
/// reduction + polynomial, about 1e-15 relative; sin reduces by pi/2 in three parts and is
/// accurate for |x| < 2^30).
class NVPTXMath : public MathLowering {
public:
  llvm::Value *unary(llvm::IRBuilder<> &b, Op op, llvm::Value *x) override;
};

} // namespace lazyjit

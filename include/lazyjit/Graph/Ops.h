// The Op enum, op classes, operand counts, argument kinds, meanings and what the passes ask of an
// op, generated from Ops.def.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lazyjit {

/// The reference's op classes. A LazyBuffer's `optype` is one of these; every elementwise op
/// (unary, binary, ternary) has optype Binary, as in the reference.
enum class OpType : uint8_t { Unary, Binary, Ternary, Reduce, Buffer, Movement, Load };

enum class Op : uint8_t {
#define LAZYJIT_OP(E, C, N, A, K, M, P, L, LM, NV) E,
#include "lazyjit/Graph/Ops.def"
};

OpType opTypeOf(Op op);
/// "UnaryOps.EXP2", "ReduceOps.MAX", "LoadOps.CONST": the reference's names.
std::string_view opName(Op op);
std::string_view opTypeName(OpType t);
/// Parses a name printed by opName.
std::optional<Op> opFromName(std::string_view name);

inline bool isElementwise(Op op) {
  OpType t = opTypeOf(op);
  return t == OpType::Unary || t == OpType::Binary || t == OpType::Ternary;
}
inline bool isBufferOp(Op op) { return opTypeOf(op) == OpType::Buffer; }
inline bool isLoadOp(Op op) { return opTypeOf(op) == OpType::Load; }
inline bool isMovementOp(Op op) { return opTypeOf(op) == OpType::Movement; }
inline bool isReduceOp(Op op) { return opTypeOf(op) == OpType::Reduce; }
/// The binary op a reduce accumulates with: ADD for SUM, MAX for MAX.
inline Op reduceAlu(Op reduce) { return reduce == Op::Sum ? Op::Add : Op::Max; }

/// What argument an op takes (Ops.def's ArgKind column); `argKindOf` in LazyOp.h gives the kind
/// of an argument value.
enum class OpArg : uint8_t { None, Shape, Axes, Pairs, Cast, Mem, ConstBuf, Value, Custom };

/// How many sources an op takes: 1, 2 or 3 for elementwise ops, 1 for reduces, movement ops and
/// STORE, 0 for LOAD/CONST, -1 for LoadOps (zero or one).
int opArity(Op op);
OpArg opArgKind(Op op);
/// The table's one-line meaning ("2 to the power x").
std::string_view opMeaning(Op op);
/// How an argument kind is named in messages: "a MemBuffer argument", "no argument".
std::string_view opArgText(OpArg kind);
/// Every op, in table order.
constexpr int kNumOps = 0
#define LAZYJIT_OP(E, C, N, A, K, M, P, L, LM, NV) +1
#include "lazyjit/Graph/Ops.def"
    ;

/// What the passes ask of an op: Ops.def's Props column, as bits.
enum class OpProp : uint8_t {
  /// exp2, log2, sin: tens of instructions per value (the CPU heuristics and row plans weigh it).
  Transcendental = 1,
  /// All-zero operands give 0 (0+0, 0*0, max(0,0), 0<0 = false, sqrt(0), sin(0)): a SUM over it is
  /// unchanged by extra elements whose every leaf reads 0 (a kernel's PADTO of a reduce axis).
  ZeroPreserving = 2,
  /// The reference's UNSAFE_PAD_OPS (f(0) is not 0, or not defined): the graph pushes no PAD past it.
  UnsafePad = 4,
};
bool opHas(Op op, OpProp p);
inline bool isTranscendental(Op op) { return opHas(op, OpProp::Transcendental); }
inline bool isZeroPreserving(Op op) { return opHas(op, OpProp::ZeroPreserving); }
inline bool isUnsafePadOp(Op op) { return opHas(op, OpProp::UnsafePad); }
/// "transcendental zero-preserving": the op's props as --list-ops prints them, "-" for none.
std::string opPropsText(Op op);

/// Whether the CPU's vector mode computes an op on lanes (Ops.def's Lanes column; the per-op part
/// of `lanesSupported` in lib/CodeGen/LoopNest.cpp).
enum class OpLanes : uint8_t {
  Yes,         ///< as on scalars
  No,          ///< never: movement and load ops, XOR (integers only)
  FloatBuffer, ///< of a float32/float64 buffer, or a float16/bfloat16 one (computed in float32)
  FloatCast,   ///< a conversion to a float or to bool, not a bitcast
  VectorMath,  ///< where the vector math library has its libm function for the lanes' width
};
OpLanes opLanes(Op op);
/// "yes", "no", "float buffer", "float cast", "vector math": as --list-ops prints it.
std::string_view opLanesText(OpLanes lanes);
/// The C math library function CPU kernels call for the op ("exp2"; float32: "exp2f"), whose
/// libmvec variants are named after it (lib/CodeGen/VectorMath.h); empty where there is none.
std::string_view opLibm(Op op);
/// The float64 function the NVPTX lowering emits for the op ("lazyjit.exp2.f64",
/// lib/CodeGen/NVPTXMath.cpp); empty where there is none.
std::string_view opNVPTXFn(Op op);

} // namespace lazyjit

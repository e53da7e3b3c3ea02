// The Op enum, op classes, operand counts, argument kinds and meanings, generated from Ops.def.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lazyjit {

/// The reference's op classes. A LazyBuffer's `optype` is one of these; every elementwise op
/// (unary, binary, ternary) has optype Binary, as in the reference.
enum class OpType : uint8_t { Unary, Binary, Ternary, Reduce, Buffer, Movement, Load };

enum class Op : uint8_t {
#define LAZYJIT_OP(E, C, N, A, K, M) E,
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
#define LAZYJIT_OP(E, C, N, A, K, M) +1
#include "lazyjit/Graph/Ops.def"
    ;

} // namespace lazyjit

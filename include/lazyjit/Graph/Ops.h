// The Op enum and op classes, generated from Ops.def.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lazyjit {

/// The reference's op classes. A LazyBuffer's `optype` is one of these; every elementwise op
/// (unary, binary, ternary) has optype Binary, as in the reference.
enum class OpType : uint8_t { Unary, Binary, Ternary, Reduce, Buffer, Movement, Load };

enum class Op : uint8_t {
#define LAZYJIT_OP(E, C, N) E,
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

} // namespace lazyjit

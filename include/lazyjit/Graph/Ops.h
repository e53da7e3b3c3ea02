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

/// How many sources an op takes: 1, 2 or 3 for elementwise ops, 1 for reduces, movement ops and
/// STORE, 0 for LOAD/CONST, -1 for LoadOps (zero or one).
inline int opArity(Op op) {
  switch (opTypeOf(op)) {
  case OpType::Unary:
  case OpType::Reduce:
  case OpType::Movement:
    return 1;
  case OpType::Binary:
    return 2;
  case OpType::Ternary:
    return 3;
  case OpType::Buffer:
    return op == Op::Store ? 1 : 0;
  case OpType::Load:
    return -1;
  }
  return -1;
}

} // namespace lazyjit

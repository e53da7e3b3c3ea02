// Op classes and names from the Ops.def table.
#include "lazyjit/Graph/Ops.h"

#include <array>

namespace lazyjit {

namespace {
struct OpInfo {
  OpType type;
  std::string_view name;
  int arity;
  OpArg arg;
  std::string_view meaning;
};
constexpr OpInfo infos[] = {
#define LAZYJIT_OP(E, C, N, A, K, M) {OpType::C, #C "Ops." N, A, OpArg::K, M},
#include "lazyjit/Graph/Ops.def"
};

// The operand counts follow from the classes; the table states them so that a reader (and
// --list-ops) sees them, and this checks the two agree.
constexpr int classArity(OpType t, std::string_view name) {
  switch (t) {
  case OpType::Unary:
  case OpType::Reduce:
  case OpType::Movement: return 1;
  case OpType::Binary: return 2;
  case OpType::Ternary: return 3;
  case OpType::Buffer: return name == "BufferOps.STORE" ? 1 : 0;
  case OpType::Load: return -1;
  }
  return -2;
}
constexpr bool aritiesAgree() {
  for (const OpInfo &i : infos)
    if (i.arity != classArity(i.type, i.name)) return false;
  return true;
}
static_assert(aritiesAgree(), "Ops.def: an op's arity disagrees with its class");
} // namespace

OpType opTypeOf(Op op) { return infos[static_cast<size_t>(op)].type; }
std::string_view opName(Op op) { return infos[static_cast<size_t>(op)].name; }
int opArity(Op op) { return infos[static_cast<size_t>(op)].arity; }
OpArg opArgKind(Op op) { return infos[static_cast<size_t>(op)].arg; }
std::string_view opMeaning(Op op) { return infos[static_cast<size_t>(op)].meaning; }

std::string_view opArgText(OpArg kind) {
  switch (kind) {
  case OpArg::None: return "no argument";
  case OpArg::Shape: return "its output shape as argument";
  case OpArg::Axes: return "a per-axis list as argument";
  case OpArg::Pairs: return "per-axis (begin, end) pairs as argument";
  case OpArg::Cast: return "a dtype argument";
  case OpArg::Mem: return "a MemBuffer argument";
  case OpArg::ConstBuf: return "a ConstBuffer argument";
  case OpArg::Value: return "a value argument";
  case OpArg::Custom: return "a host function as argument";
  }
  return "?";
}

std::string_view opTypeName(OpType t) {
  switch (t) {
  case OpType::Unary: return "UnaryOps";
  case OpType::Binary: return "BinaryOps";
  case OpType::Ternary: return "TernaryOps";
  case OpType::Reduce: return "ReduceOps";
  case OpType::Buffer: return "BufferOps";
  case OpType::Movement: return "MovementOps";
  case OpType::Load: return "LoadOps";
  }
  return "?";
}

std::optional<Op> opFromName(std::string_view name) {
  for (size_t i = 0; i < std::size(infos); ++i)
    if (infos[i].name == name) return static_cast<Op>(i);
  return std::nullopt;
}

} // namespace lazyjit

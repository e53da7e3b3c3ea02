// Op classes and names from the Ops.def table.
#include "lazyjit/Graph/Ops.h"

#include <array>

namespace lazyjit {

namespace {
struct OpInfo {
  OpType type;
  std::string_view name;
};
constexpr OpInfo infos[] = {
#define LAZYJIT_OP(E, C, N) {OpType::C, #C "Ops." N},
#include "lazyjit/Graph/Ops.def"
};
} // namespace

OpType opTypeOf(Op op) { return infos[static_cast<size_t>(op)].type; }
std::string_view opName(Op op) { return infos[static_cast<size_t>(op)].name; }

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

// Op classes, names and what the passes ask of an op, from the Ops.def table.
#include "lazyjit/Graph/Ops.h"

#include <array>
#include <utility>

namespace lazyjit {

namespace {
struct OpInfo {
  OpType type;
  std::string_view name;
  int arity;
  OpArg arg;
  std::string_view meaning;
  uint8_t props;
  OpLanes lanes;
  std::string_view libm;
  std::string_view nvptx;
};

// The names the Props column is written in (`Transcendental | UnsafePad`).
namespace props {
constexpr unsigned None = 0;
constexpr unsigned Transcendental = static_cast<unsigned>(OpProp::Transcendental);
constexpr unsigned ZeroPreserving = static_cast<unsigned>(OpProp::ZeroPreserving);
constexpr unsigned UnsafePad = static_cast<unsigned>(OpProp::UnsafePad);
} // namespace props
using namespace props;

constexpr OpInfo infos[] = {
#define LAZYJIT_OP(E, C, N, A, K, M, P, L, LM, NV)                                                 \
  {OpType::C, #C "Ops." N, A, OpArg::K, M, static_cast<uint8_t>(P), OpLanes::L, LM, NV},
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

// An op computed on lanes through the vector math library names the scalar function it vectorizes.
constexpr bool vectorMathHasLibm() {
  for (const OpInfo &i : infos)
    if (i.lanes == OpLanes::VectorMath && i.libm.empty()) return false;
  return true;
}
static_assert(vectorMathHasLibm(), "Ops.def: an op with Lanes VectorMath has no libm function");
} // namespace

OpType opTypeOf(Op op) { return infos[static_cast<size_t>(op)].type; }
std::string_view opName(Op op) { return infos[static_cast<size_t>(op)].name; }
int opArity(Op op) { return infos[static_cast<size_t>(op)].arity; }
OpArg opArgKind(Op op) { return infos[static_cast<size_t>(op)].arg; }
std::string_view opMeaning(Op op) { return infos[static_cast<size_t>(op)].meaning; }
bool opHas(Op op, OpProp p) { return (infos[static_cast<size_t>(op)].props & static_cast<uint8_t>(p)) != 0; }
OpLanes opLanes(Op op) { return infos[static_cast<size_t>(op)].lanes; }
std::string_view opLibm(Op op) { return infos[static_cast<size_t>(op)].libm; }
std::string_view opNVPTXFn(Op op) { return infos[static_cast<size_t>(op)].nvptx; }

std::string opPropsText(Op op) {
  std::string out;
  for (auto [p, name] : {std::pair{OpProp::Transcendental, "transcendental"},
                         std::pair{OpProp::ZeroPreserving, "zero-preserving"},
                         std::pair{OpProp::UnsafePad, "unsafe-pad"}})
    if (opHas(op, p)) out += (out.empty() ? "" : " ") + std::string(name);
  return out.empty() ? "-" : out;
}

std::string_view opLanesText(OpLanes lanes) {
  switch (lanes) {
  case OpLanes::Yes: return "yes";
  case OpLanes::No: return "no";
  case OpLanes::FloatBuffer: return "float buffer";
  case OpLanes::FloatCast: return "float cast";
  case OpLanes::VectorMath: return "vector math";
  }
  return "?";
}

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

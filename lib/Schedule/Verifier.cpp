// The kernel-AST verifier: one walk over the distinct nodes that computes each node's shape and
// checks the rules listed in Verifier.h.
#include "lazyjit/Schedule/Verifier.h"
#include "lazyjit/Support/Error.h"

#include <map>
#include <unordered_map>

namespace lazyjit {

namespace {

[[noreturn]] void reject(const std::string &msg) { throw Error("verifyAst: " + msg); }

class Verifier {
public:
  void run(const LazyOp &root) {
    if (root.op != Op::Store)
      reject(fmt::format("the root must be BufferOps.STORE, got {}", opName(root.op)));
    shapeOf(root, true);
    if (rank < 0) reject("the AST has no ShapeTracker");
    // dense LOAD indices
    int expect = 1;
    for (const auto &[idx, dt] : loads) {
      if (idx != expect)
        reject(fmt::format("LOAD buffer indices must be 1..{} without gaps, buffer {} is missing",
                           loads.size(), expect));
      ++expect;
    }
  }

private:
  std::unordered_map<const LazyOp *, Shape> memo;
  std::vector<const LazyOp *> reduces;
  std::map<int, DType> loads;
  int rank = -1;

  void checkSt(const LazyOp &op, const ShapeTracker &st) {
    if (st.views.empty()) reject(fmt::format("{} has a ShapeTracker without views", opName(op.op)));
    int r = static_cast<int>(st.shape().size());
    if (rank < 0) rank = r;
    if (r != rank)
      reject(fmt::format("all ShapeTrackers must have the same rank: {} has rank {}, an earlier "
                         "buffer has rank {}",
                         opName(op.op), r, rank));
  }

  const Shape &shapeOf(const LazyOp &op, bool isRoot) {
    if (auto it = memo.find(&op); it != memo.end()) return it->second;
    std::string name(opName(op.op));
    for (const auto &s : op.src)
      if (s.isBuffer()) reject(fmt::format("{} has a LazyBuffer source", name));
    if (isMovementOp(op.op)) reject(fmt::format("movement op {} inside a kernel AST", name));
    if (isLoadOp(op.op)) reject(fmt::format("{} inside a kernel AST", name));
    if (op.op == Op::Store && !isRoot)
      reject("BufferOps.STORE must be the root and appear only once");
    // movement and LoadOps were rejected above, so the arity is a fixed count
    if (static_cast<int>(op.src.size()) != opArity(op.op))
      reject(fmt::format("{} expects {} operand(s), got {}", name, opArity(op.op), op.src.size()));

    Shape shape;
    if (op.op == Op::Load || op.op == Op::Store) {
      const auto *mb = std::get_if<MemBuffer>(&op.arg);
      if (!mb) reject(fmt::format("{} needs a MemBuffer argument", name));
      checkSt(op, mb->st);
      if (op.op == Op::Store && mb->idx != 0)
        reject(fmt::format("the STORE must write buffer 0, not buffer {}", mb->idx));
      if (op.op == Op::Load) {
        if (mb->idx < 1) reject(fmt::format("LOAD reads buffer {}; inputs start at 1", mb->idx));
        auto [it, fresh] = loads.emplace(mb->idx, mb->dtype);
        if (!fresh && it->second != mb->dtype)
          reject(fmt::format("buffer {} is loaded both as {} and as {}", mb->idx, it->second.name(),
                             mb->dtype.name()));
      }
      shape = mb->st.shape();
    } else if (op.op == Op::Const) {
      const auto *cb = std::get_if<ConstBuffer>(&op.arg);
      if (!cb) reject("BufferOps.CONST needs a ConstBuffer argument");
      checkSt(op, cb->st);
      shape = cb->st.shape();
    }
    std::vector<Shape> srcShapes;
    for (const auto &s : op.src) srcShapes.push_back(shapeOf(*s.op, false));

    if (op.op == Op::Store) {
      if (srcShapes[0] != shape)
        reject(fmt::format("the STORE shape {} differs from its operand's shape {}",
                           renderShape(shape), renderShape(srcShapes[0])));
    } else if (isReduceOp(op.op)) {
      const auto *out = std::get_if<Shape>(&op.arg);
      if (!out) reject(fmt::format("{} needs its output shape as argument", name));
      const Shape &in = srcShapes[0];
      if (out->size() != in.size())
        reject(fmt::format("{} reduces {} to {}: the ranks differ", name, renderShape(in),
                           renderShape(*out)));
      for (size_t i = 0; i < in.size(); ++i)
        if ((*out)[i] != in[i] && (*out)[i] != SInt(1))
          reject(fmt::format("{} reduces {} to {}: dim {} is neither kept nor 1", name,
                             renderShape(in), renderShape(*out), i));
      bool dup = false;
      for (const LazyOp *r : reduces) dup = dup || *r == op;
      if (!dup) reduces.push_back(&op);
      if (reduces.size() > 1) reject("a kernel has at most one reduce, this one has two");
      shape = *out;
    } else if (isElementwise(op.op)) {
      if (op.op == Op::Cast && !std::holds_alternative<CastArg>(op.arg))
        reject("UnaryOps.CAST needs a dtype argument");
      for (size_t i = 1; i < srcShapes.size(); ++i)
        if (srcShapes[i] != srcShapes[0])
          reject(fmt::format("{}: operand shapes differ: {} vs {}", name, renderShape(srcShapes[0]),
                             renderShape(srcShapes[i])));
      shape = srcShapes[0];
    }
    return memo.emplace(&op, std::move(shape)).first->second;
  }
};

} // namespace

void verifyAst(const LazyOp &ast) { Verifier().run(ast); }

} // namespace lazyjit

// The kernel-AST verifier: one walk over the distinct nodes that computes each node's shape and
// checks the rules listed in Verifier.h.
#include "lazyjit/Schedule/Verifier.h"
#include "lazyjit/Graph/LazyOpWalk.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/Math.h"

#include <algorithm>

#include <map>
#include <unordered_map>
#include <unordered_set>

namespace lazyjit {

namespace {

[[noreturn]] void reject(const std::string &msg) { throw Error("verifyAst: " + msg); }

// View.create's contiguous: no offset, no mask, and row-major strides (0 for size-1 dims)
bool isContiguousLayout(const View &v) {
  if (!pyEq(v.offset, 0) || v.mask) return false;
  Shape want = stridesForShape(v.shape);
  for (size_t i = 0; i < v.shape.size(); ++i)
    if (!pyEq(v.strides[i], want[i])) return false;
  return true;
}

class Verifier {
public:
  void run(const KernelOp &root) {
    if (root.op != Op::Store)
      reject(fmt::format("the root must be BufferOps.STORE, got {}", opName(root.op)));
    const Shape &full = shapeOf(root);
    if (rank < 0) reject("the AST has no ShapeTracker");
    if (expands.empty()) {
      if (reduces.size() > 1) reject("a kernel has at most one reduce, this one has two");
    } else {
      checkRowKernel(root, full);
    }
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
  std::unordered_map<const KernelOp *, Shape> memo;
  std::vector<const KernelOp *> reduces, expands;
  std::map<int, DType> loads;
  int rank = -1;

  void checkSt(const KernelOp &op, const ShapeTracker &st) {
    if (st.views.empty()) reject(fmt::format("{} has a ShapeTracker without views", opName(op.op)));
    for (const View &v : st.views) {
      for (const auto &d : v.shape)
        if (d.isInt() ? d.asInt() < 0 : truthy(lt(d.node()->min, 0)))
          reject(fmt::format("{} has a negative dimension in {}", opName(op.op), v.repr()));
      if (v.strides.size() != v.shape.size() || (v.mask && v.mask->size() != v.shape.size()))
        reject(fmt::format("{}: {} has {} strides and {} mask pairs for {} dims", opName(op.op), v.repr(),
                           v.strides.size(), v.mask ? v.mask->size() : 0, v.shape.size()));
      if (v.contiguous != isContiguousLayout(v))
        reject(fmt::format("{}: {} is marked contiguous={} but its strides, offset and mask {} the "
                           "contiguous layout of its shape",
                           opName(op.op), v.repr(), v.contiguous ? "True" : "False",
                           v.contiguous ? "are not" : "are"));
    }
    int r = static_cast<int>(st.shape().size());
    if (rank < 0) rank = r;
    if (r != rank)
      reject(fmt::format("all ShapeTrackers must have the same rank: {} has rank {}, an earlier "
                         "buffer has rank {}",
                         opName(op.op), r, rank));
  }

  // Each node's shape, checking it, each node once: its own checks when the walk reaches it, its
  // shape after its operands'.
  const Shape &shapeOf(const KernelOp &root) {
    walkOps(root, [&](const KernelOp &op) {
      checkNode(op, &op == &root);
      return true;
    }, [&](const KernelOp &op) { shapeAfterOperands(op); });
    return memo.at(&root);
  }

  // The checks of a node that need no operand's shape.
  void checkNode(const KernelOp &op, bool isRoot) {
    std::string name(opName(op.op));
    if (isMovementOp(op.op) && op.op != Op::Expand)
      reject(fmt::format("movement op {} inside a kernel AST", name));
    if (op.op == Op::Store && !isRoot)
      reject("BufferOps.STORE must be the root and appear only once");
    // movement ops were rejected above and a KernelOp is never a LoadOp, so the arity is a fixed count
    if (static_cast<int>(op.src.size()) != opArity(op.op))
      reject(fmt::format("{} expects {} operand(s), got {}", name, opArity(op.op), op.src.size()));
    // the argument's kind is the op table's (Ops.def)
    if (OpArg want = opArgKind(op.op); argKindOf(op.arg) != want)
      reject(want == OpArg::None ? fmt::format("{} takes no argument, got {}", name, opArgText(argKindOf(op.arg)))
                                 : fmt::format("{} needs {}", name, opArgText(want)));
    if (op.op == Op::Load || op.op == Op::Store) {
      const auto *mb = &op.memBuffer();
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
    } else if (op.op == Op::Const) {
      checkSt(op, op.constBuffer().st);
    }
  }

  // The shape of a node whose operands' shapes are known, checked against them.
  void shapeAfterOperands(const KernelOp &op) {
    std::string name(opName(op.op));
    Shape shape;
    if (op.op == Op::Load || op.op == Op::Store) shape = op.memBuffer().st.shape();
    else if (op.op == Op::Const) shape = op.constBuffer().st.shape();
    std::vector<Shape> srcShapes;
    for (const auto &s : op.src) srcShapes.push_back(memo.at(s.get()));

    if (op.op == Op::Store) {
      if (srcShapes[0] != shape)
        reject(fmt::format("the STORE shape {} differs from its operand's shape {}",
                           renderShape(shape), renderShape(srcShapes[0])));
    } else if (isReduceOp(op.op)) {
      const auto *out = &op.shapeArg();
      const Shape &in = srcShapes[0];
      if (out->size() != in.size())
        reject(fmt::format("{} reduces {} to {}: the ranks differ", name, renderShape(in),
                           renderShape(*out)));
      for (size_t i = 0; i < in.size(); ++i)
        if ((*out)[i] != in[i] && (*out)[i] != SInt(1))
          reject(fmt::format("{} reduces {} to {}: dim {} is neither kept nor 1", name,
                             renderShape(in), renderShape(*out), i));
      reduces.push_back(&op); // (equal reduces are one node, and the walk leaves each node once)
      shape = *out;
    } else if (op.op == Op::Expand) {
      const auto *out = &op.shapeArg();
      const Shape &in = srcShapes[0];
      if (out->size() != in.size())
        reject(fmt::format("MovementOps.EXPAND of {} to {}: the ranks differ", renderShape(in), renderShape(*out)));
      for (size_t i = 0; i < in.size(); ++i)
        if ((*out)[i] != in[i] && in[i] != SInt(1))
          reject(fmt::format("MovementOps.EXPAND of {} to {}: dim {} is neither kept nor 1", renderShape(in),
                             renderShape(*out), i));
      expands.push_back(&op);
      shape = *out;
    } else if (isElementwise(op.op)) {
      for (size_t i = 1; i < srcShapes.size(); ++i)
        if (srcShapes[i] != srcShapes[0])
          reject(fmt::format("{}: operand shapes differ: {} vs {}", name, renderShape(srcShapes[0]),
                             renderShape(srcShapes[i])));
      shape = srcShapes[0];
    }
    memo.emplace(&op, std::move(shape));
  }

  // A row kernel (OPT=5): every EXPAND broadcasts a value of one row shape back to the kernel's
  // shape, and every reduce inside an EXPAND goes from the kernel's shape to that row shape. The
  // kernel's shape is the STORE's, or the input shape of the one reduce outside the EXPANDs (the
  // final pass accumulates it), which must reduce every row axis.
  void checkRowKernel(const KernelOp &root, const Shape &stored) {
    std::unordered_set<const KernelOp *> inRows = expandedSubtrees(root);
    const KernelOp *top = nullptr;
    std::vector<const KernelOp *> rowReduces;
    for (const KernelOp *r : reduces) {
      if (inRows.count(r)) {
        rowReduces.push_back(r);
      } else {
        if (top) reject("a row kernel has at most one reduce outside its EXPANDs, this one has two");
        top = r;
      }
    }
    const Shape &full = top ? memo.at(top->src[0].get()) : stored;
    const Shape &row = memo.at(expands[0]->src[0].get());
    for (const KernelOp *e : expands) {
      if (e->shapeArg() != full)
        reject(fmt::format("MovementOps.EXPAND to {} in a kernel of shape {}: a row kernel expands to its own shape",
                           renderShape(e->shapeArg()), renderShape(full)));
      if (memo.at(e->src[0].get()) != row)
        reject(fmt::format("MovementOps.EXPAND of {} and of {} in one kernel: a row kernel has one row shape",
                           renderShape(row), renderShape(memo.at(e->src[0].get()))));
    }
    if (row == full) reject(fmt::format("MovementOps.EXPAND of {} to itself", renderShape(full)));
    if (top)
      for (size_t i = 0; i < row.size(); ++i)
        if (row[i] != full[i] && top->shapeArg()[i] != SInt(1))
          reject(fmt::format("{} of {} to {} keeps dim {}, a row axis of the row kernel: its final pass must "
                             "reduce the rows",
                             opName(top->op), renderShape(full), renderShape(top->shapeArg()), i));
    for (const KernelOp *r : rowReduces)
      if (memo.at(r->src[0].get()) != full || r->shapeArg() != row)
        reject(fmt::format("{} of {} to {} in a row kernel of shape {} and row shape {}: its reduces go from "
                           "the one to the other",
                           opName(r->op), renderShape(memo.at(r->src[0].get())), renderShape(r->shapeArg()),
                           renderShape(full), renderShape(row)));
  }
};

// ---- bounds ------------------------------------------------------------------------------------

struct Interval {
  int64_t lo, hi;
};

Interval rangeOf(const SInt &x, const VarRanges &r);

Interval rangeOfNode(const Node &n, const VarRanges &r) {
  auto mulI = [](Interval a, Interval b) {
    int64_t c[4] = {checkedMul(a.lo, b.lo), checkedMul(a.lo, b.hi), checkedMul(a.hi, b.lo), checkedMul(a.hi, b.hi)};
    return Interval{*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
  };
  switch (n.kind) {
  case NodeKind::Num: return {n.num, n.num};
  case NodeKind::Variable: {
    if (auto it = r.find(n.expr ? *n.expr : "None"); it != r.end()) return {it->second.first, it->second.second};
    return {rangeOf(n.min, r).lo, rangeOf(n.max, r).hi};
  }
  case NodeKind::Mul: return mulI(rangeOfNode(*n.a, r), rangeOf(n.b, r));
  case NodeKind::Sum: {
    Interval acc{0, 0};
    for (const auto &x : n.nodes) {
      Interval t = rangeOfNode(*x, r);
      acc = {checkedAdd(acc.lo, t.lo), checkedAdd(acc.hi, t.hi)};
    }
    return acc;
  }
  case NodeKind::Div:
  case NodeKind::Mod: {
    Interval a = rangeOfNode(*n.a, r), b = rangeOf(n.b, r);
    if (b.lo <= 0) reject(fmt::format("{} divides by a value that may be 0 or negative", n.render()));
    if (n.kind == NodeKind::Mod) return {0, b.hi - 1};
    return {std::min(floorDiv(a.lo, b.lo), floorDiv(a.lo, b.hi)), std::max(floorDiv(a.hi, b.lo), floorDiv(a.hi, b.hi))};
  }
  case NodeKind::Lt:
  case NodeKind::And: return {0, 1};
  }
  return {0, 0};
}

Interval rangeOf(const SInt &x, const VarRanges &r) {
  if (x.isInt()) return {x.asInt(), x.asInt()};
  return rangeOfNode(*x.node(), r);
}

// [lo, hi] of offset + sum(stride_i * x_i) over the coordinates a view may touch: each x_i within
// [0, dim) and, with a mask, within the mask's range (lo > hi when the view touches nothing)
Interval viewRange(const View &v, const VarRanges &r) {
  Interval acc = rangeOf(v.offset, r);
  for (size_t i = 0; i < v.shape.size(); ++i) {
    int64_t xlo = 0, xhi = checkedSub(rangeOf(v.shape[i], r).hi, 1);
    if (v.mask) {
      xlo = std::max(xlo, rangeOf((*v.mask)[i].first, r).lo);
      xhi = std::min(xhi, checkedSub(rangeOf((*v.mask)[i].second, r).hi, 1));
    }
    if (xlo > xhi) return {0, -1};
    Interval s = rangeOf(v.strides[i], r);
    int64_t c[4] = {checkedMul(s.lo, xlo), checkedMul(s.lo, xhi), checkedMul(s.hi, xlo), checkedMul(s.hi, xhi)};
    acc = {checkedAdd(acc.lo, *std::min_element(c, c + 4)), checkedAdd(acc.hi, *std::max_element(c, c + 4))};
  }
  return acc;
}

} // namespace

void verifyAst(const KernelOp &ast) { Verifier().run(ast); }

VarRanges declaredRanges(const KernelOp &ast) {
  VarRanges out;
  for (const auto &v : varsFromAst(ast)) {
    VarRanges none;
    out[v->expr ? *v->expr : "None"] = {rangeOf(v->min, none).lo, rangeOf(v->max, none).hi};
  }
  return out;
}

std::pair<int64_t, int64_t> accessRange(const ShapeTracker &st, const VarRanges &ranges) {
  try {
    Interval r = viewRange(st.views.back(), ranges);
    for (size_t k = st.views.size() - 1; k-- > 0;) {
      if (r.lo > r.hi) return {0, -1};
      if (r.lo < 0)
        reject(fmt::format("view {} may give the view below it the negative element index {}",
                           st.views[k + 1].repr(), r.lo));
      r = viewRange(st.views[k], ranges);
    }
    return {r.lo, r.hi};
  } catch (const ShapeError &e) {
    reject(fmt::format("the index arithmetic of {} may overflow: {}", st.views.back().repr(), e.what()));
  }
}

std::map<int, int64_t> requiredSizes(const KernelOp &ast, const VarRanges &ranges) {
  std::map<int, int64_t> out;
  for (const KernelOp *x : ast.uniqueOps()) {
    if (x->op != Op::Load && x->op != Op::Store) continue;
    const MemBuffer &mb = x->memBuffer();
    auto [lo, hi] = accessRange(mb.st, ranges);
    if (lo <= hi && lo < 0)
      reject(fmt::format("{} of buffer {} may access the negative element index {} (views {})", opName(x->op),
                         mb.idx, lo, mb.st.repr()));
    int64_t need = lo > hi ? 0 : checkedAdd(hi, 1);
    auto [it, fresh] = out.emplace(mb.idx, need);
    if (!fresh) it->second = std::max(it->second, need);
  }
  return out;
}

void verifyAstBounds(const KernelOp &ast, const std::map<int, int64_t> &sizes, const VarRanges &ranges) {
  verifyAst(ast);
  for (const KernelOp *x : ast.uniqueOps()) {
    if (x->op != Op::Load && x->op != Op::Store) continue;
    const MemBuffer &mb = x->memBuffer();
    auto [lo, hi] = accessRange(mb.st, ranges);
    if (lo > hi) continue;
    auto it = sizes.find(mb.idx);
    int64_t size = it == sizes.end() ? 0 : it->second;
    if (lo < 0 || hi >= size)
      reject(fmt::format("{} of buffer {} may access elements {}..{} outside its {} elements (views {})",
                         opName(x->op), mb.idx, lo, hi, size, mb.st.repr()));
  }
}

} // namespace lazyjit

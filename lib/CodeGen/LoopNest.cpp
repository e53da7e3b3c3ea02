// The loop nest of a Kernel (LoopNest.h): axis roles, unrolled combinations, and the CPU's vector
// axis decision.
#include "LoopNest.h"
#include "IndexSimplify.h"
#include "VectorMath.h"
#include "lazyjit/Graph/LazyOpWalk.h"
#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <unordered_set>

namespace lazyjit {

std::vector<std::vector<int64_t>> upcastCombos(const std::vector<int64_t> &sizes) {
  std::vector<std::vector<int64_t>> out{{}};
  for (int64_t s : sizes) {
    std::vector<std::vector<int64_t>> next;
    for (const auto &c : out)
      for (int64_t v = 0; v < s; ++v) {
        auto d = c;
        d.push_back(v);
        next.push_back(d);
      }
    out = std::move(next);
  }
  return out;
}

const char *LoopNest::roleName(Role r) {
  switch (r) {
  case Role::Global: return "global";
  case Role::Local: return "local";
  case Role::Group: return "group";
  case Role::Reduce: return "reduce";
  case Role::Upcast: return "upcast";
  case Role::Unroll: return "unroll";
  case Role::Vector: return "vector";
  case Role::Row: return "row";
  }
  return "?";
}

LoopNest LoopNest::of(const Kernel &k) {
  LoopNest nest;
  const Shape &full = k.fullShape();
  const Shape &outShape = k.outputShape();
  int n = static_cast<int>(k.shapeLen()), fr = k.firstReduce(), firstUpcast = n - k.upcasted;
  int groupEnd = fr + static_cast<int>(k.groupForReduce.size());
  for (int a = 0; a < n; ++a) {
    Role r = k.rowKernel ? (a >= k.rowStart ? Role::Row : a < fr ? Role::Global : Role::Reduce)
             : a < fr - k.localDims ? Role::Global
             : a < fr               ? Role::Local
             : a < groupEnd         ? Role::Group
             : a < firstUpcast      ? Role::Reduce
             : a == k.vectorAxis    ? Role::Vector
             : pyEq(full[a], outShape[a]) ? Role::Upcast
                                          : Role::Unroll;
    nest.roles.push_back(r);
  }
  if (k.rowKernel) return nest; // (the row lowerings plan their passes themselves)
  std::vector<int64_t> outSizes, redSizes;
  for (int a = firstUpcast; a < n; ++a) {
    LAZYJIT_INTERNAL_CHECK(full[a].isInt(), "codegen: upcast axis {} is symbolic", a);
    if (nest.roles[a] == Role::Vector) {
      nest.vecAxis = a;
      nest.lanes = full[a].asInt();
      nest.vecReduce = k.vectorReduce;
      continue;
    }
    bool isOut = nest.roles[a] == Role::Upcast;
    (isOut ? nest.outUp : nest.redUp).push_back(a);
    (isOut ? outSizes : redSizes).push_back(full[a].asInt());
  }
  nest.outCombos = upcastCombos(outSizes);
  nest.redCombos = upcastCombos(redSizes);
  return nest;
}

std::string LoopNest::str() const {
  std::string s = "axes";
  for (Role r : roles) s += std::string(" ") + roleName(r);
  s += fmt::format("; {} accumulator{} (output combinations), {} reduce combination{} per step", outCombos.size(),
                   outCombos.size() == 1 ? "" : "s", redCombos.size(), redCombos.size() == 1 ? "" : "s");
  if (vecAxis >= 0) s += fmt::format("; vector axis {} of {} lanes{}", vecAxis, lanes, vecReduce ? " (partial sums)" : "");
  return s;
}

void LoopNest::setUpcast(std::vector<NodeRef> &ix, const std::vector<int64_t> &oc, const std::vector<int64_t> *rc,
                         const NodeRef &vidx) const {
  for (size_t i = 0; i < outUp.size(); ++i) ix[outUp[i]] = numNode(oc[i]);
  for (size_t i = 0; i < redUp.size(); ++i) ix[redUp[i]] = numNode(rc ? (*rc)[i] : 0);
  // (a vector reduce axis is zeroed, as every reduce axis, where the reduce is done)
  if (vecAxis >= 0) ix[vecAxis] = vecReduce && !rc ? numNode(0) : vidx;
}

bool lanesSupported(const std::vector<const KernelOp *> &ops, int64_t lanes, const KernelOptions &o) {
  auto floating = [](DType dt) { return dt == dtypes::float32 || dt == dtypes::float64; };
  for (const KernelOp *x : ops) {
    switch (opLanes(x->op)) {
    case OpLanes::Yes: break;
    case OpLanes::No: return false; // (a row value's EXPAND is the caller's)
    case OpLanes::FloatBuffer:
      // (float16 and bfloat16 buffers are read and written as vectors of their own, computed in
      // float32 lanes)
      if (!floating(x->bufferDType()) && !x->bufferDType().isHalfWidth()) return false;
      break;
    case OpLanes::FloatCast: {
      // a cast to bool (a compare's result made a WHERE's condition: x != 0 on float lanes) is
      // an i1 vector as CMPLT's is; imported models put them in matmul and conv epilogues (an
      // exact GELU's erf, Clip, masks), which ran scalar without it
      const auto &ca = std::get<CastArg>(x->arg);
      if (ca.bitcast || (!floating(ca.dtype) && ca.dtype != dtypes::boolean)) return false;
      break;
    }
    case OpLanes::VectorMath: {
      std::optional<DType> dt = x->kernelDType();
      LAZYJIT_INTERNAL_CHECK(dt.has_value(), "codegen: {} without a dtype in a kernel AST", opName(x->op));
      // (float16 and bfloat16 lanes are float32 registers)
      DType lane = dt->isHalfWidth() ? dtypes::float32 : *dt;
      if (!vectorMathFn(x->op, lane, lanes, o.vectorBits, o.vectorMath)) return false;
      break;
    }
    }
  }
  return true;
}

bool usesVidx(const Node &n) {
  for (const auto &v : n.vars())
    if (v->expr && *v->expr == "vidx") return true;
  return false;
}

bool contiguousInVidx(const NodeRef &idx, const NodeRef &vidx, NodeRef *base) {
  NodeRef b0 = idx->substitute({{vidx->key(), numNode(0)}});
  if (usesVidx(*b0)) return false;
  if (sumNodes({b0, vidx})->key() != idx->key()) return false;
  if (base) *base = b0;
  return true;
}

namespace {

// Whether the output is contiguous along `axis` at any values of the other axes (its index
// simplified under its validity, as the lowering simplifies every access).
bool outputContiguousAlong(const Kernel &k, int axis) {
  NodeRef vidx = variable("vidx", 0, k.fullShape()[axis] - 1);
  std::vector<NodeRef> ix;
  for (size_t a = 0; a < k.shapeLen(); ++a)
    ix.push_back(static_cast<int>(a) == axis ? vidx : variable("ax" + std::to_string(a), 0, k.fullShape()[a] - 1));
  auto [idx, valid] = k.sts[0].exprIdxs(ix);
  return contiguousInVidx(simplifyUnderValid(idx, valid).idx, vidx, nullptr);
}

} // namespace

void chooseVectorAxis(Kernel &k) {
  k.vectorAxis = -1;
  k.vectorReduce = false;
  if (k.rowKernel || k.upcasted == 0) return;
  const Shape &full = k.fullShape();
  int n = static_cast<int>(k.shapeLen()), firstUpcast = n - k.upcasted;
  std::vector<const KernelOp *> ops = k.ast->uniqueOps();
  int lastOut = -1;
  for (int a = firstUpcast; a < n; ++a) {
    LAZYJIT_INTERNAL_CHECK(full[a].isInt(), "codegen: upcast axis {} is symbolic", a);
    if (pyEq(full[a], k.outputShape()[a])) lastOut = a;
  }
  // dot products: the vector partial sums must be float (a reduction of i1 lanes would not be)
  int64_t last = full[n - 1].asInt();
  bool floatReduce = false;
  if (k.reduceop) {
    LAZYJIT_INTERNAL_CHECK(k.reduceop->kernelDType().has_value(), "codegen: a reduce without a dtype in a kernel AST");
    floatReduce = k.reduceop->kernelDType()->isFloating();
  }
  if (lastOut != n - 1 && last >= 8 && last <= 64 && floatReduce && lanesSupported(ops, last, k.opts)) {
    k.vectorAxis = n - 1;
    k.vectorReduce = true;
    return;
  }
  if (lastOut < 0) return;
  int64_t size = full[lastOut].asInt();
  if (size >= 4 && size <= 64 && lanesSupported(ops, size, k.opts) && (k.scatterOutput || outputContiguousAlong(k, lastOut)))
    k.vectorAxis = lastOut;
}

std::vector<const KernelOp *> rowNodes(const Kernel &k) {
  std::unordered_set<const KernelOp *> inRows = expandedSubtrees(*k.ast);
  std::vector<const KernelOp *> order;
  // post-order, each node once
  walkOps(*k.ast, [](const KernelOp &) { return true; }, [&](const KernelOp &x) {
    // (the kernel's own reduce, outside every EXPAND, is not a row value)
    if ((!isReduceOp(x.op) && x.op != Op::Expand) || !inRows.count(&x)) return;
    order.push_back(&x); // (equal nodes are one KernelOp: each value is computed once)
  });
  return order;
}

bool rowPassDescends(const KernelOp &x) { return !isReduceOp(x.op) && x.op != Op::Expand; }

std::vector<const KernelOp *> rowPassNodes(const KernelOp *root) {
  std::vector<const KernelOp *> out, stack{root};
  std::unordered_set<const KernelOp *> seen{root};
  while (!stack.empty()) {
    const KernelOp *op = stack.back();
    stack.pop_back();
    out.push_back(op);
    if (!rowPassDescends(*op)) continue;
    for (const auto &s : op->src)
      if (seen.insert(s.get()).second) stack.push_back(s.get());
  }
  return out;
}

bool rowPassTranscendental(const KernelOp *root) {
  std::vector<const KernelOp *> ops = rowPassNodes(root);
  return std::any_of(ops.begin(), ops.end(), [](const KernelOp *x) { return isTranscendental(x->op); });
}

bool rowPassInVectors(const Kernel &k, const KernelOp *root) {
  if (k.rowLanes == 0) return false;
  std::vector<const KernelOp *> ops = rowPassNodes(root);
  std::erase_if(ops, [](const KernelOp *x) { return isReduceOp(x->op) || x->op == Op::Expand; });
  return lanesSupported(ops, k.rowLanes, k.opts);
}

std::vector<const KernelOp *> rowPasses(const Kernel &k) {
  std::vector<const KernelOp *> passes = rowNodes(k);
  std::erase_if(passes, [&](const KernelOp *x) { return !isReduceOp(x->op) || k.rowMomentsOf(x); });
  return passes;
}

} // namespace lazyjit

// The reference interpreter: evaluates a kernel AST element by element, with index expressions
// compiled to slot-based trees. The value semantics it defines (and the JIT backends are tested
// against) are in InterpreterScalar.cpp.
#include "InterpreterScalar.h"
#include "lazyjit/Runtime/Interpreter.h"
#include "lazyjit/Schedule/NodeDType.h"
#include "lazyjit/Graph/LazyOpWalk.h"
#include "lazyjit/Runtime/HostAllocator.h"
#include "lazyjit/Support/Math.h"

#include <cmath>
#include <limits>
#include <unordered_map>

namespace lazyjit {

namespace {

using namespace interp;

// ---- compiled index expressions --------------------------------------------------------------------

// A symbolic node compiled for fast evaluation: variables become slots.
struct CExpr {
  NodeKind kind;
  int slot = -1;
  int64_t c = 0;
  std::vector<CExpr> kids; // a, then b (if b is a node), or the n-ary children
  bool bIsNode = false;

  int64_t eval(const int64_t *slots) const {
    switch (kind) {
    case NodeKind::Variable: return slots[slot];
    case NodeKind::Num: return c;
    case NodeKind::Mul: return kids[0].eval(slots) * (bIsNode ? kids[1].eval(slots) : c);
    case NodeKind::Div: return floorDiv(kids[0].eval(slots), c);
    case NodeKind::Mod: return floorMod(kids[0].eval(slots), c);
    case NodeKind::Lt: return kids[0].eval(slots) < (bIsNode ? kids[1].eval(slots) : c) ? 1 : 0;
    case NodeKind::Sum: {
      int64_t s = 0;
      for (const auto &k : kids) s += k.eval(slots);
      return s;
    }
    case NodeKind::And:
      for (const auto &k : kids)
        if (!k.eval(slots)) return 0;
      return 1;
    }
    return 0;
  }
};

CExpr compileNode(const Node &n, const std::unordered_map<std::string, int> &slotOf) {
  CExpr e;
  e.kind = n.kind;
  switch (n.kind) {
  case NodeKind::Variable: {
    auto it = slotOf.find(n.expr ? *n.expr : "None");
    LAZYJIT_USER_CHECK(it != slotOf.end(), Error, "interpreter: no value for variable {}", n.key());
    e.slot = it->second;
    break;
  }
  case NodeKind::Num: e.c = n.num; break;
  case NodeKind::Mul:
  case NodeKind::Div:
  case NodeKind::Mod:
  case NodeKind::Lt:
    e.kids.push_back(compileNode(*n.a, slotOf));
    if (n.b.isNode()) {
      e.bIsNode = true;
      e.kids.push_back(compileNode(*n.b.node(), slotOf));
    } else {
      e.c = n.b.asInt();
    }
    break;
  case NodeKind::Sum:
  case NodeKind::And:
    for (const auto &k : n.nodes) e.kids.push_back(compileNode(*k, slotOf));
    break;
  }
  return e;
}

// ---- the evaluator ---------------------------------------------------------------------------------

class Evaluator {
public:
  Evaluator(const KernelOp &ast, std::span<Buffer *const> bufs, const VarVals &vars)
      : bufs(bufs) {
    // slots: idx0..idx{R-1} for the current index, then the symbolic variables
    int next = kMaxRank;
    for (const auto &[name, vv] : vars) {
      slotOf[name] = next;
      symValues.emplace_back(next++, vv.second);
    }
    for (int i = 0; i < kMaxRank; ++i) slotOf["idx" + std::to_string(i)] = i;
    slots.assign(next, 0);
    for (auto &[slot, v] : symValues) slots[slot] = v;
    prepare(ast);
  }

  void run(const KernelOp &store) {
    const MemBuffer &mb = store.memBuffer();
    Shape shape = concrete(mb.st.shape());
    std::vector<int64_t> idx(shape.size(), 0);
    int64_t total = 1;
    for (const auto &s : shape) total *= s.asInt();
    const Leaf &leaf = leaves.at(&store);
    for (int64_t n = 0; n < total; ++n) {
      Value v = eval(*store.src[0], idx);
      setIdx(idx);
      if (leaf.valid.eval(slots.data())) {
        int64_t at = leaf.index.eval(slots.data());
        checkBounds(0, at);
        storeScalar(bufs[0]->ptr(), at, mb.dtype, convert(v, dtypeOf(*store.src[0]), mb.dtype));
      }
      increment(idx, shape);
    }
  }

private:
  static constexpr int kMaxRank = 32;
  struct Leaf {
    CExpr index, valid;
  };
  std::span<Buffer *const> bufs;
  std::unordered_map<std::string, int> slotOf;
  std::vector<std::pair<int, int64_t>> symValues;
  std::vector<int64_t> slots;
  std::unordered_map<const KernelOp *, Leaf> leaves;

  Shape concrete(const Shape &s) const {
    Shape out;
    std::map<std::string, int64_t> vals;
    for (const auto &[name, slot] : slotOf)
      if (slot >= kMaxRank) vals[name] = slots[slot];
    for (const auto &d : s) out.push_back(d.isInt() ? d : SInt(evalNode(*d.node(), vals)));
    return out;
  }

  void prepare(const KernelOp &ast) {
    for (const KernelOp *x : ast.uniqueOps()) prepareLeaf(*x);
  }

  void prepareLeaf(const KernelOp &op) {
    if (isBufferOp(op.op)) {
      const ShapeTracker &st = op.bufferSt();
      LAZYJIT_USER_CHECK(st.shape().size() <= kMaxRank, UnsupportedError,
                         "interpreter: rank {} is above {}", st.shape().size(), kMaxRank);
      auto [idx, valid] = st.exprIdxs();
      leaves[&op] = Leaf{compileNode(*idx, slotOf), compileNode(*valid, slotOf)};
      if (op.op != Op::Const) {
        int i = op.memBuffer().idx;
        LAZYJIT_USER_CHECK(i >= 0 && static_cast<size_t>(i) < bufs.size(), Error,
                           "interpreter: buffer {} is not among the {} arguments", i, bufs.size());
        LAZYJIT_USER_CHECK(bufs[i]->dtype() == op.memBuffer().dtype, DTypeError,
                           "interpreter: buffer {} is {} but the AST reads {}", i,
                           bufs[i]->dtype().name(), op.memBuffer().dtype.name());
      }
    }
  }

  DType dtypeOf(const KernelOp &op) {
    const KernelOp *bad = nullptr;
    std::optional<DType> dt = kernelDTypeOf(op, &bad);
    LAZYJIT_USER_CHECK(dt.has_value(), Error, "interpreter: {} is not allowed in a kernel AST", opName(bad->op));
    return *dt;
  }

  void setIdx(const std::vector<int64_t> &idx) {
    for (size_t i = 0; i < idx.size(); ++i) slots[i] = idx[i];
  }

  static void increment(std::vector<int64_t> &idx, const Shape &shape) {
    for (size_t k = idx.size(); k-- > 0;) {
      if (++idx[k] < shape[k].asInt()) return;
      idx[k] = 0;
    }
  }

  void checkBounds(int buf, int64_t at) const {
    LAZYJIT_USER_CHECK(at >= 0 && at < bufs[buf]->size(), Error,
                       "interpreter: buffer {} index {} is out of bounds (size {})", buf, at,
                       bufs[buf]->size());
  }

  // A subtree compiled for evaluation: its distinct nodes in post-order, operands first and the
  // root last, each with the positions of its operands. A reduce or EXPAND node is a leaf here (it
  // evaluates its source's own Subtree, at other indices). Evaluating it is a loop: no recursion
  // along a chain as deep as it is long, and a node the AST shares is computed once per index.
  struct Subtree {
    std::vector<const KernelOp *> nodes;
    std::vector<DType> dts;
    std::vector<std::vector<size_t>> operands;
    std::vector<Value> values; // scratch: a Subtree is never evaluated inside its own evaluation
  };
  std::unordered_map<const KernelOp *, Subtree> subtrees;

  Subtree &subtreeOf(const KernelOp &root) {
    auto [it, fresh] = subtrees.try_emplace(&root);
    Subtree &t = it->second;
    if (!fresh) return t;
    std::unordered_map<const KernelOp *, size_t> pos;
    auto opaque = [](const KernelOp &op) { return isBufferOp(op.op) || isReduceOp(op.op) || op.op == Op::Expand; };
    walkOps(root, [&](const KernelOp &op) { return !opaque(op); }, [&](const KernelOp &x) {
      std::vector<size_t> ops;
      if (!opaque(x))
        for (const auto &y : x.src) ops.push_back(pos.at(y.get()));
      pos.emplace(&x, t.nodes.size());
      t.nodes.push_back(&x);
      t.dts.push_back(dtypeOf(x));
      t.operands.push_back(std::move(ops));
    });
    t.values.resize(t.nodes.size());
    return t;
  }

  Value eval(const KernelOp &root, const std::vector<int64_t> &idx) {
    Subtree &t = subtreeOf(root);
    std::vector<Value> s;
    std::vector<DType> sd;
    for (size_t i = 0; i < t.nodes.size(); ++i) {
      const KernelOp &op = *t.nodes[i];
      s.clear();
      sd.clear();
      for (size_t j : t.operands[i]) {
        s.push_back(t.values[j]);
        sd.push_back(t.dts[j]);
      }
      t.values[i] = evalOp(op, t.dts[i], s, sd, idx);
    }
    return t.values.back();
  }

  // One node, its operands (values `s` of dtypes `sd`) evaluated.
  Value evalOp(const KernelOp &op, DType dt, std::vector<Value> &s, const std::vector<DType> &sd,
               const std::vector<int64_t> &idx) {
    switch (op.op) {
    case Op::Load: {
      const Leaf &leaf = leaves.at(&op);
      setIdx(idx);
      if (!leaf.valid.eval(slots.data())) return Value{};
      int64_t at = leaf.index.eval(slots.data());
      int b = op.memBuffer().idx;
      checkBounds(b, at);
      return loadScalar(bufs[b]->ptr(), at, dt);
    }
    case Op::Const: {
      const Leaf &leaf = leaves.at(&op);
      setIdx(idx);
      if (!leaf.valid.eval(slots.data())) return Value{};
      Value v;
      v.f = op.constBuffer().val;
      return convert(v, dtypes::float64, dt);
    }
    case Op::Sum:
    case Op::ReduceMax: return reduce(op, idx, dt);
    case Op::Expand: return expand(op, idx);
    case Op::Cast: {
      const auto &ca = std::get<CastArg>(op.arg);
      return ca.bitcast ? bitcast(s[0], sd[0], ca.dtype) : convert(s[0], sd[0], ca.dtype);
    }
    case Op::Where: {
      bool c = isTrue(s[0], kindOf(sd[0]));
      return convert(c ? s[1] : s[2], c ? sd[1] : sd[2], dt, false);
    }
    case Op::Exp2: case Op::Log2: case Op::Sin: case Op::Sqrt: case Op::Recip: case Op::Neg:
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Max: case Op::Mod: case Op::CmpLt:
    case Op::Xor: case Op::MulAcc: break;
    // (not in a kernel AST: alu names them in its error)
    case Op::Store:
    case Op::Reshape: case Op::Permute: case Op::Pad: case Op::Shrink: case Op::Stride: case Op::AsStrided:
    case Op::Empty: case Op::LoadConst: case Op::Copy: case Op::Contiguous: case Op::Custom: break;
    }
    // The ALU ops compute on operands cast to the node's dtype (CMPLT on the inputs' max dtype).
    for (size_t k = 0; k < s.size(); ++k) s[k] = convert(s[k], sd[k], dt, false);
    return aluNormalize(alu(op.op, s, dt), dt);
  }

  Value reduce(const KernelOp &op, const std::vector<int64_t> &outIdx, DType dt) {
    const KernelOp &src = *op.src[0];
    Shape inShape = concrete(shapeOf(src));
    Shape outShape = concrete(op.shapeArg());
    std::vector<size_t> axes;
    for (size_t k = 0; k < inShape.size(); ++k)
      if (inShape[k].asInt() != outShape[k].asInt()) axes.push_back(k);
    Value acc;
    Kind k = kindOf(dt);
    if (op.op == Op::ReduceMax) {
      switch (k) {
      case Kind::Bool: acc.b = false; break;
      case Kind::Float: acc.f = -std::numeric_limits<double>::infinity(); break;
      case Kind::Signed:
        acc.i = dt.itemsize() == 8 ? std::numeric_limits<int64_t>::min()
                                   : -(int64_t(1) << (dt.itemsize() * 8 - 1));
        break;
      case Kind::Unsigned: acc.u = 0; break;
      }
    }
    std::vector<int64_t> idx = outIdx;
    for (size_t a : axes) idx[a] = 0;
    int64_t total = 1;
    for (size_t a : axes) total *= inShape[a].asInt();
    for (int64_t n = 0; n < total; ++n) {
      Value v = convert(eval(src, idx), dtypeOf(src), dt, false);
      acc = aluNormalize(alu(reduceAlu(op.op), {v, acc}, dt), dt);
      for (size_t j = axes.size(); j-- > 0;) {
        size_t a = axes[j];
        if (++idx[a] < inShape[a].asInt()) break;
        idx[a] = 0;
      }
    }
    return acc;
  }

  // A row kernel's EXPAND (OPT=5): its source at the index with the expanded axes at 0. The value
  // of the last row is kept, so a row's reduces are computed once, not once per element.
  Value expand(const KernelOp &op, const std::vector<int64_t> &idx) {
    auto [it, fresh] = expandMemo.try_emplace(&op);
    ExpandMemo &m = it->second;
    if (fresh) {
      // the expanded axes, once per node
      Shape inShape = concrete(shapeOf(*op.src[0]));
      for (size_t k = 0; k < inShape.size(); ++k)
        if (inShape[k].asInt() == 1) m.axes.push_back(k);
    }
    std::vector<int64_t> at = idx;
    for (size_t k : m.axes) at[k] = 0;
    if (fresh || m.lastAt != at) {
      m.lastValue = eval(*op.src[0], at);
      m.lastAt = std::move(at);
    }
    return m.lastValue;
  }
  struct ExpandMemo {
    std::vector<size_t> axes;
    std::vector<int64_t> lastAt;
    Value lastValue;
  };
  std::unordered_map<const KernelOp *, ExpandMemo> expandMemo;

  const Shape &shapeOf(const KernelOp &op) {
    dtypeOf(op); // (a node has a shape exactly when it has a dtype; this names a malformed one)
    return *op.shape();
  }
};

class InterpreterProgram : public Program {
public:
  explicit InterpreterProgram(KernelOpRef ast) : ast(std::move(ast)) {
    info_.name = "interp";
    auto li = getLazyOpInfo(*this->ast);
    info_.flops = li.flops;
    info_.memBytes = li.memEstimate();
  }
  void run(std::span<Buffer *const> bufs, const VarVals &vars) override {
    interpretKernel(*ast, bufs, vars);
  }
  const ProgramInfo &info() const override { return info_; }

private:
  KernelOpRef ast;
  ProgramInfo info_;
};

class InterpreterDevice : public Device {
public:
  using Device::Device;
  Allocator &allocator() override { return hostAllocator(); }
  std::shared_ptr<Program> compile(const KernelOpRef &ast) override {
    return std::make_shared<InterpreterProgram>(ast);
  }
};

} // namespace

void interpretKernel(const KernelOp &ast, std::span<Buffer *const> bufs, const VarVals &vars) {
  LAZYJIT_USER_CHECK(ast.op == Op::Store, Error, "interpreter: the AST root is {}, not STORE",
                     opName(ast.op));
  for (const Buffer *b : bufs)
    LAZYJIT_USER_CHECK(b->hostAccessible(), DeviceError,
                       "interpreter: buffer on {} is not in host memory", b->device());
  Evaluator ev(ast, bufs, vars);
  ev.run(ast);
}

std::unique_ptr<Device> makeInterpreterDevice(const std::string &name) {
  return std::make_unique<InterpreterDevice>(name);
}

} // namespace lazyjit

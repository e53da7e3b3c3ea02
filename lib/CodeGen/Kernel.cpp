// Kernel shape bookkeeping and the OptOps (reference codegen/kernel.py): every ShapeTracker of the
// kernel is reshaped and permuted together so that all buffers share one axis layout.
#include "lazyjit/CodeGen/Kernel.h"
#include "Heuristics.h"
#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <unordered_set>

namespace lazyjit {

std::string Opt::str() const {
  const char *names[] = {"UPCAST", "UNROLL", "LOCAL", "LASTLOCAL", "GROUP", "GROUPTOP", "NOLOCALS", "PADTO", "SWAP"};
  return std::string(names[static_cast<int>(op)]) + "(" + std::to_string(axis) + "," + std::to_string(amt) + ")";
}

namespace {
// The shape a node computes (the kernel IR's, computed when it was built); a malformed node has none.
const Shape &shapeOf(const KernelOp &x) {
  LAZYJIT_USER_CHECK(x.shape() != nullptr, Error, "kernel: {} is malformed (verifyAst says how)", opName(x.op));
  return *x.shape();
}
} // namespace

Kernel::Kernel(KernelOpRef astIn, KernelOptions o) : ast(std::move(astIn)), opts(std::move(o)) {
  LAZYJIT_USER_CHECK(ast->op == Op::Store, Error, "kernels must have a STORE as the output, got {}",
                     opName(ast->op));
  auto ops = ast->uniqueOps();
  const KernelOp *expand = nullptr;
  for (const KernelOp *x : ops)
    if (x->op == Op::Expand && !expand) expand = x;
  rowKernel = expand != nullptr;
  // a row kernel's reduces inside its EXPANDs are its row values; the one outside (if any) is the
  // kernel's reduce, which its final pass accumulates
  std::unordered_set<const KernelOp *> inRows = expandedSubtrees(*ast);
  for (const KernelOp *x : ops) {
    if (isReduceOp(x->op) && !inRows.count(x)) {
      // (`ops` holds each distinct node once, and equal reduces are one node)
      LAZYJIT_USER_CHECK(!reduceop, Error, "max one reduce op in an AST");
      reduceop = x;
    }
    if (isBufferOp(x->op)) bufs.push_back(x); // (each distinct leaf once: equal leaves are one node)
  }
  LAZYJIT_INTERNAL_CHECK(!bufs.empty() && bufs[0]->op == Op::Store && bufs[0]->memBuffer().idx == 0,
                         "buffer 0 is not the store buffer");
  if (reduceop) {
    // the first leaf of the reduce's source (in a row kernel: the first of the source's shape,
    // row values have another) has the full shape
    bool found = false;
    std::optional<Shape> full;
    if (rowKernel) full = shapeOf(*reduceop->src[0]);
    for (const KernelOp *x : reduceop->uniqueOps()) {
      if (!isBufferOp(x->op) || (full && x->bufferSt().shape() != *full)) continue;
      fullBufIndex = bufIndex(x);
      found = true;
      break;
    }
    LAZYJIT_USER_CHECK(found, UnsupportedError, "kernel: the reduce of a row kernel reads no buffer of its shape");
  }
  for (const KernelOp *b : bufs) sts.push_back(b->bufferSt());
  for (size_t i = 1; i < sts.size(); ++i)
    LAZYJIT_USER_CHECK(sts[i].shape().size() == sts[0].shape().size(), Error,
                       "kernel: buffer {} has rank {} but the output has rank {}", i,
                       sts[i].shape().size(), sts[0].shape().size());

  // move all reduce axes to the end (a row kernel: its row axes)
  std::vector<int64_t> keep, red;
  const Shape &rowShape = rowKernel ? shapeOf(*expand->src[0]) : fullShape();
  std::vector<int64_t> rows;
  for (size_t i = 0; i < shapeLen(); ++i) {
    auto a = static_cast<int64_t>(i);
    if (!pyEq(fullShape()[i], rowShape[i])) rows.push_back(a); // (a row kernel's reduce reduces these too)
    else if (pyEq(fullShape()[i], outputShape()[i])) keep.push_back(a);
    else red.push_back(a);
  }
  keep.insert(keep.end(), red.begin(), red.end());
  rowStart = static_cast<int>(keep.size());
  keep.insert(keep.end(), rows.begin(), rows.end());
  reshapeAndPermute(nullptr, &keep);

  simplifyOnes();
  simplifyMergeAdjacent();
}

SInt Kernel::outerRange() const {
  if ((rowKernel && !reduceop ? rowStart : firstReduce()) == 0) return SInt(1);
  return fullShape()[0];
}

int Kernel::firstReduce() const {
  size_t n = shapeLen() - upcasted;
  for (size_t i = 0; i < n; ++i)
    if (pyNe(outputShape()[i], fullShape()[i])) return static_cast<int>(i);
  return static_cast<int>(n);
}

std::string Kernel::name() const {
  std::string n = reduceop || rowKernel ? "r_" : "E_";
  const Shape &fs = fullShape();
  for (size_t i = 0; i < fs.size(); ++i) {
    if (i) n += "_";
    if (fs[i].isInt()) {
      n += std::to_string(fs[i].asInt());
    } else {
      // to_function_name of the DEBUG key: non-identifier characters become their hex code
      for (char c : "<" + fs[i].node()->key() + ">") {
        if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') n += c;
        else n += fmt::format("{:02X}", static_cast<unsigned char>(c));
      }
    }
  }
  return n;
}

void Kernel::reshapeAndPermute(const std::function<Shape(const Shape &)> &newShape,
                               const std::vector<int64_t> *axis) {
  for (auto &st : sts) {
    if (newShape) st = st.reshape(newShape(st.shape()), opts.mergeView);
    if (axis) st = st.permute(*axis);
  }
}

void Kernel::shiftTo(int64_t axis, int64_t amount, bool top, int64_t insertBefore) {
  if (insertBefore < 0) insertBefore = static_cast<int64_t>(shapeLen());
  int64_t moveAxis = top ? axis : axis + 1;
  if (moveAxis < insertBefore) insertBefore += 1;
  auto fn = [&](const Shape &x) {
    Shape out(x.begin(), x.begin() + axis);
    if (truthy(gt(x[axis], 1))) {
      if (top) {
        out.push_back(amount);
        out.push_back(floordiv(x[axis], amount));
      } else {
        out.push_back(floordiv(x[axis], amount));
        out.push_back(amount);
      }
    } else {
      out.push_back(1);
      out.push_back(1);
    }
    out.insert(out.end(), x.begin() + axis + 1, x.end());
    return out;
  };
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < insertBefore; ++i)
    if (i != moveAxis) perm.push_back(i);
  perm.push_back(moveAxis);
  for (int64_t i = insertBefore; i < static_cast<int64_t>(shapeLen()) + 1; ++i)
    if (i != moveAxis) perm.push_back(i);
  reshapeAndPermute(fn, &perm);
}

void Kernel::upcast() {
  LAZYJIT_INTERNAL_CHECK(pyNe(fullShape().back(), 1), "can't upcast a dimension with size 1");
  ++upcasted;
}

bool Kernel::simplifyOnes() {
  if (shapeLen() == 0) return false;
  std::vector<bool> allOnes;
  for (const auto &s : fullShape()) allOnes.push_back(pyEq(s, 1));
  int fr = firstReduce();
  for (int i = fr - localDims; i < fr; ++i)
    if (allOnes[i]) --localDims;
  for (size_t i = shapeLen() - upcasted; i < shapeLen(); ++i)
    if (allOnes[i]) --upcasted;
  rowStart -= static_cast<int>(std::count(allOnes.begin(), allOnes.begin() + std::min<size_t>(rowStart, allOnes.size()), true));
  reshapeAndPermute(
      [&](const Shape &shape) {
        Shape out;
        for (size_t i = 0; i < shape.size(); ++i)
          if (!allOnes[i]) out.push_back(shape[i]);
        return out;
      },
      nullptr);
  return std::any_of(allOnes.begin(), allOnes.end(), [](bool b) { return b; });
}

void Kernel::simplifyMergeAdjacent() {
  if (shapeLen() == 0) return;
  std::vector<Shape> shapes;
  std::vector<std::vector<std::optional<SInt>>> strides;
  for (const auto &st : sts) {
    shapes.push_back(st.shape());
    strides.push_back(st.realStrides());
  }
  int fr = firstReduce();
  std::vector<std::vector<std::pair<SInt, std::optional<SInt>>>> rets(shapes.size());
  for (size_t j = 0; j < shapes.size(); ++j) rets[j].emplace_back(shapes[j][0], strides[j][0]);
  int newRowStart = rowStart > 0 ? 1 : 0;
  for (size_t i = 1; i < shapes[0].size(); ++i) {
    bool mergeable = static_cast<int>(i) != fr && !(rowKernel && static_cast<int>(i) == rowStart);
    for (size_t j = 0; j < shapes.size() && mergeable; ++j) {
      const auto &st = strides[j][i];
      const auto &prev = rets[j].back().second;
      bool ok = st.has_value() && prev.has_value() &&
                ((pyNe(*st, 0) && pyEq(*prev, shapes[j][i] * *st)) || (pyEq(*st, 0) && pyEq(*prev, 0)));
      mergeable = ok;
    }
    for (size_t j = 0; j < shapes.size(); ++j) {
      if (mergeable) rets[j].back() = {rets[j].back().first * shapes[j][i], strides[j][i]};
      else rets[j].emplace_back(shapes[j][i], strides[j][i]);
    }
    if (!mergeable && static_cast<int>(i) < rowStart) ++newRowStart;
  }
  rowStart = newRowStart;
  for (size_t j = 0; j < sts.size(); ++j) {
    Shape ns;
    for (const auto &p : rets[j]) ns.push_back(p.first);
    sts[j] = sts[j].reshape(ns, opts.mergeView);
  }
}

namespace {
// Why PADTO(axis, amt) does not apply to `k` (Kernel::padTo), or nullopt where it does.
std::optional<std::string> padRefusal(const Kernel &k, int64_t axis, int64_t amt) {
  if (!varsFromAst(*k.ast).empty())
    return fmt::format("opt PADTO({},{}): does not work with symbolic shapes", axis, amt);
  const int64_t size = k.fullShape()[axis].asInt();
  const int64_t padded = (size + amt - 1) / amt * amt;
  if (axis >= static_cast<int64_t>(k.shapeLen()) - k.upcasted)
    return fmt::format("opt PADTO({},{}): can't pad an upcast axis", axis, amt);
  if (padded == size)
    return fmt::format("opt PADTO({},{}): axis {} of size {} needs no padding", axis, amt, axis, size);
  if (padded - size >= size)
    return fmt::format("opt PADTO({},{}): padding axis {} of size {} to {} more than doubles the work", axis,
                       amt, axis, size, padded);
  if (axis >= k.firstReduce()) {
    bool safe = k.reduceop && k.reduceop->op == Op::Sum;
    for (const KernelOp *x : k.reduceop ? k.reduceop->src[0]->uniqueOps() : std::vector<const KernelOp *>{})
      // ops that map all-zero operands to zero (Ops.def): a SUM over them is unchanged by extra
      // elements whose every leaf reads 0 (a bitcast would turn the -0.0 of a negated 0 into a
      // nonzero integer)
      safe = safe && isZeroPreserving(x->op) && !(x->op == Op::Cast && std::get<CastArg>(x->arg).bitcast);
    if (!safe)
      return fmt::format("opt PADTO({},{}): padding reduce axis {} needs a SUM of ops that keep 0 at 0", axis,
                         amt, axis);
  }
  return std::nullopt;
}

// The axis of the full shape that `opt` names (UNROLL counts from the first reduce, GROUP from the
// first reduce not yet grouped).
int64_t optAxis(const Kernel &k, const Opt &opt) {
  int fr = k.firstReduce();
  return opt.axis + (opt.op == OptOp::Unroll ? fr
                     : (opt.op == OptOp::Group || opt.op == OptOp::GroupTop)
                         ? fr + static_cast<int64_t>(k.groupForReduce.size())
                         : 0);
}
} // namespace

std::optional<std::string> optRefusal(const Kernel &k, const Opt &opt) {
  if (k.rowKernel)
    return fmt::format("opt {}: {} is a row kernel (OPT=5), which takes no OptOps", opt.str(), k.name());
  int fr = k.firstReduce();
  if (opt.op == OptOp::Swap) {
    if (!(opt.axis >= 0 && opt.amt >= 0 && opt.axis < fr - k.localDims && opt.amt < fr - k.localDims))
      return fmt::format("opt {}: can only swap two global axes of {}", opt.str(), k.name());
    return std::nullopt;
  }
  int64_t axis = optAxis(k, opt);
  if (!(axis >= 0 && axis < static_cast<int64_t>(k.shapeLen())))
    return fmt::format("opt {}: axis {} is out of range for {}", opt.str(), axis, k.name());
  const SInt &dim = k.fullShape()[axis];
  if (!dim.isInt()) return fmt::format("opt {}: axis {} is symbolic", opt.str(), axis);
  int64_t amt = opt.amt != 0 ? opt.amt : dim.asInt();
  if (amt <= 1) return fmt::format("opt {}: an amount of {} is meaningless", opt.str(), amt);
  if (opt.op == OptOp::PadTo) return padRefusal(k, axis, amt);
  if (dim.asInt() % amt != 0)
    return fmt::format("opt {}: {} does not divide axis {} of size {}", opt.str(), amt, axis, dim.asInt());
  switch (opt.op) {
  case OptOp::Local:
  case OptOp::LastLocal:
    if (!k.opts.hasLocal) return fmt::format("opt {}: target does not support local", opt.str());
    if (axis >= fr) return fmt::format("opt {}: can't local a reduce", opt.str());
    return std::nullopt;
  case OptOp::Group:
  case OptOp::GroupTop:
    if (!(k.opts.hasLocal && k.opts.hasShared))
      return fmt::format("opt {}: target does not support local or shared memory", opt.str());
    if (!(axis >= fr + static_cast<int64_t>(k.groupForReduce.size()) &&
          axis < static_cast<int64_t>(k.shapeLen()) - k.upcasted))
      return fmt::format("opt {}: must be a reduce axis to group", opt.str());
    return std::nullopt;
  case OptOp::Unroll:
    if (axis >= static_cast<int64_t>(k.shapeLen()) - k.upcasted)
      return fmt::format("opt {}: can't unroll an already upcasted axis", opt.str());
    if (amt > 32) return fmt::format("opt {}: don't unroll more than 32", opt.str());
    return std::nullopt;
  case OptOp::Upcast:
    if (axis >= fr) return fmt::format("opt {}: upcast is for non-reduce axes", opt.str());
    // the reference stops at 8; CPU kernels vectorize an upcast axis, so they may go wider
    if (amt > (k.opts.hasLocal ? 8 : 64))
      return fmt::format("opt {}: don't upcast more than {}", opt.str(), k.opts.hasLocal ? 8 : 64);
    return std::nullopt;
  case OptOp::NoLocals:
  case OptOp::PadTo:
  case OptOp::Swap: return fmt::format("opt {} is not supported", opt.str());
  }
  return std::nullopt;
}

void Kernel::applyOpt(const Opt &opt) {
  if (std::optional<std::string> why = optRefusal(*this, opt)) throw UnsupportedError(*why);
  int fr = firstReduce();
  if (opt.op == OptOp::Swap) {
    std::vector<int64_t> perm(shapeLen());
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[opt.axis], perm[opt.amt]);
    reshapeAndPermute(nullptr, &perm);
    appliedOpts.push_back(opt);
    return;
  }
  int64_t axis = optAxis(*this, opt);
  int64_t amt = opt.amt != 0 ? opt.amt : fullShape()[axis].asInt();
  switch (opt.op) {
  case OptOp::PadTo:
    padTo(axis, amt);
    appliedOpts.push_back(opt);
    return;
  case OptOp::Local:
    shiftTo(axis, amt, false, fr);
    ++localDims;
    break;
  case OptOp::LastLocal:
    shiftTo(axis, amt, false, fr - localDims);
    ++localDims;
    break;
  case OptOp::Group:
  case OptOp::GroupTop:
    shiftTo(axis, amt, opt.op == OptOp::GroupTop, fr + static_cast<int64_t>(groupForReduce.size()));
    groupForReduce.push_back(amt);
    break;
  case OptOp::Unroll:
  case OptOp::Upcast:
    shiftTo(axis, amt);
    upcast();
    break;
  case OptOp::NoLocals:
  case OptOp::Swap: break; // (refused, or applied above)
  }
  appliedOpts.push_back(opt);
  simplifyOnes();
}

namespace {
// `st` with axis `axis` grown to `size`, when its last view does not move along the axis (and no
// index it produces depends on it): the new elements repeat the old ones and read in bounds.
std::optional<ShapeTracker> widenBroadcast(const ShapeTracker &st, int64_t axis, int64_t size) {
  const View &v = st.views.back();
  if (!pyEq(v.strides[axis], 0)) return std::nullopt;
  auto rs = st.realStrides(true);
  if (!rs[axis] || !pyEq(*rs[axis], 0)) return std::nullopt;
  Shape shape = v.shape;
  SInt old = shape[axis];
  shape[axis] = size;
  std::optional<Mask> mask = v.mask;
  if (mask) {
    auto &[b, e] = (*mask)[axis];
    if (!(pyEq(b, 0) && pyEq(e, old))) return std::nullopt;
    e = size;
  }
  return st.withLast(View::create(shape, v.strides, v.offset, mask));
}

} // namespace

void Kernel::padTo(int64_t axis, int64_t amt) {
  if (std::optional<std::string> why = padRefusal(*this, axis, amt)) throw UnsupportedError(*why);
  const int64_t size = fullShape()[axis].asInt();
  const int64_t padded = (size + amt - 1) / amt * amt;
  bool reduceAxis = axis >= firstReduce();
  for (size_t i = 0; i < sts.size(); ++i) {
    if (pyEq(sts[i].shape()[axis], 1)) continue; // the reduced output
    // Along an output axis the padded elements are computed but never stored, so a buffer that
    // does not move along the axis (broadcast, constant) is widened without a mask: it reads in
    // bounds anyway. Along a reduce axis every leaf must read 0 there for the SUM to be unchanged.
    if (!reduceAxis && i != 0) {
      if (auto widened = widenBroadcast(sts[i], axis, padded)) {
        sts[i] = *widened;
        continue;
      }
    }
    PadArg arg(shapeLen(), {SInt(0), SInt(0)});
    arg[axis].second = padded - size;
    sts[i] = sts[i].pad(arg);
  }
}

void Kernel::handCodedOptimizations() {
  if (rowKernel) {
    // no OptOps: the lowering runs the row's passes; the CPU chooses how the output is written,
    // the GPU how many threads share a row
    if (opts.hasLocal)
      applyGPURowHeuristics(*this);
    else
      applyCPURowHeuristics(*this);
    return;
  }
  if (opts.hasLocal)
    applyGPUHeuristics(*this);
  else
    applyCPUHeuristics(*this);
}

const Kernel::RowMoments *Kernel::rowMomentsOf(const KernelOp *reduce) const {
  for (const auto &mo : rowMoments)
    if (mo.reduce == reduce) return &mo;
  return nullptr;
}

size_t Kernel::bufIndex(const KernelOp *x) const {
  auto it = std::find(bufs.begin(), bufs.end(), x);
  LAZYJIT_INTERNAL_CHECK(it != bufs.end(), "kernel: {} is not one of its buffers", opName(x->op));
  return static_cast<size_t>(it - bufs.begin());
}

std::string kernelName(const KernelOp &ast, bool mergeView) {
  KernelOptions opts;
  opts.mergeView = mergeView;
  return Kernel(ast.self(), opts).name();
}

} // namespace lazyjit

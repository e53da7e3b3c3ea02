// The NVPTX driver of kernel lowering: one GPU thread per (global, local) index, the global axes on
// ctaid and the local and group-reduce axes on tid (GPULaunch.h has the mapping), the reduce loops
// per thread, group reduces through shared memory, and vector loads for unit-stride upcasts. Row
// kernels (OPT=5, a block per row) are lowered by LowerNVPTXRow.cpp; the class is in LowerNVPTX.h.
//
// For `E(16,1024).sum(1)` with GROUPTOP(0,256) (kernel r_16_256_4) it emits
//
//   define ptx_kernel void @k(ptr addrspace(1) noalias align 16 %data0, ptr addrspace(1) ... %data1)
//     %gidx0 = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()   ; 16 blocks
//     %lidx1 = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()     ; 256 threads
//   loop.ridx2:                                              ; for ridx2 in [0, 4)
//     %acc = fadd (load data1[gidx0*1024 + lidx1*4 + ridx2]), %acc0
//   loop.ridx2.exit:
//     store float %acc, ptr addrspace(3) @k_temp[lidx1]      ; stage 1: one partial per thread
//     call void @llvm.nvvm.barrier0()
//     br (lidx1 == 0), %group.first, %group.done
//   group.first:                                             ; stage 2: the first thread of the
//   loop.tidx1: %acc2 = fadd (load @k_temp[tidx1]), ...      ; group adds the partials up
//     store float %acc2, data0[gidx0]
//
// Index arithmetic is i32 when every index value provably fits (LowerCore tracks the bounds), else
// the whole kernel is lowered again with i64. Buffers are `ptr addrspace(1) noalias align 16`
// (the runtime passes allocation bases); variables are i64 parameters after the buffers.
#include "lazyjit/Graph/LazyOpWalk.h"
#include "LowerKernel.h"
#include "LowerNVPTX.h"
#include "lazyjit/Support/Error.h"

namespace lazyjit {

using namespace llvm;

namespace {

constexpr unsigned kGlobalAS = kNVPTXGlobalAS, kSharedAS = kNVPTXSharedAS;
constexpr unsigned kBufferAlign = 16; // the runtime's buffers are at least this aligned

// True if the node's value is a multiple of `w` for every value of its variables.
bool divisibleBy(const Node &n, int64_t w) {
  switch (n.kind) {
  case NodeKind::Num: return n.num % w == 0;
  case NodeKind::Mul: return (n.b.isInt() && n.b.asInt() % w == 0) || divisibleBy(*n.a, w);
  case NodeKind::Sum:
    for (const auto &x : n.nodes)
      if (!divisibleBy(*x, w)) return false;
    return true;
  default: return false;
  }
}


} // namespace

// Reads ctaid/tid for each hardware dim and makes the kernel axes' index nodes from them; axes
// merged into one dim are split back with % and //.
void NVPTXLowerer::bindThreadIndices(const std::vector<GPUDim> &dims, const char *prefix, bool grid) {
  static const Intrinsic::ID ctaid[] = {Intrinsic::nvvm_read_ptx_sreg_ctaid_x, Intrinsic::nvvm_read_ptx_sreg_ctaid_y,
                                        Intrinsic::nvvm_read_ptx_sreg_ctaid_z};
  static const Intrinsic::ID tid[] = {Intrinsic::nvvm_read_ptx_sreg_tid_x, Intrinsic::nvvm_read_ptx_sreg_tid_y,
                                      Intrinsic::nvvm_read_ptx_sreg_tid_z};
  for (size_t i = 0; i < dims.size(); ++i) {
    const GPUDim &d = dims[i];
    std::string name = prefix + std::to_string(d.axes.front());
    Value *v = b.CreateIntrinsic(grid ? ctaid[i] : tid[i], {}, {}, nullptr, name);
    varValues[name] = b.CreateZExtOrTrunc(v, idxTy);
    NodeRef var = variable(name, 0, maxBound(d.size) - 1);
    if (d.axes.size() == 1) {
      idxs[d.axes[0]] = var;
      continue;
    }
    // split back by the inner sizes (ints, see GPULaunch); what remains is the outermost axis
    SInt dd = var;
    for (size_t j = d.axes.size(); j-- > 1;) {
      const SInt &s = k.fullShape()[d.axes[j]];
      idxs[d.axes[j]] = mod(dd, s).toNode();
      dd = floordiv(dd, s);
    }
    idxs[d.axes[0]] = dd.toNode();
  }
}

// Fills the load cache with vector loads where a LOAD buffer has unit stride on an upcast axis:
// for each combination of the upcast values whose element on that axis starts an aligned chunk,
// one `load <w x T>` replaces w scalar loads. `early` selects the reduce's source (upcast and
// unroll axes vary) or the rest of the AST (only the output-upcast axes vary).
void NVPTXLowerer::prefetchVectorLoads(const KernelOp &root, bool early) {
  std::vector<int> axes = nest.outUp;
  std::vector<int64_t> sizes;
  if (early) axes.insert(axes.end(), nest.redUp.begin(), nest.redUp.end());
  if (axes.empty()) return;
  for (int a : axes) sizes.push_back(k.fullShape()[a].asInt());
  auto combos = upcastCombos(sizes);

  // the LOADs in the order first met, each node once (below a reduce only when `early`)
  std::vector<size_t> bufs;
  walkOps(root, [&](const KernelOp &op) {
    if (!early && isReduceOp(op.op)) return false;
    if (op.op == Op::Load) {
      size_t bi = bufIndex(&op);
      if (std::find(bufs.begin(), bufs.end(), bi) == bufs.end()) bufs.push_back(bi);
    }
    return true;
  }, [](const KernelOp &) {});

  for (size_t bi : bufs) {
    DType dt = k.bufs[bi]->bufferDType();
    if (dt.isBool()) continue;
    int64_t maxW = std::min<int64_t>(4, 16 / dt.itemsize());
    auto strides = k.sts[bi].realStrides();
    // the last upcast axis with unit stride, and the widest vector that divides it
    int pos = -1;
    int64_t w = 0;
    for (int j = static_cast<int>(axes.size()) - 1; j >= 0 && pos < 0; --j) {
      const auto &st = strides[axes[j]];
      if (!st || !st->isInt() || st->asInt() != 1) continue;
      for (int64_t cand : {int64_t(4), int64_t(2)})
        if (cand <= maxW && sizes[j] % cand == 0) {
          pos = j;
          w = cand;
          break;
        }
    }
    if (pos < 0) continue;
    for (const auto &c : combos) {
      if (c[pos] % w != 0) continue;
      std::vector<NodeRef> ix = idxs;
      for (size_t j = 0; j < axes.size(); ++j) ix[axes[j]] = numNode(c[j]);
      auto [idx0, valid0] = k.sts[bi].exprIdxs(ix);
      if (!valid0->isNum() || valid0->num == 0 || !divisibleBy(*idx0, w)) continue;
      std::vector<std::string> keys;
      for (int64_t e = 0; e < w; ++e) {
        ix[axes[pos]] = numNode(c[pos] + e);
        auto [idx, valid] = k.sts[bi].exprIdxs(ix);
        SInt delta = SInt(idx) - SInt(idx0);
        bool unit = delta.isInt() ? delta.asInt() == e : delta.node()->isNum() && delta.node()->num == e;
        if (!valid->isNum() || valid->num == 0 || !unit) break;
        keys.push_back(loadKey(bi, *idx, *valid));
      }
      if (static_cast<int64_t>(keys.size()) != w || loadCache.count(keys[0])) continue;
      Value *ptr = bufPtrs.at(k.bufs[bi]->memBuffer().idx);
      std::vector<Val> vals = vb.loadVector(ptr, asIdx(render(*idx0)), dt, static_cast<unsigned>(w));
      for (int64_t e = 0; e < w; ++e) loadCache[keys[e]] = vals[e];
    }
  }
}

// A reduce loop's index is bounded by its largest value (a symbolic extent at its maximum), which
// the narrow index type's range analysis needs.
KernelEmitter::LoopRange NVPTXLowerer::reduceRange(int axis) {
  const SInt &extent = k.fullShape()[axis];
  return {idxConst(0), renderSInt(extent), SInt(maxBound(extent) - 1), mayBeEmpty(extent)};
}

// The reference's two-stage local reduce. Every thread stores its partials to shared memory at its
// position in the block; after a barrier the first thread of each group (group indices all 0)
// reduces the partials of its group. Returns the group's results, with the insert point inside
// that thread's branch; `done` is the block to branch to when the results are stored.
std::vector<Value *> NVPTXLowerer::groupReduce(const std::vector<Value *> &partials, BasicBlock *&done) {
  const Shape &full = k.fullShape();
  int gd = k.globalDims(), fr = k.firstReduce(), ng = static_cast<int>(k.groupForReduce.size());
  DType rdt = dtypeOf(*k.reduceop);
  Op alu = reduceAlu(k.reduceop->op);
  int64_t nOut = static_cast<int64_t>(partials.size());
  Type *regTy = vb.regType(rdt);
  Type *elemTy = regTy->isIntegerTy(1) ? b.getInt8Ty() : regTy;
  auto *arrTy = ArrayType::get(elemTy, static_cast<uint64_t>(launch.threads * nOut));
  shared = new GlobalVariable(m, arrTy, false, GlobalValue::InternalLinkage, UndefValue::get(arrTy),
                              symbol + "_temp", nullptr, GlobalValue::NotThreadLocal, kSharedAS);
  shared->setAlignment(Align(16));

  // the position of a thread in its block: row-major over the local and group axes
  auto slot = [&](const std::vector<Value *> &pos, int64_t o) {
    Value *lin = pos[0];
    for (int a = gd + 1; a < fr + ng; ++a)
      lin = b.CreateAdd(b.CreateMul(lin, idxConst(full[a].asInt())), pos[a - gd]);
    if (nOut > 1) lin = b.CreateAdd(b.CreateMul(lin, idxConst(nOut)), idxConst(o));
    return b.CreateInBoundsGEP(arrTy, shared, {idxConst(0), lin});
  };
  std::vector<Value *> mine;
  for (int a = gd; a < fr + ng; ++a) mine.push_back(asIdx(render(*idxs[a])));
  for (int64_t o = 0; o < nOut; ++o) {
    Value *v = partials[o];
    if (v->getType()->isIntegerTy(1)) v = b.CreateZExt(v, elemTy);
    b.CreateAlignedStore(v, slot(mine, o), Align(elemTy->getPrimitiveSizeInBits() / 8));
  }
  barrier();

  Value *first = nullptr;
  for (int a = fr; a < fr + ng; ++a) {
    Value *zero = b.CreateICmpEQ(mine[a - gd], idxConst(0));
    first = first ? b.CreateAnd(first, zero) : zero;
  }
  BasicBlock *then = BasicBlock::Create(ctx, "group.first", fn);
  done = BasicBlock::Create(ctx, "group.done"); // placed after the stores, in emitBody
  b.CreateCondBr(first, then, done);
  b.SetInsertPoint(then);

  std::vector<Value *> init;
  for (int64_t o = 0; o < nOut; ++o) init.push_back(vb.reduceInit(k.reduceop->op, rdt).v);
  std::function<std::vector<Value *>(int, std::vector<Value *> &, const std::vector<Value *> &)> groupLoops =
      [&](int a, std::vector<Value *> &pos, const std::vector<Value *> &cur) -> std::vector<Value *> {
    if (a < fr + ng) {
      std::string name = "tidx" + std::to_string(a);
      return loop(name, idxConst(0), idxConst(full[a].asInt()), false, cur,
                  [&, a](Value *iv, const std::vector<Value *> &c) {
                    pos[a - gd] = iv;
                    return groupLoops(a + 1, pos, c);
                  });
    }
    std::vector<Value *> next = cur;
    for (int64_t o = 0; o < nOut; ++o) {
      Value *v = b.CreateAlignedLoad(elemTy, slot(pos, o), Align(elemTy->getPrimitiveSizeInBits() / 8));
      if (regTy->isIntegerTy(1)) v = b.CreateICmpNE(v, ConstantInt::get(elemTy, 0));
      next[o] = vb.alu(alu, {Val{v, rdt}, Val{next[o], rdt}}, rdt).v;
    }
    return next;
  };
  std::vector<Value *> pos = mine;
  return groupLoops(fr, pos, init);
}

void NVPTXLowerer::emitBody() {
  int n = static_cast<int>(k.shapeLen()), fr = k.firstReduce();
  int firstUpcast = n - k.upcasted;
  std::vector<Val> accs;
  BasicBlock *done = nullptr;
  if (k.reduceop) {
    DType rdt = dtypeOf(*k.reduceop);
    std::vector<Value *> init;
    for (size_t o = 0; o < nest.accumulators(); ++o) init.push_back(vb.reduceInit(k.reduceop->op, rdt).v);
    note("{} accumulator{} ({})", init.size(), init.size() == 1 ? "" : "s", opName(k.reduceop->op));
    // one thread's reduce loops (the group axes are its threads), then every combination per step
    auto step = [&](const std::vector<Value *> &cur) {
      prefetchVectorLoads(*k.reduceop->src[0], true);
      return accumulateCombos(idxs, cur, 0);
    };
    std::vector<Value *> finals = reduceLoops(fr + static_cast<int>(k.groupForReduce.size()), firstUpcast, idxs, init, step);
    if (!k.groupForReduce.empty()) {
      note("combine the threads' partial results through shared memory");
      finals = groupReduce(finals, done);
    }
    for (auto *v : finals) accs.push_back(Val{v, rdt});
  }
  // late buffers are read with the reduce (and group) indices zeroed
  for (int a = fr; a < firstUpcast; ++a) idxs[a] = numNode(0);
  const KernelOp &top = *k.bufs[0]->src[0];
  prefetchVectorLoads(top, false);
  storeOutputs(idxs, accs, top);
  if (done) {
    b.CreateBr(done);
    done->insertInto(fn);
    b.SetInsertPoint(done);
  }
}

Function *NVPTXLowerer::lower(const std::string &sym) {
  symbol = sym;
  b.setFastMathFlags(referenceFastMath());
  auto vars = varsFromAst(*k.ast);
  int numBufs = 0;
  for (const KernelOp *x : k.bufs)
    if (x->op != Op::Const) numBufs = std::max(numBufs, x->memBuffer().idx + 1);

  Type *gptr = PointerType::get(ctx, kGlobalAS);
  std::vector<Type *> params(numBufs, gptr);
  params.insert(params.end(), vars.size(), b.getInt64Ty());
  fn = Function::Create(FunctionType::get(b.getVoidTy(), params, false), GlobalValue::ExternalLinkage, symbol, &m);
  fn->setCallingConv(CallingConv::PTX_Kernel);
  fn->addFnAttr(Attribute::NoUnwind);
  fn->addFnAttr("no-nans-fp-math", "false");
  for (int i = 0; i < numBufs; ++i) {
    fn->addParamAttr(i, Attribute::NoAlias);
    fn->addParamAttr(i, Attribute::getWithAlignment(ctx, Align(kBufferAlign)));
    fn->getArg(i)->setName("data" + std::to_string(i));
    bufPtrs.push_back(fn->getArg(i));
  }
  b.SetInsertPoint(BasicBlock::Create(ctx, "entry", fn));
  for (size_t i = 0; i < vars.size(); ++i) {
    Argument *a = fn->getArg(numBufs + i);
    a->setName(*vars[i]->expr);
    varValues[*vars[i]->expr] = b.CreateTrunc(a, idxTy); // a no-op for i64 indices
  }
  idxs.assign(k.shapeLen(), nullptr);
  bindThreadIndices(launch.grid, "gidx", true);
  if (!k.rowKernel) bindThreadIndices(launch.block, "lidx", false); // a row's threads: emitRowBody
  if (trace) {
    const char *xyz = "xyz";
    auto dims = [&](const std::vector<GPUDim> &ds, const char *what, const char *prefix) {
      for (size_t i = 0; i < ds.size(); ++i) {
        std::string axes;
        for (int a : ds[i].axes) axes += fmt::format("{}{}", axes.empty() ? "" : ", ", a);
        note("{}.{} = {}{}: axis {} of {}", what, xyz[i], prefix, ds[i].axes.front(), axes, ds[i].size.render());
      }
    };
    dims(launch.grid, "block", "gidx");
    if (!k.rowKernel) dims(launch.block, "thread", "lidx");
  }
  if (k.rowKernel)
    emitRowBody();
  else
    emitBody();
  b.CreateRetVoid();
  return fn;
}

void NVPTXLowerer::erase() {
  if (fn) fn->eraseFromParent();
  if (shared) shared->eraseFromParent();
  if (sharedMoments) sharedMoments->eraseFromParent();
  fn = nullptr;
  shared = sharedMoments = nullptr;
}

namespace {

// The kernel annotations NVPTX reads: `kernel` (LLVM 19 also accepts the calling convention
// alone), and the block size as .maxntid so ptxas can budget registers for it.
void annotate(Module &m, Function *fn, const GPULaunch &launch) {
  LLVMContext &ctx = m.getContext();
  NamedMDNode *md = m.getOrInsertNamedMetadata("nvvm.annotations");
  auto add = [&](const char *key, int64_t v) {
    Metadata *ops[] = {ValueAsMetadata::get(fn), MDString::get(ctx, key),
                       ConstantAsMetadata::get(ConstantInt::get(Type::getInt32Ty(ctx), v))};
    md->addOperand(MDNode::get(ctx, ops));
  };
  add("kernel", 1);
  const char *keys[] = {"maxntidx", "maxntidy", "maxntidz"};
  for (size_t i = 0; i < 3; ++i) add(keys[i], i < launch.block.size() ? launch.block[i].size.asInt() : 1);
}

} // namespace

Function *lowerKernelNVPTX(const Kernel &k, const LoopNest &nest, Module &m, const std::string &symbol,
                           LoopTrace *trace) {
  GPULaunch launch = gpuLaunch(k);
  Function *fn = nullptr;
  LoopTrace narrowTrace;
  {
    NVPTXLowerer narrow(k, nest, m, launch, /*wideIndex=*/false);
    if (trace) narrow.traceInto(&narrowTrace);
    fn = narrow.lower(symbol);
    if (narrow.overflowRisk()) {
      narrow.erase();
      fn = nullptr;
    } else {
      narrow.verify();
      if (trace) *trace = std::move(narrowTrace);
    }
  }
  if (!fn) {
    NVPTXLowerer wide(k, nest, m, launch, /*wideIndex=*/true);
    wide.traceInto(trace);
    fn = wide.lower(symbol);
    wide.verify();
  }
  annotate(m, fn, launch);
  return fn;
}

} // namespace lazyjit

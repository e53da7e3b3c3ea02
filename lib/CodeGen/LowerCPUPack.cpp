// The CPU lowering's copies of its inputs into the order the reduce reads them: packed panels
// (Kernel::packDepth, a stack array per thread, before the global loops that reuse it) and whole
// packed inputs.
//
// Whole packed inputs (Kernel::wholePacked): each such input's values for
// every reduce step are copied into the scratch block the launcher passes, in the order the reduce
// reads them; the reduce then reads one sequential stream per tile. The kernel runs in two phases
// (its `phase` argument): the launcher first calls it to pack, splitting the first reduce axis
// across threads, then to compute, every thread reading the one copy.
//
// For A^T @ B (A read as a[k*M + m], 8 rows by 32 columns a tile):
//
//   phase 1: pack (the first reduce axis in [start, end))
//     pack buffer 1 whole: 128 x 256 reduce steps x 4 x 8
//       for widx1 in [0, 128)                      ; the 8-row tiles A moves along
//         for pidx2 in [start, min(end, 256))      ; this call's reduce steps
//           store 32 values                        ; scratch[((widx1*8 + o)*256 + pidx2)*4 + r]
//
// and each step of the reduce reads its 32 values of A from scratch[((gidx1*8 + o)*256 + ridx2)*4 + r].
#include "HeuristicsCPU.h"
#include "LowerCPU.h"
#include "lazyjit/Support/Error.h"

#include <fmt/ranges.h>
#include <llvm/IR/Intrinsics.h>

namespace lazyjit {

using namespace llvm;

// Packed panels (Kernel::packDepth): before the global loop over axis packDepth, each packed
// buffer's vector for every reduce step and unrolled reduce combination is loaded (masked,
// gathered, as the reduce would) and stored to the buffer's panel, a stack array, in the order
// the reduce loop reads them; the reduce loop then loads them from there. The copy runs from the
// global-loop hook, when the loops over the axes before packDepth are open and `idxs` holds their
// indices.
void CPULowerer::packPanels(std::vector<NodeRef> &idxs) {
  const Shape &full = k.fullShape();
  int n = static_cast<int>(k.shapeLen()), fr = k.firstReduce(), firstUpcast = n - k.upcasted;
  // (a blocked reduce packs one block of the first reduce axis at a time)
  int64_t steps = 1;
  for (int a = fr; a < firstUpcast; ++a) steps *= a == fr && k.packBlock ? k.packBlock : full[a].asInt();
  panelCombos = static_cast<int64_t>(nest.redCombos.size());
  {
    IRBuilderBase::InsertPointGuard guard(b);
    b.SetInsertPoint(&fn->getEntryBlock(), fn->getEntryBlock().begin());
    for (size_t bi : k.packedBufs) {
      Type *t = vb.regType(k.bufs[bi]->bufferDType());
      AllocaInst *a = b.CreateAlloca(ArrayType::get(t, static_cast<uint64_t>(steps * panelCombos * lanes)), nullptr,
                                     "panel" + std::to_string(bi));
      a->setAlignment(Align(64));
      panels.emplace(bi, Panel{a, t});
    }
  }
  // (the hook runs after this function returns: the lambdas capture values and `idxs`, which
  // belongs to the caller)
  auto pack = [this, &idxs, fr, firstUpcast, steps] {
    const Shape &full = k.fullShape();
    const auto &outCombos = nest.outCombos, &redCombos = nest.redCombos;
    note("pack buffer{} {}: {} reduce steps x {} x {} lanes", k.packedBufs.size() == 1 ? "" : "s",
         fmt::join(k.packedBufs, ", "), steps, panelCombos, lanes);
    TraceIndent packing(trace);
    // the packed buffers do not move along the global axes from packDepth on
    std::vector<NodeRef> ix = idxs;
    for (int a = k.packDepth; a < fr; ++a) ix[a] = numNode(0);
    std::function<void(int)> packLoops = [&](int axis2) {
      if (axis2 < firstUpcast) {
        std::string name = "pidx" + std::to_string(axis2);
        ix[axis2] = variable(name, 0, full[axis2] - 1);
        auto [lo, hi] = reduceAxisBounds(axis2, fr);
        loop(name, lo, hi, false, {}, [&, axis2](Value *iv, const std::vector<Value *> &) {
          varValues[name] = iv;
          packLoops(axis2 + 1);
          return std::vector<Value *>{};
        });
        return;
      }
      note("store {} vector{}", redCombos.size() * k.packedBufs.size(),
           redCombos.size() * k.packedBufs.size() == 1 ? "" : "s");
      Value *step = reduceStep("pidx", fr, firstUpcast);
      for (size_t c = 0; c < redCombos.size(); ++c) {
        std::vector<NodeRef> jx = ix;
        setUpcast(jx, outCombos[0], &redCombos[c]);
        for (size_t bi : k.packedBufs) {
          Val v = laneLeaf(*k.bufs[bi], jx, lanes);
          b.CreateAlignedStore(v.v, panelAddress(panels.at(bi), step, static_cast<int64_t>(c)), panelAlign(v.dt));
        }
      }
    };
    packLoops(fr);
  };
  globalHookAxis = k.packDepth;
  globalHook = [this, pack, fr](const std::function<void()> &rest) {
    if (!k.packBlock) {
      pack();
      rest();
      return;
    }
    // the first reduce axis in blocks: each block's panel, then the loops that read it
    int64_t blocks = k.fullShape()[fr].asInt() / k.packBlock;
    loop("kblock", i64(0), i64(blocks), false, {}, [&](Value *kb, const std::vector<Value *> &) {
      kBlock = kb;
      kBlockStart = b.CreateMul(kb, i64(k.packBlock), "kblock.start");
      if (trace) trace->names[kBlockStart] = fmt::format("kblock*{}", k.packBlock);
      pack();
      rest();
      return std::vector<Value *>{};
    });
    kBlock = kBlockStart = nullptr;
  };
}

void CPULowerer::packWhole(const std::vector<NodeRef> &idxs, Value *start, Value *end) {
  const Shape &full = k.fullShape();
  int n = static_cast<int>(k.shapeLen()), fr = k.firstReduce(), firstUpcast = n - k.upcasted;
  auto rc = static_cast<int64_t>(nest.redCombos.size()), oc = static_cast<int64_t>(nest.outCombos.size());
  // the layout the heuristic sized: each buffer's panel after the last
  int64_t bytes = 0;
  for (size_t bi : k.wholePacked) {
    DType dt = k.bufs[bi]->bufferDType();
    auto shape = cpu_heuristics::wholePanelShape(k, nest, bi);
    LAZYJIT_INTERNAL_CHECK(shape.has_value(), "codegen: buffer {} packed whole over a symbolic shape", bi);
    wholePanels.emplace(bi, WholePanel{bytes / cpu_heuristics::registerBytes(dt), vb.regType(dt), shape->axes, shape->steps});
    bytes += shape->bytes;
  }
  LAZYJIT_INTERNAL_CHECK(bytes == k.wholePackBytes, "codegen: whole panels of {} bytes where the kernel has {}",
                         bytes, k.wholePackBytes);
  for (size_t bi : k.wholePacked) {
    const WholePanel &w = wholePanels.at(bi);
    std::string tiles;
    for (int a : w.axes) tiles += full[a].render() + " x ";
    note("pack buffer {} whole: {}{} reduce steps x {} x {}", bi, tiles, w.steps, rc, oc);
    TraceIndent packing(trace);
    // the global axes the buffer does not move along at 0, the others and the reduce axes counted
    std::vector<NodeRef> ix = idxs;
    for (int a = 0; a < fr; ++a) ix[a] = numNode(0);
    // (the tiles outermost: with the reduce steps outermost instead, each step reading its rows
    // of A in order and writing a line pair per tile, n = 2048 ran no faster)
    std::vector<int> axes = w.axes;
    for (int a = fr; a < firstUpcast; ++a) axes.push_back(a);
    std::function<void(size_t)> loops = [&](size_t d) {
      if (d < axes.size()) {
        int a = axes[d];
        std::string name = (a < fr ? "widx" : "pidx") + std::to_string(a);
        ix[a] = variable(name, 0, full[a] - 1);
        Value *lo = i64(0), *hi = i64(full[a].asInt());
        if (a == fr) { // this call's part of the first reduce axis, clamped to it
          lo = b.CreateBinaryIntrinsic(Intrinsic::smax, start, lo, nullptr, "start.c");
          hi = b.CreateBinaryIntrinsic(Intrinsic::smin, end, hi, nullptr, "end.c");
          if (trace) {
            trace->names[lo] = "start";
            trace->names[hi] = fmt::format("min(end, {})", full[a].render());
          }
        }
        loop(name, lo, hi, a == fr, {}, [&, name, d](Value *iv, const std::vector<Value *> &) {
          varValues[name] = iv;
          loops(d + 1);
          return std::vector<Value *>{};
        });
        return;
      }
      note("store {} values", rc * oc);
      Value *step = reduceStep("pidx", fr, firstUpcast, false);
      for (int64_t r = 0; r < rc; ++r)
        for (int64_t o = 0; o < oc; ++o) {
          std::vector<NodeRef> jx = ix;
          setUpcast(jx, nest.outCombos[static_cast<size_t>(o)], &nest.redCombos[static_cast<size_t>(r)]);
          jx[static_cast<size_t>(vecAxis)] = numNode(0); // the buffer does not move along the vector
          Val v = loadLeaf(*k.bufs[bi], jx);
          b.CreateAlignedStore(v.v, wholeAddress(bi, "widx", step, r, o), Align(w.type->getPrimitiveSizeInBits() / 8));
        }
    };
    loops(0);
  }
}

Value *CPULowerer::wholeAddress(size_t bi, const std::string &prefix, Value *step, int64_t rc, int64_t oc) {
  const WholePanel &w = wholePanels.at(bi);
  const Shape &full = k.fullShape();
  auto rcs = static_cast<int64_t>(nest.redCombos.size()), ocs = static_cast<int64_t>(nest.outCombos.size());
  Value *tile = i64(0);
  for (int a : w.axes)
    tile = b.CreateAdd(b.CreateMul(tile, i64(full[a].asInt())), asI64(varValues.at(prefix + std::to_string(a))));
  // [tile][row combination][step][reduce combination]: a tile's rows are separate streams, as A's
  // rows are for A @ B (n = 2048: 274-281 GFLOP/s with [tile][step][reduce][row], one stream of
  // 128 bytes a step; 348-369 this way; n = 1024 within 2%)
  Value *at = b.CreateAdd(b.CreateMul(tile, i64(ocs)), i64(oc));
  at = b.CreateAdd(b.CreateMul(at, i64(w.steps)), step);
  at = b.CreateAdd(b.CreateMul(at, i64(rcs)), i64(rc));
  return b.CreateInBoundsGEP(w.type, scratch, b.CreateAdd(at, i64(w.offset)));
}

} // namespace lazyjit

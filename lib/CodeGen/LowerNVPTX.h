// The NVPTX kernel lowerer, shared by its two halves: LowerNVPTX.cpp (thread indices, reduce loops,
// group reduces, vector loads and the entry point) and LowerNVPTXRow.cpp (row kernels: a block
// per row). Private to lib/CodeGen.
#pragma once

#include "GPULaunch.h"
#include "LowerCore.h"
#include "NVPTXMath.h"

#include <llvm/IR/IntrinsicsNVPTX.h>

namespace lazyjit {

inline constexpr unsigned kNVPTXGlobalAS = 1, kNVPTXSharedAS = 3;

class NVPTXLowerer : public KernelEmitter {
public:
  NVPTXLowerer(const Kernel &k, const LoopNest &nest, llvm::Module &m, const GPULaunch &launch, bool wideIndex)
      : KernelEmitter(k, nest, m, math), launch(launch) {
    if (!wideIndex) idxTy = llvm::Type::getInt32Ty(ctx);
  }
  llvm::Function *lower(const std::string &symbol);
  /// Removes what lower() added to the module (before lowering again with wide indices).
  void erase();
  bool overflowRisk() const { return indexMayOverflow; }
  using KernelEmitter::verify;

private:
  NVPTXMath math;
  const GPULaunch &launch;
  llvm::GlobalVariable *shared = nullptr;
  std::string symbol;
  std::vector<NodeRef> idxs;

  void bindThreadIndices(const std::vector<GPUDim> &dims, const char *prefix, bool grid);
  void emitBody();
  LoopRange reduceRange(int axis) override;
  std::vector<Value *> groupReduce(const std::vector<Value *> &partials, llvm::BasicBlock *&done);
  void prefetchVectorLoads(const KernelOp &root, bool early);

  // row kernels (OPT=5): a block per row
  using RowBody = std::function<std::vector<Value *>(const std::vector<NodeRef> &, const std::vector<Value *> &)>;
  int64_t rowThreads = 1;
  NodeRef tidNode;
  void emitRowBody();
  std::vector<Value *> rowPass(const std::vector<Value *> &carried, const RowBody &body);
  Value *blockReduce(Op alu, DType rdt, Value *partial);
  /// A shared array of `slots` 8-byte slots named after the kernel's symbol and `suffix`.
  llvm::GlobalVariable *sharedSlots(int64_t slots, const char *suffix);
  /// The steps of a tree through shared memory, once every thread has stored its value: for s =
  /// threads/2 .. 1, the threads below s run `merge(tid, tid + s)` (in blocks named `stepName`
  /// and `nextName`), then a barrier.
  void treeSteps(const char *stepName, const char *nextName, const std::function<void(Value *, Value *)> &merge);
  /// Kernel::rowMoments: combines the threads' Welford moments of one value (each of `dt`) into
  /// the row's, the same in every thread.
  struct RowMoments {
    Value *mean, *m2, *count;
  };
  RowMoments blockMoments(RowMoments part, DType dt);
  llvm::GlobalVariable *sharedMoments = nullptr;
  void barrier() { b.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }
};

} // namespace lazyjit

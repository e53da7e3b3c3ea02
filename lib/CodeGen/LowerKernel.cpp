// Kernel lowering entry point: dispatches to the CPU or NVPTX driver.
#include "LowerKernel.h"
#include "lazyjit/Support/Error.h"

namespace lazyjit {

llvm::Function *lowerKernelCPU(const Kernel &k, const LoopNest &nest, llvm::Module &m, const std::string &symbol,
                               LoopTrace *trace);
llvm::Function *lowerKernelNVPTX(const Kernel &k, const LoopNest &nest, llvm::Module &m, const std::string &symbol,
                                 LoopTrace *trace);

llvm::Function *lowerKernel(const Kernel &k, const LoopNest &nest, llvm::Module &m, const std::string &symbol,
                            const TargetSpec &target, LoopTrace *trace) {
  if (target.kind == TargetSpec::Kind::NVPTX) return lowerKernelNVPTX(k, nest, m, symbol, trace);
  return lowerKernelCPU(k, nest, m, symbol, trace);
}

} // namespace lazyjit

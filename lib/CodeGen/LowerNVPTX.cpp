// The NVPTX driver of kernel lowering (being written; see the GPU backend issue).
#include "LowerCore.h"
#include "LowerKernel.h"
#include "lazyjit/Support/Error.h"

namespace lazyjit {

llvm::Function *lowerKernelNVPTX(const Kernel &k, llvm::Module &m, const std::string &symbol,
                                 const TargetSpec &target) {
  throw UnsupportedError("codegen: NVPTX lowering is not available yet");
}

} // namespace lazyjit

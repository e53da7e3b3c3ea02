// Lowering of one Kernel to an LLVM function, for a CPU (loops over every axis, the outermost one
// split across threads) or an NVPTX target (global/local axes on ctaid/tid, group reduces through
// shared memory).
#pragma once

#include "LowerCore.h"
#include "LowerValues.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/CodeGen/Kernel.h"

#include <llvm/IR/Module.h>

namespace lazyjit {

/// Emits the kernel into `m` as the entry point `symbol` (plus `symbol`_range on CPU) and returns
/// the entry function; writes the loop nest into `trace` when given. Throws CompileError if the IR
/// does not verify.
llvm::Function *lowerKernel(const Kernel &k, const LoopNest &nest, llvm::Module &m, const std::string &symbol,
                            const TargetSpec &target, LoopTrace *trace = nullptr);

} // namespace lazyjit

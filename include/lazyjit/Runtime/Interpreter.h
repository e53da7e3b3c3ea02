// The reference interpreter: executes any kernel AST over host memory by walking the AST for
// every output element, with the ShapeTrackers' index and validity expressions. It is the oracle
// the JIT backends are tested against, so it is written to be simple and obviously right, not fast.
#pragma once

#include "lazyjit/Runtime/Buffer.h"

namespace lazyjit {

/// Executes a STORE-rooted AST: bufs[0] is the output, bufs[i] the input LOAD idx i.
void interpretKernel(const KernelOp &ast, std::span<Buffer *const> bufs, const VarVals &vars);

/// The "INTERP" device: host memory, every kernel run by interpretKernel.
std::unique_ptr<Device> makeInterpreterDevice(const std::string &name);

} // namespace lazyjit

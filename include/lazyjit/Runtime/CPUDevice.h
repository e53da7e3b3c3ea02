// The CPU device: kernels compiled by lib/CodeGen to object code, linked into one long-lived ORC
// LLJIT per process, cached in memory by AST and on disk by AST text + target, and run on the
// thread pool with the outermost loop split across cores.
#pragma once

#include "lazyjit/Runtime/Device.h"

namespace lazyjit {

std::unique_ptr<Device> makeCPUDevice(const std::string &name);

/// Compile statistics of the CPU device (tests check that a second process compiles nothing).
struct CPUCompileStats {
  int compiled = 0;  ///< kernels compiled by LLVM
  int diskHits = 0;  ///< kernels loaded from the disk cache
  int memoryHits = 0;
};
CPUCompileStats cpuCompileStats();

} // namespace lazyjit

// A test device that runs NVPTX kernels on the host, so the GPU code path can be checked
// numerically on machines without a GPU.
//
// The device "NVEMU" compiles each kernel exactly as the CUDA device does (GPU heuristics, the
// NVPTX lowering, the launch mapping of KernelSignature) and takes the kernel's LLVM IR before
// NVPTX codegen. That IR is retargeted to the host: the ctaid/tid reads and barrier0 become calls
// into the emulator, the PTX math instructions their libm equivalents (ex2.approx -> exp2f,
// sqrt.rn -> sqrt), and the addrspace(1)/(3) pointers stay as they are (x86 treats them as flat).
// A launch runs every block of the grid in order; within a block, kernels without a barrier run
// their threads one after the other, kernels with one run each thread on an OS thread of its own,
// with a std::barrier as barrier0 (one block at a time, so the shared array is the block's).
//
// What this does not check: PTX itself (ptxas does, see NVPTXLowerTest), the precision of
// ex2.approx (exp2f is exact here), memory coalescing and anything about performance.
#pragma once

#include <string>

namespace lazyjit::testing {

/// Registers the "NVEMU" device factory, scheduled as CUDA is, and "NVEMUR", the same device
/// scheduled as the CPU is (reduces of rows fused: Schedule.h registerRowKernelDevice) (idempotent).
void registerNVPTXEmulator();

struct NVPTXEmulatorStats {
  int kernels = 0;         ///< kernels compiled
  int launches = 0;        ///< kernel launches
  int barrierLaunches = 0; ///< launches of kernels with a group reduce (barrier)
  int vectorLoads = 0;     ///< `load <N x T>` instructions in the compiled kernels
};
NVPTXEmulatorStats nvptxEmulatorStats();

} // namespace lazyjit::testing

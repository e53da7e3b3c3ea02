// The code generator's entry points: a kernel AST in, LLVM IR / assembly / object code / PTX out.
// This header has no LLVM types, so tools and the runtime can use it without LLVM headers.
//
// CPU kernels share one ABI so that one launcher serves all of them:
//
//   void <symbol>(void **bufs, const int64_t *vars, int64_t start, int64_t end)
//     runs the outermost loop for [start, end); bufs[0] is the output, bufs[i] input LOAD idx i,
//     vars are the symbolic variables in vars_from_ast order (then the bounds report and buffer
//     sizes of a bounds-checked kernel, then the scratch block and phase of one with
//     KernelSignature::scratchBytes).
//   int64_t <symbol>_range(const int64_t *vars)
//     the extent of that outermost loop (the launcher splits it across threads).
//
// NVPTX kernels are `ptx_kernel` entry points taking the buffer pointers (16-byte aligned global
// memory, output first) and then the variables as 64-bit integers, launched with the grid and
// block of their KernelSignature (docs/gpu.md).
#pragma once

#include "lazyjit/CodeGen/Kernel.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lazyjit {

struct Config;

/// Where code is generated for.
struct TargetSpec {
  enum class Kind { CPU, NVPTX } kind = Kind::CPU;
  std::string triple;
  std::string cpu;
  std::string features;
  int optLevel = 2;

  /// The host CPU (LLVM's host triple, CPU name and features), compiled at LLVM level `optLevel`.
  static TargetSpec host(int optLevel = 2);
  /// The host's triple for CPU `cpu` ("znver4", "skylake-avx512", ...) with that CPU's features,
  /// not the host's: what kernels compiled for it look like, whatever this machine has (their code
  /// may not run here). UnsupportedError for a name LLVM does not know for the host's target.
  static TargetSpec namedCPU(const std::string &cpu, int optLevel = 2);
  /// NVPTX for a compute capability such as "sm_90".
  static TargetSpec nvptx(const std::string &sm, int optLevel = 2);
  /// The features a CPU target's code may use that the host lacks (empty: its code runs here).
  std::vector<std::string> missingOnHost() const;
  /// Everything that changes the generated code, for cache keys.
  std::string key() const;
};

struct CompileOptions {
  bool noopt = false; ///< no kernel optimizations (the reference's NOOPT)
  /// Apply exactly these optimizations, in order, instead of the target's heuristics (tests and
  /// searches; an opt that does not apply throws UnsupportedError). Ignored with `noopt`.
  std::optional<std::vector<Opt>> applyOpts;
  /// CPU: check every load and store index at run time against its buffer's size (also on with
  /// LAZYJIT_BOUNDS). A kernel that would leave a buffer stops and the runtime reports it.
  bool bounds = false;
  /// The reference's MERGE_VIEW for the kernel's own reshapes (on by default).
  bool mergeView = true;

  /// What a configuration asks for (NOOPT, LAZYJIT_BOUNDS, MERGE_VIEW). CodeGen reads no
  /// configuration: the runtime and the tools build these from theirs, once per compile batch.
  static CompileOptions from(const Config &c);
};

/// Whether kernels compiled with `o` for a CPU check their accesses (`o.bounds`).
bool boundsChecking(const CompileOptions &o);

/// What a compiled kernel looks like from outside; recomputable from the AST at any time.
struct KernelSignature {
  std::string name;   ///< display name, e.g. "r_16_256_4"
  std::string symbol; ///< unique symbol of the entry point
  int numBuffers = 0; ///< output + inputs
  std::vector<NodeRef> vars;
  std::vector<Opt> opts;           ///< optimizations applied
  std::string kernelSummary;       ///< `--emit=kernel` text: full shape, axis kinds, options
  std::vector<int64_t> globalSize; ///< GPU grid (blocks), innermost first (x, y, z); a symbolic
                                   ///< dim at its largest value
  std::vector<SInt> gridDims;      ///< the grid as expressions of `vars` (launches evaluate these)
  std::vector<int64_t> localSize;  ///< GPU block, innermost first
  int64_t sharedBytes = 0;         ///< static shared memory of a group reduce
  /// CPU: the kernel checks its accesses (CompileOptions::bounds). Its caller then appends to the
  /// variable values the address of a BoundsReport and each buffer's size in bytes.
  bool boundsChecked = false;
  /// CPU: bytes of scratch memory the kernel needs (Kernel::wholePackBytes; 0: none). Its caller
  /// appends to the variable values (after the bounds-check values, if any) the address of one
  /// 64-byte aligned block that size and a phase: first 1, calling the entry over [0, packRange)
  /// (the kernel copies its whole packed inputs into the block, split across threads), then 0,
  /// over the usual range (the kernel computes, every call reading the block).
  int64_t scratchBytes = 0;
  int64_t packRange = 0;
};

/// Where a bounds-checked CPU kernel records its first access outside a buffer. The kernel sets
/// `hit` from 0 to 1 atomically, fills the rest and returns; the other threads' chunks run on.
struct BoundsReport {
  int64_t hit = 0;
  int64_t buffer = 0; ///< the buffer's index (0: the output)
  int64_t index = 0;  ///< the element index it accessed
  int64_t size = 0;   ///< the buffer's size in elements of the kernel's dtype for it
};

/// Builds the Kernel for an AST with the target's optimizations (none with `noopt`).
Kernel buildKernel(const KernelOpRef &ast, const TargetSpec &target, const CompileOptions &opts);
KernelSignature describeKernel(const KernelOpRef &ast, const TargetSpec &target,
                               const CompileOptions &opts);

enum class IRStage { Loops, LLVM, LLVMOpt, Asm };
/// The loop nest the lowering emits (one line per loop, unrolled or vector body, accumulation and
/// store), LLVM IR as generated, after LLVM's optimizer, or target assembly (PTX for NVPTX).
std::string emitKernelText(const KernelOpRef &ast, const TargetSpec &target,
                           const CompileOptions &opts, IRStage stage);
/// Optimized object code for a CPU target.
std::vector<uint8_t> compileToObject(const KernelOpRef &ast, const TargetSpec &target,
                                     const CompileOptions &opts, KernelSignature *sig = nullptr);
/// PTX text for an NVPTX target.
std::string compileToPTX(const KernelOpRef &ast, const TargetSpec &target, const CompileOptions &opts,
                         KernelSignature *sig = nullptr);

/// The LLVM version string that generated code depends on.
std::string llvmVersionString();

} // namespace lazyjit

// Runs one kernel AST compiled with chosen optimizations (CompileOptions::applyOpts) on host
// buffers that carry guard zones, so tests can compare any list of OptOps against NOOPT and prove
// that no load or store of the optimized kernel leaves its buffers.
#pragma once

#include "lazyjit/CodeGen/Compiler.h"

#include <memory>
#include <vector>

namespace lazyjit::testing {

/// One run's buffers: bufs[i] is buffer idx i (0 = output), without the guards.
struct KernelRun {
  std::vector<std::vector<float>> bufs;
  bool guardsIntact = true; ///< no byte outside any buffer changed
  std::vector<Opt> applied; ///< what the kernel applied
};

class KernelRunner {
public:
  KernelRunner();
  ~KernelRunner();
  /// Compiles `ast` (float32 buffers, no variables) with `opts` for the host and runs it once
  /// over its whole range on random inputs drawn from `seed` (the same seed gives the same
  /// inputs). The output starts as a NaN sentinel.
  /// `sizes` replaces the buffers' sizes in elements (bounds-mode tests give kernels buffers
  /// smaller than their ASTs need). With CompileOptions::bounds, an access outside a buffer throws
  /// an Error naming buffer and index.
  KernelRun run(const KernelOpRef &ast, const CompileOptions &opts, uint64_t seed,
                const std::vector<int64_t> *sizes = nullptr, const TargetSpec *target = nullptr);
  /// The host's target with AVX-512 turned off: what an AVX2-only CPU compiles (the host can run it).
  static TargetSpec hostWithoutAVX512();
  /// Where run() splits the kernel's range into calls, as the launcher splits it across threads
  /// (each call one thread's chunk, run in order): empty is one call over the whole range.
  std::vector<int64_t> cuts;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace lazyjit::testing

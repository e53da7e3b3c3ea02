// The peers lazyjit-bench measures in the same run as lazyjit, so that every rate is reported as a
// ratio to them: the copy ceiling, and Eigen and OpenBLAS when they were installed at build time.
#pragma once

#include "BenchUtil.h"

#include <cstddef>
#include <string>

namespace lazyjit::bench {

/// The copy ceiling: GB/s of a plain copy loop over `n` floats split across `threads` pool
/// threads, on huge pages. Its timing goes to `out`; with `readRate`, also the GB/s of a plain
/// read loop (a sum) over the same floats, which is the best a reduction can do.
double copyCeiling(size_t n, int threads, Timing *out, double *readRate = nullptr);

#ifdef LAZYJIT_BENCH_EIGEN
/// W1, W2 and W3 (softmax) or W4 (layernorm) as Eigen array expressions, split across the pool as
/// lazyjit's kernels are: one call each, owning its arrays.
Call eigenW1(size_t n);
Call eigenW2(size_t n);
Call eigenRows(size_t rows, size_t cols, bool softmax);
#endif

#ifdef LAZYJIT_BENCH_OPENBLAS
/// OpenBLAS's thread count (the same as lazyjit's).
void blasSetThreads(int threads);
/// The kernels OpenBLAS chose for this CPU (its DYNAMIC_ARCH core name, "Haswell", "SkylakeX", ...).
std::string blasCoreName();
/// Whether that core is one of OpenBLAS's generic pre-AVX kernels on a CPU with AVX2: OpenBLAS 0.3.21
/// does not recognize newer CPUs (an Emerald Rapids Xeon, model 207, runs "Prescott", 5x slower)
/// and its ratios then flatter lazyjit.
bool blasCoreMisdetected();
/// An m x k by k x n SGEMM, and W6's MLP, in OpenBLAS: one call each, owning its matrices.
Call blasGemm(int m, int n, int k);
Call blasMLP(int batch);
#endif

} // namespace lazyjit::bench

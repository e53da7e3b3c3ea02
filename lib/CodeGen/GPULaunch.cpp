// The launch mapping of GPU kernels (see GPULaunch.h).
#include "GPULaunch.h"
#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <numeric>

namespace lazyjit {

namespace {

// One hardware dim per run of axes; a merged run is split back with `%` and `//` by its inner
// sizes, so only a run's first (outermost) axis may be symbolic.
bool splittable(const Kernel &k, const std::vector<GPUDim> &dims) {
  for (const auto &d : dims)
    for (size_t j = 1; j < d.axes.size(); ++j)
      if (!k.fullShape()[d.axes[j]].isInt()) return false;
  return true;
}

GPUDim merged(const Kernel &k, const std::vector<int> &axes) {
  GPUDim d{axes, 1};
  for (int a : axes) d.size = d.size * k.fullShape()[a];
  return d;
}

// Groups axes [from, to) into at most 3 hardware dims, the last group first (it becomes .x): as
// the reference, the first two axes keep a dim each and the rest share the third; if that would
// split by a symbolic size, each symbolic axis starts a group of its own instead.
std::vector<GPUDim> groupAxes(const Kernel &k, int from, int to) {
  std::vector<GPUDim> vars;
  for (int a = from; a < to; ++a) {
    if (vars.size() < 3) vars.push_back(merged(k, {a}));
    else vars.back() = merged(k, [&] { auto ax = vars.back().axes; ax.push_back(a); return ax; }());
  }
  if (!splittable(k, vars)) {
    vars.clear();
    for (int a = from; a < to; ++a) {
      if (vars.empty() || !k.fullShape()[a].isInt()) vars.push_back(merged(k, {a}));
      else vars.back() = merged(k, [&] { auto ax = vars.back().axes; ax.push_back(a); return ax; }());
    }
    LAZYJIT_USER_CHECK(vars.size() <= 3, UnsupportedError,
                       "codegen: kernel {} has more symbolic thread axes than a CUDA launch has dims", k.name());
  }
  return std::vector<GPUDim>(vars.rbegin(), vars.rend());
}

int64_t limitAt(const std::vector<int64_t> &limits, size_t i, int64_t dflt) {
  return i < limits.size() ? limits[i] : dflt;
}

bool fits(const std::vector<GPUDim> &dims, const std::vector<int64_t> &limits) {
  for (size_t i = 0; i < dims.size(); ++i)
    if (maxBound(dims[i].size) > limitAt(limits, i, 65535)) return false;
  return true;
}

std::string describe(const std::vector<GPUDim> &dims) {
  std::string s;
  for (const auto &d : dims) s += (s.empty() ? "" : ", ") + d.size.render();
  return "[" + s + "]";
}

} // namespace

int64_t maxBound(const SInt &s) {
  SInt m = s;
  while (m.isNode()) m = m.node()->max;
  return m.asInt();
}

int64_t sharedElementBytes(DType dt) {
  if (dt.isBool()) return 1;
  if (dt.isHalfWidth()) return 4;
  return dt.itemsize();
}

int64_t rowElements(const Kernel &k) {
  int64_t e = 1;
  for (size_t a = static_cast<size_t>(k.rowStart); a < k.shapeLen(); ++a) {
    LAZYJIT_INTERNAL_CHECK(k.fullShape()[a].isInt(), "codegen: row kernel {} has a symbolic row axis", k.name());
    e *= k.fullShape()[a].asInt();
  }
  return e;
}

GPULaunch gpuLaunch(const Kernel &k) {
  GPULaunch l;
  int gd = k.globalDims(), fr = k.firstReduce(), ng = static_cast<int>(k.groupForReduce.size());
  std::vector<int64_t> gmax = k.opts.globalMax, lmax = k.opts.localMax;
  if (gmax.empty()) gmax = {2147483647, 65535, 65535};
  if (lmax.empty()) lmax = {1024, 1024, 64};
  // a row kernel: the axes before its rows (and before its reduce axes, if any) are the grid
  if (k.rowKernel) gd = k.reduceop ? fr : k.rowStart;

  l.grid = groupAxes(k, 0, gd);
  if (!fits(l.grid, gmax) && !l.grid.empty()) {
    // y or z is too large: put every global axis on x, which allows 2^31-1 blocks
    std::vector<int> axes(static_cast<size_t>(gd));
    std::iota(axes.begin(), axes.end(), 0);
    std::vector<GPUDim> all{merged(k, axes)};
    if (splittable(k, all)) l.grid = all;
  }
  LAZYJIT_USER_CHECK(fits(l.grid, gmax), UnsupportedError,
                     "codegen: kernel {} needs a grid of {} blocks, more than CUDA allows", k.name(),
                     describe(l.grid));

  if (k.rowKernel) {
    l.threads = std::max<int64_t>(1, k.rowThreads);
    LAZYJIT_USER_CHECK(l.threads <= std::min<int64_t>(lmax[0], kMaxThreadsPerBlock), UnsupportedError,
                       "codegen: row kernel {} asks for {} threads per block; CUDA allows at most {}", k.name(),
                       l.threads, std::min<int64_t>(lmax[0], kMaxThreadsPerBlock));
    if (l.threads > 1) {
      l.block.push_back(GPUDim{{}, l.threads});
      // the shared array exists when something is reduced (a row kernel may only broadcast a buffer)
      auto ops = k.ast->uniqueOps();
      if (std::any_of(ops.begin(), ops.end(), [](const KernelOp *x) { return isReduceOp(x->op); }))
        l.sharedBytes = l.threads * kRowSharedSlotBytes;
      // Kernel::rowMoments: the threads' means, M2s and counts (LowerNVPTXRow.cpp blockMoments)
      if (!k.rowMoments.empty())
        l.sharedBytes += 3 * l.threads * kRowSharedSlotBytes;
    }
    return l;
  }
  l.block = groupAxes(k, gd, fr + ng);
  for (const auto &d : l.block) {
    LAZYJIT_USER_CHECK(d.size.isInt(), UnsupportedError, "codegen: kernel {} has a symbolic block size {}",
                       k.name(), d.size.render());
    l.threads *= d.size.asInt();
  }
  LAZYJIT_USER_CHECK(fits(l.block, lmax) && l.threads <= kMaxThreadsPerBlock, UnsupportedError,
                     "codegen: kernel {} needs a block of {} threads ({} in all); CUDA allows at most "
                     "[{}, {}, {}] and {} in all",
                     k.name(), describe(l.block), l.threads, lmax[0], limitAt(lmax, 1, 1024),
                     limitAt(lmax, 2, 64), kMaxThreadsPerBlock);

  if (ng > 0 && k.reduceop) {
    // one accumulator per thread and per output-upcast element
    int64_t outs = 1;
    for (size_t a = k.shapeLen() - k.upcasted; a < k.shapeLen(); ++a)
      if (pyEq(k.fullShape()[a], k.outputShape()[a])) outs *= k.fullShape()[a].asInt();
    l.sharedBytes = l.threads * outs * sharedElementBytes(*k.reduceop->kernelDType());
    LAZYJIT_USER_CHECK(l.sharedBytes <= kMaxStaticSharedBytes, UnsupportedError,
                       "codegen: kernel {} needs {} bytes of shared memory for its group reduce, more "
                       "than the {} bytes of static shared memory CUDA allows",
                       k.name(), l.sharedBytes, kMaxStaticSharedBytes);
  }
  return l;
}

} // namespace lazyjit

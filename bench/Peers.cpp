// The peers lazyjit-bench measures in the same run as lazyjit: the copy ceiling (a plain
// multithreaded copy loop, and a plain read loop), Eigen array expressions and OpenBLAS GEMMs.
#include "Peers.h"
#include "lazyjit/Runtime/ThreadPool.h"

#include <sys/mman.h>

#ifdef LAZYJIT_BENCH_EIGEN
#include <Eigen/Core>
#endif
#ifdef LAZYJIT_BENCH_OPENBLAS
#include <cblas.h>
extern "C" void openblas_set_num_threads(int);
extern "C" char *openblas_get_corename(void);
#endif

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

namespace lazyjit::bench {

namespace {

// The copy ceiling: a plain copy loop over 2^24 floats, split across the pool. A loop, not
// memcpy: glibc's memcpy picks a different strategy (rep movsb or streaming stores) by size and
// CPU, which is not what a kernel's loads and stores do. GCC would turn the loop into memcpy.
__attribute__((noinline, optimize("no-tree-loop-distribute-patterns"))) void copyLoop(float *__restrict dst,
                                                                                     const float *__restrict src,
                                                                                     int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) dst[i] = src[i];
}

// A plain read loop (a float sum with 32 partial sums), for context on W2: a reduction can at
// best read at this rate.
__attribute__((noinline)) float sumLoop(const float *__restrict src, int64_t b, int64_t e) {
  float acc[32] = {};
  int64_t i = b;
  for (; i + 32 <= e; i += 32)
    for (int j = 0; j < 32; ++j) acc[j] += src[i + j];
  for (; i < e; ++i) acc[0] += src[i];
  float t = 0;
  for (float a : acc) t += a;
  return t;
}

} // namespace

double copyCeiling(size_t n, int threads, Timing *out, double *readRate) {
  // on huge pages, as lazyjit's own large buffers are: the ceiling must not pay TLB misses ours don't
  auto hugeFloats = [](size_t count) {
    size_t bytes = (count * sizeof(float) + (2u << 20) - 1) / (2u << 20) * (2u << 20);
    auto *p = static_cast<float *>(std::aligned_alloc(2u << 20, bytes));
    if (!p) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);
    return std::unique_ptr<float, void (*)(void *)>(p, std::free);
  };
  auto src = hugeFloats(n), dst = hugeFloats(n);
  std::fill(src.get(), src.get() + n, 1.0f);
  std::fill(dst.get(), dst.get() + n, 0.0f);
  ThreadPool &pool = ThreadPool::global();
  Timing t = timeIt([&] {
    pool.parallelFor(static_cast<int64_t>(n), static_cast<size_t>(threads),
                     [&](int64_t b, int64_t e) { copyLoop(dst.get(), src.get(), b, e); });
  });
  if (out) *out = t;
  if (readRate) {
    std::vector<float> partial(static_cast<size_t>(threads));
    Timing r = timeIt([&] {
      pool.parallelFor(static_cast<int64_t>(threads), static_cast<size_t>(threads), [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c)
          partial[static_cast<size_t>(c)] = sumLoop(src.get(), static_cast<int64_t>(n) * c / threads,
                                                     static_cast<int64_t>(n) * (c + 1) / threads);
      });
    });
    *readRate = 4.0 * static_cast<double>(n) / r.median / 1e9;
  }
  return 8.0 * static_cast<double>(n) / t.median / 1e9;
}

#ifdef LAZYJIT_BENCH_EIGEN
using ArrayF = Eigen::Array<float, Eigen::Dynamic, 1>;
volatile float eigenSink = 0;
using RowsF = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Eigen array expressions, rows (or chunks) split across the pool like our kernels.
Call eigenW1(size_t n) {
  struct Arrays {
    ArrayF a, b, c, o;
  };
  auto m = std::make_shared<Arrays>(Arrays{ArrayF::Random(n), ArrayF::Random(n), ArrayF::Random(n), ArrayF(n)});
  return [m, n] {
    ThreadPool::global().parallelFor(static_cast<int64_t>(n), ThreadPool::global().size(), [&](int64_t s, int64_t e) {
      auto seg = [&](ArrayF &x) { return x.segment(s, e - s); };
      seg(m->o) = (seg(m->a) * seg(m->b) + seg(m->c)).max(0.0f) * 0.5f;
    });
  };
}
Call eigenW2(size_t n) {
  auto a = std::make_shared<ArrayF>(ArrayF::Random(n));
  return [a, n] {
    std::vector<float> partial(ThreadPool::global().size(), 0.0f);
    size_t chunks = ThreadPool::global().size();
    ThreadPool::global().parallelFor(static_cast<int64_t>(chunks), chunks, [&](int64_t s, int64_t e) {
      for (int64_t c = s; c < e; ++c) {
        size_t lo = n * c / chunks, hi = n * (c + 1) / chunks;
        partial[c] = a->segment(lo, hi - lo).sum();
      }
    });
    float total = 0;
    for (float p : partial) total += p;
    eigenSink = total; // the sum must not be optimized away
  };
}
Call eigenRows(size_t rows, size_t cols, bool softmax) {
  struct Arrays {
    RowsF x, o;
  };
  auto m = std::make_shared<Arrays>(Arrays{RowsF::Random(rows, cols), RowsF(rows, cols)});
  return [m, rows, softmax] {
    RowsF &x = m->x, &o = m->o;
    ThreadPool::global().parallelFor(static_cast<int64_t>(rows), ThreadPool::global().size(), [&](int64_t s, int64_t e) {
      for (int64_t r = s; r < e; ++r) {
        auto row = x.row(r);
        if (softmax) {
          float m = row.maxCoeff();
          o.row(r) = (row - m).exp();
          o.row(r) /= o.row(r).sum();
        } else {
          float mean = row.mean();
          float var = (row - mean).square().mean();
          o.row(r) = (row - mean) / std::sqrt(var + 1e-5f);
        }
      }
    });
  };
}
#endif

#ifdef LAZYJIT_BENCH_OPENBLAS
void blasSetThreads(int threads) { openblas_set_num_threads(threads); }

std::string blasCoreName() {
  const char *name = openblas_get_corename();
  return name ? name : "";
}

bool blasCoreMisdetected() {
  std::string core = blasCoreName();
  for (char &c : core) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // the x86-64 cores of OpenBLAS's DYNAMIC_ARCH list without AVX kernels
  static const char *generic[] = {"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai",
                                  "coppermine", "northwood", "banias", "opteron", "barcelona", "bobcat", "nano"};
  bool old = std::any_of(std::begin(generic), std::end(generic), [&](const char *g) { return core == g; });
  return old && __builtin_cpu_supports("avx2");
}

Call blasGemm(int m, int n, int k) {
  struct Matrices {
    std::vector<float> a, b, c;
  };
  auto mt = std::make_shared<Matrices>(Matrices{std::vector<float>(static_cast<size_t>(m) * k, 0.5f),
                                                std::vector<float>(static_cast<size_t>(k) * n, 0.25f),
                                                std::vector<float>(static_cast<size_t>(m) * n)});
  return [mt, m, n, k] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, mt->a.data(), k, mt->b.data(), n, 0.0f,
                mt->c.data(), n);
  };
}
Call blasMLP(int batch) {
  struct Matrices {
    std::vector<float> x, w1, w2, w3, h1, h2, o;
  };
  auto b = static_cast<size_t>(batch);
  auto mt = std::make_shared<Matrices>(Matrices{std::vector<float>(b * 784, 0.1f), std::vector<float>(784 * 1024, 0.01f),
                                                std::vector<float>(1024 * 1024, 0.01f), std::vector<float>(1024 * 10, 0.01f),
                                                std::vector<float>(b * 1024), std::vector<float>(b * 1024),
                                                std::vector<float>(b * 10)});
  return [mt, batch] {
    auto relu = [](std::vector<float> &v) {
      for (float &f : v) f = f > 0 ? f : 0;
    };
    auto &[x, w1, w2, w3, h1, h2, o] = *mt;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, 1024, 784, 1, x.data(), 784, w1.data(), 1024, 0,
                h1.data(), 1024);
    relu(h1);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, 1024, 1024, 1, h1.data(), 1024, w2.data(), 1024, 0,
                h2.data(), 1024);
    relu(h2);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, 10, 1024, 1, h2.data(), 1024, w3.data(), 10, 0,
                o.data(), 10);
  };
}
#endif

} // namespace lazyjit::bench

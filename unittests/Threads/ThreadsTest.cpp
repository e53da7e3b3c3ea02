// Many threads in one process: the same new kernel requested by several threads at once, different
// kernels at once, shared realized weights, a shared lazy tensor realized from several threads,
// training separate models, Jit replays, safetensors loads, one Jit called from two threads, and
// all of these mixed. Every value is checked against a host computation. Worker threads never use
// doctest's assertions (they are not thread-safe): they collect failures, which the main thread
// checks once they have joined. scripts/test.sh also runs this test under ThreadSanitizer (the
// tsan preset, `ctest -L threads`).
#include "lazyjit/lazyjit.h"
#include "lazyjit/Runtime/ThreadPool.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <latch>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace lazyjit;

#if defined(__SANITIZE_THREAD__)
#define LAZYJIT_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LAZYJIT_TEST_TSAN 1
#endif
#endif

namespace {

// Iterations per thread: a few hundred per case in all, fewer under the sanitizers (ThreadSanitizer
// slows lazyjit's own code several times; LLVM, not instrumented, compiles at its usual speed).
#if defined(LAZYJIT_TEST_TSAN)
constexpr int kIters = 12;
#elif defined(__SANITIZE_ADDRESS__)
constexpr int kIters = 24;
#else
constexpr int kIters = 60;
#endif
constexpr int kMixedIters = kIters / 2;
constexpr int kTrainReps = std::max(1, kIters / 12);

using Ints = std::vector<int64_t>;

/// What went wrong on the worker threads, read on the main thread after they joined.
struct Failures {
  std::atomic<int> count{0};
  std::mutex mu;
  std::vector<std::string> messages; // the first few

  void add(std::string msg) {
    count.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu);
    if (messages.size() < 10) messages.push_back(std::move(msg));
  }
  /// On the main thread only.
  void check() {
    std::string all;
    for (const auto &m : messages) all += m + "\n";
    CHECK_MESSAGE(count.load() == 0, count.load() << " failure(s) on the worker threads:\n" << all);
  }
};

/// Runs fn, recording whatever it throws.
template <typename Fn> void guarded(Failures &f, const std::string &what, Fn &&fn) {
  try {
    fn();
  } catch (const Error &e) {
    f.add(what + ": lazyjit::Error: " + e.what());
  } catch (const std::exception &e) {
    f.add(what + ": std::exception: " + e.what());
  } catch (...) {
    f.add(what + ": an unknown exception");
  }
}

/// Runs body(t) for t in [0, n) on n threads released together (their first calls collide) and
/// joins them. body must not throw (every body here runs its work through guarded).
template <typename Body> void runThreads(int n, Body body) {
  std::latch start(n);
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t)
    threads.emplace_back([&start, &body, t] {
      start.arrive_and_wait();
      body(t);
    });
  for (auto &th : threads) th.join();
}

/// A host matrix in double: inputs and expected values.
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  double at(int64_t i, int64_t j) const { return v[static_cast<size_t>(i * cols + j)]; }
};

/// Small integers in [-mod/2, mod/2] that change with `seed`. Every product and sum the tests form
/// from them stays an integer below 2^24, so a float kernel gets it exactly, in any order.
Mat pattern(int64_t rows, int64_t cols, int64_t seed, int64_t mod = 11) {
  Mat m{rows, cols, {}};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m.v.push_back(static_cast<double>((i * 7 + j * 3 + seed * 5) % mod - mod / 2));
  return m;
}
Mat scaled(Mat m, double s) { // s a power of two: still exact in float
  for (auto &x : m.v) x *= s;
  return m;
}
Mat matmul(const Mat &a, const Mat &b) {
  Mat c{a.rows, b.cols, std::vector<double>(static_cast<size_t>(a.rows * b.cols), 0.0)};
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t k = 0; k < a.cols; ++k)
      for (int64_t j = 0; j < b.cols; ++j) c.v[static_cast<size_t>(i * b.cols + j)] += a.at(i, k) * b.at(k, j);
  return c;
}
Mat transpose(const Mat &a) {
  Mat t{a.cols, a.rows, {}};
  for (int64_t j = 0; j < a.cols; ++j)
    for (int64_t i = 0; i < a.rows; ++i) t.v.push_back(a.at(i, j));
  return t;
}
/// f(x) summed over each row, and over everything.
template <typename F> std::vector<double> rowSums(const Mat &m, F f) {
  std::vector<double> s(static_cast<size_t>(m.rows), 0.0);
  for (int64_t i = 0; i < m.rows; ++i)
    for (int64_t j = 0; j < m.cols; ++j) s[static_cast<size_t>(i)] += f(m.at(i, j));
  return s;
}
template <typename F> double sumAll(const Mat &m, F f) {
  double s = 0;
  for (double x : m.v) s += f(x);
  return s;
}
std::vector<float> floats(const Mat &m) { return std::vector<float>(m.v.begin(), m.v.end()); }
Tensor tensorOf(const Mat &m) { return Tensor::fromVector(floats(m), Shape{m.rows, m.cols}); }
/// The values as a 1-d tensor.
Tensor vectorOf(const Mat &m) { return Tensor::fromVector(floats(m), Shape{static_cast<int64_t>(m.v.size())}); }

/// Records the first value of `got` farther than tol * max(1, |want|) from `want` (NaN never passes).
void expectValues(Failures &f, const std::string &what, const std::vector<float> &got,
                  const std::vector<double> &want, double tol = 0) {
  if (got.size() != want.size()) {
    f.add(fmt::format("{}: {} values, want {}", what, got.size(), want.size()));
    return;
  }
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(static_cast<double>(got[i]) - want[i]) <= tol * std::max(1.0, std::abs(want[i])))) {
      f.add(fmt::format("{}: value {} is {}, want {}", what, i, got[i], want[i]));
      return;
    }
}

// ---- (a) one new kernel, requested by every thread at once ----------------------------------------

constexpr int64_t kSameN = 61; // a shape no other case uses: the kernel is new to the process

/// sum(relu(A B + c)) for c = 0, 1, 2 (at most 3721 * 1527 < 2^24: exact in float).
std::vector<double> sameKernelWant() {
  Mat ab = matmul(pattern(kSameN, kSameN, 1), pattern(kSameN, kSameN, 2));
  std::vector<double> want;
  for (int c = 0; c < 3; ++c) want.push_back(sumAll(ab, [c](double x) { return std::max(0.0, x + c); }));
  return want;
}

void sameKernelStep(int it, const std::vector<double> &want, Failures &f, const std::string &what) {
  guarded(f, what, [&] {
    Tensor a = tensorOf(pattern(kSameN, kSameN, 1)), b = tensorOf(pattern(kSameN, kSameN, 2));
    float got = (a.matmul(b) + it % 3).relu().sum().item<float>();
    expectValues(f, what, {got}, {want[static_cast<size_t>(it % 3)]});
  });
}

// ---- (b) different kernels on each thread -----------------------------------------------------

/// One of four ops (by thread) on one of three shapes (by iteration): twelve kernels per 4 threads.
void differentKernelStep(int t, int it, Failures &f, const std::string &what) {
  guarded(f, what, [&] {
    int v = it % 3;
    Mat x = pattern(5 + 3 * t + v, 7 + 2 * v, t + it);
    Tensor xt = tensorOf(x);
    std::vector<float> got;
    std::vector<double> want;
    switch (t % 4) {
    case 0: // 2x + 1 summed over each row
      got = (xt * 2 + 1).sum(Ints{1}).toVector<float>();
      want = rowSums(x, [](double e) { return 2 * e + 1; });
      break;
    case 1: // the maximum of each column
      got = xt.max(Ints{0}).toVector<float>();
      for (int64_t j = 0; j < x.cols; ++j) {
        double m = x.at(0, j);
        for (int64_t i = 1; i < x.rows; ++i) m = std::max(m, x.at(i, j));
        want.push_back(m);
      }
      break;
    case 2: // X X^T
      got = xt.matmul(xt.T()).toVector<float>();
      want = matmul(x, transpose(x)).v;
      break;
    default: // relu(x - 2) summed
      got = {(xt - 2).relu().sum().item<float>()};
      want = {sumAll(x, [](double e) { return std::max(0.0, e - 2); })};
      break;
    }
    expectValues(f, what, got, want);
  });
}

// ---- (c) one realized weight read by every thread ---------------------------------------------

struct SharedWeight {
  Mat wh = pattern(32, 32, 3);
  Tensor w = tensorOf(wh).realize();

  void step(int t, int it, Failures &f, const std::string &what) const {
    guarded(f, what, [&] {
      Mat x = pattern(8, 32, 100 * t + it);
      expectValues(f, what, tensorOf(x).matmul(w).toVector<float>(), matmul(x, wh).v);
    });
  }
};

// ---- (d) one lazy tensor realized from several threads at once --------------------------------

/// Reads `s`, a lazy (2w + 1).sum(1) shared by the threads, through a handle of this thread's own
/// (half the threads realize it first), and builds more graph on top of it while others realize it.
void sharedLazyStep(int t, const Tensor &s, const std::vector<double> &want, Failures &f, const std::string &what) {
  guarded(f, what, [&] {
    Tensor mine = s; // the same tensor: copies of a handle share it
    if (t % 2) mine.realize();
    expectValues(f, what, mine.toVector<float>(), want);
    double total = static_cast<double>(want.size());
    for (double x : want) total += x;
    expectValues(f, what + " (+1, summed)", {(mine + 1).sum().item<float>()}, {total});
  });
}

/// The rows of 2w + 1, summed.
std::vector<double> lazyWant(const Mat &wh) { return rowSums(wh, [](double x) { return 2 * x + 1; }); }

// ---- (e) training separate models -------------------------------------------------------------

struct Trained {
  std::vector<float> weight, bias;
};

/// Five SGD steps (momentum 0.9) on a Linear(6, 3) whose weights and data depend only on `seed`
/// (the layer's random initial weights are replaced before anything reads them).
Trained trainLinear(int seed) {
  Tensor::TrainingGuard training(true);
  nn::Linear model(6, 3);
  model.weight = tensorOf(scaled(pattern(3, 6, seed, 7), 0.125));
  model.bias = vectorOf(scaled(pattern(1, 3, seed + 1, 7), 0.125));
  Tensor x = tensorOf(scaled(pattern(8, 6, seed + 2), 0.25));
  Tensor y = tensorOf(scaled(pattern(8, 3, seed + 3), 0.25));
  nn::optim::SGD opt(nn::getParameters(model), 0.05, 0.9);
  for (int step = 0; step < 5; ++step) {
    opt.zeroGrad();
    model(x).sub(y).square().mean().backward();
    opt.step();
  }
  return {model.weight.toVector<float>(), model.bias->toVector<float>()};
}

void trainingStep(int seed, const Trained &want, Failures &f, const std::string &what) {
  guarded(f, what, [&] {
    Trained got = trainLinear(seed);
    expectValues(f, what + " weight", got.weight, std::vector<double>(want.weight.begin(), want.weight.end()), 1e-6);
    expectValues(f, what + " bias", got.bias, std::vector<double>(want.bias.begin(), want.bias.end()), 1e-6);
  });
}

// ---- (f) a Jit per thread ---------------------------------------------------------------------

/// A thread's own Jit: relu(x W + 1) summed over each row, W fixed per thread.
struct OwnJit {
  Mat wh;
  Tensor w;
  Jit jit;
  explicit OwnJit(int t)
      : wh(pattern(16, 8, 40 + t)), w(tensorOf(wh).realize()),
        jit([w = w](const std::vector<Tensor> &in) {
          return std::vector<Tensor>{(in[0].matmul(w) + 1).relu().sum(Ints{1})};
        }) {}

  void step(int t, int it, Failures &f, const std::string &what) {
    guarded(f, what, [&] {
      Mat x = pattern(6, 16, 1000 * t + it); // new input values on every call
      std::vector<Tensor> out = jit({tensorOf(x).realize()});
      std::vector<double> want = rowSums(matmul(x, wh), [](double y) { return std::max(0.0, y + 1); });
      expectValues(f, what, out.at(0).toVector<float>(), want);
    });
  }
};

// ---- (g) one safetensors file, loaded by every thread -----------------------------------------

struct SafeFile {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("lazyjit-threads-" + std::to_string(getpid()));
  std::string path = (dir / "weights.safetensors").string();
  Mat wh = pattern(16, 12, 7);
  std::vector<int32_t> ids;

  SafeFile() {
    for (int32_t i = 0; i < 37; ++i) ids.push_back(i * i - 50);
    std::filesystem::create_directories(dir);
    nn::StateDict d;
    d.insert("layer.weight", tensorOf(wh));
    d.insert("ids", Tensor::fromVector(ids, Shape{static_cast<int64_t>(ids.size())}));
    safeSave(d, path);
  }
  ~SafeFile() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }

  void step(Failures &f, const std::string &what) const {
    guarded(f, what, [&] {
      nn::StateDict d = safeLoad(path);
      expectValues(f, what + " layer.weight", d.at("layer.weight").toVector<float>(), wh.v);
      if (d.at("ids").toVector<int32_t>() != ids) f.add(what + ": ids differ from the saved ones");
      double total = sumAll(wh, [](double x) { return 2 * x; });
      expectValues(f, what + " (2w, summed)", {(d.at("layer.weight") * 2).sum().item<float>()}, {total});
    });
  }
};

// ---- (h) one Jit called from several threads --------------------------------------------------

/// relu(X W) W summed over each row, with 128x128 operands so that a replay lasts long enough for
/// two callers to overlap. A second caller while one is inside gets an Error saying the Jit is
/// called "concurrently". Every caller passes the same values (in tensors of its own): a Jit's
/// outputs are the same buffers on every call, so one caller may read them while another's replay
/// rewrites them, and with equal values either is right.
struct SharedJit {
  static constexpr int64_t n = 128;
  Mat xh = pattern(n, n, 5), wh = pattern(n, n, 6, 3); // w in {-1, 0, 1}: the sums stay below 2^24
  Tensor w = tensorOf(wh).realize();
  std::vector<double> want;
  Jit jit;
  std::atomic<int> ok{0}, refused{0};

  SharedJit()
      : jit([w = w](const std::vector<Tensor> &in) {
          return std::vector<Tensor>{in[0].matmul(w).relu().matmul(w).sum(Ints{1})};
        }) {
    Mat h = matmul(xh, wh);
    for (auto &x : h.v) x = std::max(0.0, x);
    want = rowSums(matmul(h, wh), [](double y) { return y; });
  }

  /// Calls it on this (the main) thread until it replays.
  void warmUp() {
    for (int i = 0; i < 3; ++i) {
      std::vector<float> got = jit({tensorOf(xh).realize()}).at(0).toVector<float>();
      CHECK(std::vector<double>(got.begin(), got.end()) == want);
    }
    CHECK(jit.captured());
  }

  void step(Failures &f, const std::string &what) {
    try {
      std::vector<Tensor> out = jit({tensorOf(xh).realize()});
      expectValues(f, what, out.at(0).toVector<float>(), want);
      ok.fetch_add(1);
    } catch (const Error &e) {
      if (std::string(e.what()).find("concurrently") != std::string::npos)
        refused.fetch_add(1);
      else
        f.add(what + ": lazyjit::Error: " + e.what());
    } catch (const std::exception &e) {
      f.add(what + ": std::exception: " + e.what());
    }
  }
};

} // namespace

TEST_CASE("Threads: four threads request the same new kernel at the same time") {
  const std::vector<double> want = sameKernelWant();
  Failures f;
  std::barrier<> sync(4);
  runThreads(4, [&](int t) {
    for (int it = 0; it < kIters; ++it) {
      sync.arrive_and_wait(); // every iteration starts together: one graph, schedule and kernel at once
      sameKernelStep(it, want, f, fmt::format("thread {} iteration {}", t, it));
    }
  });
  f.check();
}

TEST_CASE("Threads: different kernels on each thread at the same time") {
  Failures f;
  runThreads(4, [&](int t) {
    for (int it = 0; it < kIters; ++it) differentKernelStep(t, it, f, fmt::format("thread {} iteration {}", t, it));
  });
  f.check();
}

TEST_CASE("Threads: one realized weight read by every thread") {
  SharedWeight shared;
  Failures f;
  runThreads(4, [&](int t) {
    for (int it = 0; it < kIters; ++it) shared.step(t, it, f, fmt::format("thread {} iteration {}", t, it));
  });
  f.check();
  CHECK(shared.w.toVector<float>() == floats(shared.wh)); // nobody wrote it
}

TEST_CASE("Threads: a shared lazy tensor realized from several threads at once") {
  const int rounds = std::max(2, kIters / 4);
  const int64_t kernels0 = globalCounters().kernelCount;
  Failures f;
  for (int r = 0; r < rounds; ++r) {
    Mat wh = pattern(24, 20, r);
    Tensor w = tensorOf(wh).realize();
    Tensor s = (w * 2 + 1).sum(Ints{1}); // lazy until the threads read it
    const std::vector<double> want = lazyWant(wh);
    runThreads(4, [&](int t) { sharedLazyStep(t, s, want, f, fmt::format("round {} thread {}", r, t)); });
    CHECK(s.toVector<float>() == std::vector<float>(want.begin(), want.end()));
  }
  f.check();
  // kernels ran (how many depends on which thread realized what first: not checked)
  const int64_t kernels1 = globalCounters().kernelCount;
  CHECK(kernels1 > kernels0);
}

TEST_CASE("Threads: training separate models on separate threads gives the single-threaded weights") {
  std::vector<Trained> want;
  for (int t = 0; t < 4; ++t) want.push_back(trainLinear(t)); // on this thread alone, first
  Failures f;
  runThreads(4, [&](int t) {
    for (int rep = 0; rep < kTrainReps; ++rep)
      trainingStep(t, want[static_cast<size_t>(t)], f, fmt::format("thread {} run {}", t, rep));
  });
  f.check();
}

TEST_CASE("Threads: a Jit per thread replays with new inputs on every call") {
  Failures f;
  runThreads(4, [&](int t) {
    std::optional<OwnJit> own;
    guarded(f, fmt::format("thread {}: making its Jit", t), [&] { own.emplace(t); });
    if (!own) return;
    for (int it = 0; it < kIters; ++it) own->step(t, it, f, fmt::format("thread {} call {}", t, it));
    if (!own->jit.captured()) f.add(fmt::format("thread {}: its Jit never captured", t));
  });
  f.check();
}

TEST_CASE("Threads: every thread loads one safetensors file") {
  SafeFile file;
  Failures f;
  runThreads(4, [&](int t) {
    for (int it = 0; it < kIters; ++it) file.step(f, fmt::format("thread {} load {}", t, it));
  });
  f.check();
}

TEST_CASE("Threads: one Jit called from two threads at once gives right values or refuses") {
  SharedJit shared;
  shared.warmUp();
  Failures f;
  runThreads(2, [&](int t) {
    for (int it = 0; it < kIters; ++it) shared.step(f, fmt::format("thread {} call {}", t, it));
  });
  f.check();
  CHECK(shared.ok.load() > 0);
  CHECK(shared.ok.load() + shared.refused.load() == 2 * kIters);
  shared.warmUp(); // still replays the right values afterwards
}

TEST_CASE("Threads: eight threads mixing every kind of work") {
  // thread t does kind t % 4, two threads per kind; all of them first read one shared lazy tensor
  const std::vector<double> same = sameKernelWant();
  SharedWeight shared;
  std::vector<Trained> trained(8);
  for (int t = 2; t < 8; t += 4) trained[static_cast<size_t>(t)] = trainLinear(t);
  SafeFile file;
  SharedJit sharedJit;
  sharedJit.warmUp();
  Mat lazyh = pattern(24, 20, 99);
  Tensor lw = tensorOf(lazyh).realize();
  Tensor s = (lw * 2 + 1).sum(Ints{1});
  const std::vector<double> lazyExpected = lazyWant(lazyh);
  Failures f;
  runThreads(8, [&](int t) {
    sharedLazyStep(t, s, lazyExpected, f, fmt::format("thread {}: the shared lazy tensor", t));
    std::optional<OwnJit> own;
    if (t % 4 == 3) guarded(f, fmt::format("thread {}: making its Jit", t), [&] { own.emplace(t); });
    for (int it = 0; it < kMixedIters; ++it) {
      std::string what = fmt::format("thread {} iteration {}", t, it);
      switch (t % 4) {
      case 0: sameKernelStep(it, same, f, what); break;
      case 1:
        if (it % 2) shared.step(t, it, f, what);
        else differentKernelStep(t, it, f, what);
        break;
      case 2:
        if (it % 4 == 0) trainingStep(t, trained[static_cast<size_t>(t)], f, what);
        else file.step(f, what);
        break;
      default:
        if (it % 2) sharedJit.step(f, what);
        else if (own) own->step(t, it, f, what);
        break;
      }
    }
  });
  f.check();
  CHECK(sharedJit.ok.load() > 0);
}

TEST_CASE("Threads: kernels launched from 4 threads at once never run on more threads than the pool's cores") {
  // large element-wise kernels, each split across the pool, launched together from more request
  // threads than there are cores: the pool queues them for its cores (ThreadPool.h)
  Tensor a = Tensor::fromVector(std::vector<float>(1 << 18, 1.5f), {1 << 18}).realize();
  Failures failures;
  runThreads(4, [&](int t) {
    guarded(failures, "thread " + std::to_string(t), [&] {
      for (int i = 0; i < kIters / 4 + 1; ++i) {
        float got = (a * static_cast<float>(t + 1) + static_cast<float>(i)).sum().item<float>();
        float want = static_cast<float>((1 << 18) * (1.5 * (t + 1) + i));
        if (got != want) failures.add(fmt::format("thread {} iteration {}: {} != {}", t, i, got, want));
      }
    });
  });
  failures.check();
  ThreadPool &pool = ThreadPool::global();
  CHECK(pool.peakBusy() >= 1);
  CHECK(pool.peakBusy() <= pool.size());
}

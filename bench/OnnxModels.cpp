// W12: ONNX models through onnx::Model under Jit, against the same module in libtorch (TorchScript)
// and in ONNX Runtime (bench/ort_peer.js in a node process), timed in turns (OnnxModels.h).
#include "OnnxModels.h"
#include "lazyjit/ONNX/Model.h"
#include "lazyjit/Runtime/ThreadPool.h"
#include "lazyjit/lazyjit.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <spawn.h>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace fs = std::filesystem;

namespace lazyjit::bench {

namespace {

// The models gen_models.py exports, in its order (the -op13 copies of the transformers are the
// same modules and are not timed again).
const std::vector<std::string> kModels = {
    "resnet18",      "resnet50",    "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
    "squeezenet1_1", "densenet121", "vit_b_16",     "bert_like",          "gpt2_like"};

// ---- the ONNX Runtime process --------------------------------------------------------------

/// One `node ort_peer.js` process: its session is created once, then each turn asks it for runs
/// over its stdin and reads their times (measured inside node) from its stdout.
class OrtProcess {
public:
  /// Starts the process and waits for its first run; on failure `error()` says why.
  OrtProcess(const OnnxBenchOptions &o, const std::string &model, const std::string &input,
             int threads) {
    int toChild[2], fromChild[2];
    if (pipe(toChild) != 0 || pipe(fromChild) != 0) {
      error_ = std::string("pipe: ") + std::strerror(errno);
      return;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, toChild[0], 0);
    posix_spawn_file_actions_adddup2(&fa, fromChild[1], 1);
    for (int fd : {toChild[0], toChild[1], fromChild[0], fromChild[1]})
      posix_spawn_file_actions_addclose(&fa, fd);
    std::vector<std::string> env;
    for (char **e = environ; *e; ++e)
      if (std::strncmp(*e, "NODE_PATH=", 10) != 0) env.emplace_back(*e);
    env.push_back("NODE_PATH=" + o.ortModules);
    std::vector<char *> envp, argv;
    for (auto &s : env) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::string node = "node", threadsText = std::to_string(threads);
    std::string script = o.ortScript, m = model, in = input;
    for (std::string *s : {&node, &script, &m, &in, &threadsText}) argv.push_back(s->data());
    argv.push_back(nullptr);
    int rc = posix_spawnp(&pid_, "node", &fa, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&fa);
    close(toChild[0]);
    close(fromChild[1]);
    if (rc != 0) {
      close(toChild[1]);
      close(fromChild[0]);
      pid_ = -1;
      error_ = std::string("cannot start node: ") + std::strerror(rc);
      return;
    }
    in_ = fdopen(toChild[1], "w");
    out_ = fdopen(fromChild[0], "r");
    auto a = Clock::now();
    std::string line = readLine();
    first_ = seconds(a, Clock::now());
    if (line.rfind("ready ", 0) != 0) {
      error_ = line.rfind("error ", 0) == 0 ? line.substr(6)
                                            : "no answer from " + o.ortScript + ": '" + line + "'";
      return;
    }
    version_ = line.substr(line.rfind(' ') + 1);
  }
  ~OrtProcess() {
    if (in_) {
      std::fputs("quit\n", in_);
      std::fclose(in_);
    }
    if (out_) std::fclose(out_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  OrtProcess(const OrtProcess &) = delete;
  OrtProcess &operator=(const OrtProcess &) = delete;

  const std::string &error() const { return error_; }
  const std::string &version() const { return version_; }
  /// Seconds from the start to the first run's end (node, the session, one run).
  double first() const { return first_; }

  /// One untimed run and `n` timed ones: their seconds.
  std::vector<double> turn(int n) {
    std::fprintf(in_, "run %d\n", n);
    std::fflush(in_);
    std::string line = readLine();
    std::istringstream s(line);
    std::string word;
    s >> word;
    if (word != "times") throw Error("ort_peer.js: unexpected answer '" + line + "'");
    std::vector<double> out;
    for (double ms; s >> ms;) out.push_back(ms * 1e-3);
    if (static_cast<int>(out.size()) != n)
      throw Error("ort_peer.js: expected " + std::to_string(n) + " times");
    return out;
  }

private:
  std::string readLine() {
    std::string line;
    for (int c; (c = std::fgetc(out_)) != EOF && c != '\n';) line.push_back(static_cast<char>(c));
    return line;
  }

  pid_t pid_ = -1;
  FILE *in_ = nullptr, *out_ = nullptr;
  std::string error_, version_;
  double first_ = 0;
};

// ---- timing in turns -------------------------------------------------------------------------

/// A contender of a row: `turn(n)` makes one untimed call and `n` timed ones and returns their
/// seconds (an in-process call is timed here; ORT's runs are timed inside node, so the pipe is
/// not counted), `first` its first call's seconds.
struct Contender {
  std::string name;
  std::function<std::vector<double>(int)> turn;
  double first = 0;
};

Contender inProcess(const std::string &name, const Call &call, int warmups = 2) {
  Contender c{name, nullptr, 0};
  waitForQuietThreads();
  auto a = Clock::now();
  call();
  c.first = seconds(a, Clock::now());
  for (int i = 0; i < warmups; ++i) call();
  c.turn = [call](int n) {
    call();
    std::vector<double> v;
    for (int i = 0; i < n; ++i) {
      auto s = Clock::now();
      call();
      v.push_back(seconds(s, Clock::now()));
    }
    return v;
  };
  return c;
}

/// timeInterleaved's rounds (BenchUtil.h) over contenders that time themselves.
std::vector<Timing> timeContenders(const std::vector<Contender> &cs, int perRound) {
  std::vector<std::vector<double>> samples(cs.size());
  for (int r = 0; r < kRounds; ++r)
    for (size_t j = 0; j < cs.size(); ++j) {
      size_t i = (static_cast<size_t>(r) + j) % cs.size();
      waitForQuietThreads();
      for (double t : cs[i].turn(perRound)) samples[i].push_back(t);
    }
  std::vector<Timing> out(cs.size());
  for (size_t i = 0; i < cs.size(); ++i) {
    auto &v = samples[i];
    std::sort(v.begin(), v.end());
    out[i].median = (v[(v.size() - 1) / 2] + v[v.size() / 2]) / 2;
    out[i].min = v.front();
    out[i].max = v.back();
    out[i].first = cs[i].first;
  }
  return out;
}

// ---- lazyjit ---------------------------------------------------------------------------------

/// The model as a function of its inputs in graph order (onnx_infer's), for Jit.
Jit::Fn modelFunction(const onnx::Model &model) {
  return [&model](const std::vector<Tensor> &in) { return model.runInOrder(in); };
}

/// The largest difference from `expected` over its largest magnitude.
double relativeError(const Tensor &got, const Tensor &expected) {
  std::vector<float> g = got.cast(dtypes::float32).toVector<float>();
  std::vector<float> e = expected.cast(dtypes::float32).toVector<float>();
  if (g.size() != e.size()) return INFINITY;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(g[i] - e[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(e[i])));
  }
  return diff / std::max(scale, 1e-30);
}

/// Model::load of `path`, timed the second time (the file is then in the page cache).
std::pair<onnx::Model, double> loadWarm(const std::string &path) {
  (void)onnx::Model::load(path);
  auto a = Clock::now();
  onnx::Model m = onnx::Model::load(path);
  return {std::move(m), seconds(a, Clock::now())};
}

/// The ten slowest kernels of `model` on `x` (its kernels compiled already): each kernel's time is
/// its best of three profiled runs, so that a run this shared host slowed down halfway does not
/// reorder them.
void printProfile(const std::string &id, const onnx::Model &model, const Tensor &x,
                  double jitMedian) {
  auto fn = modelFunction(model);
  std::vector<KernelRun> runs;
  for (int i = 0; i < 4; ++i) { // the first run realizes the weights
    std::vector<LazyBufferRef> outs;
    for (const Tensor &t : fn({x})) outs.push_back(t.lazydata());
    RunStats stats = realize(outs, configuredGraphOptions(), true);
    if (i == 0) continue;
    if (runs.size() != stats.runs.size()) { // (the same schedule every time; else the last run's)
      runs = stats.runs;
      continue;
    }
    for (size_t k = 0; k < runs.size(); ++k)
      runs[k].seconds = std::min(runs[k].seconds, stats.runs[k].seconds);
  }
  double total = 0, flops = 0;
  for (const auto &k : runs) {
    total += k.seconds;
    flops += k.flops;
  }
  std::stable_sort(runs.begin(), runs.end(),
                   [](const KernelRun &a, const KernelRun &b) { return a.seconds > b.seconds; });
  std::printf("\n%s: the ten slowest of %zu kernels (each timed alone, synchronized, its best of 3 "
              "profiled runs): %.2f ms in kernels, %.1f GFLOP in all (%.1f GFLOP/s); the Jit's "
              "median call %.2f ms\n",
              id.c_str(), runs.size(), total * 1e3, flops * 1e-9,
              flops / std::max(total, 1e-12) * 1e-9, jitMedian * 1e3);
  std::printf("  %-4s %-44s %9s %7s %9s %8s\n", "rank", "kernel", "ms", "share", "GFLOP/s", "GB/s");
  for (size_t i = 0; i < std::min<size_t>(10, runs.size()); ++i) {
    const auto &k = runs[i];
    double t = std::max(k.seconds, 1e-12);
    std::printf("  %-4zu %-44s %9.3f %6.1f%% %9.1f %8.1f\n", i + 1, k.name.c_str(), k.seconds * 1e3,
                100 * k.seconds / std::max(total, 1e-12), k.flops / t * 1e-9, k.bytes / t * 1e-9);
  }
}

/// W12-<model>-first: the first call in a fresh process with an empty LAZYJIT_CACHE, then with
/// the cache it filled.
Result firstCallRow(const OnnxBenchOptions &o, const std::string &name, const std::string &dir) {
  std::string cacheDir = "/tmp/lazyjit-bench-w12-" + std::to_string(getpid());
  std::string child = "LAZYJIT_CACHE='" + cacheDir + "' '" + o.exe + "' --w12-child '" + dir + "'";
  auto runChild = [&](bool fresh) -> std::optional<std::array<double, 3>> {
    std::string cmd = (fresh ? "rm -rf '" + cacheDir + "'; " : std::string()) + child;
    FILE *p = popen(cmd.c_str(), "r");
    if (!p) return std::nullopt;
    std::array<double, 3> v{};
    bool ok = std::fscanf(p, "%lf %lf %lf", &v[0], &v[1], &v[2]) == 3;
    pclose(p);
    if (!ok) return std::nullopt;
    return v;
  };
  auto cold = runChild(true);
  auto warm = runChild(false);
  std::string rmCmd = "rm -rf '" + cacheDir + "'";
  if (std::system(rmCmd.c_str()) != 0)
    std::fprintf(stderr, "could not remove %s\n", cacheDir.c_str());
  Result r{"W12-" + name + "-first",
           "ONNX " + name + " b1: first call in a fresh process, empty disk cache", "ms"};
  if (!cold || !warm) {
    r.note = "the fresh process failed";
    return r;
  }
  r.t.median = r.t.min = r.t.max = r.t.first = (*cold)[0] + (*cold)[1];
  r.rate = r.t.median * 1e3;
  r.kernels = static_cast<int>((*cold)[2]);
  r.note = fmt::format(
      "import {:.0f} + schedule/compile/run {:.0f} ms; with the disk cache (a second fresh "
      "process): {:.0f} ms (import {:.0f} + {:.0f})",
      (*cold)[0] * 1e3, (*cold)[1] * 1e3, ((*warm)[0] + (*warm)[1]) * 1e3, (*warm)[0] * 1e3,
      (*warm)[1] * 1e3);
  return r;
}

/// The rows of one model (benchW12).
void benchModel(const OnnxBenchOptions &o, const std::string &name, const std::string &dir,
                const std::vector<int> &batches, int threads, const std::string &ortSkip,
                std::vector<Result> &results) {
  auto [model, loadSeconds] = loadWarm(dir + "/model.onnx");
  for (int b : batches) {
    std::string id = fmt::format("W12-{}-b{}", name, b),
                data = fmt::format("{}/test_data_set_b{}", dir, b);
    if (!fs::exists(data + "/input_0.pb")) {
      std::printf("%s: skipped: %s/input_0.pb not found (gen_models.py --batches 1,%d)\n",
                  id.c_str(), data.c_str(), b);
      continue;
    }
    std::fflush(stdout);
    Tensor x = onnx::loadTensorFile(data + "/input_0.pb");
    x.realize();
    Jit jit(modelFunction(model));
    std::vector<Tensor> outs;
    Call ours = [&] {
      outs = jit({x});
      for (Tensor &t : outs) t.realize();
      getDevice("CPU").synchronize();
    };
    std::vector<Contender> cs{inProcess("lazyjit", ours)};
    std::vector<std::string> notes;
#ifdef LAZYJIT_BENCH_TORCH
    if (fs::exists(dir + "/model.pt")) {
      bool int64 = x.dtype() == dtypes::int64;
      std::vector<int64_t> i64;
      std::vector<float> f32;
      if (int64)
        i64 = x.toVector<int64_t>();
      else
        f32 = x.toVector<float>();
      const void *bytes =
          int64 ? static_cast<const void *>(i64.data()) : static_cast<const void *>(f32.data());
      try {
        cs.push_back(inProcess(
            "libtorch", torchScriptCall(dir + "/model.pt", x.intShape(), int64, bytes, threads)));
      } catch (const std::exception &e) {
        notes.push_back(fmt::format("libtorch skipped: {}", e.what()));
      }
    } else {
      notes.push_back(
          "libtorch skipped: no model.pt (gen_models.py writes it unless --no-torchscript)");
    }
#else
    notes.push_back("libtorch skipped: not built with libtorch");
#endif
    std::unique_ptr<OrtProcess> ort;
    if (ortSkip.empty()) {
      waitForQuietThreads();
      ort = std::make_unique<OrtProcess>(o, dir + "/model.onnx", data + "/input_0.pb", threads);
      if (!ort->error().empty()) {
        notes.push_back("ort skipped: " + ort->error());
        ort.reset();
      } else {
        OrtProcess *p = ort.get();
        (void)p->turn(2); // the warm-ups
        cs.push_back(Contender{"ort", [p](int n) { return p->turn(n); }, p->first()});
      }
    } else {
      notes.push_back("ort " + ortSkip);
    }
    // the large rows take one timed call a turn (over half a second a call)
    int perRound = 2;
    {
      auto s = Clock::now();
      ours();
      if (seconds(s, Clock::now()) > 0.5) perRound = 1;
    }
    std::vector<Timing> t = timeContenders(cs, perRound);
    // the output of the last timed call (a Jit replay) against PyTorch's
    double err = relativeError(outs[0], onnx::loadTensorFile(data + "/output_0.pb"));
    if (!(err <= 1e-4)) notes.push_back(fmt::format("WRONG OUTPUT: error {:.2g} > 1e-4", err));
    Result r{id, fmt::format("ONNX {} batch {}: Model::run under Jit", name, b), "ms"};
    r.t = t[0];
    r.rate = t[0].median * 1e3;
    r.kernels = static_cast<int>(jit.kernelCount());
    std::string times = fmt::format("lazyjit {:.2f}", t[0].median * 1e3);
    for (size_t i = 1; i < cs.size(); ++i) {
      r.vs[cs[i].name] = t[i].median / t[0].median;
      times += fmt::format(", {} {:.2f}", cs[i].name, t[i].median * 1e3);
    }
    notes.insert(notes.begin(), fmt::format("ms: {}; Model::load {:.1f} ms; err {:.1e}", times,
                                            loadSeconds * 1e3, err));
    for (const auto &n : notes) r.note += (r.note.empty() ? "" : "; ") + n;
    std::printf("%s: %s\n", id.c_str(), r.note.c_str());
    std::fflush(stdout);
    ort.reset();
    results.push_back(r);
    if (std::count(o.profileRows.begin(), o.profileRows.end(), id))
      printProfile(id, model, x, t[0].median);
    if (b == 1 && name == o.firstCallModel) {
      Result f = firstCallRow(o, name, dir);
      std::printf("%s: %.0f ms; %s\n", f.id.c_str(), f.rate, f.note.c_str());
      results.push_back(f);
    }
  }
}

} // namespace

std::string ortPeerDescription(const OnnxBenchOptions &o) {
  if (!fs::exists(o.ortScript)) return "skipped: " + o.ortScript + " not found";
  if (!fs::exists(fs::path(o.ortModules) / "onnxruntime-node" / "package.json"))
    return "skipped: onnxruntime-node is not in " + o.ortModules +
           " (run scripts/setup-bench-onnxruntime.sh)";
  std::ifstream pkg(fs::path(o.ortModules) / "onnxruntime-node" / "package.json");
  std::string text((std::istreambuf_iterator<char>(pkg)), std::istreambuf_iterator<char>());
  size_t at = text.find("\"version\"");
  std::string version = "?";
  if (at != std::string::npos) {
    size_t q1 = text.find('"', text.find(':', at)), q2 = text.find('"', q1 + 1);
    version = text.substr(q1 + 1, q2 - q1 - 1);
  }
  return "onnxruntime-node " + version + " (its CPU libonnxruntime.so) through node (" +
         o.ortScript +
         "), intraOpNumThreads=threads, interOpNumThreads=1, sequential, all graph optimizations, "
         "its "
         "threads' default spinning (each turn ends once they are idle)";
}

void runW12Child(const std::string &modelDir) {
  auto a = Clock::now();
  onnx::Model model = onnx::Model::load(modelDir + "/model.onnx");
  double load = seconds(a, Clock::now());
  Tensor x = onnx::loadTensorFile(modelDir + "/test_data_set_b1/input_0.pb");
  x.realize();
  Jit jit(modelFunction(model));
  a = Clock::now();
  for (Tensor &t : jit({x})) t.realize();
  getDevice("CPU").synchronize();
  double first = seconds(a, Clock::now());
  std::printf("%.6f %.6f %d\n", load, first, static_cast<int>(globalCounters().kernelCount.load()));
}

std::vector<Result> benchW12(const OnnxBenchOptions &o,
                             const std::function<bool(const std::string &)> &enabled) {
  std::vector<Result> results;
  int threads = static_cast<int>(ThreadPool::global().size());
  std::string ortSkip =
      ortPeerDescription(o).rfind("skipped: ", 0) == 0 ? ortPeerDescription(o) : "";
  for (const std::string &name : kModels) {
    std::string dir = o.modelsDir + "/" + name;
    std::vector<int> batches;
    for (int b : o.batches)
      if (enabled(fmt::format("W12-{}-b{}", name, b))) batches.push_back(b);
    if (batches.empty()) continue;
    if (!fs::exists(dir + "/model.onnx")) {
      std::printf("W12-%s: skipped: %s/model.onnx not found (gen_models.py %s --models all "
                  "--batches 1,8)\n",
                  name.c_str(), dir.c_str(), o.modelsDir.c_str());
      continue;
    }
    try {
      benchModel(o, name, dir, batches, threads, ortSkip, results);
    } catch (const std::exception &e) {
      std::printf("W12-%s: skipped: %s\n", name.c_str(), e.what());
    }
  }
  return results;
}

} // namespace lazyjit::bench

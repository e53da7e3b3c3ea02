// lazyjit-bench: the workloads of shared/bench/WORKLOADS.md through the public Tensor API, with
// the in-process copy ceiling and (when installed) Eigen, OpenBLAS and libtorch measured in the
// same run, and every rate reported as a ratio to them. Timings live here, never in tests. This
// file is the driver: options, the order of the workloads, the ceiling measured again at the end,
// the table and the JSON file; the workloads are in Kernels.cpp, Overheads.cpp, Training.cpp and
// (the ONNX models, W12) OnnxModels.cpp.
#include "OnnxModels.h"
#include "Peers.h"
#include "Training.h"
#include "Workloads.h"
#include "lazyjit/CodeGen/Compiler.h"
#include "lazyjit/Runtime/ThreadPool.h"
#include "lazyjit/lazyjit.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace lazyjit;
using namespace lazyjit::bench;

namespace {

std::string cpuName() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

void printTable(const std::vector<Result> &results) {
  int idWidth = 5; // W12's ids are longer (W12-resnet50-b1)
  for (const auto &r : results) idWidth = std::max(idWidth, static_cast<int>(r.id.size()));
  std::printf("\n%-*s %-62s %10s %-10s %8s %10s %10s  %s\n", idWidth, "id", "workload", "rate", "unit", "kernels",
              "median_ms", "first_ms", "ratios (same run)");
  for (const auto &r : results) {
    std::string vs;
    for (const auto &[k, v] : r.vs) vs += k + "=" + fmt::format("{:.2f}", v) + " ";
    if (!r.note.empty()) vs += r.note;
    std::printf("%-*s %-62s %10.2f %-10s %8d %10.3f %10.3f  %s\n", idWidth, r.id.c_str(), r.name.c_str(), r.rate,
                r.unit.c_str(), r.kernels, r.t.median * 1e3, r.t.first * 1e3, vs.c_str());
  }
}

// The default level against the reference's, row by row: a row whose default runs slower than
// OPT=2 beyond the run's noise (the two medians' spread, at least 5%) is named.
std::string joined(const std::vector<std::string> &items) {
  std::string out;
  for (const auto &s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

void printDefaultAgainstReference(const std::vector<Result> &results) {
  std::vector<std::string> slower;
  int pairs = 0;
  for (const auto &r : results) {
    if (!r.refT) continue;
    ++pairs;
    double ratio = r.vs.at("ref"); // the reference level's median over ours
    // the noise of this pair: the larger of the two timings' relative spread around their medians
    auto spread = [](const Timing &t) { return t.median > 0 ? (t.max - t.min) / (2 * t.median) : 0.0; };
    double noise = std::max({0.05, spread(r.t), spread(*r.refT)});
    if (ratio < 1.0 - noise) slower.push_back(fmt::format("{} ({:.2f}x, noise {:.0f}%)", r.id, ratio, noise * 100));
  }
  if (pairs == 0) return;
  if (slower.empty())
    std::printf("\ndefault level OPT=%d against OPT=2 (ref=, timed in turns): at least as fast on all %d rows\n",
                config().opt, pairs);
  else
    std::printf("\ndefault level OPT=%d against OPT=2 (ref=, timed in turns): SLOWER on %zu of %d rows: %s\n",
                config().opt, slower.size(), pairs, joined(slower).c_str());
}

// Returns false if the file could not be written.
bool writeJson(const std::string &jsonPath, const std::vector<Result> &results, const std::string &device,
               int threads, const char *coretype, const std::string &blasCore) {
  std::ofstream js(jsonPath);
  js << "{\"device\": \"" << device << "\", \"threads\": " << threads << ", \"cpu\": \"" << cpuName()
     << "\", \"openblas_coretype\": \"" << (coretype ? coretype : "") << "\", \"openblas_core\": \"" << blasCore
     << "\", \"workloads\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const auto &r = results[i];
    js << "  {\"id\": \"" << r.id << "\", \"name\": \"" << r.name << "\", \"median_s\": " << r.t.median
       << ", \"min_s\": " << r.t.min << ", \"max_s\": " << r.t.max << ", \"first_call_s\": " << r.t.first
       << ", \"rate\": " << r.rate << ", \"unit\": \"" << r.unit << "\", \"kernels\": " << r.kernels
       << ", \"vs\": {";
    size_t k = 0;
    for (const auto &[name, v] : r.vs) js << (k++ ? ", " : "") << "\"" << name << "\": " << v;
    js << "}}" << (i + 1 < results.size() ? "," : "") << "\n";
  }
  js << "]}\n";
  js.flush();
  return static_cast<bool>(js);
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"lazyjit-bench: the workloads of shared/bench/WORKLOADS.md"};
  std::string only, jsonPath, device = "CPU", w12Child, onnxBatches = "1";
  bool w9aChild = false;
  OnnxBenchOptions onnx;
  onnx.modelsDir = LAZYJIT_BENCH_ONNX_MODELS;
  onnx.ortModules = LAZYJIT_BENCH_ORT_MODULES;
  onnx.ortScript = LAZYJIT_BENCH_SOURCE_DIR "/ort_peer.js";
  app.add_option("--only", only, "comma-separated workload ids (W1,W3,...)");
  app.add_option("--json", jsonPath, "write the results as JSON to this file");
  app.add_option("--device", device, "CPU or CUDA");
  app.add_option("--onnx-models", onnx.modelsDir,
                 "W12: gen_models.py's output directory (default " LAZYJIT_BENCH_ONNX_MODELS ")");
  app.add_option("--onnx-batches", onnxBatches,
                 "W12: the batch sizes to run (default 1; a row named in --only, W12-resnet50-b8, "
                 "adds its own)");
  app.add_option("--onnx-profile", onnx.profileRows,
                 "W12: rows followed by their ten slowest kernels (default W12-resnet50-b1)")
      ->delimiter(',');
  app.add_option("--ort-modules", onnx.ortModules,
                 "W12: node_modules with onnxruntime-node (scripts/setup-bench-onnxruntime.sh)");
  app.add_flag("--w9a-child", w9aChild, "internal: the fresh process of W9a");
  app.add_option("--w12-child", w12Child, "internal: the fresh process of W12-<model>-first");
  CLI11_PARSE(app, argc, argv);

#ifdef LAZYJIT_BENCH_TORCH
  // libtorch's OpenMP threads (libgomp) spin after each parallel region by default, taking the
  // CPUs from whatever runs next on this 2-core host, and the peers' timings swing with it; idle
  // threads must sleep. libgomp reads OMP_WAIT_POLICY when it loads, before main: run again with
  // it set. A policy the user set is kept.
  if (!std::getenv("OMP_WAIT_POLICY")) {
    std::fflush(stdout);
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    setenv("LAZYJIT_BENCH_SET_OMP_WAIT_POLICY", "1", 1);
    execv("/proc/self/exe", argv);
    std::fprintf(stderr, "lazyjit-bench: could not run again with OMP_WAIT_POLICY=PASSIVE: %s\n",
                 std::strerror(errno));
    unsetenv("OMP_WAIT_POLICY");
  }
#endif

#ifdef LAZYJIT_BENCH_OPENBLAS
  // OpenBLAS reads OPENBLAS_CORETYPE once, when it loads: where it does not know this CPU and
  // falls back to its generic kernels (0.3.21 on an Emerald Rapids Xeon: Prescott, 5x slower), the
  // bench runs itself again with the core named, so that its ratios compare with OpenBLAS (and
  // libtorch's matmuls) as they run when configured. A core the user set is kept as it is.
  if (!std::getenv("OPENBLAS_CORETYPE") && blasCoreMisdetected()) {
    std::string detected = blasCoreName();
    const char *core = __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell";
    std::fflush(stdout);
    setenv("OPENBLAS_CORETYPE", core, 1);
    setenv("LAZYJIT_BENCH_OPENBLAS_DETECTED", detected.c_str(), 1);
    execv("/proc/self/exe", argv);
    std::fprintf(stderr, "lazyjit-bench: could not run again with OPENBLAS_CORETYPE=%s: %s\n", core, std::strerror(errno));
    unsetenv("OPENBLAS_CORETYPE");
  }
#endif

  try {
    device = canonicalizeDevice(device);
    bool gpu = device.rfind("CUDA", 0) == 0;
    Sizes sz = gpu ? Sizes{1 << 28, 8192, 8192, 1024, 4096, 4096, 64} : Sizes{1 << 24, 4096, 4096, 1024, 2048, 256, 8};

    if (w9aChild) {
      runW9aChild(sz, device);
      return 0;
    }
    if (!w12Child.empty()) {
      runW12Child(w12Child);
      return 0;
    }

    std::set<std::string> want;
    std::stringstream ss(only);
    for (std::string tok; std::getline(ss, tok, ',');)
      if (!tok.empty()) want.insert(tok);
    auto enabled = [&](const std::string &id) {
      if (want.empty()) return true;
      // W9 selects W9a..W9d; W1 does not select W10; W12 and W12-resnet50 select W12-resnet50-b1
      for (const auto &w : want)
        if (id == w || (id.rfind(w, 0) == 0 && (std::isalpha(static_cast<unsigned char>(id[w.size()])) ||
                                                id[w.size()] == '-')))
          return true;
      return false;
    };

    int threads = static_cast<int>(ThreadPool::global().size());
    const char *coretype = std::getenv("OPENBLAS_CORETYPE");
#ifdef LAZYJIT_BENCH_OPENBLAS
    blasSetThreads(threads);
#endif
    std::vector<std::string> skipped;
#ifndef LAZYJIT_BENCH_EIGEN
    skipped.push_back("Eigen (libeigen3-dev not installed at build time)");
#endif
#ifndef LAZYJIT_BENCH_OPENBLAS
    skipped.push_back("OpenBLAS (libopenblas-dev not installed at build time)");
#endif
#ifndef LAZYJIT_BENCH_TORCH
    skipped.push_back("libtorch (libtorch-dev not installed at build time)");
#endif
    if (gpu) skipped.push_back("Eigen and OpenBLAS (CPU peers; the GPU run compares with the device copy ceiling only)");

    std::string blasCore = "(none)";
#ifdef LAZYJIT_BENCH_OPENBLAS
    blasCore = blasCoreName();
#endif
    std::string coreNote = "OpenBLAS runs " + blasCore;
    if (const char *detected = std::getenv("LAZYJIT_BENCH_OPENBLAS_DETECTED"))
      coreNote = "set by the bench: OpenBLAS chose " + std::string(detected) + " for this CPU";
    std::printf("lazyjit-bench  device=%s  threads=%d  cpu=%s  OPENBLAS_CORETYPE=%s (%s)  LLVM %s  "
                "OPT=%d (rows suffixed -ref: OPT=2, the reference's kernels, timed in turns with the row above)\n",
                device.c_str(), threads, cpuName().c_str(), coretype ? coretype : "(unset)", coreNote.c_str(),
                llvmVersionString().c_str(), config().opt);
#ifdef LAZYJIT_BENCH_OPENBLAS
    if (!gpu && blasCoreMisdetected())
      std::printf("warning: OpenBLAS runs its generic %s kernels on this AVX2 CPU (it does not know the model): "
                  "its ratios, and libtorch's matmuls, flatter lazyjit; set OPENBLAS_CORETYPE=Haswell, or "
                  "SkylakeX/Cooperlake on AVX-512\n",
                  blasCore.c_str());
#endif
    for (const auto &s : skipped) std::printf("skipped peer: %s\n", s.c_str());
    bool anyW12 = !gpu && (want.empty() || std::any_of(want.begin(), want.end(), [](const std::string &w) {
                             return w.rfind("W12", 0) == 0;
                           }));
    if (anyW12) {
      onnx.batches.clear();
      std::stringstream bs(onnxBatches);
      for (std::string tok; std::getline(bs, tok, ',');)
        if (!tok.empty()) onnx.batches.push_back(std::stoi(tok));
      for (const auto &w : want) // W12-<model>-b<N>
        if (size_t b = w.rfind("-b"); w.rfind("W12-", 0) == 0 && b != std::string::npos && b + 2 < w.size() &&
                                      std::all_of(w.begin() + static_cast<std::ptrdiff_t>(b) + 2, w.end(), ::isdigit))
          onnx.batches.push_back(std::stoi(w.substr(b + 2)));
      std::sort(onnx.batches.begin(), onnx.batches.end());
      onnx.batches.erase(std::unique(onnx.batches.begin(), onnx.batches.end()), onnx.batches.end());
      onnx.exe = "/proc/" + std::to_string(getpid()) + "/exe";
      const char *omp = std::getenv("OMP_WAIT_POLICY");
      std::string batchList;
      for (int b : onnx.batches) batchList += (batchList.empty() ? "" : ",") + std::to_string(b);
      std::printf("W12 (ONNX models from %s, batches %s): lazyjit onnx::Model::run under Jit; libtorch: "
                  "gen_models.py's model.pt (torch.jit.trace + freeze) under InferenceMode, "
                  "at::set_num_threads(%d), OMP_WAIT_POLICY=%s%s; ONNX Runtime: %s\n",
                  onnx.modelsDir.c_str(), batchList.c_str(), threads, omp ? omp : "(unset)",
                  std::getenv("LAZYJIT_BENCH_SET_OMP_WAIT_POLICY") ? " (set by the bench)" : "",
                  ortPeerDescription(onnx).c_str());
    } else if (const char *omp = std::getenv("OMP_WAIT_POLICY")) {
      std::printf("OMP_WAIT_POLICY=%s (libtorch's idle OpenMP threads%s)\n", omp,
                  std::string(omp) == "PASSIVE" ? " sleep" : " spin");
    }

    std::vector<Result> results;
    Timing copyT;
    double copy = 0, readRate = 0;
    if (gpu) {
      Result r = benchDeviceCopy(sz, device);
      copy = r.rate;
      copyT = r.t;
    } else {
      copy = copyCeiling(static_cast<size_t>(1) << 24, threads, &copyT, &readRate);
    }
    size_t w8Index = results.size();
    {
      Result r{"W8", "copy ceiling (plain multithreaded copy)", "GB/s"};
      r.t = copyT;
      r.rate = copy;
      results.push_back(r);
    }

    // each kernel and training row W<n> runs at the configured (default) level and, timed in turns
    // with it, at the reference's level OPT=2: the row W<n>-ref follows it
    auto add = [&](const Result &r) {
      results.push_back(r);
      if (r.refT) results.push_back(referenceRow(r));
    };
    if (enabled("W1")) add(benchW1(sz, device, gpu));
    if (enabled("W2")) add(benchW2(sz, device, gpu, readRate));
    if (enabled("W3")) add(benchW3(sz, device, gpu));
    if (enabled("W4")) add(benchW4(sz, device, gpu));
    if (!gpu && enabled("W5a")) add(benchW5("W5a", sz.n5a, device, gpu));
    if (enabled("W5b")) add(benchW5("W5b", sz.n5b, device, gpu));
    if (enabled("W6")) add(benchW6(sz, device, gpu));
    if (enabled("W7")) add(benchW7(sz, device, gpu));
    // the training steps, against libtorch's (same process, same thread count)
    if (enabled("W10")) add(benchW10(512, device));
    if (enabled("W10-bf16")) add(benchW10LowPrecision(512, device, dtypes::bfloat16));
    if (enabled("W11")) add(benchW11(gpu ? 4096 : 256, device));
    // the ONNX models, against libtorch (TorchScript) and ONNX Runtime (CPU only)
    if (anyW12)
      for (auto &r : benchW12(onnx, enabled)) results.push_back(std::move(r));
    if (enabled("W9d")) results.push_back(benchW9d(device));
    if (enabled("W9a")) results.push_back(benchW9a(device));
    if (enabled("W9b"))
      for (int ops : {200, 20000, 200000}) results.push_back(benchW9b(device, ops));
    if (enabled("W9c") && !gpu) results.push_back(benchW9c(sz));
    if (enabled("W14") && !gpu)
      for (const auto &r : benchW14(device)) results.push_back(r);

    // The memory bandwidth of a shared host drifts during a run: measure the ceiling again at the
    // end and hold every workload to the higher of the two (the stricter ratio).
    if (!gpu) {
      Timing again;
      double read2 = 0;
      double copy2 = copyCeiling(static_cast<size_t>(1) << 24, threads, &again, &read2);
      results[w8Index].note = fmt::format("start {:.1f}, end {:.1f} GB/s; plain read loop {:.1f}, {:.1f} GB/s", copy,
                                          copy2, readRate, read2);
      if (read2 > readRate)
        for (auto &r : results)
          if (r.vs.count("read")) r.vs["read"] = r.rate / read2;
      if (copy2 > copy) {
        copy = copy2;
        results[w8Index].t = again;
        results[w8Index].rate = copy2;
      }
    }
    for (auto &r : results)
      if (r.vsCopy) r.vs["copy"] = r.rate / copy;
    if (!enabled("W8")) results.erase(results.begin() + static_cast<std::ptrdiff_t>(w8Index));

    printTable(results);
    printDefaultAgainstReference(results);
    QuietStats q = quietStats();
    if (q.waits)
      std::printf("\nlazyjit and its peers were timed in turns (%d rounds); before each turn the bench waited for "
                  "the process's other threads to go idle: %d waits, %.2f s in all, the longest %.0f ms, %d still "
                  "busy after 1 s\n",
                  kRounds, q.waits, q.seconds, q.longest * 1e3, q.timedOut);
    if (!jsonPath.empty() && !writeJson(jsonPath, results, device, threads, coretype, blasCore)) {
      std::fprintf(stderr, "lazyjit-bench: error: cannot write %s\n", jsonPath.c_str());
      return 1;
    }
    return 0;
  } catch (const Error &e) {
    std::fprintf(stderr, "lazyjit-bench: error: %s\n", e.what());
    return 1;
  }
}

// W12, the ONNX model rows of lazyjit-bench: each architecture gen_models.py exports, imported with
// onnx::Model and run under Jit, timed in turns with the same module in libtorch (TorchScript,
// same process) and in ONNX Runtime (onnxruntime-node, a node process per model fed on stdin by
// bench/ort_peer.js), all at the bench's thread count.
#pragma once

#include "BenchUtil.h"

#include <functional>
#include <string>
#include <vector>

namespace lazyjit::bench {

struct OnnxBenchOptions {
  /// gen_models.py's output: <dir>/<model>/model.onnx, model.pt, test_data_set_b<N>
  std::string modelsDir;
  /// the batch sizes to run, where the model's directory has their data
  std::vector<int> batches{1};
  std::string ortModules; ///< node_modules holding onnxruntime-node
  std::string ortScript;  ///< bench/ort_peer.js
  /// whose b1 row adds the cold and warm-disk-cache first calls (W12-<model>-first)
  std::string firstCallModel = "resnet50";
  /// rows followed by their ten slowest kernels
  std::vector<std::string> profileRows{"W12-resnet50-b1"};
  std::string exe; ///< this executable, for the fresh processes of the first calls
};

/// The W12 rows `enabled` selects (ids W12-<model>-b<N>, W12-<model>-first), in the models' order;
/// the per-kernel profiles are printed as they are measured. A row whose lazyjit output, after
/// its timed calls, is off PyTorch's (the data set's output_0.pb) by over 1e-4 of its largest
/// magnitude says so in its note. Models missing from the directory are
/// skipped, and so is a peer that cannot run, each with a printed reason.
std::vector<Result> benchW12(const OnnxBenchOptions &o,
                             const std::function<bool(const std::string &)> &enabled);

/// The fresh process of W12-<model>-first: loads `modelDir`/model.onnx, runs it once at batch 1
/// under Jit (schedule, compile, run) and prints "<load seconds> <first call seconds> <kernels>".
void runW12Child(const std::string &modelDir);

/// What the header says about the ONNX Runtime peer: the package's version, or why it is skipped.
std::string ortPeerDescription(const OnnxBenchOptions &o);

#ifdef LAZYJIT_BENCH_TORCH
/// The TorchScript module at `ptPath` (gen_models.py's model.pt) on one input of `shape`: float32
/// values, or int64 when `int64`, copied from `data`. One call is one forward under
/// c10::InferenceMode with `threads` intra-op threads.
Call torchScriptCall(const std::string &ptPath, const std::vector<int64_t> &shape, bool int64,
                     const void *data, int threads);
#endif

} // namespace lazyjit::bench

// Runs an ONNX model with lazyjit: imports it, runs it once (import, schedule, compile and run) and
// then in the steady state under Jit (replay with new inputs), and prints both timings, the memory
// an inference holds at its peak against its weights and largest activations, and the outputs'
// shapes and first values.
//
//   onnx_infer MODEL.onnx [--input NAME=FILE.npy|.pb]... [--dim NAME=N]... [--iters N]
//
// Inputs not given are random (from a fixed seed) with the model's declared shape; a symbolic dim
// (`batch`) takes its size from --dim, else 1.
#include "lazyjit/NN/State.h"
#include "lazyjit/ONNX/Model.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Tensor/Jit.h"

#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <map>
#include <string>
#include <vector>

using namespace lazyjit;
using Clock = std::chrono::steady_clock;

namespace {

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

Tensor readInput(const std::string &path) {
  if (path.size() > 4 && path.substr(path.size() - 4) == ".npy") return npyLoad(path);
  return onnx::loadTensorFile(path);
}

Tensor randomInput(const onnx::ModelValue &v, const std::map<std::string, int64_t> &dims) {
  Shape shape;
  for (const onnx::Dimension &d : v.dims) {
    if (d.kind == onnx::Dimension::Kind::Value)
      shape.emplace_back(d.value);
    else if (d.kind == onnx::Dimension::Kind::Param && dims.count(d.param))
      shape.emplace_back(dims.at(d.param));
    else
      shape.emplace_back(int64_t(1));
  }
  if (std::optional<DType> dt = onnx::toDType(v.dataType))
    return dt->isFloat() ? Tensor::randn(shape, TensorOptions(*dt))
                         : Tensor::zeros(shape, TensorOptions(*dt));
  throw Error(fmt::format("input '{}': an element type lazyjit lacks", v.name));
}

int run(int argc, char **argv) {
  if (argc < 2) {
    std::cerr << "usage: onnx_infer MODEL.onnx [--input NAME=FILE]... [--dim NAME=N]... "
                 "[--iters N]\n";
    return 2;
  }
  std::string path = argv[1];
  std::map<std::string, std::string> files;
  std::map<std::string, int64_t> dims;
  int iters = 20;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string opt = argv[i], val = argv[i + 1];
    size_t eq = val.find('=');
    if (opt == "--iters") {
      iters = std::max(1, std::stoi(val));
    } else if ((opt == "--input" || opt == "--dim") && eq != std::string::npos) {
      if (opt == "--input")
        files[val.substr(0, eq)] = val.substr(eq + 1);
      else
        dims[val.substr(0, eq)] = std::stoll(val.substr(eq + 1));
    } else {
      std::cerr << "onnx_infer: bad option " << opt << " " << val << "\n";
      return 2;
    }
  }

  auto t0 = Clock::now();
  onnx::Model model = onnx::Model::load(path);
  double loadMs = msSince(t0);
  Tensor::manualSeed(0);
  std::vector<Tensor> inputs;
  for (const onnx::ModelValue &v : model.inputs())
    inputs.push_back(files.count(v.name) ? readInput(files.at(v.name)) : randomInput(v, dims));
  for (Tensor &t : inputs) t.realize();

  // The model as a function of its inputs, in graph order; Jit replays it.
  auto fn = [&](const std::vector<Tensor> &in) { return model.runInOrder(in); };
  // The first call, outside Jit, watched kernel by kernel: the bytes of live buffers at their peak
  // and the two largest buffers a kernel wrote (the activations the bound is about).
  int64_t before = bufferBytesInUse(), peak = before;
  std::vector<int64_t> largest = {0, 0};
  setScheduleObserver([&](const ScheduleItem &si, const Program *) {
    peak = std::max(peak, bufferBytesInUse());
    if (si.isKernel() && si.out->realized()) {
      auto b = int64_t(si.out->realized()->nbytes());
      if (b > largest[1]) largest[1] = b;
      if (largest[1] > largest[0]) std::swap(largest[0], largest[1]);
    }
  });
  t0 = Clock::now();
  std::vector<Tensor> outs = fn(inputs);
  Tensor::corealize(outs);
  double firstMs = msSince(t0);
  setScheduleObserver(nullptr);
  int64_t outBytes = 0;
  for (Tensor &o : outs) outBytes += int64_t(o.toBytes().size());
  // what stays after the call: the weights (realized and kept by the model) and the outputs
  int64_t weights = bufferBytesInUse() - before - outBytes;

  Jit jit(fn);
  outs = jit(inputs);
  for (int i = 0; i < 2; ++i) jit(inputs); // the capture
  t0 = Clock::now();
  for (int i = 0; i < iters; ++i) outs = jit(inputs);
  for (Tensor &o : outs) o.realize();
  double steadyMs = msSince(t0) / iters;

  std::cout << fmt::format("{}: opset {}, {} inputs, {} outputs\n", path, model.opsetVersion(),
                           model.inputs().size(), model.outputs().size());
  std::cout << fmt::format("load {:.1f} ms; first call {:.1f} ms (schedule, compile, run); "
                           "steady state {:.2f} ms per call ({} kernels, {} calls)\n",
                           loadMs, firstMs, steadyMs, jit.kernelCount(), iters);
  constexpr double MB = 1 << 20;
  int64_t bound = weights + 2 * (largest[0] + largest[1]);
  std::cout << fmt::format("memory: peak {:.1f} MB of buffers in the first call; weights {:.1f} MB, "
                           "largest activations {:.1f} + {:.1f} MB: {} the bound weights + 2x "
                           "those ({:.1f} MB)\n",
                           double(peak - before) / MB, double(weights) / MB, double(largest[0]) / MB,
                           double(largest[1]) / MB, peak - before <= bound ? "within" : "OVER",
                           double(bound) / MB);
  for (size_t i = 0; i < outs.size(); ++i) {
    std::vector<float> v = outs[i].cast(dtypes::float32).toVector<float>();
    v.resize(std::min<size_t>(v.size(), 6));
    std::cout << fmt::format("output '{}': {}[{}] first values {:.5g}\n", model.outputs()[i].name,
                             outs[i].dtype().name(), fmt::join(outs[i].intShape(), ", "),
                             fmt::join(v, " "));
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::cerr << "onnx_infer: error: " << e.what() << "\n";
    return 1;
  }
}

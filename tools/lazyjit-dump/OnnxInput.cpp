// lazyjit-dump on an ONNX model: the model's graph outputs take the place of a script's outputs,
// so every stage (graph, schedule, kernel, llvm, stats, dot, runs, values) prints as it does for a
// script. Inputs come from .npy/.pb files or an ONNX test-data directory; -o DIR writes the
// outputs in the same layout, so `lazyjit-dump model.onnx --input test_data_set_0 -o out` runs an
// ONNX test case.
#include "Dump.h"
#include "ToolError.h"

#include "lazyjit/CodeGen/Kernel.h"
#include "lazyjit/NN/State.h"
#include "lazyjit/ONNX/Model.h"
#include "lazyjit/Support/Config.h"

#include <filesystem>
#include <fmt/format.h>
#include <map>

namespace fs = std::filesystem;

namespace lazyjit::tool {

namespace {

[[noreturn]] void fail(const std::string &msg) { throw ToolError("lazyjit-dump: error: " + msg, 1); }

bool endsWith(const std::string &s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Tensor readTensorFile(const std::string &path) {
  if (!fs::exists(path)) fail(fmt::format("input file '{}' does not exist", path));
  if (endsWith(path, ".npy")) return npyLoad(path);
  if (endsWith(path, ".pb")) return onnx::loadTensorFile(path);
  fail(fmt::format("input file '{}': expected a .npy or .pb (TensorProto) file", path));
}

std::map<std::string, int64_t> parseDims(const std::vector<std::string> &specs) {
  std::map<std::string, int64_t> dims;
  for (const std::string &spec : specs) {
    size_t eq = spec.find('=');
    int64_t v = 0;
    size_t used = 0;
    bool ok = eq != std::string::npos && eq > 0;
    if (ok) {
      try {
        v = std::stoll(spec.substr(eq + 1), &used);
      } catch (const std::exception &) {
        ok = false;
      }
      ok = ok && used == spec.size() - eq - 1 && v >= 0;
    }
    if (!ok) fail(fmt::format("--dim '{}': expected NAME=N with N >= 0", spec));
    dims[spec.substr(0, eq)] = v;
  }
  return dims;
}

/// A deterministic input for `v` when the user gives none: normal floats, zero integers.
Tensor syntheticInput(const onnx::ModelValue &v, const std::map<std::string, int64_t> &dims) {
  std::vector<int64_t> shape;
  for (const onnx::Dimension &d : v.dims) {
    if (d.kind == onnx::Dimension::Kind::Value) {
      shape.push_back(d.value);
    } else if (d.kind == onnx::Dimension::Kind::Param && dims.count(d.param)) {
      shape.push_back(dims.at(d.param));
    } else {
      fail(fmt::format("input '{}' has the symbolic dim '{}': give its size with --dim {}=N, or "
                       "the input with --input {}=FILE",
                       v.name, d.kind == onnx::Dimension::Kind::Param ? d.param : "?",
                       d.kind == onnx::Dimension::Kind::Param ? d.param : "NAME", v.name));
    }
  }
  Shape s;
  for (int64_t d : shape) s.emplace_back(d);
  std::optional<DType> dt = onnx::toDType(v.dataType);
  if (!dt) fail(fmt::format("input '{}' has an element type lazyjit lacks", v.name));
  if (dt->isFloat()) return Tensor::randn(s, TensorOptions(*dt));
  return Tensor::zeros(s, TensorOptions(*dt));
}

} // namespace

int runOnnxInput(const std::string &file, const std::string *bytes, DumpOptions &opts,
                 const OnnxOptions &onnxOpts, std::ostream &out) {
  onnx::Model model =
      bytes ? onnx::Model::fromBytes(std::vector<uint8_t>(bytes->begin(), bytes->end()), file)
            : onnx::Model::load(file);
  std::map<std::string, int64_t> dims = parseDims(onnxOpts.dims);

  std::map<std::string, Tensor> inputs;
  auto known = [&](const std::string &name) {
    for (const onnx::ModelValue &v : model.inputs())
      if (v.name == name) return true;
    return false;
  };
  for (const std::string &spec : onnxOpts.inputs) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) {
      // a directory in ONNX's test-data layout: input_<i>.pb (or .npy) by graph-input position
      if (!fs::is_directory(spec))
        fail(fmt::format("--input '{}': expected NAME=FILE or a test-data directory", spec));
      for (size_t i = 0; i < model.inputs().size(); ++i) {
        std::string stem = (fs::path(spec) / fmt::format("input_{}", i)).string();
        if (fs::exists(stem + ".pb"))
          inputs[model.inputs()[i].name] = readTensorFile(stem + ".pb");
        else if (fs::exists(stem + ".npy"))
          inputs[model.inputs()[i].name] = readTensorFile(stem + ".npy");
      }
      continue;
    }
    std::string name = spec.substr(0, eq);
    if (!known(name)) {
      std::vector<std::string> names;
      for (const onnx::ModelValue &v : model.inputs()) names.push_back(v.name);
      fail(fmt::format("--input '{}': the model has no input '{}' (its inputs: {})", spec, name,
                       fmt::join(names, ", ")));
    }
    inputs[name] = readTensorFile(spec.substr(eq + 1));
  }
  for (const onnx::ModelValue &v : model.inputs())
    if (!inputs.count(v.name)) {
      if (!onnxOpts.inputs.empty())
        fail(fmt::format("no value for the model's input '{}': give --input {}=FILE", v.name,
                         v.name));
      Tensor::manualSeed(0);
      inputs[v.name] = syntheticInput(v, dims);
    }

  std::map<std::string, Tensor> results = model.run(inputs);
  KernelChecker checker;
  DumpContext ctx(out, opts);
  for (const onnx::ModelValue &v : model.outputs()) ctx.outputs.emplace_back(v.name, results.at(v.name));
  if (!onnxOpts.outDir.empty()) opts.run = true;
  if (opts.check)
    setBeforeKernelObserver([&](const ScheduleItem &si, std::span<Buffer *const> bufs) { checker.beforeRun(si, bufs); });
  setScheduleObserver([&](const ScheduleItem &si, const Program *prg) {
    if (opts.check) checker.observe(si, prg);
    if (si.isKernel())
      ctx.scriptRuns.emplace_back(0, prg ? prg->info().name : kernelName(*si.ast, config().mergeView));
  });
  struct ObserverReset {
    ~ObserverReset() {
      setScheduleObserver(nullptr);
      setBeforeKernelObserver(nullptr);
    }
  } observerReset;
  int rc = emitAndRun(ctx, opts, checker);
  if (!onnxOpts.outDir.empty()) {
    std::error_code ec;
    fs::create_directories(onnxOpts.outDir, ec);
    if (ec) fail(fmt::format("-o {}: cannot create the directory: {}", onnxOpts.outDir, ec.message()));
    for (size_t i = 0; i < ctx.outputs.size(); ++i) {
      std::string stem = (fs::path(onnxOpts.outDir) / fmt::format("output_{}", i)).string();
      onnx::saveTensorFile(ctx.outputs[i].second, stem + ".pb", ctx.outputs[i].first);
      if (ctx.outputs[i].second.dtype() != dtypes::bfloat16)
        npySave(ctx.outputs[i].second, stem + ".npy");
    }
  }
  return rc;
}

} // namespace lazyjit::tool

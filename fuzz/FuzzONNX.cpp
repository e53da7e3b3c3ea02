// Fuzz target: ONNX files. The wire reader (parseModel) on arbitrary bytes: damage must be a
// lazyjit::Error, never a crash, a hang or a huge allocation; and every view a parsed model holds
// (raw_data, packed float/double runs, string_data) must lie inside the input, which the walk
// below checks and reads byte by byte so that ASan sees any stray one. Then the importer: a model
// that parses is loaded (onnx::Model's checks of every node), and one with small static inputs is
// run on zeros and its outputs scheduled, so each op's code sees damaged attributes, shapes and
// graphs; anything but a lazyjit::Error is a finding. Seeds: fuzz/corpus/onnx and, through
// scripts/fuzz.sh, ONNX's node-test models.
#include "FuzzCommon.h"
#include "lazyjit/ONNX/Model.h"
#include "lazyjit/ONNX/Proto.h"
#include "lazyjit/Support/Error.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <typeinfo>
#include <vector>
#include <span>
#include <string>

namespace {

using namespace lazyjit::onnx;

struct Walker {
  std::span<const uint8_t> input;
  unsigned sum = 0;

  void view(std::span<const uint8_t> v, const char *what) {
    if (v.empty()) return;
    if (v.data() < input.data() || v.size() > input.size() ||
        v.data() - input.data() > static_cast<std::ptrdiff_t>(input.size() - v.size())) {
      std::fprintf(stderr, "fuzz-onnx: %s view outside the input\n", what);
      std::abort();
    }
    for (uint8_t b : v) sum += b;
  }

  void tensor(const TensorProto &t) {
    view(t.rawData, "raw_data");
    view(t.floatData.bytes(), "float_data");
    view(t.doubleData.bytes(), "double_data");
    for (auto s : t.stringData) view(s, "string_data");
    for (float f : t.floatData.toVector()) sum += f == 0;
    try {
      (void)elementCount(t, "fuzz.onnx");
    } catch (const lazyjit::ParseError &) {
    }
  }

  void graph(const GraphProto &g) {
    for (const TensorProto &t : g.initializer) tensor(t);
    for (const NodeProto &n : g.node)
      for (const AttributeProto &a : n.attribute) {
        view(a.floats.bytes(), "floats");
        if (a.t) tensor(*a.t);
        for (const TensorProto &t : a.tensors) tensor(t);
        if (a.g) graph(*a.g);
        for (const GraphProto &sub : a.graphs) graph(sub);
        if (a.sparseTensor) {
          tensor(a.sparseTensor->values);
          tensor(a.sparseTensor->indices);
        }
      }
  }
};

/// Loads the model and, when its inputs are small and static, builds and schedules its outputs.
void import(const uint8_t *data, size_t size) {
  using lazyjit::Tensor;
  lazyjit::onnx::Model m =
      lazyjit::onnx::Model::fromBytes(std::vector<uint8_t>(data, data + size), "fuzz.onnx");
  std::map<std::string, Tensor> inputs;
  int64_t total = 0;
  for (const lazyjit::onnx::ModelValue &v : m.inputs()) {
    if (!v.hasShape) return;
    lazyjit::Shape shape;
    int64_t n = 1;
    for (const Dimension &d : v.dims) {
      if (d.kind != Dimension::Kind::Value || d.value < 0 || d.value > 64) return;
      n *= d.value;
      shape.emplace_back(d.value);
    }
    total += n;
    if (total > 4096) return;
    std::optional<lazyjit::DType> dt = lazyjit::onnx::toDType(v.dataType);
    if (!dt) return;
    inputs[v.name] = Tensor::zeros(shape, lazyjit::TensorOptions(*dt));
  }
  for (const auto &[name, t] : m.run(inputs)) (void)lazyjit::schedule(t.lazydata());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20)) return -1;
  lazyjit::fuzz::setUp();
  std::span<const uint8_t> input(data, size);
  try {
    ModelProto m = parseModel(input, "fuzz.onnx");
    Walker w{input};
    if (m.graph) w.graph(*m.graph);
    if (w.sum == 0xdeadbeef) std::fprintf(stderr, "%u\n", w.sum); // keep the reads
  } catch (const lazyjit::InternalError &e) {
    std::fprintf(stderr, "fuzz-onnx: internal error: %s\n", e.what());
    std::abort();
  } catch (const lazyjit::Error &) {
    return 0;
  }
  try {
    import(data, size);
  } catch (const lazyjit::InternalError &e) {
    std::fprintf(stderr, "fuzz-onnx: internal error: %s\n", e.what());
    std::abort();
  } catch (const lazyjit::Error &) {
  } catch (const std::exception &e) {
    std::fprintf(stderr, "fuzz-onnx: %s escaped the importer: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}

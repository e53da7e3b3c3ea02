// Fuzz target: the ONNX wire reader (parseModel) on arbitrary bytes. Damage must be a
// lazyjit::Error, never a crash, a hang or a huge allocation; and every view a parsed model holds
// (raw_data, packed float/double runs, string_data) must lie inside the input, which the walk
// below checks and reads byte by byte so that ASan sees any stray one.
#include "FuzzCommon.h"
#include "lazyjit/ONNX/Proto.h"
#include "lazyjit/Support/Error.h"

#include <cstdio>
#include <cstdlib>
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
  }
  return 0;
}

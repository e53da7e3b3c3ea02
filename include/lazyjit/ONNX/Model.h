// An ONNX model as a function of Tensors: load checks that every node is one lazyjit can run, and
// run builds the graph's outputs from its inputs with Tensor ops (nothing is computed until a
// caller realizes them). Weights are lazy tensors that copy their bytes out of the mapped file
// when first realized.
//
// Everything that can be checked without the inputs is checked at load: the default-domain opset,
// that each node's op type is in the op table (lib/ONNX/Ops.cpp) with attributes it handles (else
// one UnsupportedError naming the file, node, op type and opset), and that every node reads only
// names that a graph input, an initializer or an earlier node defines (ONNX graphs are
// topologically sorted; else an Error naming the node and the name).
#pragma once

#include "lazyjit/ONNX/Proto.h"
#include "lazyjit/Tensor/Tensor.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace lazyjit::onnx {

namespace fold {
struct HostValue;
}

/// A graph input or output as the model declares it. `dims` is empty for a scalar; `hasShape` is
/// false when the model leaves the rank unknown.
struct ModelValue {
  std::string name;
  DataType dataType = DataType::Undefined;
  std::vector<Dimension> dims;
  bool hasShape = false;
};

/// A loaded model. Copies share the model's bytes and weights.
class Model {
public:
  /// Maps and parses `path`, then checks the graph (see the top of this file).
  static Model load(const std::string &path);
  /// The same from a whole .onnx file's bytes; `name` names the model in messages.
  static Model fromBytes(std::vector<uint8_t> bytes, const std::string &name = "model.onnx");

  /// The graph inputs a caller gives to run(), in the graph's order (inputs that an initializer
  /// also defines, which older models list, are left out: the initializer is their value).
  const std::vector<ModelValue> &inputs() const { return inputs_; }
  const std::vector<ModelValue> &outputs() const { return outputs_; }
  /// The version of the default domain ("" or "ai.onnx") that the model imports (0: none).
  int64_t opsetVersion() const { return opset_; }
  const std::string &fileName() const { return fileName_; }

  /// The graph's outputs by name, built from `inputs` (each graph input by name, with the dtype
  /// and the known dims the model declares; else an Error naming the input). The results are
  /// lazy; reading one back realizes it.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor> &inputs) const;
  /// The same by position: `inputs` in the order of inputs(), the outputs in the order of
  /// outputs() (a model as a function of Tensors, as Jit takes it). A count that differs from
  /// inputs() is an Error.
  std::vector<Tensor> runInOrder(const std::vector<Tensor> &inputs) const;

private:
  Model(std::shared_ptr<const void> storage, ModelProto proto, std::string fileName);
  void check();
  /// Checks `g`'s nodes (and their subgraphs') given the names the enclosing scopes define.
  void checkGraph(const GraphProto &g, std::set<std::string> defined, int depth) const;
  /// The values a run has computed so far: as tensors, and on the host where they are known
  /// there (constants and shape arithmetic, lib/ONNX/HostFold.h).
  struct RunState {
    std::map<std::string, Tensor> env;
    std::map<std::string, std::shared_ptr<const fold::HostValue>> host;
  };
  /// Runs `g`'s nodes in order on `state` (the enclosing scopes' values and g's inputs) and adds
  /// every node's outputs to it.
  void runGraph(const GraphProto &g, RunState &state) const;

  /// Owns the bytes that `proto`'s views point into (a MappedFile or a vector).
  std::shared_ptr<const void> storage_;
  std::shared_ptr<const ModelProto> proto_;
  std::string fileName_;
  int64_t opset_ = 0;
  /// Every imported domain's version ("" for the default domain).
  std::map<std::string, int64_t> opsets_;
  /// The version of `n`'s domain the model imports (0: none).
  int64_t opsetOf(const NodeProto &n) const;
  std::vector<ModelValue> inputs_, outputs_;
  /// The initializers as lazy tensors, made once at load.
  std::map<std::string, Tensor> initializers_;
  /// The small initializers' values on the host, for shape arithmetic.
  std::map<std::string, std::shared_ptr<const fold::HostValue>> hostInitializers_;
};

/// A TensorProto file (ONNX's test-data layout: input_0.pb, output_0.pb, ...) as a lazy tensor over
/// the mapped file. An unreadable file or a tensor lazyjit has no dtype for is an Error naming
/// `path`.
Tensor loadTensorFile(const std::string &path);

/// A TensorProto as a lazy tensor; `storage` keeps the bytes its raw_data points into alive, and
/// `where` names it in messages.
Tensor tensorFromProto(const TensorProto &t, std::shared_ptr<const void> storage,
                       const std::string &where);

/// Writes `t` (realized here) as a TensorProto file named `name` with raw_data, as ONNX's test data
/// is written (output_0.pb ...). A write error is an Error naming `path`.
void saveTensorFile(const Tensor &t, const std::string &path, const std::string &name = "");

/// The op types the importer runs, sorted: "Conv" for the default domain, "domain:Type" for
/// others ("ai.onnx.preview.training:Adam").
std::vector<std::string> supportedOpTypes();

/// The lazyjit dtype of an ONNX element type, or nullopt where lazyjit has none (STRING, ...).
std::optional<DType> toDType(DataType t);

/// The ONNX element type of a lazyjit dtype.
DataType toDataType(DType dt);

} // namespace lazyjit::onnx

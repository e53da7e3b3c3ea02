// The ONNX op table the importer runs nodes with (private to lib/ONNX): for each supported op type
// of the default domain, a load-time check of its attributes and input count, and the Tensor code
// that runs it.
#pragma once

#include "lazyjit/ONNX/Proto.h"
#include "lazyjit/Tensor/Tensor.h"

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lazyjit::onnx::ops {

/// One node as an op sees it.
struct NodeContext {
  const NodeProto &node;
  int64_t opset;
  /// The model's file name, for messages about tensors in attributes.
  const std::string &fileName;
  /// Keeps the bytes that attribute tensors (Constant's value) point into alive.
  std::shared_ptr<const void> storage;
  /// At run time, runs a graph attribute of this node (If's branches, Loop's body): binds `inputs`
  /// to the subgraph's inputs in order (it sees the enclosing graphs' values too) and returns its
  /// outputs in order. Empty during `check`, which only sees the node.
  std::function<std::vector<Tensor>(const GraphProto &g, const std::vector<Tensor> &inputs)>
      runSubgraph = {};
};

/// An op: `check` runs at load and throws UnsupportedError (attributes it does not handle) or
/// Error (a malformed node); `run` takes the node's inputs (an undefined Tensor for an omitted
/// optional one) and returns its `numOutputs` outputs in order. Their messages do not name the
/// node: the importer puts "model.onnx: node 'fc1' (Gemm, opset 13): " in front.
struct OpDef {
  std::string_view opType;
  size_t minInputs, maxInputs, numOutputs;
  void (*check)(const NodeContext &ctx);
  std::vector<Tensor> (*run)(const NodeContext &ctx, const std::vector<Tensor> &in);
  /// The op's domain: "" for the default one (also written "ai.onnx"), else
  /// "ai.onnx.preview.training", "ai.onnx.ml", "com.microsoft".
  std::string_view domain = "";
};

/// The op named `opType` of `domain` ("" or "ai.onnx" for the default domain), or null.
const OpDef *findOp(std::string_view opType, std::string_view domain = "");
/// Every supported op, sorted: "Conv", or "com.microsoft:Attention" outside the default domain.
std::vector<std::string> supportedOps();

// The op tables, one per file; findOp looks through all of them (an op type is in one table).
std::span<const OpDef> coreOps();    // Ops.cpp: element-wise basics, MatMul, Gemm, reshapes
std::span<const OpDef> mathOps();    // OpsMath.cpp: element-wise math, comparisons, logic
std::span<const OpDef> reduceOps();  // OpsReduce.cpp: reductions, arg-reductions, TopK, Einsum
std::span<const OpDef> convOps();    // OpsConv.cpp: convolution, pooling, MaxUnpool
std::span<const OpDef> normOps();    // OpsNorm.cpp: normalization, Dropout, losses
std::span<const OpDef> resizeOps();  // OpsResize.cpp: Resize, Upsample, GridSample, RoiAlign
std::span<const OpDef> tensorOps();  // OpsTensor.cpp: slicing, gathers, scatters, padding
std::span<const OpDef> quantOps();   // OpsQuant.cpp: quantization, integer matmul and conv
std::span<const OpDef> rnnOps();     // OpsRNN.cpp: RNN, GRU, LSTM
std::span<const OpDef> controlOps(); // OpsControl.cpp: If, Loop, Scan, host lookups (NMS, TF-IDF)
std::span<const OpDef> signalOps();  // OpsSignal.cpp: windows, DFT, STFT, MelWeightMatrix
std::span<const OpDef> domainOps();  // OpsDomains.cpp: the training, ai.onnx.ml, com.microsoft ops
std::span<const OpDef> newOps();     // OpsNew.cpp: default-domain ops of opsets 18-21

/// The lazyjit dtype of an ONNX tensor element type, or nullopt when lazyjit has none.
std::optional<DType> toDType(DataType t);

/// A lazy tensor of `t`'s values: raw_data is copied out of `storage`'s bytes when the tensor is
/// realized, a typed list (float_data, int64_data, ...) is copied now. `what` names the tensor in
/// messages ("initializer 'W'"; `fileName` goes in front). External data and element types lazyjit
/// lacks are UnsupportedErrors; data that does not match dims is an Error.
Tensor tensorFromProto(const TensorProto &t, std::shared_ptr<const void> storage,
                       const std::string &fileName, const std::string &what);

} // namespace lazyjit::onnx::ops

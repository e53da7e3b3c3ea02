// The parts of onnx.proto that running a model needs, read straight from protobuf's wire format.
//
// parseModel reads a ModelProto from the bytes of a .onnx file (usually a MappedFile) without
// libprotobuf. Weights are never copied: TensorProto::rawData, a packed float_data/double_data
// run and each string_data entry are views of the input bytes, so a parsed model is only valid
// while those bytes are (loadModel keeps its mapping alive beside the model). Small fields
// (names, dims, int lists, attributes) are decoded into ordinary members.
//
// The reader follows protobuf's rules where ONNX files rely on them: fields may come in any order
// and repeat (the last value of a singular field wins, a repeated one accumulates); repeated
// numbers may be packed or not, or both; fields this file does not know, of any wire type, are
// skipped, so models of newer IR versions and opsets parse. Anything else is a ParseError whose
// message names the file, the byte offset and the message and field being read:
// "model.onnx: byte 1234: truncated varint in NodeProto.input". Every read is bounds-checked, and
// nothing is allocated for a count the input does not back with bytes.
#pragma once

#include "lazyjit/Support/MappedFile.h"

#include <bit>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace lazyjit::onnx {

/// TensorProto.DataType. Values the file names but this list lacks are kept as they are.
enum class DataType : int32_t {
  Undefined = 0,
  Float = 1,
  Uint8 = 2,
  Int8 = 3,
  Uint16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  Uint32 = 12,
  Uint64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
};
/// ONNX's upper-case name ("FLOAT", "BFLOAT16"), or "" for a value outside the enum.
std::string_view dataTypeName(DataType t);

/// AttributeProto.AttributeType.
enum class AttributeType : int32_t {
  Undefined = 0,
  Float = 1,
  Int = 2,
  String = 3,
  Tensor = 4,
  Graph = 5,
  Floats = 6,
  Ints = 7,
  Strings = 8,
  Tensors = 9,
  Graphs = 10,
  SparseTensor = 11,
  SparseTensors = 12,
  TypeProto = 13,
  TypeProtos = 14,
};
/// ONNX's upper-case name ("INTS"), or "" for a value outside the enum.
std::string_view attributeTypeName(AttributeType t);

/// TensorProto.DataLocation: where a tensor's data is.
enum class DataLocation : int32_t { Default = 0, External = 1 };

/// A repeated float or double field (float_data, double_data, AttributeProto.floats). One packed
/// run on the wire, which is what every writer emits, stays a view of the input bytes; unpacked
/// elements or a second run make it decode everything into a vector of its own.
template <typename T> class FixedList {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);

public:
  size_t size() const { return isView_ ? bytes_.size() / sizeof(T) : values_.size(); }
  bool empty() const { return size() == 0; }
  /// Element `i` (< size()), decoded from little-endian when the list is a view.
  T operator[](size_t i) const {
    return isView_ ? decode(bytes_.data() + i * sizeof(T)) : values_[i];
  }
  std::vector<T> toVector() const;
  /// True when the list is one packed run, a view of the input.
  bool isView() const { return isView_; }
  /// The run's little-endian bytes when isView(), else an empty span.
  std::span<const uint8_t> bytes() const { return bytes_; }

  /// Appends a packed run (its size a multiple of sizeof(T)); the reader's interface.
  void appendPacked(std::span<const uint8_t> run);
  /// Appends one unpacked element; the reader's interface.
  void append(T v);

  /// One little-endian element at `p`.
  static T decode(const uint8_t *p);

private:
  void materialize();

  std::span<const uint8_t> bytes_;
  std::vector<T> values_;
  bool isView_ = false;
};

/// StringStringEntryProto (external_data, metadata_props).
struct StringStringEntry {
  std::string key;
  std::string value;
};

/// OperatorSetIdProto: the operator set `version` of `domain` ("" and "ai.onnx" are the default
/// domain).
struct OperatorSetId {
  std::string domain;
  int64_t version = 0;
};

/// TensorProto. A tensor's data is in exactly one place: rawData (hasRawData), one of the typed
/// lists (which one follows dataType, as in onnx.proto), or an external file (dataLocation ==
/// External, with externalData's "location", "offset", "length", "checksum" entries as strings).
/// Nothing here checks that the data agrees with dims and dataType: see elementCount.
struct TensorProto {
  std::string name;
  std::string docString;
  std::vector<int64_t> dims;
  DataType dataType = DataType::Undefined;
  /// The bytes of raw_data, a view of the input; hasRawData tells an empty raw_data (a tensor
  /// with a 0 dimension) from none.
  std::span<const uint8_t> rawData;
  bool hasRawData = false;
  FixedList<float> floatData;   // FLOAT, COMPLEX64
  FixedList<double> doubleData; // DOUBLE, COMPLEX128
  /// INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16, BFLOAT16 and the FLOAT8 types (16-bit and
  /// 8-bit types hold their bits in the low bits).
  std::vector<int32_t> int32Data;
  std::vector<int64_t> int64Data;   // INT64
  std::vector<uint64_t> uint64Data; // UINT32, UINT64
  /// STRING elements, each a view of the input bytes.
  std::vector<std::span<const uint8_t>> stringData;
  DataLocation dataLocation = DataLocation::Default;
  std::vector<StringStringEntry> externalData;
};

/// The number of elements `dims` describe (1 for a scalar). A negative dimension or a product
/// that overflows 64 bits is a ParseError naming `fileName` and the tensor.
int64_t elementCount(const TensorProto &t, const std::string &fileName);

/// SparseTensorProto (only as an attribute value): the non-zero `values`, their `indices` (a
/// [NNZ] tensor of linear indices or an [NNZ, rank] tensor of coordinates) and the dense `dims`.
struct SparseTensorProto {
  TensorProto values;
  TensorProto indices;
  std::vector<int64_t> dims;
};

/// TensorShapeProto.Dimension: a known size (dim_value), a symbolic one (dim_param, "batch"), or
/// neither (an unknown size).
struct Dimension {
  enum class Kind { Unknown, Value, Param };
  Kind kind = Kind::Unknown;
  int64_t value = 0; // when kind == Value
  std::string param; // when kind == Param
  std::string denotation;
};

/// TypeProto. For Tensor and SparseTensor, elemType and shape are read (shape is absent when the
/// type leaves the rank unknown, and an empty vector for a scalar); for the other kinds only the
/// kind is recorded.
struct TypeProto {
  enum class Kind { Unset, Tensor, Sequence, Map, Optional, SparseTensor };
  Kind kind = Kind::Unset;
  DataType elemType = DataType::Undefined;
  std::optional<std::vector<Dimension>> shape;
  std::string denotation;
};

/// ValueInfoProto: a graph input, output or intermediate value and its type.
struct ValueInfoProto {
  std::string name;
  std::optional<TypeProto> type;
  std::string docString;
};

struct GraphProto;

/// AttributeProto. `type` says which value field holds the attribute (a file may omit it for
/// IR version < 2; the importer then looks at which field is set). A reference attribute inside a
/// function body names its caller's attribute in refAttrName instead.
struct AttributeProto {
  std::string name;
  std::string refAttrName;
  std::string docString;
  AttributeType type = AttributeType::Undefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  // The single message values are shared (null when absent), which keeps an attribute small
  // and copyable; a parsed model never changes them.
  std::shared_ptr<const TensorProto> t;
  std::shared_ptr<const GraphProto> g;
  std::shared_ptr<const SparseTensorProto> sparseTensor;
  FixedList<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<TensorProto> tensors;
  std::vector<GraphProto> graphs;
  std::vector<SparseTensorProto> sparseTensors;
};

/// NodeProto: one operator call. An empty input name is an omitted optional input.
struct NodeProto {
  std::vector<std::string> input;
  std::vector<std::string> output;
  std::string name;
  std::string opType;
  std::string domain;
  std::vector<AttributeProto> attribute;
  std::string docString;
};

/// GraphProto. A model with sparse_initializer entries is rejected (UnsupportedError).
struct GraphProto {
  std::vector<NodeProto> node;
  std::string name;
  std::vector<TensorProto> initializer;
  std::string docString;
  std::vector<ValueInfoProto> input;
  std::vector<ValueInfoProto> output;
  std::vector<ValueInfoProto> valueInfo;
};

/// ModelProto. Functions (model-local functions) and training info are skipped.
struct ModelProto {
  int64_t irVersion = 0;
  std::vector<OperatorSetId> opsetImport;
  std::string producerName;
  std::string producerVersion;
  std::string domain;
  int64_t modelVersion = 0;
  std::string docString;
  std::optional<GraphProto> graph;
  std::vector<StringStringEntry> metadataProps;
};

/// Reads a ModelProto from `bytes` (a whole .onnx file; offsets in messages are offsets into it).
/// `fileName` only names the input in messages. The result holds views of `bytes` (see the top of
/// this file). Only the wire format is checked: an empty input is an empty model, and whether the
/// graph makes sense is the importer's business.
ModelProto parseModel(std::span<const uint8_t> bytes, const std::string &fileName);

/// Reads one TensorProto from `bytes` (a .pb file of ONNX's test-data layout, input_0.pb ...). The
/// result's raw_data and string_data are views of `bytes`.
TensorProto parseTensorProto(std::span<const uint8_t> bytes, const std::string &fileName);

/// A model and the mapping its views point into.
struct ModelFile {
  std::shared_ptr<const MappedFile> file;
  ModelProto model;
};
/// Maps the file at `path` and parses it.
ModelFile loadModel(const std::string &path);

// ---- FixedList ----------------------------------------------------------------------------------

template <typename T> T FixedList<T>::decode(const uint8_t *p) {
  using U = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  U bits = 0;
  for (size_t k = 0; k < sizeof(T); ++k) bits |= U(p[k]) << (8 * k);
  return std::bit_cast<T>(bits);
}

template <typename T> std::vector<T> FixedList<T>::toVector() const {
  if (!isView_) return values_;
  std::vector<T> out(size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = (*this)[i];
  return out;
}

template <typename T> void FixedList<T>::materialize() {
  if (!isView_) return;
  values_ = toVector();
  bytes_ = {};
  isView_ = false;
}

template <typename T> void FixedList<T>::appendPacked(std::span<const uint8_t> run) {
  if (!isView_ && values_.empty()) {
    bytes_ = run;
    isView_ = true;
    return;
  }
  materialize();
  values_.reserve(values_.size() + run.size() / sizeof(T));
  for (size_t at = 0; at + sizeof(T) <= run.size(); at += sizeof(T))
    values_.push_back(decode(run.data() + at));
}

template <typename T> void FixedList<T>::append(T v) {
  materialize();
  values_.push_back(v);
}

} // namespace lazyjit::onnx

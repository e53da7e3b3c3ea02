// onnx.proto's messages read with the wire reader: one function per message, whose cases are the
// field numbers of onnx.proto (IR version 9, opset 20). Fields not listed are skipped.
#include "lazyjit/ONNX/Proto.h"
#include "WireReader.h"
#include "lazyjit/Support/Error.h"

#include <array>
#include <memory>

namespace lazyjit::onnx {

using wire::MessageReader;

namespace {

constexpr std::array<std::string_view, 21> kDataTypeNames = {
    "UNDEFINED", "FLOAT",      "UINT8",        "INT8",         "UINT16",         "INT16",
    "INT32",     "INT64",      "STRING",       "BOOL",         "FLOAT16",        "DOUBLE",
    "UINT32",    "UINT64",     "COMPLEX64",    "COMPLEX128",   "BFLOAT16",       "FLOAT8E4M3FN",
    "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ"};

constexpr std::array<std::string_view, 15> kAttributeTypeNames = {
    "UNDEFINED", "FLOAT",  "INT",           "STRING",         "TENSOR",
    "GRAPH",     "FLOATS", "INTS",          "STRINGS",        "TENSORS",
    "GRAPHS",    "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO", "TYPE_PROTOS"};

void parseGraph(MessageReader &r, GraphProto &g);

/// The object a singular message field held by shared_ptr is read into: a new one, or the one
/// read so far, since a repeated message field merges into it (protobuf's rule). The object was
/// made non-const by make_shared below and nothing but this attribute holds it yet, so writing
/// through it is safe (copying it instead would make n repeats cost n^2).
template <typename T> T &mergeTarget(std::shared_ptr<const T> &p) {
  if (!p) p = std::make_shared<T>();
  return const_cast<T &>(*p);
}

void parseStringStringEntry(MessageReader &r, StringStringEntry &e) {
  while (r.next()) {
    switch (r.field()) {
    case 1: e.key = r.readString("key"); break;
    case 2: e.value = r.readString("value"); break;
    default: r.skip(); break;
    }
  }
}

void parseOperatorSetId(MessageReader &r, OperatorSetId &o) {
  while (r.next()) {
    switch (r.field()) {
    case 1: o.domain = r.readString("domain"); break;
    case 2: o.version = r.readInt64("version"); break;
    default: r.skip(); break;
    }
  }
}

void parseTensor(MessageReader &r, TensorProto &t) {
  while (r.next()) {
    switch (r.field()) {
    case 1: r.readVarints("dims", t.dims); break;
    case 2: t.dataType = static_cast<DataType>(r.readInt32("data_type")); break;
    case 4: r.readFixed("float_data", t.floatData); break;
    case 5: r.readVarints("int32_data", t.int32Data); break;
    case 6: t.stringData.push_back(r.readBytes("string_data")); break;
    case 7: r.readVarints("int64_data", t.int64Data); break;
    case 8: t.name = r.readString("name"); break;
    case 9:
      t.rawData = r.readBytes("raw_data");
      t.hasRawData = true;
      break;
    case 10: r.readFixed("double_data", t.doubleData); break;
    case 11: r.readVarints("uint64_data", t.uint64Data); break;
    case 12: t.docString = r.readString("doc_string"); break;
    case 13:
      r.readMessage("external_data", "StringStringEntryProto", [&](MessageReader &sub) {
        parseStringStringEntry(sub, t.externalData.emplace_back());
      });
      break;
    case 14: t.dataLocation = static_cast<DataLocation>(r.readInt32("data_location")); break;
    default: r.skip(); break; // 3 segment: a file of segments is not something a runner reads
    }
  }
}

void parseSparseTensor(MessageReader &r, SparseTensorProto &s) {
  while (r.next()) {
    switch (r.field()) {
    case 1:
      r.readMessage("values", "TensorProto",
                    [&](MessageReader &sub) { parseTensor(sub, s.values); });
      break;
    case 2:
      r.readMessage("indices", "TensorProto",
                    [&](MessageReader &sub) { parseTensor(sub, s.indices); });
      break;
    case 3: r.readVarints("dims", s.dims); break;
    default: r.skip(); break;
    }
  }
}

void parseDimension(MessageReader &r, Dimension &d) {
  while (r.next()) {
    switch (r.field()) {
    case 1:
      d.value = r.readInt64("dim_value");
      d.kind = Dimension::Kind::Value;
      d.param.clear();
      break;
    case 2:
      d.param = r.readString("dim_param");
      d.kind = Dimension::Kind::Param;
      d.value = 0;
      break;
    case 3: d.denotation = r.readString("denotation"); break;
    default: r.skip(); break;
    }
  }
}

void parseShape(MessageReader &r, std::vector<Dimension> &shape) {
  while (r.next()) {
    if (r.field() == 1)
      r.readMessage("dim", "TensorShapeProto.Dimension",
                    [&](MessageReader &sub) { parseDimension(sub, shape.emplace_back()); });
    else
      r.skip();
  }
}

/// TypeProto.Tensor and TypeProto.SparseTensor, which share their fields.
void parseTensorType(MessageReader &r, TypeProto &t) {
  while (r.next()) {
    switch (r.field()) {
    case 1: t.elemType = static_cast<DataType>(r.readInt32("elem_type")); break;
    case 2:
      // a repeated shape field merges into one shape, as protobuf merges a message field
      if (!t.shape) t.shape.emplace();
      r.readMessage("shape", "TensorShapeProto",
                    [&](MessageReader &sub) { parseShape(sub, *t.shape); });
      break;
    default: r.skip(); break;
    }
  }
}

void parseType(MessageReader &r, TypeProto &t) {
  auto kindOnly = [&](TypeProto::Kind k, const char *name) {
    (void)r.readBytes(name); // only the kind is recorded; the bytes are bounds-checked
    t = TypeProto{k, DataType::Undefined, std::nullopt, std::move(t.denotation)};
  };
  while (r.next()) {
    switch (r.field()) {
    case 1:
    case 8: {
      // a oneof: a new member replaces the old one, and the same one merges into itself
      auto kind = r.field() == 1 ? TypeProto::Kind::Tensor : TypeProto::Kind::SparseTensor;
      if (t.kind != kind)
        t = TypeProto{kind, DataType::Undefined, std::nullopt, std::move(t.denotation)};
      const char *name = r.field() == 1 ? "tensor_type" : "sparse_tensor_type";
      const char *message = r.field() == 1 ? "TypeProto.Tensor" : "TypeProto.SparseTensor";
      r.readMessage(name, message, [&](MessageReader &sub) { parseTensorType(sub, t); });
      break;
    }
    case 4: kindOnly(TypeProto::Kind::Sequence, "sequence_type"); break;
    case 5: kindOnly(TypeProto::Kind::Map, "map_type"); break;
    case 9: kindOnly(TypeProto::Kind::Optional, "optional_type"); break;
    case 6: t.denotation = r.readString("denotation"); break;
    default: r.skip(); break;
    }
  }
}

void parseValueInfo(MessageReader &r, ValueInfoProto &v) {
  while (r.next()) {
    switch (r.field()) {
    case 1: v.name = r.readString("name"); break;
    case 2:
      if (!v.type) v.type.emplace();
      r.readMessage("type", "TypeProto", [&](MessageReader &sub) { parseType(sub, *v.type); });
      break;
    case 3: v.docString = r.readString("doc_string"); break;
    default: r.skip(); break;
    }
  }
}

void parseAttribute(MessageReader &r, AttributeProto &a) {
  while (r.next()) {
    switch (r.field()) {
    case 1: a.name = r.readString("name"); break;
    case 21: a.refAttrName = r.readString("ref_attr_name"); break;
    case 13: a.docString = r.readString("doc_string"); break;
    case 20: a.type = static_cast<AttributeType>(r.readInt32("type")); break;
    case 2: a.f = r.readFloat("f"); break;
    case 3: a.i = r.readInt64("i"); break;
    case 4: a.s = r.readString("s"); break;
    case 5:
      r.readMessage("t", "TensorProto",
                    [&](MessageReader &sub) { parseTensor(sub, mergeTarget(a.t)); });
      break;
    case 6:
      r.readMessage("g", "GraphProto",
                    [&](MessageReader &sub) { parseGraph(sub, mergeTarget(a.g)); });
      break;
    case 22:
      r.readMessage("sparse_tensor", "SparseTensorProto", [&](MessageReader &sub) {
        parseSparseTensor(sub, mergeTarget(a.sparseTensor));
      });
      break;
    case 7: r.readFixed("floats", a.floats); break;
    case 8: r.readVarints("ints", a.ints); break;
    case 9: a.strings.push_back(r.readString("strings")); break;
    case 10:
      r.readMessage("tensors", "TensorProto",
                    [&](MessageReader &sub) { parseTensor(sub, a.tensors.emplace_back()); });
      break;
    case 11:
      r.readMessage("graphs", "GraphProto",
                    [&](MessageReader &sub) { parseGraph(sub, a.graphs.emplace_back()); });
      break;
    case 23:
      r.readMessage("sparse_tensors", "SparseTensorProto", [&](MessageReader &sub) {
        parseSparseTensor(sub, a.sparseTensors.emplace_back());
      });
      break;
    default: r.skip(); break; // 14 tp, 15 type_protos
    }
  }
}

void parseNode(MessageReader &r, NodeProto &n) {
  while (r.next()) {
    switch (r.field()) {
    case 1: n.input.push_back(r.readString("input")); break;
    case 2: n.output.push_back(r.readString("output")); break;
    case 3: n.name = r.readString("name"); break;
    case 4: n.opType = r.readString("op_type"); break;
    case 7: n.domain = r.readString("domain"); break;
    case 5:
      r.readMessage("attribute", "AttributeProto",
                    [&](MessageReader &sub) { parseAttribute(sub, n.attribute.emplace_back()); });
      break;
    case 6: n.docString = r.readString("doc_string"); break;
    default: r.skip(); break;
    }
  }
}

void parseGraph(MessageReader &r, GraphProto &g) {
  while (r.next()) {
    switch (r.field()) {
    case 1:
      r.readMessage("node", "NodeProto",
                    [&](MessageReader &sub) { parseNode(sub, g.node.emplace_back()); });
      break;
    case 2: g.name = r.readString("name"); break;
    case 5:
      r.readMessage("initializer", "TensorProto",
                    [&](MessageReader &sub) { parseTensor(sub, g.initializer.emplace_back()); });
      break;
    case 15:
      throw UnsupportedError(fmt::format(
          "{}: graph '{}': sparse initializers (GraphProto.sparse_initializer) are not supported",
          r.fileName(), g.name));
    case 10: g.docString = r.readString("doc_string"); break;
    case 11:
      r.readMessage("input", "ValueInfoProto",
                    [&](MessageReader &sub) { parseValueInfo(sub, g.input.emplace_back()); });
      break;
    case 12:
      r.readMessage("output", "ValueInfoProto",
                    [&](MessageReader &sub) { parseValueInfo(sub, g.output.emplace_back()); });
      break;
    case 13:
      r.readMessage("value_info", "ValueInfoProto",
                    [&](MessageReader &sub) { parseValueInfo(sub, g.valueInfo.emplace_back()); });
      break;
    default: r.skip(); break;
    }
  }
}

void parseModelFields(MessageReader &r, ModelProto &m) {
  while (r.next()) {
    switch (r.field()) {
    case 1: m.irVersion = r.readInt64("ir_version"); break;
    case 8:
      r.readMessage("opset_import", "OperatorSetIdProto", [&](MessageReader &sub) {
        parseOperatorSetId(sub, m.opsetImport.emplace_back());
      });
      break;
    case 2: m.producerName = r.readString("producer_name"); break;
    case 3: m.producerVersion = r.readString("producer_version"); break;
    case 4: m.domain = r.readString("domain"); break;
    case 5: m.modelVersion = r.readInt64("model_version"); break;
    case 6: m.docString = r.readString("doc_string"); break;
    case 7:
      if (!m.graph) m.graph.emplace();
      r.readMessage("graph", "GraphProto", [&](MessageReader &sub) { parseGraph(sub, *m.graph); });
      break;
    case 14:
      r.readMessage("metadata_props", "StringStringEntryProto", [&](MessageReader &sub) {
        parseStringStringEntry(sub, m.metadataProps.emplace_back());
      });
      break;
    default: r.skip(); break; // 20 training_info, 25 functions, ...
    }
  }
}

} // namespace

std::string_view dataTypeName(DataType t) {
  auto i = static_cast<int32_t>(t);
  return i >= 0 && size_t(i) < kDataTypeNames.size() ? kDataTypeNames[size_t(i)] : "";
}

std::string_view attributeTypeName(AttributeType t) {
  auto i = static_cast<int32_t>(t);
  return i >= 0 && size_t(i) < kAttributeTypeNames.size() ? kAttributeTypeNames[size_t(i)] : "";
}

int64_t elementCount(const TensorProto &t, const std::string &fileName) {
  int64_t n = 1;
  for (int64_t d : t.dims) {
    LAZYJIT_USER_CHECK(d >= 0, ParseError, "{}: tensor '{}': negative dimension {}", fileName,
                       t.name, d);
    LAZYJIT_USER_CHECK(!__builtin_mul_overflow(n, d, &n), ParseError,
                       "{}: tensor '{}': the shape's size overflows 64 bits", fileName, t.name);
  }
  return n;
}

ModelProto parseModel(std::span<const uint8_t> bytes, const std::string &fileName) {
  ModelProto m;
  MessageReader r(bytes, fileName, "ModelProto");
  parseModelFields(r, m);
  return m;
}

TensorProto parseTensorProto(std::span<const uint8_t> bytes, const std::string &fileName) {
  TensorProto t;
  MessageReader r(bytes, fileName, "TensorProto");
  parseTensor(r, t);
  return t;
}

ModelFile loadModel(const std::string &path) {
  ModelFile mf;
  mf.file = MappedFile::open(path);
  mf.model = parseModel(mf.file->bytes(), path);
  return mf;
}

} // namespace lazyjit::onnx

// A protobuf writer just big enough to build ONNX test inputs field by field, and the helpers the
// ONNX reader's tests share (a tensor's float bytes, an attribute header, a tensor ValueInfoProto,
// parseModel on a writer's bytes) and the importer's tests build graphs with (nodes, attributes,
// initializers, a model importing one opset). No files and no protobuf library: every test input is built in
// the test that reads it.
#pragma once

#include "lazyjit/ONNX/Proto.h"

#include <bit>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace lazyjit::onnx::testing {

/// A protobuf writer just big enough to build test inputs; each call appends one field.
class Pb {
public:
  Pb &tag(uint32_t field, int wireType) {
    return putVarint(uint64_t(field) << 3 | uint64_t(wireType));
  }
  Pb &putVarint(uint64_t v) {
    for (; v >= 0x80; v >>= 7) out.push_back(uint8_t(v | 0x80));
    out.push_back(uint8_t(v));
    return *this;
  }
  Pb &raw(std::initializer_list<uint8_t> bytes) {
    out.insert(out.end(), bytes);
    return *this;
  }
  Pb &varint(uint32_t field, uint64_t v) { return tag(field, 0).putVarint(v); }
  Pb &fixed32(uint32_t field, uint32_t v) {
    tag(field, 5);
    for (int k = 0; k < 4; ++k) out.push_back(uint8_t(v >> (8 * k)));
    return *this;
  }
  Pb &fixed64(uint32_t field, uint64_t v) {
    tag(field, 1);
    for (int k = 0; k < 8; ++k) out.push_back(uint8_t(v >> (8 * k)));
    return *this;
  }
  Pb &f32(uint32_t field, float v) { return fixed32(field, std::bit_cast<uint32_t>(v)); }
  Pb &f64(uint32_t field, double v) { return fixed64(field, std::bit_cast<uint64_t>(v)); }
  Pb &bytes(uint32_t field, std::string_view s) {
    tag(field, 2).putVarint(s.size());
    out.insert(out.end(), s.begin(), s.end());
    return *this;
  }
  Pb &msg(uint32_t field, const Pb &m) { return bytes(field, m.str()); }
  Pb &packedVarints(uint32_t field, std::initializer_list<int64_t> vs) {
    Pb run;
    for (int64_t v : vs) run.putVarint(uint64_t(v));
    return bytes(field, run.str());
  }
  Pb &packedFloats(uint32_t field, std::initializer_list<float> vs) {
    std::string run;
    for (float v : vs) run += le32(std::bit_cast<uint32_t>(v));
    return bytes(field, run);
  }
  Pb &packedDoubles(uint32_t field, std::initializer_list<double> vs) {
    std::string run;
    for (double v : vs) {
      uint64_t b = std::bit_cast<uint64_t>(v);
      run += le32(uint32_t(b)) + le32(uint32_t(b >> 32));
    }
    return bytes(field, run);
  }
  /// One field of each wire type (and the largest field number), which no reader knows.
  Pb &unknowns() {
    return varint(1000, 123456789).fixed64(1001, 7).bytes(1002, "junk").fixed32(1003, 9).varint(
        536870911, 1);
  }

  std::string_view str() const { return {reinterpret_cast<const char *>(out.data()), out.size()}; }
  static std::string le32(uint32_t v) {
    std::string s;
    for (int k = 0; k < 4; ++k) s.push_back(char(v >> (8 * k)));
    return s;
  }

  std::vector<uint8_t> out;
};

inline std::string floatBytes(std::initializer_list<float> vs) {
  std::string s;
  for (float v : vs) s += Pb::le32(std::bit_cast<uint32_t>(v));
  return s;
}

inline Pb attr(std::string_view name, AttributeType type) {
  Pb a;
  a.bytes(1, name).varint(20, uint64_t(type));
  return a;
}

/// A ValueInfoProto of a tensor; `dims` entries: >= 0 a dim_value, "" an unknown dim, else a
/// dim_param.
inline Pb tensorInfo(std::string_view name, DataType elem, std::initializer_list<std::string> dims) {
  Pb shape;
  for (const std::string &d : dims) {
    Pb dim;
    if (!d.empty() && d[0] >= '0' && d[0] <= '9')
      dim.varint(1, std::stoull(d));
    else if (!d.empty())
      dim.bytes(2, d);
    shape.msg(1, dim);
  }
  Pb tensor;
  tensor.varint(1, uint64_t(elem)).msg(2, shape);
  Pb type;
  type.msg(1, tensor);
  Pb vi;
  vi.bytes(1, name).msg(2, type);
  return vi;
}

// ---- graph builders (the importer's tests) ------------------------------------------------------

/// A NodeProto calling `opType` (default domain) with attributes added by the caller.
inline Pb node(std::string_view opType, std::initializer_list<std::string_view> inputs,
               std::initializer_list<std::string_view> outputs, std::string_view name = "") {
  Pb n;
  for (std::string_view in : inputs) n.bytes(1, in);
  for (std::string_view out : outputs) n.bytes(2, out);
  if (!name.empty()) n.bytes(3, name);
  n.bytes(4, opType);
  return n;
}
inline Pb intAttr(std::string_view name, int64_t v) {
  return attr(name, AttributeType::Int).varint(3, uint64_t(v));
}
inline Pb floatAttr(std::string_view name, float v) {
  return attr(name, AttributeType::Float).f32(2, v);
}
inline Pb intsAttr(std::string_view name, std::initializer_list<int64_t> vs) {
  return attr(name, AttributeType::Ints).packedVarints(8, vs);
}
inline Pb floatsAttr(std::string_view name, std::initializer_list<float> vs) {
  return attr(name, AttributeType::Floats).packedFloats(7, vs);
}
inline Pb tensorAttr(std::string_view name, const Pb &tensor) {
  return attr(name, AttributeType::Tensor).msg(5, tensor);
}

/// A FLOAT TensorProto with its values in raw_data.
inline Pb floatTensor(std::string_view name, std::initializer_list<int64_t> dims,
                      std::initializer_list<float> vs) {
  Pb t;
  for (int64_t d : dims) t.varint(1, uint64_t(d));
  t.varint(2, uint64_t(DataType::Float)).bytes(8, name).bytes(9, floatBytes(vs));
  return t;
}
/// An INT64 TensorProto with its values in int64_data.
inline Pb int64Tensor(std::string_view name, std::initializer_list<int64_t> dims,
                      std::initializer_list<int64_t> vs) {
  Pb t;
  for (int64_t d : dims) t.varint(1, uint64_t(d));
  t.varint(2, uint64_t(DataType::Int64)).bytes(8, name).packedVarints(7, vs);
  return t;
}

/// A ModelProto of `graph` importing `opset` of the default domain.
inline Pb modelOf(const Pb &graph, int64_t opset) {
  Pb opsetId;
  opsetId.bytes(1, "").varint(2, uint64_t(opset));
  Pb m;
  m.varint(1, 8).msg(8, opsetId).msg(7, graph);
  return m;
}

inline ModelProto parse(const std::vector<uint8_t> &bytes, const std::string &file = "test.onnx") {
  return parseModel(std::span<const uint8_t>(bytes), file);
}
inline ModelProto parse(const Pb &pb, const std::string &file = "test.onnx") {
  return parse(pb.out, file);
}

} // namespace lazyjit::onnx::testing

// The ONNX wire reader on models built field by field with ProtoWriter.h: every field of every
// message parseModel reads, packed and unpacked lists, weights as views of the input (the same
// addresses, no copy), unknown fields of every wire type skipped, merged repeats, subgraphs.
#include "ProtoWriter.h"
#include "lazyjit/ONNX/Proto.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

using namespace lazyjit;
using namespace lazyjit::onnx;
using namespace lazyjit::onnx::testing;

TEST_CASE("ONNX proto: a model's header fields, opset imports and metadata") {
  Pb onnxOpset, msOpset, meta;
  onnxOpset.bytes(1, "").varint(2, 20);
  msOpset.bytes(1, "com.microsoft").varint(2, 1);
  meta.bytes(1, "author").bytes(2, "me");
  Pb m;
  m.varint(1, 9).msg(8, onnxOpset).msg(8, msOpset).bytes(2, "lazyjit-test").bytes(3, "1.0");
  m.bytes(4, "ai.test").varint(5, 3).bytes(6, "a model").msg(14, meta);
  ModelProto p = parse(m);
  CHECK(p.irVersion == 9);
  REQUIRE(p.opsetImport.size() == 2);
  CHECK(p.opsetImport[0].domain == "");
  CHECK(p.opsetImport[0].version == 20);
  CHECK(p.opsetImport[1].domain == "com.microsoft");
  CHECK(p.opsetImport[1].version == 1);
  CHECK(p.producerName == "lazyjit-test");
  CHECK(p.producerVersion == "1.0");
  CHECK(p.domain == "ai.test");
  CHECK(p.modelVersion == 3);
  CHECK(p.docString == "a model");
  REQUIRE(p.metadataProps.size() == 1);
  CHECK(p.metadataProps[0].key == "author");
  CHECK(p.metadataProps[0].value == "me");
  CHECK(!p.graph);

  // an empty input is an empty model; a singular field given twice keeps its last value
  CHECK(parse(Pb()).irVersion == 0);
  Pb twice;
  twice.varint(1, 7).varint(1, 8);
  CHECK(parse(twice).irVersion == 8);
  // a 10-byte varint holds a negative int64
  Pb negative;
  negative.varint(5, uint64_t(-1));
  CHECK(negative.out.size() == 11);
  CHECK(parse(negative).modelVersion == -1);
}

TEST_CASE("ONNX proto: two nodes with attributes of every type, packed and unpacked") {
  Pb tensorValue;
  tensorValue.varint(1, 1).varint(2, uint64_t(DataType::Float)).bytes(8, "c");
  tensorValue.bytes(9, floatBytes({7}));
  Pb t0, t1, g0, g1;
  t0.bytes(8, "t0");
  t1.bytes(8, "t1");
  g0.bytes(2, "g0");
  g1.bytes(2, "g1");
  Pb sparseValues, sparseIndices, sparse;
  sparseValues.varint(1, 2).varint(2, uint64_t(DataType::Float)).packedFloats(4, {1, 2});
  sparseIndices.varint(1, 2).varint(2, uint64_t(DataType::Int64)).packedVarints(7, {0, 5});
  sparse.msg(1, sparseValues).msg(2, sparseIndices).varint(3, 10);

  Pb n1;
  n1.bytes(1, "X").bytes(2, "t").bytes(3, "first").bytes(4, "Custom").bytes(7, "com.test");
  n1.bytes(6, "every attribute type");
  n1.msg(5, attr("f", AttributeType::Float).f32(2, 0.25f).bytes(13, "a float"));
  n1.msg(5, attr("i", AttributeType::Int).varint(3, uint64_t(-5)));
  n1.msg(5, attr("s", AttributeType::String).bytes(4, "constant"));
  n1.msg(5, attr("t", AttributeType::Tensor).msg(5, tensorValue));
  n1.msg(5, attr("g", AttributeType::Graph).msg(6, g0));
  n1.msg(5, attr("floats_packed", AttributeType::Floats).packedFloats(7, {1.5f, 2.5f}));
  n1.msg(5, attr("floats_unpacked", AttributeType::Floats).f32(7, 3).f32(7, 4));
  n1.msg(5, attr("floats_mixed", AttributeType::Floats)
                .packedFloats(7, {1})
                .f32(7, 2)
                .packedFloats(7, {3, 4}));
  n1.msg(5, attr("ints_packed", AttributeType::Ints).packedVarints(8, {1, -1, 300}));
  n1.msg(5, attr("ints_unpacked", AttributeType::Ints).varint(8, uint64_t(-2)).varint(8, 7));
  n1.msg(5, attr("strings", AttributeType::Strings).bytes(9, "a").bytes(9, "bc"));
  n1.msg(5, attr("tensors", AttributeType::Tensors).msg(10, t0).msg(10, t1));
  n1.msg(5, attr("graphs", AttributeType::Graphs).msg(11, g0).msg(11, g1));
  n1.msg(5, attr("sparse", AttributeType::SparseTensor).msg(22, sparse));
  n1.msg(5, attr("sparses", AttributeType::SparseTensors).msg(23, sparse).msg(23, sparse));
  n1.msg(5, attr("ref", AttributeType::Float).bytes(21, "outer_alpha"));
  Pb n2;
  n2.bytes(1, "t").bytes(1, "").bytes(2, "Y").bytes(4, "Relu");
  Pb g;
  g.msg(1, n1).msg(1, n2);
  Pb m;
  m.msg(7, g);
  std::vector<uint8_t> bytes = m.out;
  ModelProto p = parse(bytes);

  REQUIRE(p.graph);
  REQUIRE(p.graph->node.size() == 2);
  const NodeProto &a = p.graph->node[0];
  CHECK(a.input == std::vector<std::string>{"X"});
  CHECK(a.output == std::vector<std::string>{"t"});
  CHECK(a.name == "first");
  CHECK(a.opType == "Custom");
  CHECK(a.domain == "com.test");
  CHECK(a.docString == "every attribute type");
  REQUIRE(a.attribute.size() == 16);
  auto at = [&](size_t k, std::string_view name, AttributeType type) -> const AttributeProto & {
    const AttributeProto &x = a.attribute[k];
    CHECK(x.name == name);
    CHECK(x.type == type);
    return x;
  };
  CHECK(at(0, "f", AttributeType::Float).f == 0.25f);
  CHECK(a.attribute[0].docString == "a float");
  CHECK(at(1, "i", AttributeType::Int).i == -5);
  CHECK(at(2, "s", AttributeType::String).s == "constant");
  const AttributeProto &tv = at(3, "t", AttributeType::Tensor);
  REQUIRE(tv.t);
  CHECK(tv.t->name == "c");
  CHECK(tv.t->dims == std::vector<int64_t>{1});
  CHECK(tv.t->rawData.size() == 4);
  const AttributeProto &gv = at(4, "g", AttributeType::Graph);
  REQUIRE(gv.g);
  CHECK(gv.g->name == "g0");
  const AttributeProto &fp = at(5, "floats_packed", AttributeType::Floats);
  CHECK(fp.floats.isView());
  CHECK(fp.floats.toVector() == std::vector<float>{1.5f, 2.5f});
  CHECK(fp.floats.bytes().data() >= bytes.data());
  CHECK(fp.floats.bytes().data() + 8 <= bytes.data() + bytes.size());
  const AttributeProto &fu = at(6, "floats_unpacked", AttributeType::Floats);
  CHECK(!fu.floats.isView());
  CHECK(fu.floats.toVector() == std::vector<float>{3, 4});
  const AttributeProto &fm = at(7, "floats_mixed", AttributeType::Floats);
  CHECK(fm.floats.toVector() == std::vector<float>{1, 2, 3, 4});
  CHECK(fm.floats.size() == 4);
  CHECK(fm.floats[3] == 4);
  CHECK(at(8, "ints_packed", AttributeType::Ints).ints == std::vector<int64_t>{1, -1, 300});
  CHECK(at(9, "ints_unpacked", AttributeType::Ints).ints == std::vector<int64_t>{-2, 7});
  CHECK(at(10, "strings", AttributeType::Strings).strings == std::vector<std::string>{"a", "bc"});
  const AttributeProto &ts = at(11, "tensors", AttributeType::Tensors);
  REQUIRE(ts.tensors.size() == 2);
  CHECK(ts.tensors[1].name == "t1");
  const AttributeProto &gs = at(12, "graphs", AttributeType::Graphs);
  REQUIRE(gs.graphs.size() == 2);
  CHECK(gs.graphs[0].name == "g0");
  CHECK(gs.graphs[1].name == "g1");
  const AttributeProto &sp = at(13, "sparse", AttributeType::SparseTensor);
  REQUIRE(sp.sparseTensor);
  CHECK(sp.sparseTensor->dims == std::vector<int64_t>{10});
  CHECK(sp.sparseTensor->values.floatData.toVector() == std::vector<float>{1, 2});
  CHECK(sp.sparseTensor->indices.int64Data == std::vector<int64_t>{0, 5});
  CHECK(at(14, "sparses", AttributeType::SparseTensors).sparseTensors.size() == 2);
  CHECK(at(15, "ref", AttributeType::Float).refAttrName == "outer_alpha");
  CHECK(attributeTypeName(AttributeType::SparseTensors) == "SPARSE_TENSORS");
  CHECK(attributeTypeName(AttributeType(99)) == "");

  const NodeProto &b = p.graph->node[1];
  CHECK(b.input == std::vector<std::string>{"t", ""});
  CHECK(b.output == std::vector<std::string>{"Y"});
  CHECK(b.opType == "Relu");
  CHECK(b.domain == "");
  CHECK(b.attribute.empty());
}

TEST_CASE("ONNX proto: raw_data initializers are views of the input, never copies") {
  Pb w;
  w.varint(1, 2).varint(1, 3).varint(2, uint64_t(DataType::Float)).bytes(8, "W");
  w.bytes(9, floatBytes({0, 1, 2, 3, 4, 5})).bytes(12, "weights");
  Pb empty;
  empty.packedVarints(1, {0, 4}).varint(2, uint64_t(DataType::Float16)).bytes(8, "empty");
  empty.bytes(9, "");
  Pb none;
  none.varint(2, uint64_t(DataType::Int8)).bytes(8, "none");
  Pb g;
  g.msg(5, w).msg(5, empty).msg(5, none);
  Pb m;
  m.msg(7, g);
  std::vector<uint8_t> bytes = m.out;
  ModelProto p = parse(bytes);
  REQUIRE(p.graph);
  REQUIRE(p.graph->initializer.size() == 3);
  const TensorProto &t = p.graph->initializer[0];
  CHECK(t.name == "W");
  CHECK(t.docString == "weights");
  CHECK(t.dims == std::vector<int64_t>{2, 3});
  CHECK(t.dataType == DataType::Float);
  CHECK(dataTypeName(t.dataType) == "FLOAT");
  CHECK(t.hasRawData);
  REQUIRE(t.rawData.size() == 24);
  // the same address range as the bytes in the input: no copy was made
  std::string expected = floatBytes({0, 1, 2, 3, 4, 5});
  const uint8_t *at = nullptr;
  for (size_t i = 0; i + 24 <= bytes.size(); ++i)
    if (std::memcmp(bytes.data() + i, expected.data(), 24) == 0) at = bytes.data() + i;
  CHECK(t.rawData.data() == at);
  CHECK(t.dataLocation == DataLocation::Default);
  CHECK(elementCount(t, "test.onnx") == 6);

  const TensorProto &e = p.graph->initializer[1];
  CHECK(e.dims == std::vector<int64_t>{0, 4});
  CHECK(e.dataType == DataType::Float16);
  CHECK(e.hasRawData);
  CHECK(e.rawData.empty());
  CHECK(elementCount(e, "test.onnx") == 0);
  CHECK(!p.graph->initializer[2].hasRawData);
  CHECK(elementCount(p.graph->initializer[2], "test.onnx") == 1); // a scalar
}

TEST_CASE("ONNX proto: typed data fields: float_data, double_data, int32/int64/uint64, strings") {
  Pb t;
  t.bytes(8, "typed").packedFloats(4, {0.5f, -1, 2}).packedDoubles(10, {1.25, -3});
  t.packedVarints(5, {-7, 65535}).varint(5, 1);
  t.packedVarints(7, {-1, int64_t(1) << 40}).varint(7, 3);
  t.packedVarints(11, {int64_t(-1)}).varint(11, 5);
  t.bytes(6, "hello").bytes(6, "");
  Pb unpacked;
  unpacked.bytes(8, "unpacked").f32(4, 1).f32(4, 2).f64(10, 0.5);
  Pb g;
  g.msg(5, t).msg(5, unpacked);
  Pb m;
  m.msg(7, g);
  std::vector<uint8_t> bytes = m.out;
  ModelProto p = parse(bytes);
  REQUIRE(p.graph);
  const TensorProto &a = p.graph->initializer[0];
  CHECK(a.floatData.isView());
  CHECK(a.floatData.toVector() == std::vector<float>{0.5f, -1, 2});
  CHECK(a.floatData.bytes().data() > bytes.data());
  CHECK(a.floatData.bytes().data() + 12 < bytes.data() + bytes.size());
  CHECK(a.doubleData.isView());
  CHECK(a.doubleData.toVector() == std::vector<double>{1.25, -3});
  CHECK(a.int32Data == std::vector<int32_t>{-7, 65535, 1});
  CHECK(a.int64Data == std::vector<int64_t>{-1, int64_t(1) << 40, 3});
  CHECK(a.uint64Data == std::vector<uint64_t>{~uint64_t(0), 5});
  REQUIRE(a.stringData.size() == 2);
  CHECK(std::string_view(reinterpret_cast<const char *>(a.stringData[0].data()),
                         a.stringData[0].size()) == "hello");
  CHECK(a.stringData[0].data() > bytes.data());
  CHECK(a.stringData[1].empty());
  const TensorProto &b = p.graph->initializer[1];
  CHECK(!b.floatData.isView());
  CHECK(b.floatData.toVector() == std::vector<float>{1, 2});
  CHECK(b.doubleData.toVector() == std::vector<double>{0.5});
}

TEST_CASE("ONNX proto: external data entries") {
  Pb loc, off, len, sum;
  loc.bytes(1, "location").bytes(2, "weights.bin");
  off.bytes(1, "offset").bytes(2, "4096");
  len.bytes(1, "length").bytes(2, "16");
  sum.bytes(1, "checksum").bytes(2, "abc");
  Pb t;
  t.varint(1, 4).varint(2, uint64_t(DataType::Float)).bytes(8, "ext");
  t.msg(13, loc).msg(13, off).msg(13, len).msg(13, sum).varint(14, 1);
  Pb g;
  g.msg(5, t);
  Pb m;
  m.msg(7, g);
  ModelProto p = parse(m);
  REQUIRE(p.graph);
  const TensorProto &e = p.graph->initializer.at(0);
  CHECK(e.dataLocation == DataLocation::External);
  CHECK(!e.hasRawData);
  REQUIRE(e.externalData.size() == 4);
  CHECK(e.externalData[0].key == "location");
  CHECK(e.externalData[0].value == "weights.bin");
  CHECK(e.externalData[1].key == "offset");
  CHECK(e.externalData[1].value == "4096");
  CHECK(e.externalData[2].value == "16");
  CHECK(e.externalData[3].key == "checksum");
}

TEST_CASE("ONNX proto: value infos with known, symbolic and unknown dimensions") {
  Pb scalarType, scalarTensor;
  scalarTensor.varint(1, uint64_t(DataType::Int64)).msg(2, Pb());
  scalarType.msg(1, scalarTensor).bytes(6, "IMAGE");
  Pb scalar;
  scalar.bytes(1, "s").msg(2, scalarType).bytes(3, "a scalar");
  Pb rankless, ranklessType, ranklessTensor;
  ranklessTensor.varint(1, uint64_t(DataType::BFloat16));
  ranklessType.msg(1, ranklessTensor);
  rankless.bytes(1, "r").msg(2, ranklessType);
  Pb seq, seqType, inner;
  seqType.msg(4, inner.msg(1, Pb().varint(1, 1)));
  seq.bytes(1, "seq").msg(2, seqType);
  Pb sparseInfo, sparseType, sparseTensor;
  sparseTensor.varint(1, uint64_t(DataType::Float));
  sparseTensor.msg(2, Pb().msg(1, Pb().varint(1, 100)));
  sparseType.msg(8, sparseTensor);
  sparseInfo.bytes(1, "sp").msg(2, sparseType);
  Pb untyped;
  untyped.bytes(1, "untyped");
  Pb withDenotation;
  withDenotation.bytes(1, "d").msg(
      2, Pb().msg(1, Pb().varint(1, 1).msg(2, Pb().msg(1, Pb().varint(1, 8).bytes(3, "BATCH")))));

  Pb g;
  g.msg(11, tensorInfo("X", DataType::Float, {"N", "3", ""}));
  g.msg(12, scalar).msg(13, rankless).msg(13, seq).msg(13, sparseInfo).msg(13, untyped);
  g.msg(13, withDenotation);
  Pb m;
  m.msg(7, g);
  ModelProto p = parse(m);
  REQUIRE(p.graph);
  REQUIRE(p.graph->input.size() == 1);
  const ValueInfoProto &x = p.graph->input[0];
  CHECK(x.name == "X");
  REQUIRE(x.type);
  CHECK(x.type->kind == TypeProto::Kind::Tensor);
  CHECK(x.type->elemType == DataType::Float);
  REQUIRE(x.type->shape);
  REQUIRE(x.type->shape->size() == 3);
  CHECK((*x.type->shape)[0].kind == Dimension::Kind::Param);
  CHECK((*x.type->shape)[0].param == "N");
  CHECK((*x.type->shape)[1].kind == Dimension::Kind::Value);
  CHECK((*x.type->shape)[1].value == 3);
  CHECK((*x.type->shape)[2].kind == Dimension::Kind::Unknown);

  const ValueInfoProto &s = p.graph->output.at(0);
  CHECK(s.docString == "a scalar");
  REQUIRE(s.type);
  CHECK(s.type->elemType == DataType::Int64);
  CHECK(s.type->denotation == "IMAGE");
  REQUIRE(s.type->shape);
  CHECK(s.type->shape->empty()); // rank 0

  const std::vector<ValueInfoProto> &vi = p.graph->valueInfo;
  REQUIRE(vi.size() == 5);
  for (size_t k : {0, 1, 2, 4}) REQUIRE(vi[k].type);
  REQUIRE(vi[2].type->shape);
  REQUIRE(vi[4].type->shape);
  CHECK(vi[0].type->kind == TypeProto::Kind::Tensor);
  CHECK(vi[0].type->elemType == DataType::BFloat16);
  CHECK(!vi[0].type->shape); // rank unknown
  CHECK(vi[1].type->kind == TypeProto::Kind::Sequence);
  CHECK(vi[2].type->kind == TypeProto::Kind::SparseTensor);
  CHECK(vi[2].type->shape->at(0).value == 100);
  CHECK(!vi[3].type);
  CHECK(vi[4].type->shape->at(0).value == 8);
  CHECK(vi[4].type->shape->at(0).denotation == "BATCH");
}

TEST_CASE("ONNX proto: unknown fields of every wire type are skipped in every message") {
  Pb dim;
  dim.unknowns().varint(1, 5).unknowns();
  Pb shape, tensorType, type, vi;
  shape.unknowns().msg(1, dim).unknowns();
  tensorType.unknowns().varint(1, 1).msg(2, shape).unknowns();
  type.unknowns().msg(1, tensorType).unknowns();
  vi.unknowns().bytes(1, "X").msg(2, type).unknowns();
  Pb entry;
  entry.unknowns().bytes(1, "location").unknowns().bytes(2, "w.bin");
  Pb t;
  t.unknowns().varint(1, 1).unknowns().bytes(8, "t").msg(13, entry).unknowns();
  t.bytes(3, "a segment, skipped");
  Pb a = attr("x", AttributeType::Int);
  a.unknowns().varint(3, 4).unknowns().bytes(14, "tp, skipped").bytes(15, "type_protos");
  Pb n;
  n.unknowns().bytes(4, "Op").msg(5, a).unknowns().bytes(8, "overload (IR 10)");
  Pb g;
  g.unknowns().msg(1, n).msg(5, t).msg(11, vi).unknowns().bytes(16, "metadata_props (IR 10)");
  Pb opset;
  opset.unknowns().bytes(1, "").unknowns().varint(2, 20);
  Pb m;
  m.unknowns().varint(1, 9).msg(8, opset).unknowns().msg(7, g).unknowns();
  m.bytes(20, "training_info").bytes(25, "functions").unknowns();
  ModelProto p = parse(m);
  CHECK(p.irVersion == 9);
  CHECK(p.opsetImport.at(0).version == 20);
  REQUIRE(p.graph);
  CHECK(p.graph->node.at(0).opType == "Op");
  CHECK(p.graph->node.at(0).attribute.at(0).i == 4);
  CHECK(p.graph->initializer.at(0).name == "t");
  CHECK(p.graph->initializer.at(0).dims == std::vector<int64_t>{1});
  CHECK(p.graph->initializer.at(0).externalData.at(0).value == "w.bin");
  REQUIRE(p.graph->input.at(0).type);
  REQUIRE(p.graph->input.at(0).type->shape);
  CHECK(p.graph->input.at(0).type->shape->at(0).value == 5);
}

TEST_CASE("ONNX proto: a singular message field given twice merges, as in protobuf") {
  Pb a = attr("then_branch", AttributeType::Graph);
  a.msg(6, Pb().bytes(2, "first").msg(1, Pb().bytes(4, "A")));
  a.msg(6, Pb().msg(1, Pb().bytes(4, "B")));
  a.msg(5, Pb().varint(1, 2).bytes(8, "t")).msg(5, Pb().varint(1, 3));
  Pb m;
  m.msg(7, Pb().bytes(2, "g").msg(1, Pb().msg(5, a))).msg(7, Pb().msg(1, Pb().bytes(4, "C")));
  ModelProto p = parse(m);
  REQUIRE(p.graph);
  CHECK(p.graph->name == "g");
  REQUIRE(p.graph->node.size() == 2);
  CHECK(p.graph->node[1].opType == "C");
  const AttributeProto &merged = p.graph->node[0].attribute.at(0);
  REQUIRE(merged.g);
  CHECK(merged.g->name == "first");
  REQUIRE(merged.g->node.size() == 2);
  CHECK(merged.g->node[1].opType == "B");
  REQUIRE(merged.t);
  CHECK(merged.t->name == "t");
  CHECK(merged.t->dims == std::vector<int64_t>{2, 3});
}

TEST_CASE("ONNX proto: an If node's then_branch and else_branch subgraphs") {
  Pb value;
  value.varint(2, uint64_t(DataType::Float)).bytes(8, "v").bytes(9, floatBytes({42}));
  Pb constant;
  constant.bytes(2, "y").bytes(4, "Constant");
  constant.msg(5, attr("value", AttributeType::Tensor).msg(5, value));
  Pb thenGraph;
  thenGraph.bytes(2, "then").msg(1, constant).msg(12, tensorInfo("y", DataType::Float, {}));
  Pb identity;
  identity.bytes(1, "x").bytes(2, "y").bytes(4, "Identity");
  Pb elseGraph;
  elseGraph.bytes(2, "else").msg(1, identity);
  Pb ifNode;
  ifNode.bytes(1, "cond").bytes(2, "y").bytes(4, "If");
  ifNode.msg(5, attr("then_branch", AttributeType::Graph).msg(6, thenGraph));
  ifNode.msg(5, attr("else_branch", AttributeType::Graph).msg(6, elseGraph));
  Pb g;
  g.msg(1, ifNode);
  Pb m;
  m.msg(7, g);
  std::vector<uint8_t> bytes = m.out;
  ModelProto p = parse(bytes);
  REQUIRE(p.graph);
  const NodeProto &n = p.graph->node.at(0);
  CHECK(n.opType == "If");
  REQUIRE(n.attribute.size() == 2);
  REQUIRE(n.attribute[0].g);
  REQUIRE(n.attribute[1].g);
  const GraphProto &then = *n.attribute[0].g;
  CHECK(then.name == "then");
  CHECK(then.output.at(0).name == "y");
  const AttributeProto &v = then.node.at(0).attribute.at(0);
  REQUIRE(v.t);
  CHECK(v.t->rawData.data() > bytes.data());
  CHECK(v.t->rawData.data() + 4 < bytes.data() + bytes.size());
  float got;
  std::memcpy(&got, v.t->rawData.data(), 4);
  CHECK(got == 42);
  CHECK(n.attribute[1].g->node.at(0).opType == "Identity");
}

// The ONNX wire reader on damaged input: every truncation and byte flip of a valid model parses or
// throws, and each kind of malformed wire data (a length past the end, a cut or 11-byte varint, a
// group, field number 0, a wrong wire type, nesting past 64 levels) is a ParseError naming the
// file, the byte offset and the message and field being read.
#include "ProtoWriter.h"
#include "lazyjit/ONNX/Proto.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

using namespace lazyjit;
using namespace lazyjit::onnx;
using namespace lazyjit::onnx::testing;

namespace {

/// A model that uses most of what the reader reads: the input of the damage tests.
Pb sampleModel() {
  Pb w;
  w.varint(1, 2).varint(1, 3).varint(2, uint64_t(DataType::Float)).bytes(8, "W");
  w.bytes(9, floatBytes({0, 1, 2, 3, 4, 5}));
  Pb b;
  b.packedVarints(1, {3}).varint(2, uint64_t(DataType::Float)).bytes(8, "B");
  b.packedFloats(4, {0.5f, -1, 2});
  Pb alpha = attr("alpha", AttributeType::Float);
  alpha.f32(2, 0.5f);
  Pb transB = attr("transB", AttributeType::Int);
  transB.varint(3, 1);
  Pb gemm;
  gemm.bytes(1, "X").bytes(1, "W").bytes(1, "B").bytes(2, "Y").bytes(3, "gemm").bytes(4, "Gemm");
  gemm.msg(5, alpha).msg(5, transB);
  Pb g;
  g.bytes(2, "main").msg(5, w).msg(5, b).msg(1, gemm);
  g.msg(11, tensorInfo("X", DataType::Float, {"N", "3", ""}));
  g.msg(12, tensorInfo("Y", DataType::Float, {"N", "2"}));
  Pb opset;
  opset.bytes(1, "").varint(2, 20);
  Pb m;
  m.varint(1, 9).msg(8, opset).bytes(2, "lazyjit-test").msg(7, g);
  return m;
}

} // namespace

TEST_CASE("ONNX proto: every truncation and byte flip of a valid model parses or is an error") {
  std::vector<uint8_t> full = sampleModel().out;
  ModelProto whole = parse(full);
  REQUIRE(whole.graph);
  CHECK(whole.graph->node.at(0).attribute.size() == 2);
  int errors = 0;
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    try {
      (void)parse(prefix, "prefix.onnx");
    } catch (const ParseError &e) {
      ++errors;
      CHECK(std::string_view(e.what()).starts_with("prefix.onnx: byte "));
    }
  }
  CHECK(errors > 0);
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint8_t flip : {uint8_t(0xff), uint8_t(0x80), uint8_t(0x07), uint8_t(0x01)}) {
      std::vector<uint8_t> bad = full;
      bad[i] ^= flip;
      try {
        (void)parse(bad, "flipped.onnx");
      } catch (const ParseError &e) {
        CHECK(std::string_view(e.what()).starts_with("flipped.onnx: "));
      } catch (const UnsupportedError &e) { // a flip may make a sparse_initializer tag
        CHECK(std::string_view(e.what()).starts_with("flipped.onnx: "));
      }
    }
  }
}

TEST_CASE("ONNX proto: malformed wire data is a ParseError naming file, byte and field") {
  // graph { node { input: length 100, 3 bytes } }
  Pb longInput;
  longInput.raw({0x3a, 0x07, 0x0a, 0x05, 0x0a, 100, 'a', 'b', 'c'});
  CHECK_THROWS_WITH_AS(parse(longInput), "test.onnx: byte 5: length 100 runs past the end of its "
                                         "message (byte 9) in NodeProto.input",
                       ParseError);
  // a nested message longer than the file
  Pb longGraph;
  longGraph.raw({0x3a, 0x40, 0x0a});
  CHECK_THROWS_WITH_AS(parse(longGraph),
                       "test.onnx: byte 1: length 64 runs past the end of its message (byte 3) in "
                       "ModelProto.graph",
                       ParseError);
  // graph { node { input: a length varint cut short } }
  Pb cutVarint;
  cutVarint.raw({0x3a, 0x04, 0x0a, 0x02, 0x0a, 0x80});
  CHECK_THROWS_WITH_AS(parse(cutVarint), "test.onnx: byte 5: truncated varint in NodeProto.input",
                       ParseError);
  // ir_version: an 11-byte varint
  Pb longVarint;
  longVarint.raw({0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01});
  CHECK_THROWS_WITH_AS(parse(longVarint),
                       "test.onnx: byte 1: varint longer than 10 bytes in ModelProto.ir_version",
                       ParseError);
  // a tag that is 11 bytes long
  Pb longTag;
  longTag.raw({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01});
  CHECK_THROWS_WITH_AS(parse(longTag),
                       "test.onnx: byte 0: varint longer than 10 bytes in ModelProto", ParseError);
  // graph { field 5 as a start group }
  Pb group;
  group.raw({0x3a, 0x02, 0x2b, 0x2c});
  CHECK_THROWS_WITH_AS(parse(group),
                       "test.onnx: byte 2: group wire type 3 (start group) is not supported in "
                       "GraphProto field 5",
                       ParseError);
  Pb endGroup;
  endGroup.raw({0x0c});
  CHECK_THROWS_WITH_AS(parse(endGroup), doctest::Contains("group wire type 4 (end group)"),
                       ParseError);
  Pb wireSix;
  wireSix.raw({0x0e});
  CHECK_THROWS_WITH_AS(parse(wireSix),
                       "test.onnx: byte 0: invalid wire type 6 in ModelProto field 1", ParseError);
  // field number 0, at the top and inside a node
  Pb zero;
  zero.varint(1, 9).raw({0x02, 0x00});
  CHECK_THROWS_WITH_AS(parse(zero), "test.onnx: byte 2: field number 0 in ModelProto", ParseError);
  Pb zeroInNode;
  zeroInNode.msg(7, Pb().msg(1, Pb().raw({0x00})));
  CHECK_THROWS_WITH_AS(parse(zeroInNode), "test.onnx: byte 4: field number 0 in NodeProto",
                       ParseError);
  Pb bigField;
  bigField.tag(536870912, 0).putVarint(0);
  CHECK_THROWS_WITH_AS(parse(bigField), doctest::Contains("field number 536870912 out of range"),
                       ParseError);
  // a length that is negative as an int64
  Pb negativeLength;
  negativeLength.tag(2, 2).putVarint(uint64_t(-1));
  CHECK_THROWS_WITH_AS(parse(negativeLength),
                       "test.onnx: byte 1: negative length -1 in ModelProto.producer_name",
                       ParseError);
  // a known field with the wrong wire type
  Pb wrongWire;
  wrongWire.bytes(1, "9");
  CHECK_THROWS_WITH_AS(parse(wrongWire),
                       "test.onnx: byte 0: wire type 2 (length-delimited) where 0 (varint) is "
                       "expected in ModelProto.ir_version",
                       ParseError);
  // fixed-size values cut short, and a packed run that is not whole floats
  Pb cutFloat;
  cutFloat.msg(7, Pb().msg(1, Pb().msg(5, Pb().raw({0x15, 0x00, 0x00}))));
  CHECK_THROWS_WITH_AS(parse(cutFloat),
                       doctest::Contains("truncated 4-byte value in AttributeProto.f"), ParseError);
  Pb cutSkip;
  cutSkip.fixed64(99, 0);
  cutSkip.out.pop_back();
  CHECK_THROWS_WITH_AS(parse(cutSkip),
                       "test.onnx: byte 2: truncated 8-byte value in ModelProto field 99",
                       ParseError);
  Pb oddRun;
  oddRun.msg(7, Pb().msg(5, Pb().bytes(4, "123456")));
  CHECK_THROWS_WITH_AS(parse(oddRun),
                       doctest::Contains("packed run of 6 bytes is not a whole number of 4-byte "
                                         "elements in TensorProto.float_data"),
                       ParseError);
  // a packed varint run whose last varint runs past the run
  Pb cutRun;
  cutRun.msg(7, Pb().msg(5, Pb().bytes(1, "\x01\x80")));
  CHECK_THROWS_WITH_AS(parse(cutRun), "test.onnx: byte 7: truncated varint in TensorProto.dims",
                       ParseError);
}

TEST_CASE("ONNX proto: messages nest at most 64 deep") {
  // Model (1) > Graph (2) > [Node > Attribute > Graph] x levels > Node > Attribute (> Tensor)
  auto nested = [](int levels, bool withTensor) {
    Pb innermost = attr("x", AttributeType::Int);
    innermost.varint(3, 1);
    if (withTensor) innermost.msg(5, Pb().bytes(8, "deep"));
    Pb g;
    g.msg(1, Pb().bytes(4, "Leaf").msg(5, innermost));
    for (int k = 0; k < levels; ++k) {
      Pb a = attr("then_branch", AttributeType::Graph);
      a.msg(6, g);
      Pb next;
      next.msg(1, Pb().bytes(4, "If").msg(5, a));
      g = next;
    }
    Pb m;
    m.msg(7, g);
    return m;
  };
  // 2 + 3 * 20 = 62: the graph; 63 its node; 64 the node's attribute
  ModelProto ok = parse(nested(20, false));
  REQUIRE(ok.graph);
  const GraphProto *g = &*ok.graph;
  for (int k = 0; k < 20; ++k) {
    g = g->node.at(0).attribute.at(0).g.get();
    REQUIRE(g);
  }
  CHECK(g->node.at(0).opType == "Leaf");
  // the attribute's tensor would be level 65
  CHECK_THROWS_WITH_AS(parse(nested(20, true), "deep.onnx"),
                       doctest::Contains("nested deeper than 64 levels in AttributeProto.t"),
                       ParseError);
  CHECK_THROWS_WITH_AS(parse(nested(20, true), "deep.onnx"), doctest::Contains("deep.onnx: byte "),
                       ParseError);
  // far deeper than the limit is the same error, not a stack overflow
  CHECK_THROWS_WITH_AS(parse(nested(2000, false)),
                       doctest::Contains("nested deeper than 64 levels in AttributeProto.g"),
                       ParseError);
}

TEST_CASE("ONNX proto: sparse initializers and impossible shapes are rejected") {
  Pb g;
  g.bytes(2, "main").msg(15, Pb());
  Pb m;
  m.msg(7, g);
  CHECK_THROWS_WITH_AS(parse(m),
                       "test.onnx: graph 'main': sparse initializers "
                       "(GraphProto.sparse_initializer) are not supported",
                       UnsupportedError);
  TensorProto t;
  t.name = "w";
  t.dims = {3, -1};
  CHECK_THROWS_WITH_AS(elementCount(t, "m.onnx"), "m.onnx: tensor 'w': negative dimension -1",
                       ParseError);
  t.dims = {int64_t(1) << 40, int64_t(1) << 40};
  CHECK_THROWS_WITH_AS(elementCount(t, "m.onnx"),
                       "m.onnx: tensor 'w': the shape's size overflows 64 bits", ParseError);
}

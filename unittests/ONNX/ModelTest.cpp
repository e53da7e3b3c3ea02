// The ONNX importer end to end: small models built with ProtoWriter.h, run on the default device,
// their outputs checked against values computed here; and the errors load and run raise.
#include "lazyjit/ONNX/Model.h"
#include "ProtoWriter.h"
#include "lazyjit/Support/Error.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <fstream>
#include <string>
#include <vector>

using namespace lazyjit;
using namespace lazyjit::onnx;
using namespace lazyjit::onnx::testing;

namespace {

/// A GraphProto under construction: nodes, initializers, inputs and outputs in the order added.
struct GraphBuilder {
  Pb g;
  GraphBuilder &add(const Pb &node) { return g.msg(1, node), *this; }
  GraphBuilder &init(const Pb &tensor) { return g.msg(5, tensor), *this; }
  GraphBuilder &input(const Pb &info) { return g.msg(11, info), *this; }
  GraphBuilder &output(const Pb &info) { return g.msg(12, info), *this; }
  Model model(int64_t opset) const { return Model::fromBytes(modelOf(g, opset).out); }
};

std::vector<float> iota(size_t n, float start = 0, float step = 1) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * float(i);
  return v;
}

Tensor floats(const std::vector<float> &v, std::initializer_list<int64_t> dims) {
  Shape s;
  for (int64_t d : dims) s.emplace_back(d);
  return Tensor::fromVector(v, s);
}

void checkClose(const std::vector<float> &got, const std::vector<float> &want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
}

/// A one-node model: x (float [dims]) -> op -> y.
GraphBuilder oneNode(const Pb &node, std::initializer_list<std::string> dims) {
  GraphBuilder b;
  b.input(tensorInfo("x", DataType::Float, dims))
      .add(node)
      .output(tensorInfo("y", DataType::Float, {}));
  return b;
}

} // namespace

TEST_CASE("ONNX model: a 2-layer MLP (Gemm, Relu, Gemm with transB) loaded from a file") {
  // x [2, 3] -> Gemm(W1 [4, 3], b1 [4], transB) -> Relu -> Gemm(W2 [2, 4], b2 [2], transB)
  std::vector<float> w1 = iota(12, -1, 0.25f), b1 = {0.5f, -0.5f, 0.1f, 0}, w2 = iota(8, 1, -0.3f),
                     b2 = {1, -1};
  GraphBuilder b;
  b.init(floatTensor("W1", {4, 3},
                     {-1, -0.75f, -0.5f, -0.25f, 0, 0.25f, 0.5f, 0.75f, 1, 1.25f, 1.5f, 1.75f}));
  b.init(floatTensor("b1", {4}, {0.5f, -0.5f, 0.1f, 0}));
  b.init(floatTensor("W2", {2, 4}, {1, 0.7f, 0.4f, 0.1f, -0.2f, -0.5f, -0.8f, -1.1f}));
  b.init(floatTensor("b2", {2}, {1, -1}));
  b.input(tensorInfo("x", DataType::Float, {"batch", "3"}));
  b.add(node("Gemm", {"x", "W1", "b1"}, {"h"}, "fc1").msg(5, intAttr("transB", 1)));
  b.add(node("Relu", {"h"}, {"a"}, "relu"));
  b.add(node("Gemm", {"a", "W2", "b2"}, {"y"}, "fc2").msg(5, intAttr("transB", 1)));
  b.output(tensorInfo("y", DataType::Float, {"batch", "2"}));

  std::string path = (std::filesystem::temp_directory_path() / "lazyjit-model-test-mlp.onnx");
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    Pb model = modelOf(b.g, 13);
    f.write(model.str().data(), std::streamsize(model.out.size()));
  }
  Model m = Model::load(path);
  std::remove(path.c_str());

  CHECK(m.opsetVersion() == 13);
  REQUIRE(m.inputs().size() == 1);
  CHECK(m.inputs()[0].name == "x");
  CHECK(m.inputs()[0].dataType == DataType::Float);
  REQUIRE(m.inputs()[0].dims.size() == 2);
  CHECK(m.inputs()[0].dims[0].param == "batch");
  CHECK(m.inputs()[0].dims[1].value == 3);
  REQUIRE(m.outputs().size() == 1);
  CHECK(m.outputs()[0].name == "y");

  std::vector<float> x = {1, 2, 3, -1, 0.5f, 2};
  std::vector<float> want;
  for (size_t r = 0; r < 2; ++r) {
    std::vector<float> h(4);
    for (size_t j = 0; j < 4; ++j) {
      float s = b1[j];
      for (size_t k = 0; k < 3; ++k) s += x[r * 3 + k] * w1[j * 3 + k];
      h[j] = std::max(s, 0.0f);
    }
    for (size_t j = 0; j < 2; ++j) {
      float s = b2[j];
      for (size_t k = 0; k < 4; ++k) s += h[k] * w2[j * 4 + k];
      want.push_back(s);
    }
  }
  std::map<std::string, Tensor> out = m.run({{"x", floats(x, {2, 3})}});
  REQUIRE(out.count("y"));
  CHECK(out["y"].intShape() == std::vector<int64_t>{2, 2});
  checkClose(out["y"].toVector<float>(), want);
}

TEST_CASE("ONNX model: MatMul, Add and Softmax on a 3-D input, opset 11 and 13 axis rules") {
  // x [2, 2, 3] @ W [3, 3] + b [3], then Softmax(axis=1): opset 11 normalizes over the 2-D view
  // [2, 6], opset 13 over dim 1 alone (size 2).
  std::vector<float> x = iota(12, -1, 0.2f), w = iota(9, 0.5f, -0.1f), bias = {0.1f, 0.2f, -0.3f};
  GraphBuilder b;
  b.init(floatTensor("W", {3, 3}, {0.5f, 0.4f, 0.3f, 0.2f, 0.1f, 0, -0.1f, -0.2f, -0.3f}));
  b.init(floatTensor("b", {3}, {0.1f, 0.2f, -0.3f}));
  b.input(tensorInfo("x", DataType::Float, {"2", "2", "3"}));
  b.add(node("MatMul", {"x", "W"}, {"xw"})).add(node("Add", {"xw", "b"}, {"z"}));
  b.add(node("Softmax", {"z"}, {"y"}).msg(5, intAttr("axis", 1)));
  b.output(tensorInfo("y", DataType::Float, {"2", "2", "3"}));

  std::vector<float> z(12);
  for (size_t r = 0; r < 4; ++r)
    for (size_t j = 0; j < 3; ++j) {
      float s = bias[j];
      for (size_t k = 0; k < 3; ++k) s += x[r * 3 + k] * w[k * 3 + j];
      z[r * 3 + j] = s;
    }
  std::vector<float> want11(12), want13(12);
  for (size_t n = 0; n < 2; ++n) {
    float sum = 0;
    for (size_t i = 0; i < 6; ++i) sum += std::exp(z[n * 6 + i]);
    for (size_t i = 0; i < 6; ++i) want11[n * 6 + i] = std::exp(z[n * 6 + i]) / sum;
    for (size_t j = 0; j < 3; ++j) {
      float e0 = std::exp(z[n * 6 + j]), e1 = std::exp(z[n * 6 + 3 + j]);
      want13[n * 6 + j] = e0 / (e0 + e1);
      want13[n * 6 + 3 + j] = e1 / (e0 + e1);
    }
  }
  Tensor in = floats(x, {2, 2, 3});
  Tensor y11 = b.model(11).run({{"x", in}}).at("y");
  Tensor y13 = b.model(13).run({{"x", in}}).at("y");
  CHECK(y11.intShape() == std::vector<int64_t>{2, 2, 3});
  checkClose(y11.toVector<float>(), want11);
  checkClose(y13.toVector<float>(), want13);
}

TEST_CASE("ONNX model: Reshape with 0 (copy a dim) and -1 (infer), from an initializer") {
  GraphBuilder b;
  b.init(int64Tensor("shape", {3}, {0, -1, 2}));
  b.input(tensorInfo("x", DataType::Float, {"2", "3", "4"}));
  b.add(node("Reshape", {"x", "shape"}, {"y"})).output(tensorInfo("y", DataType::Float, {}));
  Tensor y = b.model(13).run({{"x", floats(iota(24), {2, 3, 4})}}).at("y");
  CHECK(y.intShape() == std::vector<int64_t>{2, 6, 2});
  checkClose(y.toVector<float>(), iota(24));
}

TEST_CASE("ONNX model: Transpose reverses the dims by default") {
  Model m = oneNode(node("Transpose", {"x"}, {"y"}), {"2", "3", "4"}).model(13);
  Tensor y = m.run({{"x", floats(iota(24), {2, 3, 4})}}).at("y");
  CHECK(y.intShape() == std::vector<int64_t>{4, 3, 2});
  std::vector<float> want;
  for (int k = 0; k < 4; ++k)
    for (int j = 0; j < 3; ++j)
      for (int i = 0; i < 2; ++i) want.push_back(float(i * 12 + j * 4 + k));
  checkClose(y.toVector<float>(), want);
}

TEST_CASE("ONNX model: Flatten at the default axis 1 and at axis 2") {
  Tensor x = floats(iota(24), {2, 3, 4});
  Tensor y1 =
      oneNode(node("Flatten", {"x"}, {"y"}), {"2", "3", "4"}).model(13).run({{"x", x}}).at("y");
  CHECK(y1.intShape() == std::vector<int64_t>{2, 12});
  Tensor y2 = oneNode(node("Flatten", {"x"}, {"y"}).msg(5, intAttr("axis", 2)), {"2", "3", "4"})
                  .model(13)
                  .run({{"x", x}})
                  .at("y");
  CHECK(y2.intShape() == std::vector<int64_t>{6, 4});
  checkClose(y2.toVector<float>(), iota(24));
}

TEST_CASE("ONNX model: Concat along axis 1 with a Constant and an initializer") {
  GraphBuilder b;
  b.init(floatTensor("c", {2, 2}, {10, 11, 12, 13}));
  b.input(tensorInfo("x", DataType::Float, {"2", "1"}));
  b.add(node("Constant", {}, {"k"}).msg(5, tensorAttr("value", floatTensor("", {2, 1}, {7, 8}))));
  b.add(node("Concat", {"x", "c", "k"}, {"y"}).msg(5, intAttr("axis", -1)));
  b.output(tensorInfo("y", DataType::Float, {"2", "4"}));
  Tensor y = b.model(13).run({{"x", floats({1, 2}, {2, 1})}}).at("y");
  CHECK(y.intShape() == std::vector<int64_t>{2, 4});
  checkClose(y.toVector<float>(), {1, 10, 11, 7, 2, 12, 13, 8});
}

TEST_CASE("ONNX model: Constant value_floats and value_int feed elementwise ops") {
  GraphBuilder b;
  b.input(tensorInfo("x", DataType::Float, {"3"}));
  b.add(node("Constant", {}, {"k"}).msg(5, floatsAttr("value_floats", {1, 2, 3})));
  b.add(node("Constant", {}, {"two"}).msg(5, floatAttr("value_float", 2)));
  b.add(node("Mul", {"x", "k"}, {"xk"})).add(node("Pow", {"xk", "two"}, {"sq"}));
  b.add(node("Sub", {"sq", "x"}, {"d"})).add(node("Neg", {"d"}, {"y"}));
  b.output(tensorInfo("y", DataType::Float, {"3"}));
  Tensor y = b.model(13).run({{"x", floats({1, -2, 0.5f}, {3})}}).at("y");
  checkClose(y.toVector<float>(), {-(1 - 1), -(16 + 2), -(2.25f - 0.5f)});
}

TEST_CASE("ONNX model: Cast float to int32 truncates toward zero") {
  GraphBuilder b;
  b.input(tensorInfo("x", DataType::Float, {"4"}));
  b.add(node("Cast", {"x"}, {"y"}).msg(5, intAttr("to", int64_t(DataType::Int32))));
  b.output(tensorInfo("y", DataType::Int32, {"4"}));
  Tensor y = b.model(13).run({{"x", floats({1.7f, -1.7f, 0, 3}, {4})}}).at("y");
  CHECK(y.dtype() == dtypes::int32);
  CHECK(y.toVector<int32_t>() == std::vector<int32_t>{1, -1, 0, 3});
}

TEST_CASE("ONNX model: Unsqueeze takes axes as an attribute at opset 11, an input at 13") {
  Tensor x = floats(iota(6), {2, 3});
  Model m11 = oneNode(node("Unsqueeze", {"x"}, {"y"}).msg(5, intsAttr("axes", {0, -1})), {"2", "3"})
                  .model(11);
  Tensor y11 = m11.run({{"x", x}}).at("y");
  CHECK(y11.intShape() == std::vector<int64_t>{1, 2, 3, 1});
  checkClose(y11.toVector<float>(), iota(6));

  GraphBuilder b = oneNode(node("Unsqueeze", {"x", "axes"}, {"y"}), {"2", "3"});
  b.init(int64Tensor("axes", {2}, {1, 3}));
  Tensor y13 = b.model(13).run({{"x", x}}).at("y");
  CHECK(y13.intShape() == std::vector<int64_t>{2, 1, 3, 1});
}

TEST_CASE("ONNX model: an unsupported op type is one UnsupportedError at load") {
  // (string tensors are something lazyjit has no dtype for)
  GraphBuilder b = oneNode(node("StringNormalizer", {"x"}, {"y"}, "norm1"), {"1", "3"});
  CHECK_THROWS_WITH_AS(b.model(13),
                       "model.onnx: node 'norm1' (StringNormalizer, opset 13): op type "
                       "StringNormalizer is not supported yet",
                       UnsupportedError);
}

TEST_CASE("ONNX model: a node reading a name nothing produces is an Error at load") {
  GraphBuilder b;
  b.input(tensorInfo("x", DataType::Float, {"2"}));
  b.add(node("Add", {"x", "later"}, {"s"}, "add")).add(node("Relu", {"x"}, {"later"}));
  b.output(tensorInfo("s", DataType::Float, {"2"}));
  CHECK_THROWS_WITH_AS(b.model(13), doctest::Contains("node 'add' (Add, opset 13): input 'later'"),
                       Error);
}

TEST_CASE("ONNX model: run checks its inputs' presence, dtype and dims") {
  Model m = oneNode(node("Relu", {"x"}, {"y"}), {"batch", "3"}).model(13);
  CHECK_THROWS_WITH_AS(m.run({}), doctest::Contains("input 'x' (float32[batch, 3]) is missing"),
                       Error);
  Tensor ints = Tensor::fromVector(std::vector<int32_t>{1, 2, 3}, {1, 3});
  CHECK_THROWS_WITH_AS(m.run({{"x", ints}}),
                       doctest::Contains("input 'x': expected float32[batch, 3], got int32[1, 3]"),
                       DTypeError);
  CHECK_THROWS_WITH_AS(
      m.run({{"x", floats(iota(4), {1, 4})}}),
      doctest::Contains("input 'x': expected float32[batch, 3], got float32[1, 4]"), ShapeError);
  CHECK_THROWS_WITH_AS(m.run({{"x", floats(iota(3), {3})}}), doctest::Contains("got float32[3]"),
                       ShapeError);
  // a symbolic dim takes any size
  CHECK(m.run({{"x", floats(iota(6), {2, 3})}}).at("y").intShape() == std::vector<int64_t>{2, 3});
}

TEST_CASE("ONNX model: Gemm with alpha, beta, transA and a broadcast C") {
  // A is given as [K, M] = [3, 2] with transA; B [3, 2]; C [2] broadcasts over rows.
  GraphBuilder b;
  b.init(floatTensor("B", {3, 2}, {1, 2, 3, 4, 5, 6})).init(floatTensor("C", {2}, {1, -1}));
  b.input(tensorInfo("a", DataType::Float, {"3", "2"}));
  b.add(node("Gemm", {"a", "B", "C"}, {"y"})
            .msg(5, intAttr("transA", 1))
            .msg(5, floatAttr("alpha", 0.5f))
            .msg(5, floatAttr("beta", 2)));
  b.output(tensorInfo("y", DataType::Float, {"2", "2"}));
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, bm = {1, 2, 3, 4, 5, 6}, c = {1, -1}, want;
  for (size_t i = 0; i < 2; ++i)
    for (size_t j = 0; j < 2; ++j) {
      float s = 0;
      for (size_t k = 0; k < 3; ++k) s += a[k * 2 + i] * bm[k * 2 + j];
      want.push_back(0.5f * s + 2 * c[j]);
    }
  checkClose(b.model(13).run({{"a", floats(a, {3, 2})}}).at("y").toVector<float>(), want);
}

TEST_CASE("ONNX model: Squeeze all size-1 dims, or the axes input at opset 13") {
  Tensor x = floats(iota(6), {1, 2, 1, 3});
  Tensor all = oneNode(node("Squeeze", {"x"}, {"y"}), {"1", "2", "1", "3"})
                   .model(13)
                   .run({{"x", x}})
                   .at("y");
  CHECK(all.intShape() == std::vector<int64_t>{2, 3});
  GraphBuilder b = oneNode(node("Squeeze", {"x", "axes"}, {"y"}), {"1", "2", "1", "3"});
  b.init(int64Tensor("axes", {1}, {-2}));
  CHECK(b.model(13).run({{"x", x}}).at("y").intShape() == std::vector<int64_t>{1, 2, 3});
}

TEST_CASE("ONNX model: initializers from typed lists (float_data, int32_data for bool, float16)") {
  Pb f, bits, half;
  f.varint(1, 2).varint(2, uint64_t(DataType::Float)).bytes(8, "f").packedFloats(4, {1.5f, -2});
  bits.varint(1, 2).varint(2, uint64_t(DataType::Bool)).bytes(8, "bits").packedVarints(5, {1, 0});
  half.varint(1, 2).varint(2, uint64_t(DataType::Float16)).bytes(8, "half");
  half.packedVarints(5, {0x3C00, 0xC000}); // 1.0, -2.0
  GraphBuilder b;
  b.init(f).init(bits).init(half);
  b.add(node("Identity", {"f"}, {"yf"})).add(node("Identity", {"bits"}, {"yb"}));
  b.add(node("Cast", {"half"}, {"yh"}).msg(5, intAttr("to", int64_t(DataType::Float))));
  b.output(tensorInfo("yf", DataType::Float, {"2"}))
      .output(tensorInfo("yb", DataType::Bool, {"2"}));
  b.output(tensorInfo("yh", DataType::Float, {"2"}));
  Model m = b.model(13);
  CHECK(m.inputs().empty());
  std::map<std::string, Tensor> out = m.run({});
  checkClose(out.at("yf").toVector<float>(), {1.5f, -2});
  CHECK(out.at("yb").dtype() == dtypes::boolean);
  CHECK(out.at("yb").toVector<bool>() == std::vector<bool>{true, false});
  checkClose(out.at("yh").toVector<float>(), {1, -2});
}

TEST_CASE("ONNX model: unsupported initializers and attribute values are UnsupportedErrors") {
  Pb str;
  str.varint(1, 1).varint(2, uint64_t(DataType::String)).bytes(8, "names").bytes(6, "a");
  GraphBuilder s;
  s.init(str).add(node("Identity", {"names"}, {"y"})).output(tensorInfo("y", DataType::Float, {}));
  CHECK_THROWS_WITH_AS(s.model(13),
                       "model.onnx: initializer 'names': data type STRING is not supported",
                       UnsupportedError);

  GraphBuilder c;
  c.add(node("Constant", {}, {"y"}, "k")
            .msg(5, attr("value_string", AttributeType::String).bytes(4, "hi")));
  c.output(tensorInfo("y", DataType::Float, {}));
  CHECK_THROWS_WITH_AS(c.model(12),
                       "model.onnx: node 'k' (Constant, opset 12): attribute 'value_string' is "
                       "not supported yet",
                       UnsupportedError);

  GraphBuilder cast = oneNode(
      node("Cast", {"x"}, {"y"}, "c").msg(5, intAttr("to", int64_t(DataType::String))), {"1"});
  CHECK_THROWS_WITH_AS(cast.model(13),
                       "model.onnx: node 'c' (Cast, opset 13): casting to STRING is not supported",
                       UnsupportedError);
}

TEST_CASE("ONNX model: Identity and the element-wise ops each match their closed form") {
  // x -> op -> y, one model per op; ops defined on every real see negative values too
  const std::vector<float> xs = {0.25f, 0.5f, 1.0f, 2.0f, 3.5f, 9.0f};
  const std::vector<float> signedXs = {-0.25f, 0.5f, -1.0f, 2.0f, -3.5f, 0.0f};
  struct Case {
    const char *op;
    double (*f)(double);
    bool anySign;
  };
  const Case cases[] = {
      {"Identity", [](double x) { return x; }, true},
      {"Neg", [](double x) { return -x; }, true},
      {"Abs", [](double x) { return std::fabs(x); }, true},
      {"Relu", [](double x) { return std::max(0.0, x); }, true},
      {"Sigmoid", [](double x) { return 1 / (1 + std::exp(-x)); }, true},
      {"Tanh", [](double x) { return std::tanh(x); }, true},
      {"Exp", [](double x) { return std::exp(x); }, true},
      {"Log", [](double x) { return std::log(x); }, false},
      {"Sqrt", [](double x) { return std::sqrt(x); }, false},
      {"Reciprocal", [](double x) { return 1 / x; }, false},
  };
  for (const Case &c : cases) {
    CAPTURE(c.op);
    Model m = oneNode(node(c.op, {"x"}, {"y"}, "n"), {"2", "3"}).model(13);
    const std::vector<float> &in = c.anySign ? signedXs : xs;
    std::vector<float> want;
    for (float x : in) want.push_back(static_cast<float>(c.f(x)));
    std::vector<float> got = m.run({{"x", floats(in, {2, 3})}}).at("y").toVector<float>();
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5).scale(1));
  }
  // Div by an initializer, broadcast along the last axis
  GraphBuilder b;
  b.init(floatTensor("d", {3}, {2, 4, 0.5f}));
  b.input(tensorInfo("x", DataType::Float, {"2", "3"}));
  b.add(node("Div", {"x", "d"}, {"y"}, "div"));
  b.output(tensorInfo("y", DataType::Float, {}));
  checkClose(b.model(13).run({{"x", floats(xs, {2, 3})}}).at("y").toVector<float>(),
             {0.125f, 0.125f, 2.0f, 1.0f, 0.875f, 18.0f});
}

TEST_CASE("ONNX model: shape arithmetic is folded on the host and costs no kernels") {
  // torch.onnx's attention reshape: x [2, 3, 8] -> Shape -> Gather(0), Gather(1) -> Unsqueeze ->
  // Concat with [-1, 4] (as [b, t, -1, 4]) -> Reshape, and a scale 1/sqrt(float(Shape[-1])) that
  // Cast, Sqrt and Div compute from the shape: only the float math on x may be a kernel.
  GraphBuilder b;
  b.input(tensorInfo("x", DataType::Float, {"batch", "3", "8"}));
  b.add(node("Shape", {"x"}, {"s"}));
  b.add(node("Constant", {}, {"i0"}).msg(5, tensorAttr("value", int64Tensor("", {}, {0}))));
  b.add(node("Constant", {}, {"i1"}).msg(5, tensorAttr("value", int64Tensor("", {}, {1}))));
  b.add(node("Constant", {}, {"ax"}).msg(5, tensorAttr("value", int64Tensor("", {1}, {0}))));
  b.add(node("Constant", {}, {"tail"}).msg(5, tensorAttr("value", int64Tensor("", {2}, {-1, 4}))));
  b.add(node("Gather", {"s", "i0"}, {"b"}));
  b.add(node("Gather", {"s", "i1"}, {"t"}));
  b.add(node("Unsqueeze", {"b", "ax"}, {"b1"}));
  b.add(node("Unsqueeze", {"t", "ax"}, {"t1"}));
  b.add(node("Concat", {"b1", "t1", "tail"}, {"shape"}).msg(5, intAttr("axis", 0)));
  b.add(node("Reshape", {"x", "shape"}, {"r"}));
  b.add(node("Shape", {"r"}, {"rs"}).msg(5, intAttr("start", -1)));
  b.add(node("Cast", {"rs"}, {"rf"}).msg(5, intAttr("to", int64_t(DataType::Float))));
  b.add(node("Sqrt", {"rf"}, {"sq"}));
  b.add(node("Div", {"r", "sq"}, {"y"}));
  b.output(tensorInfo("y", DataType::Float, {}));
  Model m = b.model(13);
  std::vector<float> xs = iota(48, -2, 0.125f);
  Tensor y = m.run({{"x", floats(xs, {2, 3, 8})}}).at("y");
  CHECK(y.intShape() == std::vector<int64_t>{2, 3, 2, 4});
  std::vector<ScheduleItem> items = schedule(y.lazydata());
  int kernels = 0;
  for (const ScheduleItem &si : items)
    if (si.isKernel()) {
      ++kernels;
      CHECK_MESSAGE(si.out->dtype().isFloat(), "an integer kernel: the shape chain was not folded");
    }
  CHECK(kernels == 1);
  std::vector<float> want;
  for (float v : xs) want.push_back(v / 2.0f); // sqrt(4)
  checkClose(y.toVector<float>(), want);
}

TEST_CASE("ONNX model: a folded shape chain follows a new input size on the next run") {
  GraphBuilder b;
  b.input(tensorInfo("x", DataType::Float, {"batch", "4"}));
  b.add(node("Shape", {"x"}, {"s"}));
  b.add(node("Constant", {}, {"two"}).msg(5, tensorAttr("value", int64Tensor("", {1}, {2}))));
  b.add(node("Mul", {"s", "two"}, {"s2"})); // [2b, 8]
  b.add(node("Constant", {}, {"all"}).msg(5, tensorAttr("value", int64Tensor("", {1}, {-1}))));
  b.add(node("Concat", {"all", "two"}, {"shape"}).msg(5, intAttr("axis", 0)));
  b.add(node("Reshape", {"x", "shape"}, {"y"}));
  b.add(node("Shape", {"y"}, {"ys"}));
  b.add(node("Add", {"ys", "s2"}, {"z"})); // [b*2 + 2b, 2 + 8]
  b.output(tensorInfo("y", DataType::Float, {})).output(tensorInfo("z", DataType::Int64, {}));
  Model m = b.model(13);
  for (int64_t batch : {1, 3}) {
    std::map<std::string, Tensor> out =
        m.run({{"x", floats(iota(size_t(batch * 4)), {batch, 4})}});
    CHECK(out.at("y").intShape() == std::vector<int64_t>{batch * 2, 2});
    CHECK(out.at("z").toVector<int64_t>() == std::vector<int64_t>{4 * batch, 10});
  }
}

namespace {

/// A model whose initializer 'w' (float [3]) lives in `location` at `offset` (ONNX external data),
/// written to dir/model.onnx.
std::string externalModel(const std::filesystem::path &dir, const std::string &location,
                          int64_t offset, std::optional<int64_t> length) {
  Pb loc, off, len;
  loc.bytes(1, "location").bytes(2, location);
  off.bytes(1, "offset").bytes(2, std::to_string(offset));
  Pb ext;
  ext.varint(1, 3).varint(2, uint64_t(DataType::Float)).bytes(8, "w").msg(13, loc).msg(13, off);
  if (length) ext.msg(13, len.bytes(1, "length").bytes(2, std::to_string(*length)));
  ext.varint(14, 1);
  GraphBuilder b;
  b.init(ext).input(tensorInfo("x", DataType::Float, {"3"}));
  b.add(node("Mul", {"x", "w"}, {"y"})).output(tensorInfo("y", DataType::Float, {"3"}));
  std::string path = (dir / "model.onnx").string();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  Pb model = modelOf(b.g, 13);
  f.write(model.str().data(), std::streamsize(model.out.size()));
  return path;
}

} // namespace

TEST_CASE("ONNX model: external data is read from its file beside the model when realized") {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "lazyjit-onnx-external";
  std::filesystem::create_directories(dir / "weights");
  {
    // 8 bytes of padding, then w = [2, 3, 4]
    std::ofstream w(dir / "weights" / "w.bin", std::ios::binary | std::ios::trunc);
    std::vector<float> v = {-1, -1, 2, 3, 4};
    w.write(reinterpret_cast<const char *>(v.data()), std::streamsize(v.size() * 4));
  }
  Model m = Model::load(externalModel(dir, "weights/w.bin", 8, 12));
  Tensor y = m.run({{"x", floats({1, 10, 100}, {3})}}).at("y");
  checkClose(y.toVector<float>(), {2, 30, 400});

  // a length that disagrees with the dims, bytes past the end, a missing file, a path out of the
  // model's directory: each an Error naming the initializer
  CHECK_THROWS_WITH_AS(Model::load(externalModel(dir, "weights/w.bin", 8, 16)),
                       doctest::Contains("initializer 'w': external data length 16 does not match"),
                       Error);
  CHECK_THROWS_WITH_AS(Model::load(externalModel(dir, "weights/w.bin", 12, std::nullopt)),
                       doctest::Contains("external data needs bytes 12..24"), Error);
  CHECK_THROWS_WITH_AS(Model::load(externalModel(dir, "nothere.bin", 0, std::nullopt)),
                       doctest::Contains("initializer 'w': external data: "), Error);
  CHECK_THROWS_WITH_AS(Model::load(externalModel(dir, "../w.bin", 0, std::nullopt)),
                       doctest::Contains("is outside the model's directory"), Error);
  CHECK_THROWS_WITH_AS(Model::load(externalModel(dir, "/etc/passwd", 0, std::nullopt)),
                       doctest::Contains("is outside the model's directory"), Error);
  std::filesystem::remove_all(dir);
}

TEST_CASE("ONNX model: a graph output with no name, or one that no node produces, is an Error at load") {
  // (found by fuzz-onnx: a GRU whose first output is omitted and a graph output named "")
  GraphBuilder b = oneNode(node("Relu", {"x"}, {"y"}), {"2"});
  b.output(tensorInfo("", DataType::Float, {}));
  CHECK_THROWS_WITH_AS(b.model(13), doctest::Contains("graph output '' is not produced"), Error);
}

TEST_CASE("ONNX model: runInOrder takes the inputs and gives the outputs in graph order") {
  GraphBuilder b;
  b.input(tensorInfo("a", DataType::Float, {"2"})).input(tensorInfo("b", DataType::Float, {"2"}));
  b.add(node("Sub", {"a", "b"}, {"d"})).add(node("Mul", {"a", "b"}, {"p"}));
  b.output(tensorInfo("p", DataType::Float, {})).output(tensorInfo("d", DataType::Float, {}));
  Model m = b.model(13);
  std::vector<Tensor> out = m.runInOrder({floats({5, 1}, {2}), floats({2, 3}, {2})});
  REQUIRE(out.size() == 2);
  checkClose(out[0].toVector<float>(), {10, 3}); // p, the first graph output
  checkClose(out[1].toVector<float>(), {3, -2});
  CHECK_THROWS_WITH_AS(m.runInOrder({floats({5, 1}, {2})}),
                       "model.onnx: 1 inputs given, the model takes 2", Error);
}

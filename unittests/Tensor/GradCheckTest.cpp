// Gradient checks of every differentiable primitive (the mlops of lib/Tensor/MLOps.cpp), unary
// math, binary ops and reductions, by central finite differences in float64 on both devices (the
// harness: GradCheck.h), and closed-form checks where a difference cannot see the gradient.
//
// Not gradient-checked, because they are piecewise constant (their gradient is 0 where it exists
// and finite differences only see their jumps): trunc, floor, ceil, sign, the comparisons
// (lt, gt, le, ge, eq, ne), argmax and argmin. Max with ties is checked against the reference's
// closed form (the gradient is split evenly between tied maxima), not by differences, because the
// function has a kink there.
#include "GradCheck.h"

using namespace lazyjit;
using namespace lazyjit::testing;

namespace {

/// Each primitive on its own, so the output's Function is the one checked.
std::vector<GradCase> primitiveCases() {
  return {
      {"Contiguous", {in({3, 4}, 1)}, FN(return x[0].permute({1, 0}).contiguous();), "Contiguous"},
      {"ContiguousBackward", {in({3, 4}, 2)}, FN(return x[0].contiguousBackward();), "ContiguousBackward"},
      {"Cast float64 -> float32", {in({3, 4}, 3, 0.5, 1.9)}, FN(return x[0].cast(f32);), "Cast", kH32},
      {"Cast float32 -> float64", {given({3, 4}, vals(12, 4, 0.5, 1.9), f32)}, FN(return x[0].cast(f64);),
       "Cast", kH32},
      {"Zero (x * 0)", {in({3, 4}, 5)}, FN(return x[0].mul(0);), "Zero"},
      {"Neg", {in({3, 4}, 6)}, FN(return x[0].neg();), "Neg"},
      {"Sin", {in({3, 4}, 7, -4, 4)}, FN(return x[0].sin();), "Sin"},
      {"Relu", {in({3, 4}, 8, -2, 2, {0})}, FN(return x[0].relu();), "Relu"},
      {"Log", {in({3, 4}, 9, 0.2, 4)}, FN(return x[0].log();), "Log"},
      {"Exp", {in({3, 4}, 10)}, FN(return x[0].exp();), "Exp"},
      {"Sqrt", {in({3, 4}, 11, 0.2, 4)}, FN(return x[0].sqrt();), "Sqrt"},
      {"Sigmoid", {in({3, 4}, 12, -4, 4)}, FN(return x[0].sigmoid();), "Sigmoid"},
      {"Add", {in({3, 4}, 13), in({3, 4}, 14)}, FN(return x[0].add(x[1]);), "Add"},
      {"Sub", {in({3, 4}, 15), in({3, 4}, 16)}, FN(return x[0].sub(x[1]);), "Sub"},
      {"Mul", {in({3, 4}, 17), in({3, 4}, 18)}, FN(return x[0].mul(x[1]);), "Mul"},
      {"Div", {in({3, 4}, 19), in({3, 4}, 20, -2, 2, {0}, 0.4)}, FN(return x[0].div(x[1]);), "Div"},
      {"Where (both branches)", {in({3, 4}, 21), in({3, 4}, 22)},
       FN(return bools({1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0}, {3, 4}, dev).where(x[0], x[1]);), "Where"},
      {"Sum (one axis, keepdim)", {in({3, 4}, 23)}, FN(return x[0].sum(Axes{1}, true);), "Sum"},
      {"Sum (all, keepdim)", {in({2, 3, 2}, 24)}, FN(return x[0].sum(std::nullopt, true);), "Sum"},
      {"Max (no ties, one axis)", {in({3, 4}, 25)}, FN(return x[0].max(Axes{1}, true);), "Max"},
      {"Max (no ties, two axes)", {in({2, 3, 2}, 26)}, FN(return x[0].max(Axes{0, 2}, true);), "Max"},
      {"Expand", {in({3, 1, 2}, 27)}, FN(return x[0].expand({3, 4, 2});), "Expand"},
      {"Reshape", {in({3, 4}, 28)}, FN(return x[0].reshape({2, 6});), "Reshape"},
      {"Permute", {in({2, 3, 4}, 29)}, FN(return x[0].permute({2, 0, 1});), "Permute"},
      {"Pad", {in({2, 3}, 30)}, FN(return x[0].pad(pads({{1, 2}, {0, 1}}));), "Pad"},
      {"Shrink", {in({4, 5}, 31)}, FN(return x[0].shrink(pads({{1, 3}, {0, 4}}));), "Shrink"},
      {"Flip", {in({3, 4}, 32)}, FN(return x[0].flip({0, 1});), "Flip"},
  };
}

std::vector<GradCase> unaryCases() {
  return {
      {"neg", {in({2, 5}, 101)}, FN(return x[0].neg();)},
      {"log", {in({2, 5}, 102, 0.2, 4)}, FN(return x[0].log();)},
      {"log2", {in({2, 5}, 103, 0.2, 4)}, FN(return x[0].log2();)},
      {"exp", {in({2, 5}, 104)}, FN(return x[0].exp();)},
      {"exp2", {in({2, 5}, 105)}, FN(return x[0].exp2();)},
      {"relu", {in({2, 5}, 106, -2, 2, {0})}, FN(return x[0].relu();)},
      {"sigmoid", {in({2, 5}, 107, -4, 4)}, FN(return x[0].sigmoid();)},
      {"sin", {in({2, 5}, 108, -4, 4)}, FN(return x[0].sin();)},
      {"cos", {in({2, 5}, 109, -4, 4)}, FN(return x[0].cos();)},
      {"tan", {in({2, 5}, 110, -1.2, 1.2)}, FN(return x[0].tan();)},
      {"sqrt", {in({2, 5}, 111, 0.2, 4)}, FN(return x[0].sqrt();)},
      {"rsqrt", {in({2, 5}, 112, 0.3, 4)}, FN(return x[0].rsqrt();)},
      {"square", {in({2, 5}, 113)}, FN(return x[0].square();)},
      {"clip", {in({2, 5}, 114, -2, 2, {-1, 0.5})}, FN(return x[0].clip(-1, 0.5);)},
      {"abs", {in({2, 5}, 115, -2, 2, {0})}, FN(return x[0].abs();)},
      {"reciprocal", {in({2, 5}, 116, -2, 2, {0}, 0.4)}, FN(return x[0].reciprocal();)},
      {"elu", {in({2, 5}, 117, -3, 2, {0})}, FN(return x[0].elu();)},
      {"elu (alpha 0.5)", {in({2, 5}, 118, -3, 2, {0})}, FN(return x[0].elu(0.5);)},
      {"celu", {in({2, 5}, 119, -3, 2, {0})}, FN(return x[0].celu(1.5);)},
      {"swish", {in({2, 5}, 120, -4, 4)}, FN(return x[0].swish();)},
      {"silu", {in({2, 5}, 121, -4, 4)}, FN(return x[0].silu();)},
      {"relu6", {in({2, 5}, 122, -2, 8, {0, 6})}, FN(return x[0].relu6();)},
      {"hardswish", {in({2, 5}, 123, -4, 4, {-3, 3})}, FN(return x[0].hardswish();)},
      {"tanh", {in({2, 5}, 124, -3, 3)}, FN(return x[0].tanh();)},
      {"sinh", {in({2, 5}, 125)}, FN(return x[0].sinh();)},
      {"cosh", {in({2, 5}, 126)}, FN(return x[0].cosh();)},
      {"atanh", {in({2, 5}, 127, -0.9, 0.9)}, FN(return x[0].atanh();)},
      {"asinh", {in({2, 5}, 128, -3, 3)}, FN(return x[0].asinh();)},
      {"acosh", {in({2, 5}, 129, 1.2, 4)}, FN(return x[0].acosh();)},
      {"hardtanh", {in({2, 5}, 130, -2, 2, {-1, 1})}, FN(return x[0].hardtanh();)},
      {"hardtanh (-0.5, 1.5)", {in({2, 5}, 131, -2, 2, {-0.5, 1.5})}, FN(return x[0].hardtanh(-0.5, 1.5);)},
      {"gelu", {in({2, 5}, 132, -3, 3)}, FN(return x[0].gelu();)},
      {"quickGelu", {in({2, 5}, 133, -3, 3)}, FN(return x[0].quickGelu();)},
      {"leakyrelu", {in({2, 5}, 134, -2, 2, {0})}, FN(return x[0].leakyrelu(0.2);)},
      {"mish", {in({2, 5}, 135, -3, 3)}, FN(return x[0].mish();)},
      {"softplus", {in({2, 5}, 136, -3, 3)}, FN(return x[0].softplus();)},
      {"softplus (beta 2)", {in({2, 5}, 137, -3, 3)}, FN(return x[0].softplus(2);)},
      {"softsign", {in({2, 5}, 138, -3, 3, {0})}, FN(return x[0].softsign();)},
      {"cast float32 -> float64 -> float32", {given({2, 5}, vals(10, 139, 0.5, 1.9), f32)},
       FN(return x[0].cast(f64).cast(f32);), "Cast", kH32},
  };
}

std::vector<GradCase> binaryCases() {
  return {
      {"add: tensor + tensor", {in({2, 3}, 201), in({2, 3}, 202)}, FN(return x[0].add(x[1]);)},
      {"add: broadcast (2, 3) + (3)", {in({2, 3}, 203), in({3}, 204)}, FN(return x[0] + x[1];)},
      {"add: broadcast (2, 1) + (1, 3)", {in({2, 1}, 205), in({1, 3}, 206)}, FN(return x[0] + x[1];)},
      {"add: tensor + 0-d tensor", {in({2, 3}, 207), in({}, 208)}, FN(return x[0] + x[1];)},
      {"add: tensor + scalar", {in({2, 3}, 209)}, FN(return x[0] + 1.5;)},
      {"add: scalar + tensor", {in({2, 3}, 210)}, FN(return 1.5 + x[0];)},
      {"add: reverse tensor operand", {in({2, 3}, 211), in({3}, 212)}, FN(return x[0].add(x[1], true);)},
      {"sub: tensor - tensor", {in({2, 3}, 213), in({2, 3}, 214)}, FN(return x[0] - x[1];)},
      {"sub: broadcast (3) - (2, 3)", {in({3}, 215), in({2, 3}, 216)}, FN(return x[0] - x[1];)},
      {"sub: tensor - scalar", {in({2, 3}, 217)}, FN(return x[0] - 2.5;)},
      {"sub: scalar - tensor", {in({2, 3}, 218)}, FN(return 2.5 - x[0];)},
      {"sub: reverse tensor operand", {in({2, 3}, 219), in({2, 1}, 220)}, FN(return x[0].sub(x[1], true);)},
      {"mul: tensor * tensor", {in({2, 3}, 221), in({2, 3}, 222)}, FN(return x[0] * x[1];)},
      {"mul: broadcast (2, 1, 3) * (4, 1)", {in({2, 1, 3}, 223), in({4, 1}, 224)}, FN(return x[0] * x[1];)},
      {"mul: tensor * scalar", {in({2, 3}, 225)}, FN(return x[0] * 2.5;)},
      {"mul: scalar * tensor", {in({2, 3}, 226)}, FN(return -0.75 * x[0];)},
      {"mul: tensor * -1", {in({2, 3}, 227)}, FN(return x[0] * -1;)},
      {"mul: tensor * 1 (plus a sin, so it has a graph)", {in({2, 3}, 228)}, FN(return (x[0] * 1).sin();)},
      {"mul: tensor * itself", {in({2, 3}, 229)}, FN(return x[0] * x[0];)},
      {"div: tensor / tensor", {in({2, 3}, 230), in({2, 3}, 231, -2, 2, {0}, 0.4)}, FN(return x[0] / x[1];)},
      {"div: broadcast (2, 3) / (3)", {in({2, 3}, 232), in({3}, 233, -2, 2, {0}, 0.4)}, FN(return x[0] / x[1];)},
      {"div: tensor / scalar", {in({2, 3}, 234)}, FN(return x[0] / 2.5;)},
      {"div: scalar / tensor", {in({2, 3}, 235, -2, 2, {0}, 0.4)}, FN(return 2.5 / x[0];)},
      {"div: reverse tensor operand", {in({2, 3}, 236, -2, 2, {0}, 0.4), in({3}, 237)},
       FN(return x[0].div(x[1], true);)},
      {"pow: x ** 2", {in({2, 3}, 238)}, FN(return x[0].pow(2);)},
      {"pow: x ** 3", {in({2, 3}, 239)}, FN(return x[0].pow(3);)},
      {"pow: x ** 0.5", {in({2, 3}, 240, 0.2, 3)}, FN(return x[0].pow(0.5);)},
      {"pow: x ** 2.5", {in({2, 3}, 241, 0.2, 3)}, FN(return x[0].pow(2.5);)},
      {"pow: x ** -1.5", {in({2, 3}, 242, 0.2, 3)}, FN(return x[0].pow(-1.5);)},
      {"pow: x ** -2", {in({2, 3}, 243, -2, 2, {0}, 0.4)}, FN(return x[0].pow(-2);)},
      {"pow: negative x ** 5 (odd integer, general path)", {in({2, 3}, 244, -2, -0.3)}, FN(return x[0].pow(5);)},
      {"pow: mixed-sign x ** 4 (even integer, general path)", {in({2, 3}, 245, -2, 2, {0}, 0.3)},
       FN(return x[0].pow(4);)},
      {"pow: 2 ** x", {in({2, 3}, 246)}, FN(return x[0].pow(2, true);)},
      {"pow: 0.5 ** x", {in({2, 3}, 247)}, FN(return x[0].pow(0.5, true);)},
      {"pow: tensor ** tensor (positive base)", {in({2, 3}, 248, 0.3, 3), in({2, 3}, 249)},
       FN(return x[0].pow(x[1]);)},
      {"pow: broadcast tensor ** tensor", {in({2, 3}, 250, 0.3, 3), in({3}, 251)}, FN(return x[0].pow(x[1]);)},
      {"pow: tensor ** 0-d tensor", {in({2, 3}, 252, 0.3, 3), in({}, 253)}, FN(return x[0].pow(x[1]);)},
      {"pow: reverse tensor operand", {in({2, 3}, 254), in({2, 3}, 255, 0.3, 3)},
       FN(return x[0].pow(x[1], true);)},
      {"maximum: tensor, tensor", {in({2, 3}, 256), in({2, 3}, 257)}, FN(return x[0].maximum(x[1]);)},
      {"maximum: broadcast", {in({2, 3}, 258), in({3}, 259)}, FN(return x[0].maximum(x[1]);)},
      {"maximum: scalar", {in({2, 3}, 260, -2, 2, {0.25})}, FN(return x[0].maximum(0.25);)},
      {"minimum: tensor, tensor", {in({2, 3}, 261), in({2, 3}, 262)}, FN(return x[0].minimum(x[1]);)},
      {"minimum: broadcast", {in({2, 1}, 263), in({2, 3}, 264)}, FN(return x[0].minimum(x[1]);)},
      {"minimum: scalar", {in({2, 3}, 265, -2, 2, {-0.5})}, FN(return x[0].minimum(-0.5);)},
      {"where: broadcast branches", {in({3}, 266), in({2, 1}, 267)},
       FN(return bools({1, 0, 1, 0, 0, 1}, {2, 3}, dev).where(x[0], x[1]);)},
      {"where: tensor, scalar", {in({2, 3}, 268)}, FN(return bools({1, 0, 1, 0, 0, 1}, {2, 3}, dev).where(x[0], 0.5);)},
      {"where: scalar, tensor", {in({2, 3}, 269)}, FN(return bools({1, 0, 1, 0, 0, 1}, {2, 3}, dev).where(-1.0, x[0]);)},
      {"where: condition computed from a detached input", {in({2, 3}, 270), in({2, 3}, 271)},
       FN(return x[0].detach().gt(0).where(x[0].exp(), x[1].sin());)},
  };
}

std::vector<GradCase> reduceCases() {
  return {
      {"sum: all", {in({2, 3, 4}, 301)}, FN(return x[0].sum();)},
      {"sum: axis 0", {in({2, 3, 4}, 302)}, FN(return x[0].sum(Axes{0});)},
      {"sum: axis 1 keepdim", {in({2, 3, 4}, 303)}, FN(return x[0].sum(Axes{1}, true);)},
      {"sum: axes (0, 2)", {in({2, 3, 4}, 304)}, FN(return x[0].sum(Axes{0, 2});)},
      {"sum: axis -1 keepdim", {in({2, 3, 4}, 305)}, FN(return x[0].sum(Axes{-1}, true);)},
      {"max: all", {in({2, 3, 4}, 306)}, FN(return x[0].max();)},
      {"max: axis -1", {in({2, 3, 4}, 307)}, FN(return x[0].max(Axes{-1});)},
      {"max: axes (0, 2) keepdim", {in({2, 3, 4}, 308)}, FN(return x[0].max(Axes{0, 2}, true);)},
      {"min: all", {in({2, 3, 4}, 309)}, FN(return x[0].min();)},
      {"min: axis 1", {in({2, 3, 4}, 310)}, FN(return x[0].min(Axes{1});)},
      {"min: axis 0 keepdim", {in({2, 3, 4}, 311)}, FN(return x[0].min(Axes{0}, true);)},
      {"mean: all", {in({2, 3, 4}, 312)}, FN(return x[0].mean();)},
      {"mean: axes (0, 2) keepdim", {in({2, 3, 4}, 313)}, FN(return x[0].mean(Axes{0, 2}, true);)},
      {"mean: axis -1", {in({2, 3, 4}, 314)}, FN(return x[0].mean(Axes{-1});)},
      {"var: all", {in({2, 3, 4}, 315)}, FN(return x[0].var();)},
      {"var: axis 1", {in({2, 3, 4}, 316)}, FN(return x[0].var(Axes{1});)},
      {"var: axes (0, 2) keepdim, correction 0", {in({2, 3, 4}, 317)}, FN(return x[0].var(Axes{0, 2}, true, 0);)},
      {"std: all", {in({2, 3, 4}, 318)}, FN(return x[0].std();)},
      {"std: axis -1 keepdim", {in({2, 3, 4}, 319)}, FN(return x[0].std(Axes{-1}, true);)},
      {"std: axis 0, correction 0", {in({2, 3, 4}, 320)}, FN(return x[0].std(Axes{0}, false, 0);)},
      {"softmax: last axis", {in({3, 4}, 321)}, FN(return x[0].softmax();)},
      {"softmax: axis 0", {in({3, 4}, 322)}, FN(return x[0].softmax(0);)},
      {"softmax: middle axis of 3", {in({2, 3, 2}, 323)}, FN(return x[0].softmax(1);)},
      {"logSoftmax: last axis", {in({3, 4}, 324)}, FN(return x[0].logSoftmax();)},
      {"logSoftmax: axis 0", {in({3, 4}, 325)}, FN(return x[0].logSoftmax(0);)},
      {"cumsum: axis 0", {in({4, 3}, 326)}, FN(return x[0].cumsum(0);)},
      {"cumsum: axis -1", {in({3, 5}, 327)}, FN(return x[0].cumsum(-1);)},
      {"cumsum: 1-d", {in({6}, 328)}, FN(return x[0].cumsum();)},
      // n > 512 takes the two-stage path (blocks of 256, then a cumsum of the block sums); the
      // full gradient is also checked against its closed form in a test of its own below
      {"cumsum: 600 elements (two-stage)", {in({600}, 329)}, FN(return x[0].cumsum();), "", 1e-6, 24},
      {"cumsum: (2, 530) along axis 1 (two-stage)", {in({2, 530}, 330)}, FN(return x[0].cumsum(1);), "", 1e-6,
       12},
      {"cumsum: (520, 2) along axis 0 (two-stage)", {in({520, 2}, 331)}, FN(return x[0].cumsum(0);), "", 1e-6,
       12},
      {"einsum: ij,jk->ik", {in({2, 3}, 332), in({3, 2}, 333)},
       FN(return Tensor::einsum("ij,jk->ik", {x[0], x[1]});)},
      {"einsum: bij,bkj->bik", {in({2, 2, 3}, 334), in({2, 2, 3}, 335)},
       FN(return Tensor::einsum("bij,bkj->bik", {x[0], x[1]});)},
      {"einsum: i,j->ij (outer)", {in({3}, 336), in({4}, 337)}, FN(return Tensor::einsum("i,j->ij", {x[0], x[1]});)},
      {"einsum: ijk->kj (sum and permute)", {in({2, 3, 4}, 338)}, FN(return Tensor::einsum("ijk->kj", {x[0]});)},
      {"einsum: ij,ij->", {in({2, 3}, 339), in({2, 3}, 340)}, FN(return Tensor::einsum("ij,ij->", {x[0], x[1]});)},
      {"einsum: three operands", {in({2, 3}, 341), in({3}, 342), in({3, 2}, 343)},
       FN(return Tensor::einsum("ij,j,jk->ik", {x[0], x[1], x[2]});)},
  };
}

} // namespace

TEST_CASE("GradCheck: every differentiable primitive matches finite differences") { runAll(primitiveCases()); }

TEST_CASE("GradCheck: unary math and activations match finite differences") { runAll(unaryCases()); }

TEST_CASE("GradCheck: binary ops in every operand form, maximum/minimum and where match finite "
          "differences") {
  runAll(binaryCases());
}

TEST_CASE("GradCheck: reductions, softmax, cumsum and einsum match finite differences") { runAll(reduceCases()); }

TEST_CASE("GradCheck: pow with a reversed tensor operand computes operand ** self") {
  // x.pow(y, true) is y ** x, as x.sub(y, true) is y - x; it used to read y as the scalar 0
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor e = make({2, 3, 0.5}, {3}, dev, f64);
    Tensor b = make({1.5, 2, 4}, {3}, dev, f64);
    expectValues(e.pow(b, true), {3}, {2.25, 8, 2}, {1e-12, 1e-12});
    expectValues(e.pow(b.reshape({3, 1}), true), {3, 3}, {2.25, 3.375, std::sqrt(1.5), 4, 8, std::sqrt(2.0), 16, 64, 2},
                 {1e-12, 1e-12});
  }
}

TEST_CASE("GradCheck: the check fails for a Function whose backward is wrong") {
  // x * x with a backward missing the factor 2: the comparison must see every element differ
  struct BadSquare : Function {
    LazyBufferRef x;
    std::string_view name() const override { return "BadSquare"; }
    LazyBufferRef forward(const LazyBufferRefs &in) override {
      x = in[0];
      return x->e(opts, Op::Mul, {x});
    }
    std::vector<LazyBufferRef> backward(const LazyBufferRef &g) override { return {x->e(opts, Op::Mul, {g})}; }
  };
  GradCase bad{"BadSquare", {in({2, 3}, 901, 0.5, 2)},
               FN(return Function::apply(std::make_shared<BadSquare>(), {x[0]});), "BadSquare"};
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    GradReport r = compareGrads(bad, dev);
    REQUIRE(r.bad.size() == 1);
    CHECK(r.bad[0] == 6);
  }
}

TEST_CASE("GradCheck: max splits the gradient evenly between tied maxima (closed form)") {
  // The reference's Max backward: 1 where x equals the max, divided by the number of such places
  const Vals x = {1, 3, 3, 0, /**/ 2, 2, 2, 2, /**/ 5, -1, 5, -1};
  const Vals w = {0.5, -2, 3};
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    {
      Tensor t = make(x, {3, 4}, dev, f64).setRequiresGrad(true);
      t.max(Axes{1}).mul(make(w, {3}, dev, f64)).sum().backward();
      expectValues(*t.grad(), {3, 4}, {0, 0.25, 0.25, 0, -0.5, -0.5, -0.5, -0.5, 1.5, 0, 1.5, 0}, {1e-15, 0});
    }
    {
      // over everything: the two 5s share the gradient
      Tensor t = make(x, {3, 4}, dev, f64).setRequiresGrad(true);
      t.max().mul(3).backward();
      expectValues(*t.grad(), {3, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 1.5, 0, 1.5, 0}, {1e-15, 0});
    }
    {
      // keepdim over axis 0: every column has two or three equal maxima
      Tensor t = make({1, 3, 5, 2, /**/ 1, 0, 5, 2, /**/ -1, 3, 4, 2}, {3, 4}, dev, f64).setRequiresGrad(true);
      t.max(Axes{0}, true).mul(make({1, 2, 3, 4}, {1, 4}, dev, f64)).sum().backward();
      expectValues(*t.grad(), {3, 4}, {0.5, 1, 1.5, 4.0 / 3, 0.5, 0, 1.5, 4.0 / 3, 0, 1, 0, 4.0 / 3}, {1e-15, 0});
    }
    {
      // min is -max(-x): ties of the minimum split the same way
      Tensor t = make(x, {3, 4}, dev, f64).setRequiresGrad(true);
      t.min(Axes{1}).mul(make(w, {3}, dev, f64)).sum().backward();
      expectValues(*t.grad(), {3, 4}, {0, 0, 0, 0.5, -0.5, -0.5, -0.5, -0.5, 0, 1.5, 0, 1.5}, {1e-15, 0});
    }
    {
      // maximum / minimum of two tensors: (x + y) / 2 where they are equal, so half each
      Tensor a = make({1, 2, 3}, {3}, dev, f64).setRequiresGrad(true);
      Tensor b = make({1, 5, 0}, {3}, dev, f64).setRequiresGrad(true);
      a.maximum(b).mul(make({2, 4, 8}, {3}, dev, f64)).sum().backward();
      expectValues(*a.grad(), {3}, {1, 0, 8}, {1e-15, 0});
      expectValues(*b.grad(), {3}, {1, 4, 0}, {1e-15, 0});
      Tensor c = make({1, 2, 3}, {3}, dev, f64).setRequiresGrad(true);
      c.minimum(2).mul(make({2, 4, 8}, {3}, dev, f64)).sum().backward();
      expectValues(*c.grad(), {3}, {2, 2, 0}, {1e-15, 0});
    }
    {
      // maxPool2d: a window with two equal maxima
      Tensor t = make({1, 4, 4, 0, /**/ 2, 3, 7, 7}, {1, 1, 2, 4}, dev, f64).setRequiresGrad(true);
      t.maxPool2d().mul(make({2, 6}, {1, 1, 1, 2}, dev, f64)).sum().backward();
      expectValues(*t.grad(), {1, 1, 2, 4}, {0, 2, 0, 0, 0, 0, 3, 3}, {1e-15, 0});
    }
  }
}

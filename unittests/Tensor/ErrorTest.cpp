// Bad arguments: every op throws the right lazyjit::Error subclass at the call, with a message that
// names the op, the operands' dtypes and shapes, and the rule broken.
#include "TensorTestUtil.h"
#include "lazyjit/NN/Layers.h"

using namespace lazyjit;
using namespace lazyjit::testing;
using doctest::Contains;

namespace {
Tensor zeros(const Ints &shape, const std::string &dev, DType dt = dtypes::float32) {
  return Tensor::zeros(toShape(shape), {dt, dev});
}
} // namespace

TEST_CASE("Tensor errors: movement ops name the op, the shapes and the rule") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor x = zeros({4, 6}, dev);
    CHECK_THROWS_WITH_AS(
        x.reshape({5, 5}),
        Contains("reshape: cannot reshape float32[4, 6] (24 elements) to [5, 5] (25 elements)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        x.reshape({-1, -1}),
        Contains("reshape: cannot reshape float32[4, 6] to [-1, -1]: more than one -1"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        x.reshape({-2, -12}),
        Contains("reshape: cannot reshape float32[4, 6] to [-2, -12]: negative dimension"),
        ShapeError);
    CHECK_THROWS_WITH_AS(x.reshape({-1, 7}), Contains("reshape: cannot reshape float32[4, 6]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(zeros({0, 3}, dev).reshape({0, -1}),
                         Contains("reshape: cannot infer -1 in [0, -1] for float32[0, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        x.permute({0, 0}),
        Contains("permute: (0, 0) is not a permutation of the 2 dims of float32[4, 6]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(x.permute({1}),
                         Contains("permute: (1,) is not a permutation of the 2 dims"), ShapeError);
    CHECK_THROWS_WITH_AS(x.permute({0, 2}), Contains("permute: (0, 2) is not a permutation"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        zeros({2, 3}, dev).expand({4, 3}),
        Contains("expand: cannot expand float32[2, 3] to [4, 3]: dim 0 has size 2, not 1"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        zeros({2, 3}, dev).expand({2, 2, 3}),
        Contains("expand: cannot expand float32[2, 3] to [2, 2, 3]: the number of dims differs"),
        ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).shrink({SIntPair(0, 2), SIntPair(1, 5)}),
                         Contains("shrink: bounds (1, 5) are outside dim 1 of float32[2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).shrink({SIntPair(2, 1), std::nullopt}),
                         Contains("shrink: bounds (2, 1) are outside dim 0"), ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).shrink({SIntPair(0, 1)}),
                         Contains("shrink: 1 bounds for float32[2, 3] (2 dims)"), ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).pad({SIntPair(-1, 0), std::nullopt}),
                         Contains("pad: negative padding (-1, 0) for float32[2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).pad({SIntPair(1, 0)}),
                         Contains("pad: 1 pairs for float32[2, 3] (2 dims)"), ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).pad2d({1, 2, 3}),
                         Contains("pad2d: padding (1, 2, 3) does not fit float32[2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).flip({2}),
                         Contains("flip: axis 2 is out of range for float32[2, 3] (2 dims)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).transpose(0, -3),
                         Contains("transpose: axis -3 is out of range for float32[2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).squeeze(2),
                         Contains("squeeze: axis 2 is out of range for float32[2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).unsqueeze(4),
                         Contains("unsqueeze: dim 4 is out of range for float32[2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).flatten(3),
                         Contains("flatten: start dim 3 for float32[2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).repeat({2}),
                         Contains("repeat: (2,) repeats for float32[2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).repeat({1, -1}), Contains("repeat: negative repeat -1"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).chunk(0), Contains("chunk: 0 chunks"), ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2, 3}, dev).chunk(2, 2), Contains("chunk: axis 2 is out of range"),
                         ShapeError);
  }
}

TEST_CASE("Tensor errors: cat, stack, getitem and gather") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor a = zeros({2, 3}, dev);
    CHECK_THROWS_WITH_AS(
        a.cat({zeros({2, 4}, dev)}),
        Contains("cat: cannot concatenate float32[2, 3] and float32[2, 4] along dim 0"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        a.cat({zeros({2, 3, 1}, dev)}, 1),
        Contains("cat: cannot concatenate float32[2, 3] and float32[2, 3, 1] along dim 1"),
        ShapeError);
    CHECK_THROWS_WITH_AS(a.cat({zeros({2, 3}, dev, dtypes::int32)}),
                         Contains("cat: dtype mismatch float32[2, 3] and int32[2, 3]"), DTypeError);
    CHECK_THROWS_WITH_AS(a.cat({a}, 2), Contains("cat: axis 2 is out of range for float32[2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        Tensor::scalar(1, {std::nullopt, dev}).cat({Tensor::scalar(2, {std::nullopt, dev})}),
        Contains("cat: a zero-dimensional tensor cannot be concatenated"), ShapeError);
    CHECK_THROWS_WITH_AS(Tensor::stack({}), Contains("stack: no tensors"), ShapeError);
    CHECK_THROWS_WITH_AS(Tensor::stack({a, zeros({3, 2}, dev)}),
                         Contains("cat: cannot concatenate float32[1, 2, 3] and float32[1, 3, 2]"),
                         ShapeError);
    // getitem
    CHECK_THROWS_WITH_AS(a.getitem({Index::at(2)}),
                         Contains("getitem: index 2 is out of bounds for dimension 0 with size 2"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.getitem({Index::all(), Index::at(-4)}),
                         Contains("getitem: index -4 is out of bounds for dimension 1 with size 3"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.getitem({Index::at(0), Index::at(0), Index::at(0)}),
                         Contains("getitem: too many indices for float32[2, 3] (2 dims)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.getitem({Index::ellipsis(), Index::ellipsis()}),
                         Contains("getitem: an index can only have a single ellipsis"), ShapeError);
    CHECK_THROWS_WITH_AS(a.getitem({Index::range(0, 2, 0)}),
                         Contains("getitem: slice step cannot be 0"), ShapeError);
    CHECK_THROWS_WITH_AS(
        Tensor::scalar(1, {std::nullopt, dev}).getitem(zeros({2}, dev, dtypes::int32)),
        Contains("getitem: cannot index a 0-d tensor"), ShapeError);
    CHECK_THROWS_WITH_AS(a.getitem(zeros({2}, dev, dtypes::boolean)),
                         Contains("getitem: index tensor must be numeric, got bool[2]"),
                         DTypeError);
    // gather
    CHECK_THROWS_WITH_AS(a.gather(zeros({2}, dev, dtypes::int32), 0),
                         Contains("gather: index int32[2] must have the rank of float32[2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        a.gather(zeros({3, 3}, dev, dtypes::int32), 1),
        Contains("gather: index int32[3, 3] is larger than float32[2, 3] in dim 0"), ShapeError);
    CHECK_THROWS_WITH_AS(a.gather(zeros({1, 1}, dev, dtypes::int32), 2),
                         Contains("gather: axis 2 is out of range for float32[2, 3]"), ShapeError);
  }
}

TEST_CASE("Tensor errors: elementwise broadcasting, devices and dtypes") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor a = zeros({2, 3}, dev), b = zeros({4}, dev);
    CHECK_THROWS_WITH_AS(a + b, Contains("add: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a - b, Contains("sub: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a * b, Contains("mul: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a / b, Contains("div: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(b.sub(a, true),
                         Contains("sub: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.pow(b), Contains("pow: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.maximum(b),
                         Contains("maximum: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.minimum(b),
                         Contains("minimum: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(static_cast<void>(a < b), Contains("lt: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(static_cast<void>(a > b), Contains("gt: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(static_cast<void>(a == b), Contains("eq: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(static_cast<void>(a != b), Contains("ne: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(static_cast<void>(a <= b), Contains("le: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(static_cast<void>(a >= b), Contains("ge: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.where(b, 0),
                         Contains("where: cannot broadcast float32[2, 3] with float32[4]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(zeros({3}, dev).where(zeros({3}, dev), zeros({2, 1, 2}, dev)),
                         Contains("where: cannot broadcast float32[3] with float32[2, 1, 2]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(zeros({2}, dev, dtypes::int32).xorWith(zeros({3}, dev, dtypes::int32)),
                         Contains("xor: cannot broadcast int32[2] with int32[3]"), ShapeError);
    // dtypes
    CHECK_THROWS_WITH_AS(a.xorWith(a),
                         Contains("xor: needs integer or bool operands, got float32[2, 3]"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(zeros({2}, dev, dtypes::int32).xorWith(zeros({2}, dev)),
                         Contains("xor: needs integer or bool operands, got float32[2]"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(
        a.bitcast(dtypes::int16),
        Contains("bitcast: cannot bitcast float32[2, 3] to int16: itemsizes 4 and 2 differ"),
        DTypeError);
    CHECK_THROWS_WITH_AS(zeros({2}, dev, dtypes::boolean).bitcast(dtypes::float16),
                         Contains("bitcast: cannot bitcast bool[2] to float16"), DTypeError);
    // devices
    std::string other = dev == "CPU" ? "INTERP" : "CPU";
    std::string devMsg = "add: operands are on different devices: float32[2, 3] on " + dev;
    CHECK_THROWS_WITH_AS(a + zeros({2, 3}, other), Contains(devMsg.c_str()), DeviceError);
    CHECK_THROWS_WITH_AS(zeros({2}, "NOPE"), Contains("full: unknown device 'NOPE'"), DeviceError);
    CHECK_THROWS_WITH_AS(Tensor::rand({2}, {std::nullopt, "nope:1"}),
                         Contains("rand: unknown device 'NOPE:1'"), DeviceError);
    CHECK_THROWS_WITH_AS(a.to("NOPE"), Contains("to: unknown device 'NOPE'"), DeviceError);
    CHECK_THROWS_WITH_AS(Tensor::fromValues({1}, {1}, {std::nullopt, "NOPE"}),
                         Contains("from data: unknown device 'NOPE'"), DeviceError);
    // undefined tensors and read-back
    CHECK_THROWS_WITH_AS(Tensor().shape(),
                         Contains("use of an undefined (default-constructed) Tensor"), Error);
    CHECK_THROWS_WITH_AS(a.item<float>(), Contains("item: the tensor has 6 elements, not 1"),
                         ShapeError);
    Tensor c = zeros({2, 3}, dev);
    CHECK_THROWS_WITH_AS(c.assign(zeros({3, 2}, dev)),
                         Contains("assign: shape mismatch float32[2, 3] != float32[3, 2]"),
                         ShapeError);
  }
}

TEST_CASE("Tensor errors: reductions check axes and dtypes") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    Tensor a = zeros({2, 3}, dev), i = zeros({3}, dev, dtypes::int32);
    CHECK_THROWS_WITH_AS(a.sum(Ints{2}),
                         Contains("sum: axis 2 is out of range for float32[2, 3] (2 dims)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.max(Ints{-3}),
                         Contains("max: axis -3 is out of range for float32[2, 3] (2 dims)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.min(Ints{0, 5}),
                         Contains("min: axis 5 is out of range for float32[2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(a.mean(Ints{2}),
                         Contains("mean: axis 2 is out of range for float32[2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(a.var(Ints{2}), Contains("var: axis 2 is out of range for float32[2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.std(Ints{-5}),
                         Contains("std: axis -5 is out of range for float32[2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(a.softmax(2),
                         Contains("softmax: axis 2 is out of range for float32[2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(a.logSoftmax(-3),
                         Contains("log_softmax: axis -3 is out of range for float32[2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.argmax(2), Contains("argmax: axis 2 is out of range for float32[2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.argmin(-3),
                         Contains("argmin: axis -3 is out of range for float32[2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(a.cumsum(2), Contains("cumsum: axis 2 is out of range for float32[2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(a.layernorm({3}),
                         Contains("layernorm: axis 3 is out of range for float32[2, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(i.mean(), Contains("mean: needs a floating-point tensor, got int32[3]"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(i.var(), Contains("var: needs a floating-point tensor, got int32[3]"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(i.std(), Contains("std: needs a floating-point tensor, got int32[3]"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(
        i.softmax(), Contains("softmax: needs a floating-point tensor, got int32[3]"), DTypeError);
    CHECK_THROWS_WITH_AS(i.logSoftmax(),
                         Contains("log_softmax: needs a floating-point tensor, got int32[3]"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(zeros({2}, dev, dtypes::boolean).layernorm(),
                         Contains("layernorm: needs a floating-point tensor, got bool[2]"),
                         DTypeError);
    CHECK_THROWS_WITH_AS(Tensor::einsum("ij,jk", {a, a}),
                         Contains("einsum: formula 'ij,jk' has no '->'"), ShapeError);
    CHECK_THROWS_WITH_AS(
        Tensor::einsum("ij,jk->ik", {a}),
        Contains("einsum: number of inputs doesn't match the formula, expected 2, got 1"),
        ShapeError);
    CHECK_THROWS_WITH_AS(Tensor::einsum("ijk->i", {a}),
                         Contains("einsum: 'ijk' does not match float32[2, 3]"), ShapeError);
    CHECK_THROWS_WITH_AS(Tensor::einsum("ij,ij->i", {a, zeros({3, 3}, dev)}),
                         Contains("einsum: letter 'i' has sizes 2 and 3"), ShapeError);
  }
}

TEST_CASE("Tensor errors: matmul, conv, pools and the nn ops") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    CHECK_THROWS_WITH_AS(
        zeros({2, 3}, dev).matmul(zeros({4, 5}, dev)),
        Contains("matmul: float32[2, 3] and float32[4, 5] cannot be multiplied (3 != 4)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        zeros({3}, dev).dot(zeros({2}, dev)),
        Contains("matmul: float32[3] and float32[2] cannot be multiplied (3 != 2)"), ShapeError);
    CHECK_THROWS_WITH_AS(
        Tensor::scalar(1, {std::nullopt, dev}).matmul(zeros({2}, dev)),
        Contains(
            "matmul: both arguments need to be at least 1D, but they are float32[] and float32[2]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        zeros({2, 3, 4}, dev).matmul(zeros({3, 4, 2}, dev)),
        Contains(
            "matmul: cannot broadcast the batch dims of float32[2, 3, 4] and float32[3, 4, 2]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        zeros({2, 3}, dev).linear(zeros({2, 5}, dev)),
        Contains("linear: float32[2, 3] and float32[2, 5] cannot be multiplied (3 != 2)"),
        ShapeError);
    // conv2d
    Tensor x = zeros({1, 3, 5, 5}, dev);
    CHECK_THROWS_WITH_AS(x.conv2d(zeros({2, 2, 3, 3}, dev)),
                         Contains("conv2d: input float32[1, 3, 5, 5] does not match the weights "
                                  "float32[2, 2, 3, 3] with groups=1 (2 vs. 3)"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        x.conv2d(zeros({2, 3, 3}, dev)),
        Contains("conv2d: input float32[1, 3, 5, 5] does not match the weights float32[2, 3, 3]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(x.conv2d(zeros({4, 1, 3, 3}, dev), std::nullopt, 2),
                         Contains("with groups=2 (2 vs. 3)"), ShapeError);
    CHECK_THROWS_WITH_AS(x.conv2d(zeros({2, 3, 3, 3}, dev), zeros({3}, dev)),
                         Contains("conv2d: bias float32[3] does not match 2 output channels"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        x.conv2d(zeros({2, 3, 3, 3}, dev), std::nullopt, 1, {1}, {1}, {1, 1, 1}),
        Contains("conv2d: expected padding of length 1, 2 or 4, got 3 for float32[1, 3, 5, 5]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        x.conv2d(zeros({2, 3, 6, 3}, dev)),
        Contains("conv2d: kernel (6, 3) (dilation (1, 1)) does not fit float32[1, 3, 5, 5]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(x.conv2d(zeros({2, 3, 3, 3}, dev), std::nullopt, 0),
                         Contains("conv2d: groups must be >= 1, got 0"), ShapeError);
    CHECK_THROWS_WITH_AS(x.conv2d(zeros({2, 3, 3, 3}, dev), std::nullopt, 1, {0}),
                         Contains("conv2d: stride (0, 0) must be positive"), ShapeError);
    CHECK_THROWS_WITH_AS(x.convTranspose2d(zeros({2, 3, 3}, dev)),
                         Contains("conv_transpose2d: input float32[1, 3, 5, 5] does not match the "
                                  "weights float32[2, 3, 3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(x.convTranspose2d(zeros({2, 3, 3, 3}, dev)),
                         Contains("conv_transpose2d: input float32[1, 3, 5, 5] does not match the "
                                  "weights float32[2, 3, 3, 3] with groups=1"),
                         ShapeError);
    // pools
    CHECK_THROWS_WITH_AS(
        x.avgPool2d({6, 6}),
        Contains("avg_pool2d: kernel (6, 6) (dilation (1, 1)) does not fit float32[1, 3, 5, 5]"),
        ShapeError);
    CHECK_THROWS_WITH_AS(x.maxPool2d({2, 2}, Ints{0, 1}),
                         Contains("max_pool2d: stride (0, 1) must be positive"), ShapeError);
    CHECK_THROWS_WITH_AS(
        x.maxPool2d({2, 2, 2, 2, 2}),
        Contains("max_pool2d: can't pool float32[1, 3, 5, 5] with (2, 2, 2, 2, 2)"), ShapeError);
    CHECK_THROWS_WITH_AS(x.maxPool2d({2, 2}, Ints{1, 1, 1}),
                         Contains("max_pool2d: expected 1 or 2 stride values, got 3"), ShapeError);
    // nn ops
    CHECK_THROWS_WITH_AS(zeros({3}, dev).triu(),
                         Contains("triu: needs a concrete >= 2-d tensor, got float32[3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(zeros({3}, dev).tril(),
                         Contains("tril: needs a concrete >= 2-d tensor, got float32[3]"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(
        zeros({3}, dev).batchnorm(std::nullopt, std::nullopt, zeros({3}, dev), zeros({3}, dev)),
        Contains("batchnorm: input float32[3] needs a channel dim"), ShapeError);
    CHECK_THROWS_WITH_AS(
        zeros({3}, dev).scaledDotProductAttention(zeros({3}, dev), zeros({3}, dev)),
        Contains("scaled_dot_product_attention: query float32[3], key float32[3] and value "
                 "float32[3] need >= 2 dims"),
        ShapeError);
    CHECK_THROWS_WITH_AS(
        zeros({2, 4}, dev).scaledDotProductAttention(zeros({3, 5}, dev), zeros({3, 2}, dev)),
        Contains("matmul: float32[2, 4] and float32[5, 3] cannot be multiplied (4 != 5)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(nn::Conv2d(3, 4, {3}, {1}, {0}, {1}, 2),
                         Contains("Conv2d: 3 input and 4 output channels are not divisible by groups=2"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(nn::LayerNorm({4})(zeros({2, 3}, dev)),
                         Contains("LayerNorm: last dimensions of float32[2, 3] must match [4]"),
                         ShapeError);
  }
}

TEST_CASE("Tensor errors: creation functions") {
  for (const std::string &dev : devices()) {
    CAPTURE(dev);
    CHECK_THROWS_WITH_AS(Tensor::arange(0, 5, 0, {std::nullopt, dev}),
                         Contains("arange: step must be nonzero"), ShapeError);
    CHECK_THROWS_WITH_AS(Tensor::eye(-1, {std::nullopt, dev}), Contains("eye: negative size -1"),
                         ShapeError);
    CHECK_THROWS_WITH_AS(Tensor::full({2, -3}, 1, {std::nullopt, dev}),
                         Contains("full: negative dimension in [2, -3]"), ShapeError);
    CHECK_THROWS_WITH_AS(Tensor::empty({-1}, {std::nullopt, dev}),
                         Contains("empty: negative dimension in [-1]"), ShapeError);
    CHECK_THROWS_WITH_AS(Tensor::rand({3, -1}, {std::nullopt, dev}),
                         Contains("rand: negative dimension in [3, -1]"), ShapeError);
    CHECK_THROWS_WITH_AS(Tensor::randint({3}, 5, 5, {std::nullopt, dev}),
                         Contains("randint: empty range [5, 5)"), ShapeError);
    CHECK_THROWS_WITH_AS(
        Tensor::fromValues({1, 2, 3}, {2, 2}, {std::nullopt, dev}),
        Contains("from data: 12 bytes do not fill float32[2, 2] (4 elements of 4 bytes)"),
        ShapeError);
    CHECK_THROWS_WITH_AS(Tensor::fromVector(std::vector<int16_t>{1, 2}, {3}, dev),
                         Contains("from data: 4 bytes do not fill int16[3]"), ShapeError);
  }
}

TEST_CASE("Tensor errors: symbolic movement ops must hold for every value of their variables") {
  NodeRef n = Variable("n", 1, 100);
  Tensor a = Tensor::arange(10);
  // valid for the bound value, not for every value n may take
  CHECK_THROWS_WITH_AS(a.shrink({SIntPair(SInt(0), SInt(n->bind(5)))}),
                       "shrink: end n[1-100] may exceed dimension 10 of float32[10]", ShapeError);
  NodeRef m = Variable("m", 1, 100);
  CHECK_THROWS_WITH_AS(a.shrink({SIntPair(SInt(m->bind(3)), SInt(2))}),
                       "shrink: start m[1-100] may exceed end 2 in dim 0 of float32[10]", ShapeError);
  NodeRef k = Variable("k", 0, 8);
  SInt kb = k->bind(2);
  Tensor ok = a.shrink({SIntPair(kb, kb + 2)}); // k + 2 <= 10 always
  CHECK(ok.shape()[0] == SInt(2));
  NodeRef r = Variable("r", 1, 10);
  CHECK_THROWS_WITH_AS(Tensor::empty({4, 6}).reshape({SInt(r->bind(4)), 3}),
                       Contains("reshape: cannot reshape float32[4, 6] (24 elements) to [r, 3] ((r[1-10]*3) elements)"),
                       ShapeError);
  // shape arithmetic that overflows 64 bits is an error naming the op, not a wrapped size
  CHECK_THROWS_WITH_AS(Tensor::arange(4).pad({SIntPair(INT64_MAX, INT64_MAX)}),
                       "pad: padding (9223372036854775807, 9223372036854775807) of dim 0 of float32[4] overflows the size",
                       ShapeError);
  CHECK_THROWS_WITH_AS(SInt(Variable("v", 1, 10)) * SInt(int64_t(1) << 62),
                       "shape arithmetic overflows 64 bits: 10 * 4611686018427387904", ShapeError);
  CHECK_THROWS_WITH_AS(Tensor::empty({1 << 20}).reshape({-1, 1}).expand({-1, int64_t(1) << 45}),
                       Contains("expand: shape [1048576, 35184372088832] has too many elements"), ShapeError);
  // binding outside the range
  CHECK_THROWS_WITH_AS(Variable("w", 1, 10)->bind(11), "cannot bind 11 to w[1-10]: out of range", Error);
}

TEST_CASE("Tensor errors: dropout probability and argmax of nothing") {
  Tensor::TrainingGuard train(true);
  Tensor x = Tensor::ones({3});
  CHECK_THROWS_WITH_AS(x.dropout(1.5), "dropout: probability 1.5 is outside [0, 1]", ShapeError);
  CHECK_THROWS_WITH_AS(x.dropout(-0.1), "dropout: probability -0.1 is outside [0, 1]", ShapeError);
  CHECK(x.dropout(1).toVector<float>() == std::vector<float>{0, 0, 0});
  CHECK_THROWS_WITH_AS(Tensor::empty({0}).argmax(), "argmax: float32[0] has no elements to choose from", ShapeError);
  CHECK_THROWS_WITH_AS(Tensor::empty({2, 0}).argmax(1), "argmax: float32[2, 0] has no elements to choose from along dim 1",
                       ShapeError);
  CHECK_THROWS_WITH_AS(Tensor::empty({0, 3}).argmin(), "argmin: float32[0, 3] has no elements to choose from", ShapeError);
  CHECK(Tensor::empty({0, 3}).argmax(1).shape() == Shape{0}); // nothing to reduce over is fine per row
}

// The ONNX ops the importer runs, each as a load-time check and plain Tensor code (opset 7-17
// semantics where they differ), and the conversion of a TensorProto into a lazy Tensor.
#include "OpUtil.h"

#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Support/Error.h"
#include "lazyjit/Support/MappedFile.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <unordered_map>

namespace lazyjit::onnx::ops {

static_assert(std::endian::native == std::endian::little,
              "raw_data is little-endian and is copied as it is");

namespace {

// ---- ops ----------------------------------------------------------------------------------------

#define UNARY(Name, expr)                                                                          \
  OpDef {                                                                                          \
    Name, 1, 1, 1, noCheck,                                                                        \
        [](const NodeContext &, const std::vector<Tensor> &in) -> Out { return {expr}; }           \
  }
#define BINARY(Name, expr)                                                                         \
  OpDef {                                                                                          \
    Name, 2, 2, 1, noCheck,                                                                        \
        [](const NodeContext &, const std::vector<Tensor> &in) -> Out { return {expr}; }           \
  }

void checkGemm(const NodeContext &ctx) {
  intAttr(ctx.node, "transA", 0);
  intAttr(ctx.node, "transB", 0);
  floatAttr(ctx.node, "alpha", 1);
  floatAttr(ctx.node, "beta", 1);
}
Out runGemm(const NodeContext &ctx, const std::vector<Tensor> &in) {
  const NodeProto &n = ctx.node;
  for (size_t i = 0; i < 2; ++i)
    LAZYJIT_USER_CHECK(in[i].ndim() == 2, ShapeError, "input {} must be 2-D, not rank {}", i,
                       in[i].ndim());
  Tensor a = intAttr(n, "transA", 0) ? in[0].transpose() : in[0];
  Tensor b = intAttr(n, "transB", 0) ? in[1].transpose() : in[1];
  float alpha = floatAttr(n, "alpha", 1), beta = floatAttr(n, "beta", 1);
  Tensor y = a.matmul(b);
  if (alpha != 1) y = y.mul(double(alpha));
  if (in.size() > 2 && in[2].defined()) y = y.add(beta == 1 ? in[2] : in[2].mul(double(beta)));
  return {y};
}

void checkReshape(const NodeContext &ctx) { intAttr(ctx.node, "allowzero", 0); }
Out runReshape(const NodeContext &ctx, const std::vector<Tensor> &in) {
  std::vector<int64_t> shape = hostInts(in[1], "the shape input");
  std::vector<int64_t> inDims = in[0].intShape();
  bool allowZero = intAttr(ctx.node, "allowzero", 0) != 0;
  int64_t known = 1, inferAt = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      LAZYJIT_USER_CHECK(i < inDims.size(), ShapeError,
                         "shape {} copies dim {} (a 0) of an input of rank {}", dimsText(shape), i,
                         inDims.size());
      shape[i] = inDims[i];
    }
    if (shape[i] == -1) {
      LAZYJIT_USER_CHECK(inferAt < 0, ShapeError, "shape {} has more than one -1", dimsText(shape));
      inferAt = int64_t(i);
      continue;
    }
    LAZYJIT_USER_CHECK(shape[i] >= 0, ShapeError, "shape {} has a negative dim", dimsText(shape));
    known *= shape[i];
  }
  int64_t total = product(inDims, 0, inDims.size());
  if (inferAt >= 0) {
    LAZYJIT_USER_CHECK(known != 0 && total % known == 0, ShapeError,
                       "cannot reshape {} ({} elements) to {}", dimsText(inDims), total,
                       dimsText(shape));
    shape[size_t(inferAt)] = total / known;
  }
  return {in[0].reshape(toShape(shape))};
}

void checkTranspose(const NodeContext &ctx) { intsAttr(ctx.node, "perm"); }
Out runTranspose(const NodeContext &ctx, const std::vector<Tensor> &in) {
  std::optional<std::vector<int64_t>> perm = intsAttr(ctx.node, "perm");
  if (!perm) {
    perm.emplace();
    for (int64_t i = in[0].ndim() - 1; i >= 0; --i) perm->push_back(i);
  }
  return {in[0].permute(*perm)};
}

void checkFlatten(const NodeContext &ctx) { intAttr(ctx.node, "axis", 1); }
Out runFlatten(const NodeContext &ctx, const std::vector<Tensor> &in) {
  std::vector<int64_t> dims = in[0].intShape();
  int64_t rank = int64_t(dims.size());
  int64_t axis = intAttr(ctx.node, "axis", 1);
  LAZYJIT_USER_CHECK(axis >= -rank && axis <= rank, ShapeError,
                     "axis {} is out of range for rank {}", axis, rank);
  size_t at = size_t(axis < 0 ? axis + rank : axis);
  return {in[0].reshape(toShape({product(dims, 0, at), product(dims, at, dims.size())}))};
}

void checkSoftmax(const NodeContext &ctx) { intAttr(ctx.node, "axis", ctx.opset < 13 ? 1 : -1); }
Out runSoftmax(const NodeContext &ctx, const std::vector<Tensor> &in) {
  const Tensor &x = in[0];
  if (ctx.opset >= 13) return {x.softmax(intAttr(ctx.node, "axis", -1))};
  // Before opset 13, Softmax is over the 2-D view [prod(dims[:axis]), prod(dims[axis:])].
  std::vector<int64_t> dims = x.intShape();
  size_t at = size_t(normalizeAxis(intAttr(ctx.node, "axis", 1), int64_t(dims.size()), "axis"));
  Tensor flat = x.reshape(toShape({product(dims, 0, at), product(dims, at, dims.size())}));
  return {flat.softmax(-1).reshape(x.shape())};
}

void checkConcat(const NodeContext &ctx) { requiredIntAttr(ctx.node, "axis"); }
Out runConcat(const NodeContext &ctx, const std::vector<Tensor> &in) {
  int64_t axis = normalizeAxis(requiredIntAttr(ctx.node, "axis"), in[0].ndim(), "axis");
  std::vector<Tensor> rest(in.begin() + 1, in.end());
  return {in[0].cat(std::move(rest), axis)};
}

/// Constant's value as a tensor (after its one attribute was checked).
Tensor constantValue(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  if (const AttributeProto *a = typedAttr(n, "value", AttributeType::Tensor)) {
    LAZYJIT_USER_CHECK(a->t, Error, "attribute 'value' holds no tensor");
    return tensorFromProto(*a->t, ctx.storage, ctx.fileName, "the constant");
  }
  if (const AttributeProto *a = typedAttr(n, "value_float", AttributeType::Float))
    return Tensor::fromVector(std::vector<float>{a->f}, {});
  if (const AttributeProto *a = typedAttr(n, "value_int", AttributeType::Int))
    return Tensor::fromVector(std::vector<int64_t>{a->i}, {});
  if (const AttributeProto *a = typedAttr(n, "value_floats", AttributeType::Floats)) {
    std::vector<float> v = a->floats.toVector();
    return Tensor::fromVector(v, toShape({int64_t(v.size())}));
  }
  if (const AttributeProto *a = typedAttr(n, "value_ints", AttributeType::Ints))
    return Tensor::fromVector(a->ints, toShape({int64_t(a->ints.size())}));
  LAZYJIT_INTERNAL_CHECK(false, "onnx: Constant was checked at load to have a value");
  return {};
}
void checkConstant(const NodeContext &ctx) {
  const NodeProto &n = ctx.node;
  LAZYJIT_USER_CHECK(n.attribute.size() == 1, Error, "a Constant has exactly one attribute, not {}",
                     n.attribute.size());
  const std::string &name = n.attribute[0].name;
  LAZYJIT_USER_CHECK(name == "value" || name == "value_float" || name == "value_int" ||
                         name == "value_floats" || name == "value_ints",
                     UnsupportedError, "attribute '{}' is not supported yet", name);
  constantValue(ctx); // builds nothing but a lazy tensor; checks the value's dtype and size
}
Out runConstant(const NodeContext &ctx, const std::vector<Tensor> &) {
  return {constantValue(ctx)};
}

DType castTarget(const NodeContext &ctx) {
  auto to = DataType(requiredIntAttr(ctx.node, "to"));
  std::optional<DType> dt = toDType(to);
  LAZYJIT_USER_CHECK(dt, UnsupportedError, "casting to {} is not supported",
                     dataTypeName(to).empty() ? fmt::format("data type {}", int32_t(to))
                                              : std::string(dataTypeName(to)));
  return *dt;
}
void checkCast(const NodeContext &ctx) { castTarget(ctx); }
Out runCast(const NodeContext &ctx, const std::vector<Tensor> &in) {
  return {in[0].cast(castTarget(ctx))};
}

/// Unsqueeze's and Squeeze's axes: an attribute before opset 13, the optional second input after.
std::optional<std::vector<int64_t>> squeezeAxes(const NodeContext &ctx,
                                                const std::vector<Tensor> &in) {
  if (ctx.opset < 13) return intsAttr(ctx.node, "axes");
  if (in.size() > 1 && in[1].defined()) return hostInts(in[1], "the axes input");
  return std::nullopt;
}
void checkUnsqueeze(const NodeContext &ctx) {
  if (ctx.opset < 13)
    LAZYJIT_USER_CHECK(intsAttr(ctx.node, "axes"), Error,
                       "the required attribute 'axes' is missing");
  else
    LAZYJIT_USER_CHECK(ctx.node.input.size() == 2 && !ctx.node.input[1].empty(), Error,
                       "from opset 13 the axes are the second input, which is missing");
}
Out runUnsqueeze(const NodeContext &ctx, const std::vector<Tensor> &in) {
  std::vector<int64_t> axes = *squeezeAxes(ctx, in);
  std::vector<int64_t> dims = in[0].intShape();
  int64_t outRank = int64_t(dims.size() + axes.size());
  for (int64_t &a : axes) a = normalizeAxis(a, outRank, "axis");
  std::sort(axes.begin(), axes.end());
  LAZYJIT_USER_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end(), ShapeError,
                     "axes {} repeat an axis", dimsText(axes));
  for (int64_t a : axes) dims.insert(dims.begin() + a, 1);
  return {in[0].reshape(toShape(dims))};
}

void checkSqueeze(const NodeContext &ctx) {
  if (ctx.opset < 13) intsAttr(ctx.node, "axes");
}
Out runSqueeze(const NodeContext &ctx, const std::vector<Tensor> &in) {
  std::optional<std::vector<int64_t>> axes = squeezeAxes(ctx, in);
  std::vector<int64_t> dims = in[0].intShape();
  std::vector<bool> drop(dims.size(), false);
  if (!axes) {
    for (size_t i = 0; i < dims.size(); ++i) drop[i] = dims[i] == 1;
  } else {
    for (int64_t a : *axes) {
      size_t at = size_t(normalizeAxis(a, int64_t(dims.size()), "axis"));
      LAZYJIT_USER_CHECK(dims[at] == 1, ShapeError,
                         "cannot squeeze axis {} of {}: its size is not 1", a, dimsText(dims));
      drop[at] = true;
    }
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < dims.size(); ++i)
    if (!drop[i]) out.push_back(dims[i]);
  return {in[0].reshape(toShape(out))};
}

const OpDef opTable[] = {
    UNARY("Identity", in[0]),
    UNARY("Neg", in[0].neg()),
    UNARY("Abs", in[0].abs()),
    UNARY("Relu", in[0].relu()),
    UNARY("Sigmoid", in[0].sigmoid()),
    UNARY("Tanh", in[0].tanh()),
    UNARY("Exp", in[0].exp()),
    UNARY("Log", in[0].log()),
    UNARY("Sqrt", in[0].sqrt()),
    UNARY("Reciprocal", in[0].reciprocal()),
    BINARY("Add", in[0].add(in[1])),
    BINARY("Sub", in[0].sub(in[1])),
    BINARY("Mul", in[0].mul(in[1])),
    BINARY("Div", keepDType(in[0].div(in[1]), in[0].dtype())),
    BINARY("MatMul", in[0].matmul(in[1])),
    OpDef{"Gemm", 2, 3, 1, checkGemm, runGemm},
    OpDef{"Reshape", 2, 2, 1, checkReshape, runReshape},
    OpDef{"Transpose", 1, 1, 1, checkTranspose, runTranspose},
    OpDef{"Flatten", 1, 1, 1, checkFlatten, runFlatten},
    OpDef{"Softmax", 1, 1, 1, checkSoftmax, runSoftmax},
    OpDef{"Concat", 1, SIZE_MAX, 1, checkConcat, runConcat},
    OpDef{"Constant", 0, 0, 1, checkConstant, runConstant},
    OpDef{"Cast", 1, 1, 1, checkCast, runCast},
    OpDef{"Unsqueeze", 1, 2, 1, checkUnsqueeze, runUnsqueeze},
    OpDef{"Squeeze", 1, 2, 1, checkSqueeze, runSqueeze},
};

#undef UNARY
#undef BINARY

/// A typed list's values as `dt`'s bytes (INT8, UINT8, BOOL and FLOAT16 come in int32_data with
/// their bits in the low bits).
std::vector<uint8_t> narrowBytes(const std::vector<int32_t> &vs, DType dt) {
  std::vector<uint8_t> out;
  out.reserve(vs.size() * size_t(dt.itemsize()));
  for (int32_t v : vs)
    for (int k = 0; k < dt.itemsize(); ++k) out.push_back(uint8_t(uint32_t(v) >> (8 * k)));
  return out;
}

/// A tensor whose bytes are in another file (ONNX's external data: the `location` relative to the
/// model's directory, an optional `offset` and `length`), mapped and read when realized. A location
/// that leaves the model's directory (absolute, or through ..) is refused, as ONNX's checker does:
/// a model must not make its reader open arbitrary files.
Tensor externalTensor(const TensorProto &t, DType dt, const Shape &shape, size_t bytes,
                      const std::string &fileName, const std::string &what) {
  std::string location;
  int64_t offset = 0, length = -1;
  auto number = [&](const std::string &key, const std::string &text) {
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(text, &used);
    } catch (const std::exception &) {
    }
    LAZYJIT_USER_CHECK(used == text.size() && v >= 0, Error,
                       "{}: {}: external data '{}' is not a non-negative integer: '{}'", fileName,
                       what, key, text);
    return v;
  };
  for (const StringStringEntry &e : t.externalData) {
    if (e.key == "location") location = e.value;
    else if (e.key == "offset") offset = number(e.key, e.value);
    else if (e.key == "length") length = number(e.key, e.value);
  }
  LAZYJIT_USER_CHECK(!location.empty(), Error, "{}: {}: external data without a 'location'",
                     fileName, what);
  std::filesystem::path rel(location);
  bool escapes = rel.is_absolute();
  for (const auto &part : rel) escapes = escapes || part == "..";
  LAZYJIT_USER_CHECK(!escapes, Error,
                     "{}: {}: external data location '{}' is outside the model's directory",
                     fileName, what, location);
  std::string path = (std::filesystem::path(fileName).parent_path() / rel).string();
  std::shared_ptr<const MappedFile> file;
  try {
    file = MappedFile::open(path);
  } catch (const Error &e) {
    throw Error(fmt::format("{}: {}: external data: {}", fileName, what, e.what()));
  }
  LAZYJIT_USER_CHECK(length < 0 || size_t(length) == bytes, Error,
                     "{}: {}: external data length {} does not match {} {} ({} bytes)", fileName,
                     what, length, dt.name(), dimsText(t.dims), bytes);
  LAZYJIT_USER_CHECK(size_t(offset) <= file->size() && bytes <= file->size() - size_t(offset),
                     Error, "{}: {}: external data needs bytes {}..{} of {}, which has {}",
                     fileName, what, offset, offset + int64_t(bytes), path, file->size());
  if (bytes == 0) return Tensor::zeros(shape, TensorOptions(dt));
  const uint8_t *data = file->bytes().data() + offset;
  return Tensor::fromHostFunction(
      shape, dt, "onnx " + what,
      [file = std::move(file), data, bytes](Buffer &out) { out.copyIn(data, bytes); });
}

} // namespace

std::span<const OpDef> coreOps() { return opTable; }

namespace {

/// The tables' ops by "domain:type" ("" for the default domain), built once; an op in two tables is
/// a bug (the second would never run).
const std::unordered_map<std::string, const OpDef *> &opIndex() {
  static const std::unordered_map<std::string, const OpDef *> byKey = [] {
    std::unordered_map<std::string, const OpDef *> m;
    for (std::span<const OpDef> table :
         {coreOps(), mathOps(), reduceOps(), convOps(), normOps(), resizeOps(), tensorOps(),
          quantOps(), rnnOps(), controlOps(), signalOps(), domainOps(), newOps()})
      for (const OpDef &op : table)
        LAZYJIT_INTERNAL_CHECK(
            m.emplace(std::string(op.domain) + ":" + std::string(op.opType), &op).second,
            "onnx: op type {} is in two op tables", op.opType);
    return m;
  }();
  return byKey;
}

} // namespace

const OpDef *findOp(std::string_view opType, std::string_view domain) {
  if (domain == "ai.onnx") domain = "";
  auto it = opIndex().find(std::string(domain) + ":" + std::string(opType));
  return it == opIndex().end() ? nullptr : it->second;
}

std::vector<std::string> supportedOps() {
  std::vector<std::string> out;
  for (const auto &[key, op] : opIndex())
    out.push_back(op->domain.empty() ? std::string(op->opType)
                                     : std::string(op->domain) + ":" + std::string(op->opType));
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<DType> toDType(DataType t) {
  switch (t) {
  case DataType::Float:
    return dtypes::float32;
  case DataType::Double:
    return dtypes::float64;
  case DataType::Float16:
    return dtypes::float16;
  case DataType::Int64:
    return dtypes::int64;
  case DataType::Int32:
    return dtypes::int32;
  case DataType::Int8:
    return dtypes::int8;
  case DataType::Uint8:
    return dtypes::uint8;
  case DataType::Bool:
    return dtypes::boolean;
  case DataType::Int16:
    return dtypes::int16;
  case DataType::Uint16:
    return dtypes::uint16;
  case DataType::Uint32:
    return dtypes::uint32;
  case DataType::Uint64:
    return dtypes::uint64;
  case DataType::BFloat16:
    return dtypes::bfloat16;
  default:
    return std::nullopt;
  }
}

Tensor tensorFromProto(const TensorProto &t, std::shared_ptr<const void> storage,
                       const std::string &fileName, const std::string &what) {
  std::optional<DType> dt = toDType(t.dataType);
  LAZYJIT_USER_CHECK(dt, UnsupportedError, "{}: {}: data type {} is not supported", fileName, what,
                     dataTypeName(t.dataType).empty() ? fmt::format("{}", int32_t(t.dataType))
                                                      : std::string(dataTypeName(t.dataType)));
  int64_t n = elementCount(t, fileName);
  Shape shape = toShape(t.dims);
  size_t bytes = size_t(n) * size_t(dt->itemsize());
  auto sizeCheck = [&](size_t got, std::string_view field) {
    LAZYJIT_USER_CHECK(got == size_t(n), Error, "{}: {}: {} has {} values, but dims {} need {}",
                       fileName, what, field, got, dimsText(t.dims), n);
  };
  if (t.dataLocation == DataLocation::External)
    return externalTensor(t, *dt, shape, bytes, fileName, what);
  if (n == 0) return Tensor::zeros(shape, TensorOptions(*dt));
  if (t.hasRawData) {
    LAZYJIT_USER_CHECK(t.rawData.size() == bytes, Error,
                       "{}: {}: raw_data has {} bytes, but {} {} needs {}", fileName, what,
                       t.rawData.size(), dt->name(), dimsText(t.dims), bytes);
    const uint8_t *data = t.rawData.data();
    return Tensor::fromHostFunction(
        shape, *dt, "onnx " + what,
        [storage = std::move(storage), data, bytes](Buffer &out) { out.copyIn(data, bytes); });
  }
  switch (t.dataType) {
  case DataType::Float:
    sizeCheck(t.floatData.size(), "float_data");
    return Tensor::fromVector(t.floatData.toVector(), shape);
  case DataType::Double:
    sizeCheck(t.doubleData.size(), "double_data");
    return Tensor::fromVector(t.doubleData.toVector(), shape);
  case DataType::Int64:
    sizeCheck(t.int64Data.size(), "int64_data");
    return Tensor::fromVector(t.int64Data, shape);
  case DataType::Uint64:
    sizeCheck(t.uint64Data.size(), "uint64_data");
    return Tensor::fromVector(t.uint64Data, shape);
  case DataType::Uint32: {
    sizeCheck(t.uint64Data.size(), "uint64_data");
    std::vector<uint32_t> v(t.uint64Data.begin(), t.uint64Data.end());
    return Tensor::fromVector(v, shape);
  }
  default: {
    sizeCheck(t.int32Data.size(), "int32_data");
    std::vector<uint8_t> raw = narrowBytes(t.int32Data, *dt);
    return Tensor::fromBytes(raw.data(), raw.size(), shape, *dt);
  }
  }
}

} // namespace lazyjit::onnx::ops

// Shape arithmetic on the host: the ops exporters use between Shape and Reshape, evaluated on
// small host values with ONNX's semantics, so that they cost no kernels.
#include "HostFold.h"

#include "OpUtil.h"

#include "lazyjit/Support/Error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>

namespace lazyjit::onnx::fold {

namespace {

using Values = std::vector<long double>;

int64_t count(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

/// `v` rounded to what `dt` holds, as a kernel that stores it would.
long double roundTo(long double v, DType dt) {
  if (dt == dtypes::boolean) return v != 0 ? 1 : 0;
  if (dt.isFloat()) {
    if (dt == dtypes::float64) return (long double)(double)v;
    if (dt == dtypes::float16) return (long double)float(Half(float(v)));
    if (dt == dtypes::bfloat16) return (long double)float(BFloat16(float(v)));
    return (long double)(float)v;
  }
  if (std::isnan(v)) return 0;
  return std::trunc(v);
}

struct Fail {}; // a value the fold does not handle: the Tensor op runs instead

void require(bool cond) {
  if (!cond) throw Fail{};
}

int64_t axisOf(int64_t axis, int64_t rank) {
  require(axis >= -rank && axis < rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> ints(const HostValue &v) {
  require(!v.dtype.isFloat());
  std::vector<int64_t> out;
  for (long double x : v.values) out.push_back(int64_t(x));
  return out;
}

HostValue make(DType dt, std::vector<int64_t> dims, Values values) {
  require(count(dims) <= kMaxFoldElements && int64_t(values.size()) == count(dims));
  return HostValue{dt, std::move(dims), std::move(values)};
}

/// Row-major strides of `dims`.
std::vector<int64_t> strides(const std::vector<int64_t> &dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

/// numpy broadcasting of any number of operands, `f` applied elementwise.
HostValue broadcast(const std::vector<const HostValue *> &in, DType outType,
                    const std::function<long double(const std::vector<long double> &)> &f) {
  size_t rank = 0;
  for (const HostValue *v : in) rank = std::max(rank, v->dims.size());
  std::vector<int64_t> out(rank, 1);
  for (const HostValue *v : in)
    for (size_t i = 0; i < v->dims.size(); ++i) {
      int64_t d = v->dims[i];
      int64_t &o = out[rank - v->dims.size() + i];
      require(o == 1 || d == 1 || o == d);
      if (d != 1) o = d;
    }
  int64_t n = count(out);
  require(n <= kMaxFoldElements);
  std::vector<int64_t> os = strides(out);
  Values res(static_cast<size_t>(n));
  std::vector<long double> args(in.size());
  for (int64_t flat = 0; flat < n; ++flat) {
    for (size_t k = 0; k < in.size(); ++k) {
      const HostValue &v = *in[k];
      int64_t off = 0, stride = 1;
      for (size_t i = v.dims.size(); i-- > 0;) {
        size_t oi = rank - v.dims.size() + i;
        int64_t idx = (flat / os[oi]) % out[oi];
        if (v.dims[i] != 1) off += idx * stride;
        stride *= v.dims[i];
      }
      args[k] = v.values[size_t(off)];
    }
    res[size_t(flat)] = roundTo(f(args), outType);
  }
  return make(outType, out, std::move(res));
}

/// Takes `index` along `axis` for every position of the other axes: the general gather that
/// Gather, Slice and Concat reduce to. `pick(outIdx)` maps an output coordinate on `axis` to an
/// input coordinate.
HostValue takeAlong(const HostValue &x, int64_t axis, int64_t outLen,
                    const std::function<int64_t(int64_t)> &pick) {
  std::vector<int64_t> dims = x.dims;
  dims[size_t(axis)] = outLen;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.dims[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < x.dims.size(); ++i) inner *= x.dims[i];
  require(outer * outLen * inner <= kMaxFoldElements);
  Values out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < outLen; ++j) {
      int64_t src = pick(j);
      for (int64_t k = 0; k < inner; ++k)
        out.push_back(x.values[size_t((o * x.dims[size_t(axis)] + src) * inner + k)]);
    }
  return make(x.dtype, dims, std::move(out));
}

std::optional<std::vector<int64_t>> axesOf(const NodeProto &n, int64_t opset, int64_t inputOpset,
                                           const std::vector<const HostValue *> &in) {
  if (opset < inputOpset) return ops::intsAttr(n, "axes");
  if (in.size() > 1 && in[1]) return ints(*in[1]);
  return std::nullopt;
}

std::optional<DType> castType(const NodeProto &n) {
  return ops::toDType(DataType(ops::requiredIntAttr(n, "to")));
}

std::vector<HostValue> evaluateOp(const NodeProto &n, int64_t opset,
                                  const std::vector<const HostValue *> &in,
                                  const std::vector<std::vector<int64_t>> &shapes) {
  const std::string &op = n.opType;
  auto x = [&](size_t i) -> const HostValue & {
    require(i < in.size() && in[i]);
    return *in[i];
  };

  if (op == "Shape") {
    require(!shapes.empty());
    auto rank = int64_t(shapes[0].size());
    int64_t start = ops::intAttr(n, "start", 0), end = ops::intAttr(n, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    Values v(shapes[0].begin() + start, shapes[0].begin() + end);
    return {make(dtypes::int64, {end - start}, std::move(v))};
  }
  if (op == "Constant") {
    if (const AttributeProto *a = ops::typedAttr(n, "value", AttributeType::Tensor)) {
      require(a->t != nullptr);
      std::optional<HostValue> v = fromProto(*a->t);
      require(v.has_value());
      return {*v};
    }
    if (const AttributeProto *a = ops::typedAttr(n, "value_float", AttributeType::Float))
      return {make(dtypes::float32, {}, {a->f})};
    if (const AttributeProto *a = ops::typedAttr(n, "value_int", AttributeType::Int))
      return {make(dtypes::int64, {}, {(long double)a->i})};
    if (const AttributeProto *a = ops::typedAttr(n, "value_floats", AttributeType::Floats)) {
      Values v;
      for (float f : a->floats.toVector()) v.push_back(f);
      return {make(dtypes::float32, {int64_t(v.size())}, std::move(v))};
    }
    if (const AttributeProto *a = ops::typedAttr(n, "value_ints", AttributeType::Ints)) {
      Values v(a->ints.begin(), a->ints.end());
      return {make(dtypes::int64, {int64_t(v.size())}, std::move(v))};
    }
    throw Fail{};
  }
  if (op == "Size") {
    require(!shapes.empty());
    return {make(dtypes::int64, {}, {(long double)count(shapes[0])})};
  }
  // every other op needs all its inputs on the host
  for (size_t i = 0; i < in.size(); ++i) require(in[i] || n.input[i].empty());

  if (op == "Identity") return {x(0)};
  if (op == "Cast") {
    std::optional<DType> to = castType(n);
    require(to.has_value());
    HostValue v = x(0);
    for (long double &e : v.values) e = roundTo(e, *to);
    v.dtype = *to;
    return {v};
  }
  if (op == "Neg" || op == "Abs" || op == "Sqrt" || op == "Floor" || op == "Ceil" ||
      op == "Not" || op == "Reciprocal") {
    const HostValue &a = x(0);
    return {broadcast({&a}, a.dtype, [&](const std::vector<long double> &v) -> long double {
      if (op == "Neg") return -v[0];
      if (op == "Abs") return std::fabs(v[0]);
      if (op == "Sqrt") return std::sqrt(v[0]);
      if (op == "Floor") return std::floor(v[0]);
      if (op == "Ceil") return std::ceil(v[0]);
      if (op == "Reciprocal") return 1 / v[0];
      return v[0] == 0;
    })};
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Equal" ||
      op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
      op == "And" || op == "Or") {
    const HostValue &a = x(0), &b = x(1);
    require(a.dtype == b.dtype);
    bool cmp = op != "Add" && op != "Sub" && op != "Mul" && op != "Div";
    bool isInt = !a.dtype.isFloat();
    return {broadcast({&a, &b}, cmp ? dtypes::boolean : a.dtype,
                      [&](const std::vector<long double> &v) -> long double {
                        if (op == "Add") return v[0] + v[1];
                        if (op == "Sub") return v[0] - v[1];
                        if (op == "Mul") return v[0] * v[1];
                        if (op == "Div") {
                          if (isInt) require(v[1] != 0);
                          return isInt ? std::trunc(v[0] / v[1]) : v[0] / v[1];
                        }
                        if (op == "Equal") return v[0] == v[1];
                        if (op == "Less") return v[0] < v[1];
                        if (op == "Greater") return v[0] > v[1];
                        if (op == "LessOrEqual") return v[0] <= v[1];
                        if (op == "GreaterOrEqual") return v[0] >= v[1];
                        if (op == "And") return v[0] != 0 && v[1] != 0;
                        return v[0] != 0 || v[1] != 0;
                      })};
  }
  if (op == "Max" || op == "Min") {
    std::vector<const HostValue *> all;
    for (size_t i = 0; i < in.size(); ++i) all.push_back(&x(i));
    for (const HostValue *v : all) require(v->dtype == all[0]->dtype);
    return {broadcast(all, all[0]->dtype, [&](const std::vector<long double> &v) {
      return op == "Max" ? *std::max_element(v.begin(), v.end())
                         : *std::min_element(v.begin(), v.end());
    })};
  }
  if (op == "Where") {
    const HostValue &c = x(0), &a = x(1), &b = x(2);
    require(a.dtype == b.dtype);
    return {broadcast({&c, &a, &b}, a.dtype,
                      [](const std::vector<long double> &v) { return v[0] != 0 ? v[1] : v[2]; })};
  }
  if (op == "Unsqueeze") {
    std::optional<std::vector<int64_t>> axes = axesOf(n, opset, 13, in);
    require(axes.has_value());
    HostValue v = x(0);
    auto outRank = int64_t(v.dims.size() + axes->size());
    for (int64_t &a : *axes) a = axisOf(a, outRank);
    std::sort(axes->begin(), axes->end());
    require(std::adjacent_find(axes->begin(), axes->end()) == axes->end());
    for (int64_t a : *axes) v.dims.insert(v.dims.begin() + a, 1);
    return {v};
  }
  if (op == "Squeeze") {
    std::optional<std::vector<int64_t>> axes = axesOf(n, opset, 13, in);
    HostValue v = x(0);
    auto rank = int64_t(v.dims.size());
    std::vector<bool> drop(v.dims.size(), false);
    if (!axes)
      for (size_t i = 0; i < v.dims.size(); ++i) drop[i] = v.dims[i] == 1;
    else
      for (int64_t a : *axes) {
        int64_t at = axisOf(a, rank);
        require(v.dims[size_t(at)] == 1);
        drop[size_t(at)] = true;
      }
    std::vector<int64_t> dims;
    for (size_t i = 0; i < v.dims.size(); ++i)
      if (!drop[i]) dims.push_back(v.dims[i]);
    v.dims = dims;
    return {v};
  }
  if (op == "Concat") {
    const HostValue &a = x(0);
    int64_t axis = axisOf(ops::requiredIntAttr(n, "axis"), int64_t(a.dims.size()));
    // concatenate by gathering from the inputs in turn
    std::vector<int64_t> dims = a.dims;
    dims[size_t(axis)] = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const HostValue &v = x(i);
      require(v.dtype == a.dtype && v.dims.size() == a.dims.size());
      for (size_t d = 0; d < v.dims.size(); ++d)
        require(int64_t(d) == axis || v.dims[d] == a.dims[d]);
      dims[size_t(axis)] += v.dims[size_t(axis)];
    }
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= a.dims[size_t(d)];
    Values out;
    for (int64_t o = 0; o < outer; ++o)
      for (size_t i = 0; i < in.size(); ++i) {
        const HostValue &v = x(i);
        int64_t chunk = v.size() / std::max<int64_t>(outer, 1);
        for (int64_t k = 0; k < chunk; ++k) out.push_back(v.values[size_t(o * chunk + k)]);
      }
    return {make(a.dtype, dims, std::move(out))};
  }
  if (op == "Gather") {
    const HostValue &data = x(0), &idx = x(1);
    int64_t axis = axisOf(ops::intAttr(n, "axis", 0), int64_t(data.dims.size()));
    int64_t len = data.dims[size_t(axis)];
    std::vector<int64_t> is = ints(idx);
    for (int64_t &i : is) {
      require(i >= -len && i < len);
      if (i < 0) i += len;
    }
    HostValue flat = takeAlong(data, axis, int64_t(is.size()), [&](int64_t j) { return is[size_t(j)]; });
    std::vector<int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
    dims.insert(dims.end(), idx.dims.begin(), idx.dims.end());
    dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
    flat.dims = dims;
    return {flat};
  }
  if (op == "Slice") {
    const HostValue &data = x(0);
    std::vector<int64_t> starts, ends, axes, steps;
    if (opset < 10) {
      starts = ops::intsAttr(n, "starts").value_or(std::vector<int64_t>{});
      ends = ops::intsAttr(n, "ends").value_or(std::vector<int64_t>{});
      axes = ops::intsAttr(n, "axes").value_or(std::vector<int64_t>{});
    } else {
      starts = ints(x(1));
      ends = ints(x(2));
      if (in.size() > 3 && in[3]) axes = ints(*in[3]);
      if (in.size() > 4 && in[4]) steps = ints(*in[4]);
    }
    require(starts.size() == ends.size());
    if (axes.empty())
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    require(axes.size() == starts.size() && steps.size() == starts.size());
    HostValue v = data;
    for (size_t i = 0; i < starts.size(); ++i) {
      int64_t axis = axisOf(axes[i], int64_t(v.dims.size()));
      int64_t len = v.dims[size_t(axis)], step = steps[i];
      require(step != 0);
      auto wrap = [&](int64_t s) { return s < 0 ? s + len : s; };
      int64_t st = wrap(starts[i]), en = wrap(ends[i]);
      if (step > 0) {
        st = std::clamp<int64_t>(st, 0, len);
        en = std::clamp<int64_t>(en, 0, len);
      } else {
        st = std::clamp<int64_t>(st, 0, len - 1);
        en = std::clamp<int64_t>(en, -1, len - 1);
      }
      int64_t outLen = step > 0 ? std::max<int64_t>(0, (en - st + step - 1) / step)
                                : std::max<int64_t>(0, (st - en - step - 1) / -step);
      v = takeAlong(v, axis, outLen, [&](int64_t j) { return st + j * step; });
    }
    return {v};
  }
  if (op == "Reshape") {
    HostValue v = x(0);
    std::vector<int64_t> shape = ints(x(1));
    bool allowZero = ops::intAttr(n, "allowzero", 0) != 0;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (shape[i] == 0 && !allowZero) {
        require(i < v.dims.size());
        shape[i] = v.dims[i];
      }
      if (shape[i] == -1) {
        require(infer < 0);
        infer = int64_t(i);
        continue;
      }
      require(shape[i] >= 0);
      known *= shape[i];
    }
    if (infer >= 0) {
      require(known != 0 && v.size() % known == 0);
      shape[size_t(infer)] = v.size() / known;
    }
    require(count(shape) == v.size());
    v.dims = shape;
    return {v};
  }
  if (op == "ConstantOfShape") {
    std::vector<int64_t> dims = ints(x(0));
    for (int64_t d : dims) require(d >= 0);
    HostValue fill{dtypes::float32, {}, {0}};
    if (const AttributeProto *a = ops::typedAttr(n, "value", AttributeType::Tensor)) {
      require(a->t != nullptr);
      std::optional<HostValue> v = fromProto(*a->t);
      require(v && v->size() == 1);
      fill = *v;
    }
    require(count(dims) <= kMaxFoldElements);
    return {make(fill.dtype, dims, Values(size_t(count(dims)), fill.values[0]))};
  }
  if (op == "Range") {
    const HostValue &s = x(0), &l = x(1), &d = x(2);
    require(s.size() == 1 && l.size() == 1 && d.size() == 1 && d.values[0] != 0);
    long double start = s.values[0], limit = l.values[0], delta = d.values[0];
    long double steps = std::ceil((limit - start) / delta);
    auto len = int64_t(std::max<long double>(0, steps));
    require(len <= kMaxFoldElements);
    Values v;
    for (int64_t i = 0; i < len; ++i) v.push_back(roundTo(start + (long double)i * delta, s.dtype));
    return {make(s.dtype, {len}, std::move(v))};
  }
  if (op == "Expand") {
    const HostValue &a = x(0);
    std::vector<int64_t> shape = ints(x(1));
    for (int64_t d : shape) require(d >= 0);
    HostValue target{a.dtype, shape, Values(size_t(count(shape)), 0)};
    require(count(shape) <= kMaxFoldElements);
    return {broadcast({&a, &target}, a.dtype,
                      [](const std::vector<long double> &v) { return v[0]; })};
  }
  throw Fail{};
}

} // namespace

int64_t HostValue::size() const { return count(dims); }

Tensor HostValue::toTensor() const {
  Shape shape;
  for (int64_t d : dims) shape.emplace_back(d);
  std::vector<uint8_t> bytes(values.size() * size_t(dtype.itemsize()));
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t *p = bytes.data() + i * size_t(dtype.itemsize());
    long double v = values[i];
    dispatchDType(dtype, [&]<typename T>() {
      // (a bool is stored as a 0/1 byte; half widths through float, as the kernels round)
      using Stored = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>;
      Stored e;
      if constexpr (std::is_same_v<T, bool>) e = v != 0;
      else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) e = T(float(v));
      else e = static_cast<T>(v);
      std::memcpy(p, &e, sizeof(Stored));
    });
  }
  return Tensor::fromBytes(bytes.data(), bytes.size(), shape, dtype);
}

std::optional<HostValue> fromProto(const TensorProto &t) {
  std::optional<DType> dt = ops::toDType(t.dataType);
  if (!dt || t.dataLocation == DataLocation::External) return std::nullopt;
  int64_t n = 1;
  for (int64_t d : t.dims) {
    if (d < 0 || d > kMaxFoldElements) return std::nullopt;
    n *= d;
  }
  if (n > kMaxFoldElements) return std::nullopt;
  HostValue v{*dt, t.dims, {}};
  bool ok = false;
  if (t.hasRawData) {
    ok = dispatchDType(*dt, [&]<typename T>() {
      using Stored = std::conditional_t<std::is_same_v<T, bool>, uint8_t, T>; // (a bool's byte)
      if (t.rawData.size() != size_t(n) * sizeof(Stored)) return false;
      for (int64_t i = 0; i < n; ++i) {
        Stored e;
        std::memcpy(&e, t.rawData.data() + i * int64_t(sizeof(Stored)), sizeof(Stored));
        if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
          v.values.push_back((long double)float(e));
        else
          v.values.push_back((long double)e);
      }
      return true;
    });
  } else if (t.dataType == DataType::Float && int64_t(t.floatData.size()) == n) {
    for (float f : t.floatData.toVector()) v.values.push_back(f);
    ok = true;
  } else if (t.dataType == DataType::Double && int64_t(t.doubleData.size()) == n) {
    for (double f : t.doubleData.toVector()) v.values.push_back(f);
    ok = true;
  } else if (t.dataType == DataType::Int64 && int64_t(t.int64Data.size()) == n) {
    for (int64_t e : t.int64Data) v.values.push_back((long double)e);
    ok = true;
  } else if ((t.dataType == DataType::Int32 || t.dataType == DataType::Int16 ||
              t.dataType == DataType::Int8 || t.dataType == DataType::Uint8 ||
              t.dataType == DataType::Uint16 || t.dataType == DataType::Bool) &&
             int64_t(t.int32Data.size()) == n) {
    for (int32_t e : t.int32Data) v.values.push_back(e);
    ok = true;
  } else if (n == 0) {
    ok = true;
  }
  if (!ok) return std::nullopt;
  return v;
}

std::optional<std::vector<HostValue>> evaluate(const NodeProto &node, int64_t opset,
                                               const std::vector<const HostValue *> &inputs,
                                               const std::vector<std::vector<int64_t>> &shapes) {
  try {
    return evaluateOp(node, opset, inputs, shapes);
  } catch (const Fail &) {
    return std::nullopt;
  } catch (const Error &) {
    return std::nullopt; // a malformed attribute: the Tensor op says what is wrong
  }
}

} // namespace lazyjit::onnx::fold

// Script values: type names, renderings, conversions to C++ parameter types, argument binding.
#include "Value.h"

#include "lazyjit/Schedule/ASTText.h"
#include "lazyjit/Support/Error.h"

#include <cmath>

namespace lazyjit::script {

std::string typeName(const Value &v) {
  return std::visit(
      [](const auto &x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, NoneV>)
          return "None";
        else if constexpr (std::is_same_v<T, bool>)
          return "bool";
        else if constexpr (std::is_same_v<T, int64_t>)
          return "int";
        else if constexpr (std::is_same_v<T, double>)
          return "float";
        else if constexpr (std::is_same_v<T, std::string>)
          return "str";
        else if constexpr (std::is_same_v<T, SInt>)
          return "Variable";
        else if constexpr (std::is_same_v<T, DType>)
          return "dtype";
        else if constexpr (std::is_same_v<T, Tensor>)
          return "Tensor";
        else if constexpr (std::is_same_v<T, SeqV>)
          return x.isList ? "list" : "tuple";
        else if constexpr (std::is_same_v<T, SliceV>)
          return "slice";
        else if constexpr (std::is_same_v<T, EllipsisV>)
          return "ellipsis";
        else if constexpr (std::is_same_v<T, BuiltinV>)
          return x.name;
        else if constexpr (std::is_same_v<T, MethodRefV>)
          return "method";
        else if constexpr (std::is_same_v<T, LayerV> || std::is_same_v<T, OptimV>)
          return x.cls;
        else if constexpr (std::is_same_v<T, DictV>)
          return "dict";
        else if constexpr (std::is_same_v<T, TrainV>)
          return "train";
        else
          return "exec_count";
      },
      v.v);
}

namespace {
// Python's repr of a float: the shortest round-trip digits, always with a '.' or an exponent.
std::string pyFloat(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == std::floor(x) && std::fabs(x) < 1e16) return fmt::format("{:.1f}", x);
  return fmt::format("{}", x); // 1e-05, 1e+16 and 0.0001 as Python writes them
}
} // namespace

std::string repr(const Value &v) {
  return std::visit(
      [&](const auto &x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>)
          return x ? "True" : "False";
        else if constexpr (std::is_same_v<T, int64_t>)
          return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>)
          return pyFloat(x);
        else if constexpr (std::is_same_v<T, std::string>)
          return "'" + x + "'";
        else if constexpr (std::is_same_v<T, SInt>)
          return x.render();
        else if constexpr (std::is_same_v<T, DType>)
          return "dtypes." + std::string(x.name());
        else if constexpr (std::is_same_v<T, Tensor>)
          return x.defined() ? "Tensor " + std::string(x.dtype().name()) + renderShape(x.shape())
                             : "Tensor <undefined>";
        else if constexpr (std::is_same_v<T, SeqV>) {
          std::string s = x.isList ? "[" : "(";
          for (size_t i = 0; i < x.items.size(); ++i) s += (i ? ", " : "") + repr(x.items[i]);
          if (!x.isList && x.items.size() == 1) s += ",";
          return s + (x.isList ? "]" : ")");
        } else if constexpr (std::is_same_v<T, NoneV>)
          return "None";
        else if constexpr (std::is_same_v<T, DictV>) {
          std::string s = "{";
          for (size_t i = 0; i < x.items.size(); ++i)
            s += (i ? ", '" : "'") + x.items[i].first + "': " + repr(x.items[i].second);
          return s + "}";
        } else if constexpr (std::is_same_v<T, MethodRefV>)
          return "Tensor." + x.name;
        else
          return typeName(v);
      },
      v.v);
}

namespace {
[[noreturn]] void typeError(std::string_view what, std::string_view expected, const Value &got) {
  throw Error(fmt::format("{} must be {}, got {}", what, expected, typeName(got)));
}
} // namespace

int64_t toInt(const Value &v, std::string_view what) {
  if (v.is<int64_t>()) return v.as<int64_t>();
  if (v.is<bool>()) return v.as<bool>() ? 1 : 0;
  if (v.is<SInt>() && v.as<SInt>().isInt()) return v.as<SInt>().asInt();
  typeError(what, "an int", v);
}

double toDouble(const Value &v, std::string_view what) {
  if (v.is<double>()) return v.as<double>();
  if (v.is<int64_t>()) return static_cast<double>(v.as<int64_t>());
  if (v.is<bool>()) return v.as<bool>() ? 1 : 0;
  typeError(what, "a number", v);
}

bool toBool(const Value &v, std::string_view what) {
  if (v.is<bool>()) return v.as<bool>();
  if (v.is<int64_t>()) return v.as<int64_t>() != 0;
  typeError(what, "a bool", v);
}

SInt toSInt(const Value &v, std::string_view what) {
  if (v.is<SInt>()) return v.as<SInt>();
  if (v.is<int64_t>() || v.is<bool>()) return SInt(toInt(v, what));
  typeError(what, "an int or a Variable", v);
}

DType toDType(const Value &v, std::string_view what) {
  if (v.is<DType>()) return v.as<DType>();
  if (v.is<std::string>()) {
    auto dt = DType::fromName(v.as<std::string>());
    if (dt) return *dt;
    throw Error(fmt::format("{}: unknown dtype '{}'", what, v.as<std::string>()));
  }
  typeError(what, "a dtype such as dtypes.float32", v);
}

Tensor toTensor(Value &&v, std::string_view what) {
  if (!v.is<Tensor>()) typeError(what, "a Tensor", v);
  return std::move(v.as<Tensor>());
}

Operand toOperand(Value &&v, std::string_view what) {
  if (v.is<Tensor>()) return Operand(std::move(v.as<Tensor>()));
  if (v.isNumber()) return Operand(toDouble(v, what));
  typeError(what, "a Tensor or a number", v);
}

std::vector<int64_t> toInts(const Value &v, std::string_view what) {
  if (v.is<SeqV>()) {
    std::vector<int64_t> out;
    for (const auto &x : v.as<SeqV>().items) out.push_back(toInt(x, what));
    return out;
  }
  if (v.is<int64_t>() || v.is<bool>()) return {toInt(v, what)};
  typeError(what, "an int or a tuple of ints", v);
}

std::vector<Value> &toSeq(Value &v, std::string_view what) {
  if (!v.is<SeqV>()) typeError(what, "a tuple or a list", v);
  return v.as<SeqV>().items;
}

// ---- CallArgs -----------------------------------------------------------------------------------

std::optional<Value> CallArgs::take(size_t index, std::string_view name) {
  for (size_t k = 0; k < kw.size(); ++k) {
    if (kw[k].first != name) continue;
    if (index < pos.size())
      throw Error(fmt::format("{}() got multiple values for argument '{}'", fn, name));
    kwUsed[k] = true;
    return std::move(kw[k].second);
  }
  if (index < pos.size()) {
    used[index] = true;
    return std::move(pos[index]);
  }
  return std::nullopt;
}

Value CallArgs::need(size_t index, std::string_view name) {
  auto v = take(index, name);
  if (!v) throw Error(fmt::format("{}() missing required argument '{}'", fn, name));
  return std::move(*v);
}

std::vector<Value> CallArgs::rest(size_t from) {
  std::vector<Value> out;
  for (size_t k = from; k < pos.size(); ++k) {
    used[k] = true;
    out.push_back(std::move(pos[k]));
  }
  return out;
}

std::vector<Value> CallArgs::shapeArgs(size_t from, std::string_view name) {
  std::vector<Value> out = rest(from);
  if (out.empty()) {
    if (auto v = take(SIZE_MAX, name)) out.push_back(std::move(*v));
  }
  if (out.size() == 1 && out[0].is<SeqV>()) {
    std::vector<Value> items = std::move(out[0].as<SeqV>().items);
    return items;
  }
  return out;
}

std::optional<Value> CallArgs::popFront() {
  if (pos.empty()) return std::nullopt;
  Value v = std::move(pos.front());
  pos.erase(pos.begin());
  used.erase(used.begin());
  return v;
}

void CallArgs::finish() {
  for (size_t k = 0; k < kw.size(); ++k)
    if (!kwUsed[k])
      throw Error(fmt::format("{}() got an unexpected keyword argument '{}'", fn, kw[k].first));
  size_t n = 0;
  for (bool u : used) n += u;
  if (n != pos.size())
    throw Error(fmt::format("{}() takes {} positional argument{} but {} were given", fn, n,
                            n == 1 ? "" : "s", pos.size()));
}

} // namespace lazyjit::script

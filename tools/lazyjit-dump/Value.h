// Script values and the Python-style binding of call arguments to C++ parameters.
//
// A Value owns what it holds: a Tensor value keeps its graph node alive exactly as long as the
// Value exists. The evaluator keeps each sub-expression's Value only on its own stack and moves it
// into the call that consumes it, so temporaries die when Python would drop them.
#pragma once

#include "lazyjit/NN/Layers.h"
#include "lazyjit/Tensor/Tensor.h"

#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace lazyjit::script {

struct Value;

struct NoneV {};
struct EllipsisV {};
/// A tuple or a list.
struct SeqV {
  std::vector<Value> items;
  bool isList = false;
};
struct SliceV {
  std::optional<int64_t> start, stop, step;
};
/// A builtin object: the `Tensor` class, the `dtypes` and `nn` modules, the `Variable` function,
/// or a class of the nn module.
struct BuiltinV {
  std::string name;
};
/// An nn layer (callable, with tensor attributes).
struct LayerV {
  std::shared_ptr<nn::Linear> linear;
  std::shared_ptr<nn::Conv2d> conv;
  std::shared_ptr<nn::BatchNorm2d> batchnorm;
  std::shared_ptr<nn::LayerNorm> layernorm;
};

struct Value {
  /// Int and symbolic integers are kept apart: `Sym` holds a Variable or an expression of one.
  std::variant<NoneV, bool, int64_t, double, std::string, SInt, DType, Tensor, SeqV, SliceV,
               EllipsisV, BuiltinV, LayerV>
      v;

  Value() : v(NoneV{}) {}
  template <typename T> Value(T x) : v(std::move(x)) {}

  template <typename T> bool is() const { return std::holds_alternative<T>(v); }
  template <typename T> T &as() { return std::get<T>(v); }
  template <typename T> const T &as() const { return std::get<T>(v); }
  bool isNumber() const { return is<bool>() || is<int64_t>() || is<double>(); }
};

/// The script-level type name of a value, for messages ("Tensor", "int", "tuple", ...).
std::string typeName(const Value &v);
/// A short rendering for messages and scalars ("3", "(2, 3)", "Tensor float32[2, 3]").
std::string repr(const Value &v);

// ---- conversions (throw lazyjit::Error naming `what` on a type mismatch) ----------------------

int64_t toInt(const Value &v, std::string_view what);
double toDouble(const Value &v, std::string_view what);
bool toBool(const Value &v, std::string_view what);
SInt toSInt(const Value &v, std::string_view what);
DType toDType(const Value &v, std::string_view what);
Tensor toTensor(Value &&v, std::string_view what);
Operand toOperand(Value &&v, std::string_view what);
std::vector<int64_t> toInts(const Value &v, std::string_view what); ///< an int or a sequence
std::vector<Value> &toSeq(Value &v, std::string_view what);

/// Python-style binding of a call's arguments: each parameter is taken once, by position or by
/// keyword, then finish() rejects what is left over.
class CallArgs {
public:
  CallArgs(std::string fn, std::vector<Value> pos, std::vector<std::pair<std::string, Value>> kw)
      : fn(std::move(fn)), pos(std::move(pos)), kw(std::move(kw)), used(this->pos.size()),
        kwUsed(this->kw.size()) {}

  const std::string &name() const { return fn; }
  /// Takes parameter `index`/`name` if given (moving the value out).
  std::optional<Value> take(size_t index, std::string_view name);
  Value need(size_t index, std::string_view name);
  /// Takes every positional argument from `from` on (a `*args` parameter).
  std::vector<Value> rest(size_t from);
  /// A shape given as `f(2, 3)` or `f((2, 3))` starting at positional `from` (`*shape`).
  std::vector<Value> shapeArgs(size_t from, std::string_view name);
  size_t positionalCount() const { return pos.size(); }
  /// Removes and returns the first positional argument (the `self` of an unbound method).
  std::optional<Value> popFront();
  /// Errors for unknown keywords and surplus positional arguments.
  void finish();

private:
  std::string fn;
  std::vector<Value> pos;
  std::vector<std::pair<std::string, Value>> kw;
  std::vector<bool> used;
  std::vector<bool> kwUsed;
};

// ---- the builtin tables (TensorMethods.cpp) -------------------------------------------------

/// Calls `self.<name>(args)`; `self` is consumed (a temporary receiver dies with the call).
Value callMethod(Value &&self, const std::string &name, CallArgs &args);
/// Reads `self.<name>` without a call (Tensor.T, .shape, .dtype, ..., dtypes.float16,
/// layer.weight).
Value getAttribute(Value &&self, const std::string &name);
/// Calls a builtin object: Tensor(...), Variable(...), nn.Conv2d(...), or a layer.
Value callValue(Value &&callee, CallArgs &args);

} // namespace lazyjit::script

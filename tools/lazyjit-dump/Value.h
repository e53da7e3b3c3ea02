// Script values and the Python-style binding of call arguments to C++ parameters.
//
// A Value owns what it holds: a Tensor value keeps its graph node alive exactly as long as the
// Value exists. The evaluator keeps each sub-expression's Value only on its own stack and moves it
// into the call that consumes it, so temporaries die when Python would drop them.
#pragma once

#include "lazyjit/NN/Layers.h"
#include "lazyjit/NN/Optim.h"
#include "lazyjit/Tensor/Tensor.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
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
/// A builtin object: the `Tensor` class, the `dtypes`, `nn`, `optim` and `nn.state` modules, the
/// builtin functions (`Variable`, `get_parameters`, `exec_count`, `print`, ...), or a class of the
/// nn or optim module (`nn.Conv2d`).
struct BuiltinV {
  std::string name;
};
/// An unbound Tensor method read as a value (`Tensor.relu`): callable with the tensor first.
struct MethodRefV {
  std::string name;
};
/// An nn layer: callable, with tensor attributes (NNBuiltins.cpp). Copies share the layer, as two
/// Python names bound to one object do.
struct LayerV {
  std::string cls; ///< the reference's class name ("Conv2d", "BatchNorm2d", ...)
  std::shared_ptr<nn::Module> module;
  std::function<Tensor(Tensor)> call;
};
/// An optimizer (optim.SGD, Adam, AdamW, LAMB); copies share it.
struct OptimV {
  std::string cls;
  std::shared_ptr<nn::optim::Optimizer> opt;
};
/// A dict with string keys in insertion order (what get_state_dict returns).
struct DictV {
  std::vector<std::pair<std::string, Value>> items;
};
/// What exec_count() returns: `k.n` is the number of kernels run since, or, once a `with` block
/// over it has ended, run inside the block.
struct CounterV {
  int64_t start = 0;
  std::shared_ptr<std::optional<int64_t>> stop = std::make_shared<std::optional<int64_t>>();
};
/// `Tensor.train(val)`: a `with` block runs with Tensor.training = val.
struct TrainV {
  bool val = true;
};

struct Value {
  /// Int and symbolic integers are kept apart: `Sym` holds a Variable or an expression of one.
  std::variant<NoneV, bool, int64_t, double, std::string, SInt, DType, Tensor, SeqV, SliceV,
               EllipsisV, BuiltinV, MethodRefV, LayerV, OptimV, DictV, CounterV, TrainV>
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

// ---- operators (ScriptOperators.cpp) -------------------------------------------------------

/// `l op r` for an arithmetic or comparison operator, with Python's dispatch: a tensor operand
/// calls the tensor's (or, on the right, its reflected) method. Throws Error for unsupported types.
Value binaryOp(const std::string &op, Value &&l, Value &&r);
/// `-v` (neg) or `+v`.
Value unaryOp(bool neg, Value &&v);

// ---- the builtin tables (TensorMethods.cpp) -------------------------------------------------

/// Calls `self.<name>(args)`; `self` is consumed (a temporary receiver dies with the call).
Value callMethod(Value &&self, const std::string &name, CallArgs &args);
/// Reads `self.<name>` without a call (Tensor.T, .shape, .dtype, ..., dtypes.float16,
/// layer.weight).
Value getAttribute(Value &&self, const std::string &name);
/// Calls a builtin object: Tensor(...), Variable(...), nn.Conv2d(...), or a layer.
Value callValue(Value &&callee, CallArgs &args);
/// Sets `self.<name> = v` (Tensor.training, Tensor.no_grad, x.requires_grad, x.grad, layer
/// tensors, opt.lr).
void setAttribute(Value &&self, const std::string &name, Value &&v);

// ---- nn (NNBuiltins.cpp), optim and state dicts (OptimStateBuiltins.cpp) ---------------------

/// Constructs `nn.<cls>(...)` / `optim.<cls>(...)`; nullopt if `cls` is no such class.
std::optional<Value> makeNNObject(const std::string &module, const std::string &cls,
                                  CallArgs &args);
/// The class names of the nn and optim modules.
const std::vector<std::string> &nnClasses();
const std::vector<std::string> &optimClasses();
Value callLayer(LayerV &l, CallArgs &args);
Value layerAttribute(const LayerV &l, const std::string &name);
void setLayerAttribute(LayerV &l, const std::string &name, Value &&v);
Value callOptimMethod(OptimV &o, const std::string &name, CallArgs &args);
Value optimAttribute(const OptimV &o, const std::string &name);
void setOptimAttribute(OptimV &o, const std::string &name, Value &&v);
Value callDictMethod(DictV &d, const std::string &name, CallArgs &args);
/// get_state_dict(obj, prefix='') and get_parameters(obj) (the reference's nn/state.py).
Value getStateDict(Value &&obj, CallArgs &args);
Value getParameters(Value &&obj);
/// Every tensor reachable from `v`: through sequences, dicts, layers, optimizers, gradients and
/// the autograd graph (a Function's inputs). Appends each tensor once, in discovery order.
void collectTensors(const Value &v, std::vector<Tensor> &out,
                    std::unordered_set<const TensorImpl *> &seen);
/// True if `name` is an attribute or method of a layer, an optimizer, a dict or a counter.
bool isNNAttribute(std::string_view name);

} // namespace lazyjit::script

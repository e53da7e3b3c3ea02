// How a script call's arguments become the C++ arguments of a Tensor method: the binders that
// lazyjit/Tensor/TensorOps.def names for its entries. Each takes the reference's Python parameter
// names, defaults and argument forms (`reshape(2, 3)` and `reshape((2, 3))`, `sum(axis=(0, 1),
// keepdim=True)`, ...). A table-entry binder gets `call`, which forwards its arguments to the
// entry's method on the receiver; a script-method binder calls what it needs itself.
#pragma once

#include "Builtins.h"

#include "lazyjit/Support/Error.h"

#include <algorithm>

namespace lazyjit::script::binders {

// ---- argument helpers ---------------------------------------------------------------------------

/// A string as a template argument: the Python name of a parameter in a derived binder.
template <size_t N> struct Lit {
  constexpr Lit(const char (&s)[N]) { std::copy_n(s, N, str); }
  constexpr std::string_view view() const { return {str, N - 1}; }
  char str[N];
};

inline Shape toShape(const std::vector<Value> &dims, std::string_view what) {
  Shape s;
  for (const auto &d : dims) s.push_back(toSInt(d, what));
  return s;
}
inline std::vector<int64_t> intsOf(const std::vector<Value> &xs, std::string_view what) {
  std::vector<int64_t> out;
  for (const auto &x : xs) out.push_back(toInt(x, what));
  return out;
}
inline Tensor::Axes axesArg(std::optional<Value> v) {
  if (!v || v->is<NoneV>()) return std::nullopt;
  return toInts(*v, "axis");
}
inline std::optional<int64_t> optInt(std::optional<Value> v, std::string_view what) {
  if (!v || v->is<NoneV>()) return std::nullopt;
  return toInt(*v, what);
}
inline int64_t intOr(std::optional<Value> v, int64_t dflt, std::string_view what) {
  return v ? toInt(*v, what) : dflt;
}
inline double doubleOr(std::optional<Value> v, double dflt, std::string_view what) {
  return v ? toDouble(*v, what) : dflt;
}
inline bool boolOr(std::optional<Value> v, bool dflt, std::string_view what) {
  return v ? toBool(*v, what) : dflt;
}
inline std::optional<Tensor> optTensor(std::optional<Value> v, std::string_view what) {
  if (!v || v->is<NoneV>()) return std::nullopt;
  return toTensor(std::move(*v), what);
}
/// An int or a tuple (the reference's make_pair and friends).
inline std::vector<int64_t> intsOr(std::optional<Value> v, std::vector<int64_t> dflt,
                                   std::string_view what) {
  return v ? toInts(*v, what) : dflt;
}
/// The shrink/pad argument: a tuple with one (begin, end) pair or None per dim.
std::vector<std::optional<SIntPair>> padArg(Value v, std::string_view what);
Value fromSInt(const SInt &x);
/// x.sequential(ll): each callable of the list applied in order.
Value sequential(Tensor &&self, CallArgs &a);

// ---- binders derived from the parameter list ----------------------------------------------------

/// f()
struct Nullary {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    a.finish();
    return call();
  }
};
/// f(x, reverse=False): a tensor or a scalar operand.
struct Binary {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    auto x = a.need(0, "x");
    bool rev = boolOr(a.take(1, "reverse"), false, "reverse");
    a.finish();
    return call(toOperand(std::move(x), "x"), rev);
  }
};
/// f(x)
struct Compare {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    auto x = a.need(0, "x");
    a.finish();
    return call(toOperand(std::move(x), "x"));
  }
};
/// f(axis=None, keepdim=False)
struct Reduce {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    auto axis = axesArg(a.take(0, "axis"));
    bool keep = boolOr(a.take(1, "keepdim"), false, "keepdim");
    a.finish();
    return call(axis, keep);
  }
};
/// f(axis=None, keepdim=False, correction=1)
struct ReduceCorrection {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    auto axis = axesArg(a.take(0, "axis"));
    bool keep = boolOr(a.take(1, "keepdim"), false, "keepdim");
    int64_t c = intOr(a.take(2, "correction"), 1, "correction");
    a.finish();
    return call(axis, keep, c);
  }
};
/// f(axis=None, keepdim=False) with one int axis.
struct ArgReduce {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    auto ax = optInt(a.take(0, "axis"), "axis");
    bool keep = boolOr(a.take(1, "keepdim"), false, "keepdim");
    a.finish();
    return call(ax, keep);
  }
};
/// f(name=D) with an int.
template <Lit P, int64_t D> struct IntOr {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    int64_t v = intOr(a.take(0, P.view()), D, P.view());
    a.finish();
    return call(v);
  }
};
/// f(name=D) with a float.
template <Lit P, double D> struct DoubleOr {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    double v = doubleOr(a.take(0, P.view()), D, P.view());
    a.finish();
    return call(v);
  }
};
/// f(name) with one required argument, converted by `Convert` (toInt, toTensor, toDType).
template <Lit P, auto Convert> struct Need {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    auto v = Convert(a.need(0, P.view()), P.view());
    a.finish();
    return call(std::move(v));
  }
};
/// f(name) with an int, a tensor, a dtype.
template <Lit P> using NeedInt = Need<P, toInt>;
template <Lit P> using NeedTensor = Need<P, toTensor>;
template <Lit P> using NeedDType = Need<P, toDType>;
/// f(*ints) or f(ints)
template <Lit P> struct IntsArgs {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    auto dims = a.shapeArgs(0, P.view());
    a.finish();
    return call(intsOf(dims, P.view()));
  }
};
/// f(arg) or f(arg, value=0) with one (begin, end) pair or None per dim.
template <Lit Op, bool HasValue> struct PadArg {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    auto arg = padArg(a.need(0, "arg"), Op.view());
    if constexpr (HasValue) {
      double v = doubleOr(a.take(1, "value"), 0, "value");
      a.finish();
      return call(arg, v);
    } else {
      a.finish();
      return call(arg);
    }
  }
};
/// f(dtype=None, device=None, requires_grad=None), keyword-only.
struct OptionsOnly {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    auto o = tensorOptions(a);
    a.finish();
    return call(o);
  }
};
/// f(kernel_size=(2, 2), stride=None, dilation=1)
struct Pool {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    auto k = intsOr(a.take(0, "kernel_size"), {2, 2}, "kernel_size");
    auto st = a.take(1, "stride");
    auto d = intsOr(a.take(2, "dilation"), {1}, "dilation");
    a.finish();
    std::optional<std::vector<int64_t>> s;
    if (st && !st->is<NoneV>()) s = toInts(*st, "stride");
    return call(k, s, d);
  }
};
/// f(weight, bias=None, groups=1, stride=1, dilation=1, padding=0[, output_padding=0])
template <bool Transposed> struct Conv {
  template <class Call> static Value bind(Tensor &, CallArgs &a, Call call) {
    auto w = toTensor(a.need(0, "weight"), "weight");
    auto b = optTensor(a.take(1, "bias"), "bias");
    int64_t g = intOr(a.take(2, "groups"), 1, "groups");
    auto s = intsOr(a.take(3, "stride"), {1}, "stride");
    auto d = intsOr(a.take(4, "dilation"), {1}, "dilation");
    auto p = intsOr(a.take(5, "padding"), {0}, "padding");
    if constexpr (Transposed) {
      auto op = intsOr(a.take(6, "output_padding"), {0}, "output_padding");
      a.finish();
      return call(std::move(w), std::move(b), g, s, d, p, op);
    } else {
      a.finish();
      return call(std::move(w), std::move(b), g, s, d, p);
    }
  }
};

// ---- custom binders: one method each, defined in TensorMethods.cpp ------------------------------

#define LAZYJIT_CUSTOM_BINDER(Name)                                                                \
  struct Name {                                                                                    \
    template <class Call> static Value bind(Tensor &self, CallArgs &a, Call call);                 \
  };
LAZYJIT_CUSTOM_BINDER(To)
LAZYJIT_CUSTOM_BINDER(FullLike)
LAZYJIT_CUSTOM_BINDER(Reshape)
LAZYJIT_CUSTOM_BINDER(Expand)
LAZYJIT_CUSTOM_BINDER(GetItem)
LAZYJIT_CUSTOM_BINDER(Gather)
LAZYJIT_CUSTOM_BINDER(Cat)
LAZYJIT_CUSTOM_BINDER(Squeeze)
LAZYJIT_CUSTOM_BINDER(Pad2d)
LAZYJIT_CUSTOM_BINDER(Transpose)
LAZYJIT_CUSTOM_BINDER(Matmul)
LAZYJIT_CUSTOM_BINDER(Linear)
LAZYJIT_CUSTOM_BINDER(Layernorm)
LAZYJIT_CUSTOM_BINDER(Batchnorm)
LAZYJIT_CUSTOM_BINDER(Attention)
LAZYJIT_CUSTOM_BINDER(Multinomial)
LAZYJIT_CUSTOM_BINDER(SparseCrossentropy)
LAZYJIT_CUSTOM_BINDER(Clip)
LAZYJIT_CUSTOM_BINDER(Hardtanh)
LAZYJIT_CUSTOM_BINDER(Hardsigmoid)
LAZYJIT_CUSTOM_BINDER(Interpolate)
LAZYJIT_CUSTOM_BINDER(Where)
#undef LAZYJIT_CUSTOM_BINDER

// ---- script methods (LAZYJIT_TENSOR_SCRIPT_METHOD) ----------------------------------------------

#define LAZYJIT_SCRIPT_BINDER(Name)                                                                \
  struct Name {                                                                                    \
    static Value bind(Tensor &self, CallArgs &a);                                                  \
  };
LAZYJIT_SCRIPT_BINDER(Realize)
LAZYJIT_SCRIPT_BINDER(Backward)
LAZYJIT_SCRIPT_BINDER(Sequential)
LAZYJIT_SCRIPT_BINDER(Assign)
LAZYJIT_SCRIPT_BINDER(SetItem)
LAZYJIT_SCRIPT_BINDER(ToInPlace)
LAZYJIT_SCRIPT_BINDER(Numel)
LAZYJIT_SCRIPT_BINDER(ElementSize)
LAZYJIT_SCRIPT_BINDER(NBytes)
LAZYJIT_SCRIPT_BINDER(IsFloatingPoint)
LAZYJIT_SCRIPT_BINDER(Item)
LAZYJIT_SCRIPT_BINDER(Chunk)
LAZYJIT_SCRIPT_BINDER(Neg)
#undef LAZYJIT_SCRIPT_BINDER

} // namespace lazyjit::script::binders

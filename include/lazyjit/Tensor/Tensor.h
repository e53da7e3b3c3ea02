// Tensor: the model-facing API over the lazy graph, with tinygrad's forward semantics (tensor.py and
// mlops.py of the reference). Every op checks its arguments at the call and throws a
// lazyjit::Error subclass naming the op, the shapes and the dtypes. Nothing is computed until
// realize() or a read-back (toVector, item).
//
// Fusion depends on which tensors are alive: an intermediate Tensor you keep (or drop) changes the
// kernels exactly as keeping (or `del`-ing) it does in the reference.
//
// Threads (docs/architecture.md, "Threads"): tensors may be built and realized from several
// threads at once. A realized tensor (a model's weights) may be read by any number of threads; a
// lazy tensor shared between threads may be realized by any of them and is computed once. A
// Tensor handle itself is not for assigning (`assign`, `setGrad`, `=`) in one thread while another
// uses it, and one model is not trained from two threads at once (its gradients and optimizer
// state are one set). The process-wide flags `training` and `noGrad` are set before threads
// start; the guards below are per thread.
#pragma once

#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Schedule/Schedule.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lazyjit {

class Tensor;
class Function;

/// The graph options of the process configuration now (OPT, LAZYCACHE, MERGE_VIEW,
/// REDUCEOP_SPLIT_THRESHOLD): what each Tensor op builds its graph ops under, read at the op as the
/// reference reads its environment (the graph itself reads no configuration).
GraphOptions configuredGraphOptions();

/// The scheduler under configuredGraphOptions() (Schedule.h takes the options explicitly).
std::vector<ScheduleItem> schedule(const LazyBufferRef &out, SeenSet &seen);
std::vector<ScheduleItem> schedule(const LazyBufferRef &out);
std::vector<ScheduleItem> scheduleMany(const std::vector<LazyBufferRef> &outs);

/// The state a Tensor handle shares (a Python Tensor object): copies of a Tensor alias it, so an
/// assign, a gradient or requires_grad set through one copy is seen through every other, exactly
/// as through two Python names bound to one object.
struct TensorImpl {
  LazyBufferRef lazydata;
  /// The reference's three states: unset (nullopt; becomes true when put in an optimizer), true
  /// (gets a gradient) and false (never does).
  std::optional<bool> requiresGrad;
  std::shared_ptr<TensorImpl> grad;
  /// The Function that computed this tensor, kept only while a gradient may flow through it
  /// (the reference's `_ctx`); backward() drops it once it has been used.
  std::shared_ptr<Function> ctx;
  /// Set when backward() has used and dropped `ctx`, so a second backward through it is an error.
  bool graphUsed = false;

  /// Frees its Function and gradient through deferRelease (a chain of Functions thousands deep is
  /// freed without recursion).
  ~TensorImpl();
};

/// A Python-style slice or index for Tensor::slice / getitem.
struct Index {
  enum class Kind { Int, Slice, NewAxis, Ellipsis, Tensor };
  Kind kind = Kind::Slice;
  int64_t i = 0;
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  /// For Kind::Tensor: the integer index tensor (negative values count from the end), or, when
  /// null, `list` (made an int32 tensor on the indexed tensor's device).
  std::shared_ptr<TensorImpl> tensor;
  std::vector<int64_t> list;

  static Index at(int64_t i) { return {Kind::Int, i, {}, {}, 1, nullptr, {}}; }
  static Index range(std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step = 1) {
    return {Kind::Slice, 0, start, stop, step, nullptr, {}};
  }
  static Index all() { return {}; }
  static Index newAxis() { return {Kind::NewAxis, 0, {}, {}, 1, nullptr, {}}; }
  static Index ellipsis() { return {Kind::Ellipsis, 0, {}, {}, 1, nullptr, {}}; }
  /// An integer tensor index (advanced indexing, the reference's fancy index).
  static Index of(const Tensor &t);
  /// A list of ints, as Python's `x[[1, 2]]`: an int32 tensor index.
  static Index of(const std::vector<int64_t> &values);
};

/// Options shared by the creation functions.
struct TensorOptions {
  TensorOptions(std::optional<DType> dtype = std::nullopt,
                std::optional<std::string> device = std::nullopt,
                std::optional<bool> requiresGrad = std::nullopt)
      : dtype(dtype), device(std::move(device)), requiresGrad(requiresGrad) {}
  std::optional<DType> dtype;
  std::optional<std::string> device;
  /// The reference's requires_grad= keyword (unset by default).
  std::optional<bool> requiresGrad;
};

/// A Tensor or a Python-style scalar operand (takes the tensor's dtype, as in the reference).
/// It holds the Tensor by reference count, so a temporary operand is released as soon as the op
/// that consumes it returns.
class Operand {
public:
  Operand(const Tensor &t);
  Operand(Tensor &&t);
  Operand(double v) : value(v) {}
  Operand(float v) : value(v) {}
  Operand(int v) : value(v) {}
  Operand(int64_t v) : value(static_cast<double>(v)) {}
  bool isTensor() const { return static_cast<bool>(impl); }
  Tensor tensor() const;
  std::shared_ptr<TensorImpl> impl;
  double value = 0;
};

// Declares a method for lvalue and temporary receivers. On a temporary the receiver is released
// when the call returns, as Python drops a temporary once it is consumed, so chained expressions
// (`-y.sum().sqrt()`) fuse exactly as they do in the reference.
#define LAZYJIT_TENSOR_OP(name, params, args)                                                      \
  Tensor name params const &;                                                                      \
  Tensor name params && {                                                                          \
    Tensor self = std::move(*this);                                                                \
    return self.name args;                                                                         \
  }

/// A handle to a tensor: copies share one TensorImpl, as Python names share one Tensor object.
/// A default-constructed Tensor is undefined; using it is an error.
class Tensor {
public:
  Tensor() = default;
  /// The reference's Tensor(lazybuffer, device, requires_grad).
  explicit Tensor(LazyBufferRef lazydata, const std::optional<std::string> &device = std::nullopt,
                  std::optional<bool> requiresGrad = std::nullopt);
  /// A 0-d constant (the reference's Tensor(3.0)): float32 unless a dtype is given.
  static Tensor scalar(double value, const TensorOptions &opts = {});

  const LazyBufferRef &lazydata() const;
  bool defined() const { return static_cast<bool>(impl); }
  /// Whether both handles name the same tensor (Python's `is`).
  bool sameAs(const Tensor &o) const { return impl == o.impl; }
  /// The identity of the tensor (for sets and maps keyed by tensor, as Python's id()).
  const TensorImpl *id() const { return impl.get(); }
  const Shape &shape() const;
  DType dtype() const;
  const std::string &device() const;
  int64_t ndim() const;
  SInt numel() const;
  int64_t elementSize() const { return dtype().itemsize(); }
  bool isFloatingPoint() const { return dtype().isFloat(); }
  /// The shape as plain integers; throws if it is symbolic.
  std::vector<int64_t> intShape() const;

  // ---- data -----------------------------------------------------------------------------------
  Tensor &realize();
  static void corealize(const std::vector<Tensor> &tensors);
  /// Reads the values back (realizing as needed), converted to V, row-major.
  template <typename V> std::vector<V> toVector() const;
  template <typename V> V item() const;
  /// The raw bytes of a contiguous copy in this tensor's dtype.
  std::vector<uint8_t> toBytes() const;
  /// Makes this tensor compute `x` (reusing this tensor's buffer when possible). Every handle of
  /// this tensor sees the new value; `x` must not require a gradient.
  Tensor &assign(const Tensor &x);
  /// Writes `value` (cast to this dtype, broadcast to the selection) into the elements that
  /// `indices` select, as x[indices] = value does in Python: an assign of a masked where, so it
  /// fuses into one kernel that reuses this tensor's buffer. Integers, slices (any step), None
  /// and Ellipsis select by movement; tensor indices select through one-hot masks (where an
  /// element is selected twice, the last write wins, as NumPy's). Neither side may require a
  /// gradient (the reference refuses it too).
  Tensor &setItem(const std::vector<Index> &indices, const Tensor &value);
  Tensor &setItem(const std::vector<Index> &indices, double value);
  /// Moves this tensor, and its gradient, to `device` in place (the reference's to_): every
  /// handle of it sees the moved tensor. No-op when unset or already there.
  Tensor &to_(const std::optional<std::string> &device);

  // ---- autograd (the reference's tensor.py) ---------------------------------------------------
  std::optional<bool> requiresGrad() const;
  Tensor &setRequiresGrad(std::optional<bool> value = true);
  /// The accumulated gradient, if backward() has produced one.
  std::optional<Tensor> grad() const;
  void setGrad(const std::optional<Tensor> &g);
  /// The Function that computed this tensor while a gradient can flow through it, else null.
  const std::shared_ptr<Function> &gradFn() const;
  /// Backpropagates from this scalar: every tensor it depends on that requires a gradient gets
  /// (or accumulates into) its grad(). The graph behind it is released as it is walked.
  Tensor &backward();
  /// While set, ops record no autograd graph (their results still report requires_grad). The
  /// flag is the process's: set it before other threads use tensors. NoGradGuard sets it for the
  /// calling thread only, in a scope; gradDisabled() is what ops read.
  static bool noGrad;
  static bool gradDisabled();
  struct NoGradGuard {
    explicit NoGradGuard(bool on = true) : prev(noGradHere()) { noGradHere() = on; }
    ~NoGradGuard() { noGradHere() = prev; }
    NoGradGuard(const NoGradGuard &) = delete;
    NoGradGuard &operator=(const NoGradGuard &) = delete;
    std::optional<bool> prev;
  };

  // ---- creation -------------------------------------------------------------------------------
  /// The dtype that creation functions give float tensors when no dtype is asked for (the
  /// reference's Tensor.default_type; float32 unless changed). The process's setting: set it
  /// before other threads create tensors.
  static DType defaultType;
  /// Host data (size must equal the product of the shape), copied to the device.
  static Tensor fromBytes(const void *data, size_t bytes, const Shape &shape, DType dtype,
                          const std::optional<std::string> &device = std::nullopt);
  template <typename V>
  static Tensor fromVector(const std::vector<V> &values, const Shape &shape,
                           const std::optional<std::string> &device = std::nullopt);
  /// Values given as doubles, stored in `dtype` (default float32), like Tensor([...]).
  static Tensor fromValues(const std::vector<double> &values, const Shape &shape,
                           const TensorOptions &opts = {});
  static Tensor empty(const Shape &shape, const TensorOptions &opts = {});
  /// A tensor whose values `fill` writes into its (contiguous) buffer when it is realized, not
  /// before (the reference's LoadOps.CUSTOM; file loaders use it to read lazily). `name` names
  /// the step in schedules and logs.
  static Tensor fromHostFunction(const Shape &shape, DType dtype, std::string name,
                                 std::function<void(Buffer &out)> fill, const std::optional<std::string> &device = std::nullopt);
  static Tensor full(const Shape &shape, double value, const TensorOptions &opts = {});
  static Tensor zeros(const Shape &shape, const TensorOptions &opts = {});
  static Tensor ones(const Shape &shape, const TensorOptions &opts = {});
  static Tensor arange(double stop, const TensorOptions &opts = {});
  static Tensor arange(double start, double stop, double step = 1, const TensorOptions &opts = {});
  static Tensor eye(int64_t dim, const TensorOptions &opts = {});
  /// Uniform [0, 1) samples. Each call takes the next seed, so a program is reproducible after
  /// manualSeed.
  static Tensor rand(const Shape &shape, const TensorOptions &opts = {});
  static Tensor randn(const Shape &shape, const TensorOptions &opts = {});
  static Tensor randint(const Shape &shape, int64_t low = 0, int64_t high = 10,
                        const TensorOptions &opts = {});
  static Tensor normal(const Shape &shape, double mean = 0, double std = 1,
                       const TensorOptions &opts = {});
  static Tensor uniform(const Shape &shape, double low = 0, double high = 1,
                        const TensorOptions &opts = {});
  static Tensor scaledUniform(const Shape &shape, const TensorOptions &opts = {});
  static Tensor glorotUniform(const Shape &shape, const TensorOptions &opts = {});
  static Tensor kaimingUniform(const Shape &shape, double a = 0.01, const TensorOptions &opts = {});
  static Tensor kaimingNormal(const Shape &shape, double a = 0.01, const TensorOptions &opts = {});
  static void manualSeed(uint64_t seed);

  // ---- movement -------------------------------------------------------------------------------
  static Tensor stack(std::vector<Tensor> tensors, int64_t dim = 0);
  std::vector<Tensor> chunk(int64_t num, int64_t dim = 0) const;

  // ---- reductions -----------------------------------------------------------------------------
  using Axes = std::optional<std::vector<int64_t>>;
  static Tensor einsum(const std::string &formula, std::vector<Tensor> xs);

  // ---- the methods that return a new Tensor: one table, shared with the script's bindings -----
  // Movement, reductions, processing, unary, binary/ternary and cast methods, each declared with
  // LAZYJIT_TENSOR_OP (documented in the table).
#define LAZYJIT_TENSOR_METHOD(Name, ScriptName, Params, Args, ...)                                 \
  LAZYJIT_TENSOR_OP(Name, Params, Args)
#include "lazyjit/Tensor/TensorOps.def"

  /// Applies fns in order (the reference's sequential).
  template <typename Fn> Tensor sequential(const std::vector<Fn> &fns) const {
    Tensor x = *this;
    for (const auto &f : fns) x = f(x);
    return x;
  }

  /// Training mode (changes batchnorm and dropout). The flag is the process's: set it before other
  /// threads use tensors. TrainingGuard sets it for the calling thread only, in a scope (request
  /// threads evaluating while another trains); isTraining() is what ops read.
  static bool training;
  static bool isTraining();
  struct TrainingGuard {
    explicit TrainingGuard(bool on = true) : prev(trainingHere()) { trainingHere() = on; }
    ~TrainingGuard() { trainingHere() = prev; }
    TrainingGuard(const TrainingGuard &) = delete;
    TrainingGuard &operator=(const TrainingGuard &) = delete;
    std::optional<bool> prev;
  };

  /// Mixed precision (PyTorch's autocast): while an AutocastGuard is alive in a thread, the
  /// matmul-like ops it runs (dot/matmul, linear, conv2d, conv_transpose2d) compute on float16
  /// or bfloat16 copies of their float32 operands and return that dtype; the losses and softmaxes
  /// (log_softmax, softmax, the cross-entropies) compute in float32. Parameters stay float32
  /// (master weights): the casts' backward gives them float32 gradients. Guards nest.
  struct AutocastGuard {
    explicit AutocastGuard(DType dtype = dtypes::bfloat16, bool enabled = true);
    ~AutocastGuard();
    AutocastGuard(const AutocastGuard &) = delete;
    AutocastGuard &operator=(const AutocastGuard &) = delete;
    std::optional<DType> prev;
  };
  /// The calling thread's autocast dtype, if an AutocastGuard is enabled.
  static std::optional<DType> autocastType();

  std::string repr() const;

private:
  std::shared_ptr<TensorImpl> impl;
  /// The calling thread's guards' settings (unset: the process's flag).
  static std::optional<bool> &noGradHere();
  static std::optional<bool> &trainingHere();

  friend class TensorInternals;
  friend class Operand;
  friend struct Index;
  friend class Function;
};

// Operators take their operands by value and release them when they return (like the methods).
Tensor operator-(Tensor a);
Tensor operator+(Tensor a, Operand b);
Tensor operator-(Tensor a, Operand b);
Tensor operator*(Tensor a, Operand b);
Tensor operator/(Tensor a, Operand b);
Tensor operator+(double a, Tensor b);
Tensor operator-(double a, Tensor b);
Tensor operator*(double a, Tensor b);
Tensor operator/(double a, Tensor b);
Tensor operator<(Tensor a, Operand b);
Tensor operator>(Tensor a, Operand b);
Tensor operator<=(Tensor a, Operand b);
Tensor operator>=(Tensor a, Operand b);
Tensor operator==(Tensor a, Operand b);
Tensor operator!=(Tensor a, Operand b);

/// A symbolic size for Tensor shapes: Variable("n", 1, 64), bound with .bind(value).
NodeRef Variable(const std::string &name, int64_t min, int64_t max);

// ---- template definitions ------------------------------------------------------------------------

template <typename V>
Tensor Tensor::fromVector(const std::vector<V> &values, const Shape &shape,
                          const std::optional<std::string> &device) {
  if constexpr (std::is_same_v<V, bool>) {
    // std::vector<bool> is packed and has no data(): one byte per element, as the bool dtype
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return fromBytes(bytes.data(), bytes.size(), shape, dtypeOf<V>(), device);
  } else {
    return fromBytes(values.data(), values.size() * sizeof(V), shape, dtypeOf<V>(), device);
  }
}

namespace detail {
void convertFromBytes(const std::vector<uint8_t> &bytes, DType from, void *out, DType to,
                      size_t count);
}

template <typename V> std::vector<V> Tensor::toVector() const {
  std::vector<uint8_t> bytes = toBytes();
  size_t n = bytes.size() / dtype().itemsize();
  std::vector<V> out(n);
  if constexpr (std::is_same_v<V, bool>) {
    std::vector<uint8_t> tmp(n);
    detail::convertFromBytes(bytes, dtype(), tmp.data(), dtypes::boolean, n);
    for (size_t i = 0; i < n; ++i) out[i] = tmp[i] != 0;
  } else {
    detail::convertFromBytes(bytes, dtype(), out.data(), dtypeOf<V>(), n);
  }
  return out;
}

template <typename V> V Tensor::item() const {
  auto v = toVector<V>();
  LAZYJIT_USER_CHECK(v.size() == 1, ShapeError, "item: the tensor has {} elements, not 1",
                     v.size());
  return v[0];
}

} // namespace lazyjit

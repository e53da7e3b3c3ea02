// Tensor state, data read-back, devices, assign, creation and random numbers, and the mlops
// forward functions (reference tensor.py / mlops.py).
#include "TensorInternals.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/Device.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Schedule/Schedule.h"
#include "lazyjit/Support/Config.h"
#include "lazyjit/Support/NodePool.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

namespace lazyjit {

bool Tensor::training = false;
DType Tensor::defaultType = dtypes::float32;
std::optional<bool> &Tensor::trainingHere() {
  thread_local std::optional<bool> here;
  return here;
}
bool Tensor::isTraining() { return trainingHere().value_or(training); }

// ---- formatting helpers -----------------------------------------------------------------------

std::string fmtInts(const std::vector<int64_t> &v) {
  std::string out = "(";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  if (v.size() == 1) out += ",";
  return out + ")";
}

std::string fmtSInt(const SInt &x) {
  if (x.isInt()) return std::to_string(x.asInt());
  // the DEBUG render without bound values: n[1-100=50] -> n[1-100]
  std::string k = x.node()->key(), out;
  for (size_t i = 0; i < k.size(); ++i) {
    if (k[i] == '=') {
      while (i + 1 < k.size() && k[i + 1] != ']') ++i;
      continue;
    }
    out += k[i];
  }
  return out;
}

std::string describe(const Tensor &t) { return typedShapeText(t.dtype(), t.shape()); }

int64_t checkedNumel(const char *op, const Shape &s) {
  int64_t n = 1;
  for (const auto &d : s) {
    if (!d.isInt()) continue;
    int64_t v = d.asInt();
    LAZYJIT_USER_CHECK(v >= 0, ShapeError, "{}: negative dimension in {}", op, shapeText(s));
    bool overflow = __builtin_mul_overflow(n, v, &n);
    LAZYJIT_USER_CHECK(!overflow && n <= (int64_t(1) << 62), ShapeError,
                       "{}: shape {} has too many elements (more than 2^62)", op, shapeText(s));
  }
  return n;
}

int64_t normAxis(const char *op, const Tensor &t, int64_t axis, int64_t ndimExtra) {
  int64_t n = t.ndim() + ndimExtra;
  LAZYJIT_USER_CHECK(axis >= -n && axis < n && n > 0, ShapeError,
                     "{}: axis {} is out of range for {} ({} dims)", op, axis, describe(t), t.ndim());
  return axis < 0 ? axis + n : axis;
}

using TI = TensorInternals;

// ---- state --------------------------------------------------------------------------------------

Tensor::Tensor(LazyBufferRef lazydata, const std::optional<std::string> &device,
               std::optional<bool> requiresGrad)
    : impl(std::allocate_shared<TensorImpl>(NodePoolAllocator<TensorImpl>())) {
  LAZYJIT_INTERNAL_CHECK(lazydata, "Tensor from a null LazyBuffer");
  checkedNumel("tensor", lazydata->shape);
  impl->requiresGrad = requiresGrad;
  if (!device || lazydata->device == *device) {
    impl->lazydata = std::move(lazydata);
    return;
  }
  std::string dev = canonicalizeDevice(*device);
  impl->lazydata =
      lazydata->device == dev ? std::move(lazydata) : lazydata->copyToDevice(configuredGraphOptions(), dev);
}

Index Index::of(const Tensor &t) {
  Index ix{Kind::Tensor, 0, {}, {}, 1, nullptr, {}};
  LAZYJIT_USER_CHECK(t.defined(), Error, "getitem: the index is an undefined Tensor");
  ix.tensor = t.impl;
  return ix;
}

Index Index::of(const std::vector<int64_t> &values) { return {Kind::Tensor, 0, {}, {}, 1, nullptr, values}; }

namespace {
// The canonical name of the device an op creates a tensor on. An unknown or unavailable device is
// reported at the call rather than when the tensor is first realized.
std::string resolveDevice(const char *op, const std::optional<std::string> &device) {
  std::string dev = device ? canonicalizeDevice(*device) : defaultDevice();
  std::string why;
  LAZYJIT_USER_CHECK(deviceAvailable(dev, &why), DeviceError, "{}: {}", op, why);
  return dev;
}

// The float->int rule of casts on the host: truncate toward zero, saturate at the type's range,
// NaN -> 0 (a plain static_cast is undefined outside the range).
template <typename T> T saturatingCast(double v) {
  if (std::isnan(v)) return 0;
  double t = std::trunc(v);
  if (t <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (t >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(t);
}

// The value an integer constant has in its dtype. The reference renders a constant as int(x) in
// the dtype, so it wraps (Tensor(-1, dtype=uint8) is 255, 300 is 44); a float->int cast of a tensor
// saturates instead, so the wrap is applied here, before any backend converts the constant.
double wrapIntConst(double v, DType dt) {
  if (!dt.isInt() || !std::isfinite(v) || std::fabs(v) >= 0x1p63) return v;
  int64_t i = static_cast<int64_t>(std::trunc(v));
  return dispatchDType(dt, [&]<typename T>() -> double {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) return static_cast<double>(static_cast<T>(i));
    else return v;
  });
}
} // namespace

Tensor TensorInternals::scalarOn(double value, DType dtype, const std::string &device) {
  return Tensor(LazyBuffer::loadop(configuredGraphOptions(), Op::LoadConst, {}, dtype, device, wrapIntConst(value, dtype)),
                std::nullopt, false);
}

Tensor Tensor::scalar(double value, const TensorOptions &opts) {
  Tensor t = TensorInternals::scalarOn(value, opts.dtype.value_or(defaultType), resolveDevice("scalar", opts.device));
  t.impl->requiresGrad = opts.requiresGrad;
  return t;
}

static void checkDefined(const std::shared_ptr<TensorImpl> &impl) {
  LAZYJIT_USER_CHECK(impl != nullptr, Error, "use of an undefined (default-constructed) Tensor");
}

const LazyBufferRef &Tensor::lazydata() const {
  static const LazyBufferRef none;
  return impl ? impl->lazydata : none;
}

const Shape &Tensor::shape() const {
  checkDefined(impl);
  return impl->lazydata->shape;
}
DType Tensor::dtype() const {
  checkDefined(impl);
  return impl->lazydata->dtype();
}
const std::string &Tensor::device() const {
  checkDefined(impl);
  return impl->lazydata->device;
}
int64_t Tensor::ndim() const { return static_cast<int64_t>(shape().size()); }
SInt Tensor::numel() const { return prod(shape()); }

std::vector<int64_t> Tensor::intShape() const {
  std::vector<int64_t> out;
  for (const auto &s : shape()) {
    LAZYJIT_USER_CHECK(s.isInt(), UnsupportedError, "{} has a symbolic shape", describe(*this));
    out.push_back(s.asInt());
  }
  return out;
}

std::string Tensor::repr() const {
  checkDefined(impl);
  std::string g = impl->grad ? impl->grad->lazydata->repr() : "None";
  return "<Tensor " + impl->lazydata->repr() + " on " + device() + " with grad " + g + ">";
}

NodeRef Variable(const std::string &name, int64_t min, int64_t max) {
  return variable(name, min, max);
}

// ---- graph options and scheduling ------------------------------------------------------------------

GraphOptions configuredGraphOptions() { return GraphOptions::from(config()); }

std::vector<ScheduleItem> schedule(const LazyBufferRef &out, SeenSet &seen) {
  return schedule(out, seen, configuredGraphOptions());
}

std::vector<ScheduleItem> schedule(const LazyBufferRef &out) {
  SeenSet seen;
  return schedule(out, seen);
}

std::vector<ScheduleItem> scheduleMany(const std::vector<LazyBufferRef> &outs) {
  return scheduleMany(outs, configuredGraphOptions());
}

// ---- data handlers ------------------------------------------------------------------------------

Tensor &Tensor::realize() {
  checkDefined(impl);
  lazyjit::realize({impl->lazydata}, configuredGraphOptions());
  return *this;
}

void Tensor::corealize(const std::vector<Tensor> &tensors) {
  std::vector<LazyBufferRef> outs;
  for (const auto &t : tensors) {
    checkDefined(t.impl);
    outs.push_back(t.lazydata());
  }
  lazyjit::realize(outs, configuredGraphOptions());
}

std::vector<uint8_t> Tensor::toBytes() const {
  checkDefined(impl);
  LAZYJIT_USER_CHECK(allInt(shape()), UnsupportedError,
                     "cannot read back {}: the shape is symbolic", describe(*this));
  int64_t n = prodInt(shape());
  LAZYJIT_USER_CHECK(static_cast<double>(n) * dtype().itemsize() < 0x1p47, UnsupportedError,
                     "cannot read back {}: {} elements do not fit in host memory", describe(*this), n);
  int64_t limit = config().maxBufferBytes;
  LAZYJIT_USER_CHECK(limit == 0 || static_cast<double>(n) * dtype().itemsize() <= static_cast<double>(limit),
                     DeviceError, "cannot read back {}: {} bytes exceed LAZYJIT_MAX_BUFFER_BYTES={}", describe(*this),
                     n * dtype().itemsize(), limit);
  std::vector<uint8_t> out;
  try {
    out.resize(static_cast<size_t>(n) * dtype().itemsize());
  } catch (const std::bad_alloc &) {
    throw DeviceError(fmt::format("cannot read back {}: out of host memory for {} bytes",
                                  describe(*this), n * dtype().itemsize()));
  }
  if (n == 0) return out;
  // the reference's numpy(): detach().contiguous().realize(), then copy the realized buffer
  Tensor c = detach().contiguous();
  c.realize();
  const auto &buf = c.lazydata()->realized();
  LAZYJIT_INTERNAL_CHECK(buf && buf->size() >= n, "read-back buffer is too small");
  buf->copyOut(out.data(), out.size());
  return out;
}

Tensor Tensor::to(const std::string &dev) const & {
  if (canonicalizeDevice(dev) == device()) return *this;
  resolveDevice("to", dev);
  Tensor ret(impl->lazydata, dev);
  if (impl->grad) ret.impl->grad = TI::fromImpl(impl->grad).to(dev).impl;
  return ret;
}

Tensor Tensor::detach() const & {
  checkDefined(impl);
  return Tensor(impl->lazydata, std::nullopt, false);
}

Tensor &Tensor::assign(const Tensor &x) {
  checkDefined(impl);
  checkDefined(x.impl);
  LAZYJIT_USER_CHECK(shape() == x.shape(), ShapeError, "assign: shape mismatch {} != {}",
                     describe(*this), describe(x));
  LAZYJIT_USER_CHECK(!x.requiresGrad().value_or(false), Error,
                     "assign: the new value {} requires a gradient; assign a detach()ed value "
                     "(a gradient cannot flow through an assign)", describe(x));
  const LazyBufferRef &lb = impl->lazydata;
  if (dtype() == x.dtype() && lb->isRealized()) x.impl->lazydata->setOutputBuffer(lb->realized());
  impl->lazydata = x.impl->lazydata;
  return *this;
}

// ---- creation -------------------------------------------------------------------------------------

Tensor Tensor::fromBytes(const void *data, size_t bytes, const Shape &shape, DType dtype,
                         const std::optional<std::string> &device) {
  LAZYJIT_USER_CHECK(allInt(shape), ShapeError, "from data: the shape {} must be concrete",
                     shapeText(shape));
  for (const auto &s : shape)
    LAZYJIT_USER_CHECK(s.asInt() >= 0, ShapeError, "from data: negative dimension in {}",
                       shapeText(shape));
  int64_t n = prodInt(shape);
  LAZYJIT_USER_CHECK(bytes == static_cast<size_t>(n) * dtype.itemsize(), ShapeError,
                     "from data: {} bytes do not fill {}{} ({} elements of {} bytes)", bytes,
                     dtype.name(), shapeText(shape), n, dtype.itemsize());
  // the reference's fromCPU: an already-realized host buffer, then copied to the device
  auto buf = std::make_shared<Buffer>("CPU", n, dtype);
  buf->copyIn(data, bytes);
  auto l = LazyBuffer::create("CPU", ShapeTracker::fromShape(shape), OpType::Load, nullptr, dtype, buf);
  return Tensor(l, resolveDevice("from data", device));
}

Tensor Tensor::fromHostFunction(const Shape &shape, DType dtype, std::string name,
                                std::function<void(Buffer &out)> fill, const std::optional<std::string> &device) {
  LAZYJIT_USER_CHECK(allInt(shape), ShapeError, "fromHostFunction: the shape {} must be concrete", shapeText(shape));
  for (const auto &s : shape)
    LAZYJIT_USER_CHECK(s.asInt() >= 0, ShapeError, "fromHostFunction: negative dimension in {}", shapeText(shape));
  int64_t n = prodInt(shape);
  if (n == 0) return empty(shape, {dtype, device});
  auto op = std::make_shared<CustomOp>();
  op->name = std::move(name);
  op->fn = std::move(fill);
  return TI::loadop(Op::Custom, n, {dtype, device}, CustomOpRef(op)).reshape(shape);
}

Tensor Tensor::fromValues(const std::vector<double> &values, const Shape &shape,
                          const TensorOptions &opts) {
  DType dt = opts.dtype.value_or(defaultType);
  std::vector<uint8_t> bytes(values.size() * dt.itemsize());
  for (size_t i = 0; i < values.size(); ++i) {
    double v = values[i];
    dispatchDType(dt, [&]<typename T>() {
      T x;
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) x = T(static_cast<float>(v));
      else if constexpr (std::is_same_v<T, bool>) x = v != 0;
      else if constexpr (std::is_integral_v<T>) x = saturatingCast<T>(wrapIntConst(v, dt)); // as Tensor(v, dtype)
      else x = static_cast<T>(v);
      std::memcpy(bytes.data() + i * sizeof(T), &x, sizeof(T));
    });
  }
  Tensor t = fromBytes(bytes.data(), bytes.size(), shape, dt, opts.device);
  t.impl->requiresGrad = opts.requiresGrad;
  return t;
}

Tensor TensorInternals::loadop(Op op, int64_t size, const TensorOptions &opts, LazyOpArg arg) {
  std::string dev = resolveDevice(op == Op::Empty ? "empty" : "rand", opts.device);
  return Tensor(LazyBuffer::loadop(configuredGraphOptions(), op, {size}, opts.dtype.value_or(Tensor::defaultType), dev,
                                   std::move(arg)),
                std::nullopt, opts.requiresGrad);
}

static int64_t creationSize(const char *op, const Shape &shape) {
  LAZYJIT_USER_CHECK(allInt(shape), ShapeError, "{}: cannot create with symbolic shape {}", op,
                     shapeText(shape));
  return checkedNumel(op, shape);
}

Tensor Tensor::empty(const Shape &shape, const TensorOptions &opts) {
  return TI::loadop(Op::Empty, creationSize("empty", shape), opts).reshape(shape);
}

Tensor Tensor::full(const Shape &shape, double value, const TensorOptions &opts) {
  resolveDevice("full", opts.device);
  for (const auto &s : shape)
    LAZYJIT_USER_CHECK(truthy(lazyjit::ge(s, 0)), ShapeError, "full: negative dimension in {}", shapeText(shape));
  return scalar(value, opts).reshape(Shape(shape.size(), SInt(1))).expand(shape);
}
Tensor Tensor::zeros(const Shape &shape, const TensorOptions &opts) { return full(shape, 0, opts); }
Tensor Tensor::ones(const Shape &shape, const TensorOptions &opts) { return full(shape, 1, opts); }

Tensor Tensor::arange(double stop, const TensorOptions &opts) { return arange(0, stop, 1, opts); }

Tensor Tensor::arange(double start, double stop, double step, const TensorOptions &opts) {
  LAZYJIT_USER_CHECK(step != 0, ShapeError, "arange: step must be nonzero");
  double n = std::ceil((stop - start) / step);
  int64_t count = n > 0 ? static_cast<int64_t>(n) : 0;
  if (count == 0) return full({0}, 0, opts);
  return full({count}, step, opts).cumsum().add(start - step);
}

Tensor Tensor::eye(int64_t dim, const TensorOptions &opts) {
  LAZYJIT_USER_CHECK(dim >= 0, ShapeError, "eye: negative size {}", dim);
  if (dim == 0) return full({0, 0}, 0, opts);
  return full({dim, 1}, 1, opts)
      .pad({SIntPair(0, 0), SIntPair(0, dim)})
      .reshape({dim * (dim + 1)})
      .shrink({SIntPair(0, dim * dim)})
      .reshape({dim, dim});
}

Tensor Tensor::fullLike(double value, const TensorOptions &opts) const & {
  TensorOptions o = opts;
  if (!o.dtype) o.dtype = dtype();
  if (!o.device) o.device = device();
  return full(shape(), value, o);
}
Tensor Tensor::zerosLike(const TensorOptions &opts) const & { return fullLike(0, opts); }
Tensor Tensor::onesLike(const TensorOptions &opts) const & { return fullLike(1, opts); }

// ---- random numbers ---------------------------------------------------------------------------------

namespace {
std::atomic<uint64_t> &seedCounter() {
  static std::atomic<uint64_t> s{0};
  return s;
}
uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
} // namespace

void Tensor::manualSeed(uint64_t seed) { seedCounter() = seed; }

Tensor Tensor::rand(const Shape &shape, const TensorOptions &opts) {
  int64_t n = creationSize("rand", shape);
  // The seed is taken when the op is created (the reference takes it when the op runs), so a
  // program's random numbers do not depend on the order of realizes.
  uint64_t seed = ++seedCounter();
  auto op = std::make_shared<CustomOp>();
  op->name = "rand";
  op->fn = [seed](Buffer &out) {
    uint64_t state = seed * 0x2545F4914F6CDD1DULL;
    std::vector<double> vals(out.size());
    for (auto &v : vals) v = static_cast<double>(splitmix64(state) >> 40) * (1.0 / 16777216.0);
    std::vector<uint8_t> bytes(out.nbytes());
    DType dt = out.dtype();
    for (size_t i = 0; i < vals.size(); ++i)
      dispatchDType(dt, [&]<typename T>() {
        T x;
        if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) x = T(static_cast<float>(vals[i]));
        else if constexpr (std::is_same_v<T, bool>) x = vals[i] >= 0.5;
        else if constexpr (std::is_floating_point_v<T>) x = static_cast<T>(static_cast<float>(vals[i]));
        else x = static_cast<T>(vals[i]);
        std::memcpy(bytes.data() + i * sizeof(T), &x, sizeof(T));
      });
    out.copyIn(bytes.data(), bytes.size());
  };
  return TI::loadop(Op::Custom, n, opts, CustomOpRef(op)).reshape(shape);
}

Tensor Tensor::randn(const Shape &shape, const TensorOptions &opts) {
  // https://en.wikipedia.org/wiki/Box%E2%80%93Muller_transform
  Shape s2{2};
  s2.insert(s2.end(), shape.begin(), shape.end());
  TensorOptions o = opts;
  o.dtype = std::nullopt;
  Tensor src = rand(s2, o);
  Tensor a = src.getitem({Index::at(0)}).mul(2 * M_PI).cos();
  Tensor b = src.getitem({Index::at(1)}).sub(1, true).log().mul(-2).sqrt();
  return a.mul(b).cast(opts.dtype.value_or(defaultType));
}

Tensor Tensor::randint(const Shape &shape, int64_t low, int64_t high, const TensorOptions &opts) {
  LAZYJIT_USER_CHECK(high > low, ShapeError, "randint: empty range [{}, {})", low, high);
  TensorOptions o = opts;
  o.dtype = std::nullopt;
  return rand(shape, o).mul(static_cast<double>(high - low)).add(static_cast<double>(low)).cast(dtypes::int32);
}

Tensor Tensor::normal(const Shape &shape, double mean, double std, const TensorOptions &opts) {
  return randn(shape, opts).mul(std, true).add(mean);
}

Tensor Tensor::uniform(const Shape &shape, double low, double high, const TensorOptions &opts) {
  DType dt = opts.dtype.value_or(defaultType);
  TensorOptions o = opts;
  o.dtype = std::nullopt;
  return rand(shape, o).mul(high - low, true).cast(dt).add(low);
}

Tensor Tensor::scaledUniform(const Shape &shape, const TensorOptions &opts) {
  return uniform(shape, -1, 1, opts).mul(std::pow(static_cast<double>(prodInt(shape)), -0.5));
}

Tensor Tensor::glorotUniform(const Shape &shape, const TensorOptions &opts) {
  Shape rest(shape.begin() + 1, shape.end());
  double f = std::sqrt(6.0 / static_cast<double>(shape.at(0).asInt() + prodInt(rest)));
  return uniform(shape, -1, 1, opts).mul(f);
}

Tensor Tensor::kaimingUniform(const Shape &shape, double a, const TensorOptions &opts) {
  Shape rest(shape.begin() + 1, shape.end());
  double bound = std::sqrt(3.0) * std::sqrt(2.0 / (1 + a * a)) / std::sqrt(static_cast<double>(prodInt(rest)));
  return uniform(shape, -bound, bound, opts);
}

Tensor Tensor::kaimingNormal(const Shape &shape, double a, const TensorOptions &opts) {
  Shape rest(shape.begin() + 1, shape.end());
  double std = std::sqrt(2.0 / (1 + a * a)) / std::sqrt(static_cast<double>(prodInt(rest)));
  return normal(shape, 0, std, opts);
}

// ---- host conversion ----------------------------------------------------------------------------

namespace detail {
void convertFromBytes(const std::vector<uint8_t> &bytes, DType from, void *out, DType to,
                      size_t count) {
  for (size_t i = 0; i < count; ++i) {
    double v = 0;
    int64_t iv = 0;
    uint64_t uv = 0;
    int kind = 0; // 0 float, 1 signed, 2 unsigned
    dispatchDType(from, [&]<typename T>() {
      T x;
      std::memcpy(&x, bytes.data() + i * sizeof(T), sizeof(T));
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) v = static_cast<float>(x);
      else if constexpr (std::is_same_v<T, bool>) { iv = x; kind = 1; }
      else if constexpr (std::is_floating_point_v<T>) v = x;
      else if constexpr (std::is_signed_v<T>) { iv = x; kind = 1; }
      else { uv = x; kind = 2; }
    });
    dispatchDType(to, [&]<typename T>() {
      T x;
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
        x = T(static_cast<float>(kind == 0 ? v : kind == 1 ? double(iv) : double(uv)));
      else if constexpr (std::is_same_v<T, bool>)
        x = kind == 0 ? v != 0 : kind == 1 ? iv != 0 : uv != 0;
      else if constexpr (std::is_floating_point_v<T>)
        x = static_cast<T>(kind == 0 ? v : kind == 1 ? double(iv) : double(uv));
      else
        x = kind == 0 ? saturatingCast<T>(v) : kind == 1 ? static_cast<T>(iv) : static_cast<T>(uv);
      std::memcpy(static_cast<char *>(out) + i * sizeof(T), &x, sizeof(T));
    });
  }
}
} // namespace detail

} // namespace lazyjit

// lazyjit::Jit: capture and replay (see Jit.h).
#include "lazyjit/Tensor/Jit.h"
#include "TensorInternals.h"
#include "lazyjit/Graph/LazyBuffer.h"
#include "lazyjit/Runtime/Buffer.h"
#include "lazyjit/Runtime/Realize.h"
#include "lazyjit/Support/Error.h"

#include <unordered_map>

namespace lazyjit {

namespace {
struct InputSig {
  std::string shape; ///< rendered without bound values
  DType dtype;
  std::string device;
};

// the shape with each variable by name, whatever it is bound to
InputSig signatureOf(const Tensor &t) { return {shapeText(t.shape()), t.dtype(), t.device()}; }

std::string describe(const InputSig &s) { return fmt::format("{}{} on {}", s.dtype.name(), s.shape, s.device); }

/// The base buffer an input tensor reads, realized.
std::shared_ptr<Buffer> bufferOf(const Tensor &t) {
  const LazyBufferRef &lb = t.lazydata();
  LAZYJIT_INTERNAL_CHECK(lb->isRealized(), "Jit: an input is not realized");
  return lb->realized();
}
} // namespace

struct Jit::Impl {
  Fn fn;
  int calls = 0;
  std::vector<CapturedItem> items;
  std::vector<InputSig> sigs;
  /// For each item, for each buffer slot (0: out, 1..: inputs), the input index it takes (-1: its own).
  std::vector<std::vector<int>> inputSlot;
  std::vector<Tensor> outputs;
  size_t kernels = 0;

  std::vector<Tensor> run(const std::vector<Tensor> &inputs) {
    std::vector<Tensor> out = fn(inputs);
    for (auto &t : out) t.realize();
    return out;
  }
};

Jit::Jit(Fn fn) : impl(std::make_unique<Impl>()) { impl->fn = std::move(fn); }
Jit::~Jit() = default;

int Jit::calls() const { return impl->calls; }
bool Jit::captured() const { return impl->calls >= 2; }
size_t Jit::kernelCount() const { return impl->kernels; }

namespace {
// Holds a Jit's busy flag for one call; a second call at the same time is an Error.
class Exclusive {
public:
  Exclusive(std::atomic<bool> &busy, const char *what) : busy(busy) {
    LAZYJIT_USER_CHECK(!busy.exchange(true, std::memory_order_acquire), Error,
                       "Jit: {} while another thread's call of the same Jit is in progress; a Jit is called "
                       "by one thread at a time (give each thread its own Jit, or lock around it)",
                       what);
  }
  ~Exclusive() { busy.store(false, std::memory_order_release); }
  Exclusive(const Exclusive &) = delete;
  Exclusive &operator=(const Exclusive &) = delete;

private:
  std::atomic<bool> &busy;
};
} // namespace

void Jit::reset() {
  Exclusive only(busy, "reset called concurrently");
  Fn fn = std::move(impl->fn);
  impl = std::make_unique<Impl>();
  impl->fn = std::move(fn);
}

std::vector<Tensor> Jit::operator()(const std::vector<Tensor> &inputsIn) { return (*this)(inputsIn, {}); }

std::vector<Tensor> Jit::operator()(const std::vector<Tensor> &inputsIn, const std::vector<NodeRef> &vars) {
  Exclusive only(busy, "called concurrently");
  Impl &s = *impl;
  std::vector<Tensor> inputs = inputsIn;
  for (auto &t : inputs) {
    t.realize();
    // a constant (Tensor::zeros, full) stays an unrealized const when realized: give it a buffer,
    // which the capture swaps like any input's
    if (!t.lazydata()->isRealized()) t = t.contiguous().realize();
  }
  std::vector<std::shared_ptr<Buffer>> bufs;
  for (const auto &t : inputs) bufs.push_back(bufferOf(t));
  for (size_t i = 0; i < bufs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      LAZYJIT_USER_CHECK(bufs[i] != bufs[j], Error, "Jit: inputs {} and {} are the same buffer", j, i);
  std::vector<InputSig> sigs;
  for (const auto &t : inputs) sigs.push_back(signatureOf(t));
  if (s.calls >= 1) {
    LAZYJIT_USER_CHECK(sigs.size() == s.sigs.size(), Error, "Jit: called with {} inputs, captured with {}",
                       sigs.size(), s.sigs.size());
    for (size_t i = 0; i < sigs.size(); ++i)
      LAZYJIT_USER_CHECK(sigs[i].shape == s.sigs[i].shape && sigs[i].dtype == s.sigs[i].dtype &&
                             sigs[i].device == s.sigs[i].device,
                         Error, "Jit: input {} is {}, but was {} when the function was captured (reset() forgets it)",
                         i, describe(sigs[i]), describe(s.sigs[i]));
  }
  if (s.calls == 0) {
    s.sigs = sigs;
    ++s.calls;
    return s.run(inputs);
  }
  if (s.calls == 1) {
    // capture
    std::vector<CapturedItem> items;
    CaptureSink prev = setCaptureSink([&](CapturedItem c) { items.push_back(std::move(c)); });
    std::vector<Tensor> out;
    try {
      out = s.run(inputs);
    } catch (...) {
      setCaptureSink(std::move(prev));
      throw;
    }
    setCaptureSink(std::move(prev));
    std::unordered_map<const Buffer *, int> inputIndex;
    for (size_t i = 0; i < bufs.size(); ++i) inputIndex[bufs[i].get()] = static_cast<int>(i);
    s.items = std::move(items);
    s.inputSlot.clear();
    s.kernels = 0;
    for (const auto &it : s.items) {
      std::vector<int> slots;
      auto slot = [&](const std::shared_ptr<Buffer> &b) {
        auto f = inputIndex.find(b.get());
        return f == inputIndex.end() ? -1 : f->second;
      };
      slots.push_back(slot(it.out));
      LAZYJIT_USER_CHECK(slots[0] < 0 || it.kind == Op::Empty, Error,
                         "Jit: the function writes into its input {} (pass it as state, not as an input)", slots[0]);
      for (const auto &b : it.inputs) slots.push_back(slot(b));
      s.inputSlot.push_back(std::move(slots));
      if (it.kind == Op::Store) ++s.kernels;
    }
    s.outputs.clear();
    for (const auto &t : out) s.outputs.push_back(t.detach());
    ++s.calls;
    return out;
  }

  // replay: the variable values are those bound in the inputs' shapes
  std::map<std::string, int64_t> vals;
  for (const auto &t : inputs)
    for (const auto &[name, vv] : t.lazydata()->st.varVals()) vals[name] = vv.second;
  for (const auto &v : vars) {
    LAZYJIT_USER_CHECK(v && v->isVar() && v->expr && v->boundValue(), Error,
                       "Jit: a variable argument must be a bound, named Variable");
    vals[*v->expr] = *v->boundValue();
  }
  for (size_t i = 0; i < s.items.size(); ++i) {
    const CapturedItem &it = s.items[i];
    const std::vector<int> &slots = s.inputSlot[i];
    auto pick = [&](size_t k, const std::shared_ptr<Buffer> &own) {
      return slots[k] >= 0 ? bufs[static_cast<size_t>(slots[k])].get() : own.get();
    };
    switch (it.kind) {
    case Op::Empty: break;
    case Op::Copy: it.out->copyFrom(*pick(1, it.inputs[0])); break;
    case Op::Custom: it.custom->fn(*it.out); break;
    case Op::Store: { // a kernel
      std::vector<Buffer *> kb{it.out.get()};
      for (size_t k = 0; k < it.inputs.size(); ++k) kb.push_back(pick(k + 1, it.inputs[k]));
      VarVals vv = it.varVals;
      for (auto &[name, v] : vv)
        if (auto f = vals.find(name); f != vals.end()) v.second = f->second;
      it.program->run(kb, vv);
      ++globalCounters().kernelCount;
      break;
    }
    case Op::Exp2: case Op::Log2: case Op::Cast: case Op::Sin: case Op::Sqrt: case Op::Recip: case Op::Neg:
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Max: case Op::Mod: case Op::CmpLt:
    case Op::Xor: case Op::MulAcc: case Op::Where: case Op::Sum: case Op::ReduceMax:
    case Op::Load: case Op::Const:
    case Op::Reshape: case Op::Permute: case Op::Expand: case Op::Pad: case Op::Shrink: case Op::Stride:
    case Op::AsStrided:
    case Op::LoadConst: case Op::Contiguous:
      LAZYJIT_INTERNAL_CHECK(false, "Jit: a captured item of kind {} (runSchedule captures kernels as STORE)",
                             opName(it.kind));
    }
  }
  ++s.calls;
  std::vector<Tensor> out;
  for (const auto &t : s.outputs) out.push_back(t.detach());
  return out;
}

} // namespace lazyjit

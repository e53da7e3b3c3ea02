// The autograd engine: Function::apply (which decides whether a result keeps its Function) and
// Tensor::backward (the reference's deepwalk and gradient accumulation).
#include "TensorInternals.h"
#include "lazyjit/Tensor/Function.h"
#include "lazyjit/Support/Release.h"

#include <unordered_set>

namespace lazyjit {

bool Tensor::noGrad = false;
std::optional<bool> &Tensor::noGradHere() {
  thread_local std::optional<bool> here;
  return here;
}
bool Tensor::gradDisabled() { return noGradHere().value_or(noGrad); }

TensorImpl::~TensorImpl() {
  deferRelease(std::move(ctx));
  deferRelease(std::move(grad));
  deferRelease(std::move(lazydata));
}

Function::~Function() {
  for (Tensor &p : parents_) deferRelease(std::move(p.impl));
}

std::vector<LazyBufferRef> Function::backward(const LazyBufferRef &) {
  throw UnsupportedError(fmt::format(
      "backward: {} has no gradient (comparisons and xor are not differentiable); a gradient "
      "reached it because one of its inputs requires a gradient: detach() that input or the result",
      name()));
}

Tensor Function::apply(std::shared_ptr<Function> fn, FunctionInputs inputs) {
  LAZYJIT_INTERNAL_CHECK(!inputs.empty(), "Function::apply: {} without inputs", fn->name());
  fn->device_ = inputs[0].device();
  bool any = false, anyUnset = false;
  fn->needsGrad.reserve(inputs.size());
  for (const Tensor &t : inputs) {
    std::optional<bool> r = t.requiresGrad();
    fn->needsGrad.push_back(r);
    any = any || r.value_or(false);
    anyUnset = anyUnset || !r;
  }
  // True if any input needs a gradient, else None if any is None, else False
  std::optional<bool> requiresGrad = any ? std::optional<bool>(true) : anyUnset ? std::nullopt : std::optional<bool>(false);
  LazyBufferRef out;
  {
    LazyBufferRefs lbs;
    for (const Tensor &t : inputs) lbs.push_back(t.lazydata());
    fn->opts = configuredGraphOptions();
    out = fn->forward(lbs);
  }
  Tensor ret(std::move(out), fn->device_, requiresGrad);
  if (any && !Tensor::gradDisabled()) {
    fn->parents_ = std::move(inputs);
    ret.impl->ctx = std::move(fn);
  }
  return ret;
}

std::optional<bool> Tensor::requiresGrad() const {
  LAZYJIT_USER_CHECK(impl != nullptr, Error, "use of an undefined (default-constructed) Tensor");
  return impl->requiresGrad;
}

Tensor &Tensor::setRequiresGrad(std::optional<bool> value) {
  LAZYJIT_USER_CHECK(impl != nullptr, Error, "use of an undefined (default-constructed) Tensor");
  impl->requiresGrad = value;
  return *this;
}

std::optional<Tensor> Tensor::grad() const {
  LAZYJIT_USER_CHECK(impl != nullptr, Error, "use of an undefined (default-constructed) Tensor");
  if (!impl->grad) return std::nullopt;
  Tensor g;
  g.impl = impl->grad;
  return g;
}

void Tensor::setGrad(const std::optional<Tensor> &g) {
  LAZYJIT_USER_CHECK(impl != nullptr, Error, "use of an undefined (default-constructed) Tensor");
  if (g) {
    LAZYJIT_USER_CHECK(g->defined(), Error, "setGrad: the gradient is an undefined Tensor");
    LAZYJIT_USER_CHECK(g->shape() == shape(), ShapeError,
                       "setGrad: gradient {} does not match the tensor {}", describe(*g), describe(*this));
  }
  impl->grad = g ? g->impl : nullptr;
}

const std::shared_ptr<Function> &Tensor::gradFn() const {
  LAZYJIT_USER_CHECK(impl != nullptr, Error, "use of an undefined (default-constructed) Tensor");
  return impl->ctx;
}

namespace {
// The reference's deepwalk: the tensors that have a Function, in post order (parents first),
// walking each Function's parents in order. Iterative, so a long chain cannot overflow the stack.
std::vector<std::shared_ptr<TensorImpl>> deepwalk(const std::shared_ptr<TensorImpl> &root) {
  std::vector<std::shared_ptr<TensorImpl>> nodes;
  std::unordered_set<const TensorImpl *> visited;
  struct Frame {
    std::shared_ptr<TensorImpl> node;
    size_t next;
  };
  std::vector<Frame> stack;
  visited.insert(root.get());
  stack.push_back({root, 0});
  while (!stack.empty()) {
    Frame &f = stack.back();
    const std::shared_ptr<Function> &ctx = f.node->ctx;
    if (!ctx) {
      LAZYJIT_USER_CHECK(!f.node->graphUsed, Error,
                         "backward: part of this graph ({}) was already used and freed by an "
                         "earlier backward(); build the computation again to backpropagate through "
                         "it again", describe(TensorInternals::fromImpl(f.node)));
      stack.pop_back();
      continue;
    }
    const auto &parents = ctx->parents();
    if (f.next < parents.size()) {
      const std::shared_ptr<TensorImpl> &p = TensorInternals::impl(parents[f.next++]);
      if (visited.insert(p.get()).second) stack.push_back({p, 0});
      continue;
    }
    nodes.push_back(f.node);
    stack.pop_back();
  }
  return nodes;
}
} // namespace

Tensor &Tensor::backward() {
  LAZYJIT_USER_CHECK(impl != nullptr, Error, "use of an undefined (default-constructed) Tensor");
  LAZYJIT_USER_CHECK(shape().empty(), ShapeError,
                     "backward: can only be called on a scalar (0-d) tensor, but it is {}; reduce "
                     "it first (e.g. .sum() or .mean())", describe(*this));
  LAZYJIT_USER_CHECK(impl->ctx || requiresGrad().value_or(false), Error,
                     "backward: {} does not require a gradient and has no graph to walk (no input "
                     "of the ops that computed it requires a gradient)", describe(*this));
  // Implicit gradient creation: a 0-d constant 1 (not contiguous, so it fuses). It takes the
  // output's float dtype (the reference always makes it float32).
  DType gdt = dtype().isFloating() ? dtype() : dtypes::float32;
  impl->grad = TensorInternals::impl(Tensor::scalar(1, {gdt, device(), false}));
  std::vector<std::shared_ptr<TensorImpl>> nodes = deepwalk(impl);
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    TensorImpl &t0 = **it;
    std::shared_ptr<Function> ctx = std::move(t0.ctx); // del t0._ctx (after this iteration)
    t0.graphUsed = true;
    LAZYJIT_USER_CHECK(t0.grad != nullptr, Error,
                       "backward: no gradient reached the output of {}, which requires one: it "
                       "was only used where gradients do not flow (such as the condition of a "
                       "where); detach() it", ctx->name());
    ctx->opts = configuredGraphOptions();
    std::vector<LazyBufferRef> grads = ctx->backward(t0.grad->lazydata);
    const auto &parents = ctx->parents();
    LAZYJIT_USER_CHECK(grads.size() == parents.size(), Error,
                       "backward: {} returned {} gradients for {} inputs", ctx->name(), grads.size(),
                       parents.size());
    for (size_t i = 0; i < parents.size(); ++i) {
      if (!grads[i]) continue;
      Tensor g(std::move(grads[i]), device(), false);
      const Tensor &t = parents[i];
      if (!t.requiresGrad().value_or(false)) continue;
      LAZYJIT_USER_CHECK(g.shape() == t.shape(), ShapeError,
                         "backward: {} returned a gradient of shape {} for input {} of shape {}",
                         ctx->name(), shapeText(g.shape()), i, shapeText(t.shape()));
      TensorImpl &ti = *TensorInternals::impl(t);
      if (!ti.grad) {
        ti.grad = TensorInternals::impl(g);
      } else {
        Tensor prev;
        prev.impl = ti.grad;
        ti.grad = TensorInternals::impl(prev.add(g));
      }
    }
  }
  return *this;
}

} // namespace lazyjit

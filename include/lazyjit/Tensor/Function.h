// Function: a differentiable primitive of the autograd (the reference's Function and mlops).
//
// A Function computes its forward over the inputs' LazyBuffers and, given the gradient of its
// output, returns a gradient LazyBuffer per input. Every Tensor op is built from the mlops
// (Add, Mul, Sum, Reshape, ...), so its backward graph is built from their backward formulas and
// fuses as the reference's does. A Function object is kept (as the output's gradFn) only when a
// gradient can flow through it, and it holds just the LazyBuffers its backward needs.
//
// A user-defined primitive derives from Function; its graph ops take the options `opts` it is
// given (GraphOptions.h):
//
//   struct Square : Function {
//     LazyBufferRef x;
//     std::string_view name() const override { return "Square"; }
//     LazyBufferRef forward(const LazyBufferRefs &in) override {
//       x = in[0];
//       return x->e(opts, Op::Mul, {x});
//     }
//     std::vector<LazyBufferRef> backward(const LazyBufferRef &g) override {
//       return {x->e(opts, Op::Mul, {x->constLike(opts, 2)})->e(opts, Op::Mul, {g})};
//     }
//   };
//   Tensor y = Function::apply(std::make_shared<Square>(), {x});
#pragma once

#include "lazyjit/Support/SmallVector.h"
#include "lazyjit/Tensor/Tensor.h"

#include <string_view>
#include <vector>

namespace lazyjit {

/// A Function's inputs (at most three: WHERE, conv2d's weight and bias), inline: a vector of them
/// was the last heap allocation of a Tensor op.
using FunctionInputs = SmallVector<Tensor, 3>;

class Function {
public:
  /// Frees its parents through deferRelease (see TensorImpl).
  virtual ~Function();

  /// The reference's class name (Mul, Sum, Reshape, ...), used in errors.
  virtual std::string_view name() const = 0;
  /// The forward over the inputs' LazyBuffers (same order as apply's inputs).
  virtual LazyBufferRef forward(const LazyBufferRefs &inputs) = 0;
  /// One gradient per input, null where the input needs none. The default throws an Error saying
  /// that this Function is not differentiable (Less, Xor).
  virtual std::vector<LazyBufferRef> backward(const LazyBufferRef &gradOutput);

  /// Runs `fn` on the inputs and returns its output as a new Tensor. The output requires a
  /// gradient when any input does (unset when none does and some input is unset); then, unless
  /// Tensor::noGrad is set, `fn` is kept as the output's gradFn with the inputs as its parents.
  static Tensor apply(std::shared_ptr<Function> fn, FunctionInputs inputs);

  /// Whether input `i` requires a gradient (the reference's needs_input_grad[i]).
  bool needsInputGrad(size_t i) const { return i < needsGrad.size() && needsGrad[i].value_or(false); }
  /// The inputs, kept only while a gradient can flow through this Function.
  const FunctionInputs &parents() const { return parents_; }
  const std::string &device() const { return device_; }

  /// The options forward and backward build their graph ops under (`in[0]->e(opts, Op::Mul,
  /// {in[1]})`): the configuration's (configuredGraphOptions()) when apply and Tensor::backward
  /// call them.
  GraphOptions opts;

private:
  friend class Tensor;
  std::string device_;
  SmallVector<std::optional<bool>, 4> needsGrad; // (one per input: inline, no allocation per op)
  FunctionInputs parents_;
};

} // namespace lazyjit

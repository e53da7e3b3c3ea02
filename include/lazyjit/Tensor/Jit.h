// Capture and replay of whole steps: the reference's TinyJit.
//
//   Jit step([&](const std::vector<Tensor> &in) { ...; return std::vector<Tensor>{loss}; });
//   for (...) Tensor loss = step({x, y})[0];
//
// The first call runs the function (compiling its kernels); the second runs it again and records
// every item the runtime ran: kernels with their programs, buffers and variable values, copies,
// allocations. From the third call on the recorded items run directly on the recorded buffers,
// with the call's input buffers swapped in and symbolic variables re-bound from the inputs'
// shapes: no graph building, no scheduling, no cache lookups. The outputs are the tensors the
// captured call returned (their buffers hold the latest call's results), as the reference's are.
//
// Like the reference's: the function's inputs must be the tensors passed in (realized first);
// tensors it creates from host data or random numbers inside are captured as they were on the
// second call, so pass changing data as inputs.
//
// Threads: separate Jit objects may be called from separate threads at once (each replays its own
// buffers; the programs they share run concurrently). One Jit is not for two threads at once: its
// captured buffers are its one set of intermediates and outputs. A call (or reset) that finds
// another call of the same Jit in progress throws an Error saying so instead of corrupting them;
// give each request thread its own Jit, or lock around a shared one.
#pragma once

#include "lazyjit/Tensor/Tensor.h"

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

namespace lazyjit {

class Jit {
public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor> &)>;
  explicit Jit(Fn fn);
  ~Jit();
  Jit(const Jit &) = delete;
  Jit &operator=(const Jit &) = delete;

  /// Calls the function, or replays it (see above). From the second call on, inputs whose count,
  /// shape (beyond bound variables), dtype or device differ from the captured call's are an Error
  /// saying what changed.
  std::vector<Tensor> operator()(const std::vector<Tensor> &inputs);
  /// The same, with bound Variables the function uses besides its inputs' shapes (a KV cache's
  /// start position): a replay runs with their values (the reference's Variable arguments).
  std::vector<Tensor> operator()(const std::vector<Tensor> &inputs, const std::vector<NodeRef> &vars);
  /// Forgets the capture: the next call runs the function again as if it were the first.
  void reset();

  int calls() const;
  bool captured() const;
  /// The kernels a replay runs.
  size_t kernelCount() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
  /// A call or reset is in progress (here, not in Impl: reset replaces Impl).
  std::atomic<bool> busy{false};
};

} // namespace lazyjit

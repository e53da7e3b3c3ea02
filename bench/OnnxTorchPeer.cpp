// The libtorch peer of W12: gen_models.py's model.pt (the exported module traced and frozen) loaded
// with torch::jit::load and run under c10::InferenceMode. Compiled only with libtorch-dev, in the
// torch object library (the torch headers are heavy).
#include "OnnxModels.h"

#include <ATen/Parallel.h>
#include <torch/script.h>

namespace lazyjit::bench {

Call torchScriptCall(const std::string &ptPath, const std::vector<int64_t> &shape, bool int64,
                     const void *data, int threads) {
  at::set_num_threads(threads);
  struct State {
    torch::jit::Module module;
    std::vector<torch::jit::IValue> inputs;
  };
  auto st = std::make_shared<State>();
  st->module = torch::jit::load(ptPath);
  st->module.eval();
  auto dtype = int64 ? torch::kInt64 : torch::kFloat32;
  // from_blob borrows the caller's bytes: clone to own them
  torch::Tensor x =
      torch::from_blob(const_cast<void *>(data), shape, torch::TensorOptions().dtype(dtype))
          .clone();
  st->inputs.emplace_back(x);
  return [st] {
    c10::InferenceMode guard;
    torch::Tensor y = st->module.forward(st->inputs).toTensor();
    (void)y.data_ptr(); // CPU ops ran synchronously; keep the result alive to the end of the call
  };
}

} // namespace lazyjit::bench

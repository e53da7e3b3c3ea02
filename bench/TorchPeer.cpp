// The libtorch peer of W5-W7 and W10/W11: the same kernels, and the same models, loss and
// optimizer, in PyTorch's C++ API, as calls the bench times in turns with lazyjit's
// (timeInterleaved). Compiled only when libtorch-dev is installed; kept in its own file because
// the torch headers are heavy.
#include "Training.h"

#include <torch/torch.h>

namespace lazyjit::bench {

namespace {

struct CNNImpl : torch::nn::Module {
  torch::nn::Conv2d c1{nullptr}, c2{nullptr}, c3{nullptr}, c4{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr};
  torch::nn::Linear fc{nullptr};
  CNNImpl() {
    c1 = register_module("c1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 32, 5)));
    c2 = register_module("c2", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 32, 5)));
    bn1 = register_module("bn1", torch::nn::BatchNorm2d(32));
    c3 = register_module("c3", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3)));
    c4 = register_module("c4", torch::nn::Conv2d(torch::nn::Conv2dOptions(64, 64, 3)));
    bn2 = register_module("bn2", torch::nn::BatchNorm2d(64));
    fc = register_module("fc", torch::nn::Linear(576, 10));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(bn1(torch::relu(c2(torch::relu(c1(x))))), 2);
    x = torch::max_pool2d(bn2(torch::relu(c4(torch::relu(c3(x))))), 2);
    return fc(x.flatten(1));
  }
};

struct MLPImpl : torch::nn::Module {
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr};
  MLPImpl() {
    l1 = register_module("l1", torch::nn::Linear(784, 1024));
    l2 = register_module("l2", torch::nn::Linear(1024, 1024));
    l3 = register_module("l3", torch::nn::Linear(1024, 10));
  }
  torch::Tensor forward(torch::Tensor x) { return l3(torch::relu(l2(torch::relu(l1(x))))); }
};

// One training step of `model` (Adam, cross-entropy), owning the model, its optimizer and data.
template <typename M> Call stepCall(const std::vector<int64_t> &inputShape, int batch, int threads) {
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  struct State {
    std::shared_ptr<M> model = std::make_shared<M>();
    torch::optim::Adam opt{model->parameters(), torch::optim::AdamOptions(1e-3)};
    torch::Tensor x, y;
  };
  auto st = std::make_shared<State>();
  st->x = torch::rand(inputShape);
  st->y = torch::randint(0, 10, {batch}, torch::kLong);
  st->model->train();
  return [st] {
    st->opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(st->model->forward(st->x), st->y);
    loss.backward();
    st->opt.step();
    (void)loss.item<float>();
  };
}

// A call of `f` without autograd.
template <typename F> Call noGradCall(int threads, F f) {
  torch::set_num_threads(threads);
  return [f] {
    torch::NoGradGuard noGrad;
    (void)f();
  };
}

} // namespace

Call torchMatmul(int n, int threads) {
  torch::Tensor a = torch::rand({n, n}), b = torch::rand({n, n});
  return noGradCall(threads, [a, b] { return torch::matmul(a, b); });
}

Call torchMLP(int batch, int threads) {
  torch::Tensor x = torch::rand({batch, 784}), w1 = torch::rand({784, 1024}), w2 = torch::rand({1024, 1024}),
                w3 = torch::rand({1024, 10});
  return noGradCall(threads, [x, w1, w2, w3] {
    return torch::matmul(torch::relu(torch::matmul(torch::relu(torch::matmul(x, w1)), w2)), w3);
  });
}

Call torchConv2d(int batch, int threads) {
  torch::Tensor x = torch::rand({batch, 64, 56, 56}), w = torch::rand({64, 64, 3, 3});
  return noGradCall(threads, [x, w] { return torch::conv2d(x, w, {}, 1, 1); });
}

Call torchCnnStep(int batch, int threads) { return stepCall<CNNImpl>({batch, 1, 28, 28}, batch, threads); }

Call torchMlpStep(int batch, int threads) { return stepCall<MLPImpl>({batch, 784}, batch, threads); }

} // namespace lazyjit::bench

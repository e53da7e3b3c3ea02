// Uses lazyjit as an installed package: a forward pass on the CPU JIT, a gradient, an SGD step.
// Prints "consumer ok" and exits 0 when every value is as computed by hand.
#include <lazyjit/lazyjit.h>

#include <cmath>
#include <cstdio>

using namespace lazyjit;

int main() {
  try {
    Tensor w = Tensor::fromValues({1, 2, 3, 4}, Shape{2, 2}, {dtypes::float32, "CPU", true});
    Tensor x = Tensor::fromValues({1, -1}, Shape{1, 2});
    Tensor loss = x.matmul(w).relu().sum(); // relu([1-3, 2-4]) = [0, 0]: 0
    Tensor y = x.matmul(w.transpose(0, 1)); // [1-2, 3-4] = [-1, -1]
    Tensor l2 = (y * y).sum();              // 2
    l2.backward();
    auto g = w.grad()->toVector<float>();   // dl/dw[i][j] = 2*y[i]*x[j] = [-2, 2, -2, 2]
    nn::optim::SGD opt({w}, 0.5);
    opt.step();
    auto w2 = w.toVector<float>();          // w - 0.5*g = [2, 1, 4, 3]
    bool ok = loss.item<float>() == 0.0f && l2.item<float>() == 2.0f && g == std::vector<float>{-2, 2, -2, 2} &&
              w2 == std::vector<float>{2, 1, 4, 3};
    std::printf("%s\n", ok ? "consumer ok" : "consumer: wrong values");
    return ok ? 0 : 1;
  } catch (const Error &e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}

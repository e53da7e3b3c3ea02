// A tiny program for the disk-cache tests: runs a fixed tensor program on CPU and prints its
// result checksum and the CPU compile statistics, so a test can run it in separate processes.
#include "lazyjit/Runtime/CPUDevice.h"
#include "lazyjit/Tensor/Tensor.h"

#include <cstdio>
#include <exception>

using namespace lazyjit;

int main() {
  try {
    Tensor a = Tensor::arange(0, 64, 1).reshape({8, 8});
    Tensor b = a.T().mul(0.5).add(1).relu();
    Tensor s = a.dot(b).softmax().sum(std::vector<int64_t>{0});
    double sum = 0;
    for (float v : s.toVector<float>()) sum += v;
    CPUCompileStats st = cpuCompileStats();
    std::printf("sum=%.6f compiled=%d disk=%d\n", sum, st.compiled, st.diskHits);
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "probe failed: %s\n", e.what());
    return 1;
  }
}

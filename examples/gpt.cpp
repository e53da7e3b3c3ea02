// A small GPT with a KV cache on symbolic positions (the reference's examples/gpt2.py, tiny):
// reads its weights from a safetensors file, runs the prompt at once, then generates one token a
// step at a symbolic start position, so every step after the first reuses the same kernels
// (DEBUG=2 shows them running from the cache), sampling with Tensor::multinomial.
//
//   gpt [--weights FILE.safetensors] [--tokens N] [--temperature T] [--seed S] [--jit] [PROMPT TOKEN...]
//
// --jit runs the one-token steps through lazyjit::Jit (the reference's JIT=1): from the third on
// they replay the captured kernels without building a graph.
//
// The default weights are the tiny model of the tests (unittests/NN/golden/gpt-tiny.safetensors,
// vocab 64, dim 32, 4 heads, 2 layers, context 32); tokens are integers below the vocab size.
#include "GPT.h"
#include "lazyjit/Runtime/CPUDevice.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace lazyjit;

int main(int argc, char **argv) {
  std::string weights = LAZYJIT_GPT_WEIGHTS;
  int count = 16;
  double temperature = 0.8;
  uint64_t seed = 1;
  bool jit = false;
  std::vector<int32_t> prompt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool more = i + 1 < argc;
    if (a == "--weights" && more) weights = argv[++i];
    else if (a == "--tokens" && more) count = std::atoi(argv[++i]);
    else if (a == "--temperature" && more) temperature = std::atof(argv[++i]);
    else if (a == "--seed" && more) seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--jit") jit = true;
    else if (!a.empty() && a[0] != '-') prompt.push_back(std::atoi(a.c_str()));
    else {
      std::fprintf(stderr, "usage: %s [--weights FILE] [--tokens N] [--temperature T] [--seed S] [--jit] [TOKEN...]\n", argv[0]);
      return 2;
    }
  }
  if (prompt.empty()) prompt = {3, 14, 15, 9};
  try {
    gpt::Config cfg;
    gpt::Transformer model(cfg);
    nn::loadStateDict(model, safeLoad(weights));
    for (int32_t t : prompt)
      LAZYJIT_USER_CHECK(t >= 0 && t < cfg.vocab, Error, "prompt token {} is outside the vocabulary [0, {})", t, cfg.vocab);
    LAZYJIT_USER_CHECK(count > 0 && static_cast<int64_t>(prompt.size()) + count <= cfg.maxContext, Error,
                       "prompt and tokens must fit the context of {}", cfg.maxContext);
    auto before = cpuCompileStats();
    std::vector<int32_t> out = gpt::generate(model, prompt, count, temperature, seed, jit);
    auto after = cpuCompileStats();
    std::printf("prompt:   ");
    for (int32_t t : prompt) std::printf(" %d", t);
    std::printf("\ngenerated:");
    for (size_t i = prompt.size(); i < out.size(); ++i) std::printf(" %d", out[i]);
    std::printf("\nkernels: %d compiled, %d from the disk cache, %d reused in memory over %d steps (OPT=%d)\n",
                after.compiled - before.compiled, after.diskHits - before.diskHits,
                after.memoryHits - before.memoryHits, count, config().opt);
    return 0;
  } catch (const Error &e) {
    std::fprintf(stderr, "gpt: error: %s\n", e.what());
    return 1;
  }
}

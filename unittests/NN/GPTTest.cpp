// examples/GPT.h, the reference's gpt2.py architecture: its logits for a prompt match PyTorch's on
// the same weights (read from a safetensors file); feeding the prompt one token at a time through
// the KV cache with a symbolic start position gives the same logits at every position, and the
// steps after the first symbolic one compile nothing; sampling is reproducible from its seed.
#include "../../examples/GPT.h"
#include "golden/GPTGolden.h"
#include "lazyjit/Runtime/CPUDevice.h"

#include <doctest/doctest.h>

#include <cmath>

using namespace lazyjit;

namespace {
gpt::Transformer loadTiny() {
  gpt::Transformer model(gpt::Config{});
  nn::loadStateDict(model, safeLoad(LAZYJIT_SOURCE_DIR "/unittests/NN/golden/gpt-tiny.safetensors", "CPU"));
  return model;
}

void checkRow(const std::vector<float> &got, size_t row) {
  REQUIRE(got.size() == 64);
  int bad = 0;
  for (size_t i = 0; i < 64; ++i) {
    double want = golden::kGptLogits[row * 64 + i];
    if (std::fabs(got[i] - want) > 1e-4 + 1e-4 * std::fabs(want) && bad++ < 5)
      FAIL_CHECK("position ", row, " logit ", i, ": got ", got[i], ", PyTorch ", want);
  }
}
} // namespace

TEST_CASE("GPT: the prompt's logits match PyTorch's on the same weights") {
  gpt::Transformer model = loadTiny();
  Tensor::NoGradGuard noGrad;
  const auto &p = golden::kGptPrompt;
  std::vector<int32_t> prompt(p.begin(), p.end());
  Tensor logits = model.logits(Tensor::fromVector(prompt, {1, static_cast<int64_t>(prompt.size())}), SInt(0));
  REQUIRE(logits.shape() == Shape{1, 8, 64});
  std::vector<float> all = logits.toVector<float>();
  for (size_t r = 0; r < prompt.size(); ++r) {
    CAPTURE(r);
    checkRow(std::vector<float>(all.begin() + static_cast<long>(r * 64), all.begin() + static_cast<long>((r + 1) * 64)), r);
  }
}

TEST_CASE("GPT: one token at a time through the KV cache, at a symbolic position, gives the same logits") {
  gpt::Transformer model = loadTiny();
  Tensor::NoGradGuard noGrad;
  const auto &p = golden::kGptPrompt;
  // the first 3 tokens as a prompt, then one token per step
  std::vector<int32_t> head(p.begin(), p.begin() + 3);
  std::vector<float> first = model.logits(Tensor::fromVector(head, {1, 3}), SInt(0)).toVector<float>();
  checkRow(std::vector<float>(first.begin() + 128, first.end()), 2);
  int compiledAfterFirstStep = -1;
  for (size_t pos = 3; pos < p.size(); ++pos) {
    CAPTURE(pos);
    NodeRef sp = variable("start_pos", 1, 31)->bind(static_cast<int64_t>(pos));
    int compiledBefore = cpuCompileStats().compiled + cpuCompileStats().diskHits;
    Tensor l = model.logits(Tensor::fromVector(std::vector<int32_t>{p[pos]}, {1, 1}), SInt(sp));
    checkRow(l.toVector<float>(), pos);
    int compiled = cpuCompileStats().compiled + cpuCompileStats().diskHits;
    if (pos == 3) compiledAfterFirstStep = compiled;
    else CHECK(compiled == compiledBefore); // same kernels, only the bound value changed
  }
  CHECK(compiledAfterFirstStep >= 0);
}

TEST_CASE("GPT: sampling with multinomial is reproducible from its seed") {
  gpt::Transformer a = loadTiny(), b = loadTiny();
  std::vector<int32_t> prompt{1, 2, 3};
  std::vector<int32_t> x = gpt::generate(a, prompt, 6, 0.8, 42), y = gpt::generate(b, prompt, 6, 0.8, 42);
  CHECK(x == y);
  REQUIRE(x.size() == 9);
  // the one-token steps through lazyjit::Jit (replayed from the third on) sample the same tokens
  gpt::Transformer j = loadTiny();
  int64_t kernelsBefore = globalCounters().kernelCount;
  CHECK(gpt::generate(j, prompt, 6, 0.8, 42, /*jit=*/true) == x);
  CHECK(globalCounters().kernelCount > kernelsBefore);
  for (int32_t t : x) CHECK((t >= 0 && t < 64));
  // temperature near 0: the most likely token, which is the argmax of the logits
  gpt::Transformer c = loadTiny();
  std::vector<int32_t> greedy = gpt::generate(c, prompt, 1, 0.0, 7);
  gpt::Transformer d = loadTiny();
  Tensor::NoGradGuard noGrad;
  int32_t best = d.logits(Tensor::fromVector(prompt, {1, 3}), SInt(0))
                     .getitem({Index::all(), Index::at(-1)})
                     .argmax(-1)
                     .item<int32_t>();
  CHECK(greedy.back() == best);
}

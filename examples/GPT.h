// The architecture of the reference's examples/gpt2.py: token and position embeddings, pre-norm
// attention blocks with a KV cache, a GELU MLP, a final LayerNorm and a head tied to the token
// embedding. Prompts run with a concrete start position and a causal mask; each generated token
// after them runs with a symbolic start position (Variable "start_pos"), so every step reuses the
// same compiled kernels. Used by examples/gpt.cpp and its test (unittests/NN/GPTTest.cpp).
#pragma once

#include "lazyjit/lazyjit.h"

#include <cmath>
#include <optional>
#include <vector>

namespace lazyjit::gpt {

struct Config {
  int64_t vocab = 64, dim = 32, heads = 4, layers = 2, maxContext = 32;
  double normEps = 1e-5;
};

struct Attention : nn::Module {
  nn::Linear c_attn, c_proj;
  int64_t heads, dim, headDim, maxContext;
  std::optional<Tensor> cacheKV;
  Attention(const Config &c)
      : c_attn(c.dim, 3 * c.dim), c_proj(c.dim, c.dim), heads(c.heads), dim(c.dim), headDim(c.dim / c.heads),
        maxContext(c.maxContext) {}
  LAZYJIT_MODULE(c_attn, c_proj)

  // `startPos` is an int (prompts) or a bound Variable (one token at a time)
  Tensor operator()(const Tensor &x, const SInt &startPos, const std::optional<Tensor> &mask) {
    Tensor qkv = c_attn(x);
    int64_t bsz = x.shape()[0].asInt(), seqlen = x.shape()[1].asInt();
    std::vector<Tensor> parts;
    for (int64_t i = 0; i < 3; ++i)
      parts.push_back(qkv.shrink({std::nullopt, std::nullopt, SIntPair(i * dim, (i + 1) * dim)})
                          .reshape({bsz, seqlen, heads, headDim}));
    if (!cacheKV) cacheKV = Tensor::zeros({2, bsz, maxContext, heads, headDim}).realize();
    Tensor keys = parts[1], values = parts[2];
    if (!(startPos.isInt() && startPos.asInt() == 0)) {
      keys = cacheKV->getitem({Index::at(0)}).shrink({std::nullopt, SIntPair(0, startPos), std::nullopt, std::nullopt})
                 .cat({keys}, 1);
      values = cacheKV->getitem({Index::at(1)}).shrink({std::nullopt, SIntPair(0, startPos), std::nullopt, std::nullopt})
                   .cat({values}, 1);
    }
    Tensor fresh = Tensor::stack({keys, values})
                       .pad({std::nullopt, std::nullopt, SIntPair(0, SInt(maxContext) - startPos - seqlen), std::nullopt,
                             std::nullopt})
                       .contiguous();
    cacheKV->assign(fresh).realize();
    Tensor q = parts[0].transpose(1, 2);
    Tensor attn = q.scaledDotProductAttention(keys.transpose(1, 2), values.transpose(1, 2), mask);
    return c_proj(attn.transpose(1, 2).reshape({bsz, seqlen, dim}));
  }
};

struct FeedForward : nn::Module {
  nn::Linear c_fc, c_proj;
  FeedForward(int64_t dim, int64_t hidden) : c_fc(dim, hidden), c_proj(hidden, dim) {}
  LAZYJIT_MODULE(c_fc, c_proj)
  Tensor operator()(const Tensor &x) const { return c_proj(c_fc(x).gelu()); }
};

struct Block : nn::Module {
  Attention attn;
  FeedForward mlp;
  nn::LayerNorm ln_1, ln_2;
  Block(const Config &c)
      : attn(c), mlp(c.dim, 4 * c.dim), ln_1(Shape{c.dim}, c.normEps), ln_2(Shape{c.dim}, c.normEps) {}
  LAZYJIT_MODULE(attn, mlp, ln_1, ln_2)
  Tensor operator()(const Tensor &x, const SInt &startPos, const std::optional<Tensor> &mask) {
    Tensor h = x + attn(ln_1(x), startPos, mask);
    return h + mlp(ln_2(h));
  }
};

struct Transformer : nn::Module {
  Config cfg;
  nn::Embedding wte, wpe;
  std::vector<Block> h;
  nn::LayerNorm ln_f;
  nn::Linear lm_head;
  std::optional<Tensor> allpos;
  explicit Transformer(const Config &c)
      : cfg(c), wte(c.vocab, c.dim), wpe(c.maxContext, c.dim), ln_f(Shape{c.dim}, c.normEps),
        lm_head(c.dim, c.vocab, false) {
    for (int64_t i = 0; i < c.layers; ++i) h.emplace_back(c);
  }
  LAZYJIT_MODULE(wte, wpe, h, ln_f, lm_head)

  /// Logits [1, seqlen, vocab] of `tokens` [1, seqlen] at positions startPos.. (int or bound Variable).
  Tensor logits(const Tensor &tokens, const SInt &startPos) {
    if (!allpos) allpos = Tensor::arange(0, static_cast<double>(cfg.maxContext), 1, {dtypes::int32}).reshape({1, cfg.maxContext}).realize();
    int64_t seqlen = tokens.shape()[1].asInt();
    Tensor x = wte(tokens) + wpe(allpos->shrink({std::nullopt, SIntPair(startPos, startPos + seqlen)}));
    std::optional<Tensor> mask;
    if (seqlen > 1) {
      int64_t sp = startPos.asInt();
      mask = Tensor::full({1, 1, seqlen, sp + seqlen}, -INFINITY).triu(sp + 1).realize();
    }
    for (auto &b : h) x = b(x, startPos, mask);
    return lm_head(ln_f(x));
  }

  /// The next token's probabilities [1, vocab] at `temperature`.
  Tensor next(const Tensor &tokens, const SInt &startPos, double temperature) {
    Tensor l = logits(tokens, startPos);
    int64_t last = l.shape()[1].asInt() - 1;
    return l.getitem({Index::all(), Index::at(last)}).div(temperature + 1e-10).softmax().realize();
  }
};

/// `count` tokens after `prompt`, sampled with `seed` (the prompt runs at once, then one token a
/// step with a symbolic start position). With `jit`, the one-token steps run through lazyjit::Jit,
/// as the reference's forward_jit: from the third on they replay the captured kernels.
inline std::vector<int32_t> generate(Transformer &model, const std::vector<int32_t> &prompt, int count,
                                     double temperature, uint64_t seed, bool jit = false) {
  Tensor::NoGradGuard noGrad;
  Tensor::manualSeed(seed);
  std::vector<int32_t> toks = prompt;
  int64_t pos = 0;
  Tensor probs = model.next(Tensor::fromVector(prompt, {1, static_cast<int64_t>(prompt.size())}), SInt(0), temperature);
  pos = static_cast<int64_t>(prompt.size());
  NodeRef sp;
  Jit step([&](const std::vector<Tensor> &in) { return std::vector<Tensor>{model.next(in[0], SInt(sp), temperature)}; });
  for (int i = 0; i < count; ++i) {
    int32_t t = probs.multinomial().item<int32_t>();
    toks.push_back(t);
    if (i + 1 == count || pos + 1 >= model.cfg.maxContext) break;
    sp = variable("start_pos", 1, model.cfg.maxContext - 1)->bind(pos);
    Tensor tok = Tensor::fromVector(std::vector<int32_t>{t}, {1, 1});
    probs = jit ? step({tok}, {sp})[0] : model.next(tok, SInt(sp), temperature);
    ++pos;
  }
  return toks;
}

} // namespace lazyjit::gpt

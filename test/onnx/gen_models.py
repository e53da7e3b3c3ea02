#!/usr/bin/env python3
"""Exports real architectures to ONNX with PyTorch and writes PyTorch's outputs beside them, for
onnx-node-tests --models (issue 43: lazyjit must match PyTorch within 1e-4 of the output's largest
magnitude). Run at generation time only (python3-torch, python3-torchvision), never at test time:

    /usr/bin/python3 test/onnx/gen_models.py OUT [--models a,b,...] [--batches 1,8]
                                             [--no-torchscript]

For each model it writes OUT/<model>/model.onnx (opset 17, dynamic batch dim; the two
transformers also as <model>-op13, where LayerNorm is decomposed) and
OUT/<model>/test_data_set_b<N>/{input_0.pb, output_0.pb} for each batch size N. Unless
--no-torchscript, also OUT/<model>/model.pt (not for the -op13 copies, the same modules): the
module in eval mode traced with torch.jit.trace and torch.jit.freeze'd, which lazyjit-bench's W12
rows run with libtorch (torch::jit::load) as the peer of the ONNX model; it is checked against the
eager outputs at every batch size written.

Weights are random from a fixed seed, and what default initialisation leaves trivial is randomised
too (BatchNorm running statistics and affines, ViT's zero head, TransformerEncoder's copies of one
layer), so that a broken importer cannot pass by luck.
"""
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision
from onnx import numpy_helper

SEQ = 32  # token sequence length of the two transformers
VOCAB = 1000


class BertLike(nn.Module):
    """A BERT-like encoder: token + position embeddings, nn.TransformerEncoder with exact GELU
    (exported through Erf), a final LayerNorm and a linear head."""

    def __init__(self, d=256, heads=4, layers=4):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.randn(1, SEQ, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, activation="gelu",
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 16)

    def forward(self, ids):
        x = self.tok(ids) + self.pos[:, : ids.shape[1]]
        return self.head(self.norm(self.enc(x)))


class GPT2Like(nn.Module):
    """A GPT-2-like decoder: pre-norm blocks of causal self-attention (the mask built from the
    sequence length) and a GELU MLP, tied-free LM head."""

    def __init__(self, d=256, heads=4, layers=4):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(SEQ, d)
        self.blocks = nn.ModuleList()
        for _ in range(layers):
            self.blocks.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(d), "qkv": nn.Linear(d, 3 * d), "proj": nn.Linear(d, d),
                "ln2": nn.LayerNorm(d), "fc": nn.Linear(d, 4 * d), "out": nn.Linear(4 * d, d)}))
        self.heads = heads
        self.lnf = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB, bias=False)

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok(ids) + self.pos(torch.arange(t, device=ids.device))
        idx = torch.arange(t, device=ids.device)
        # (not torch.triu: opset 13 has no Trilu)
        mask = torch.zeros(t, t).masked_fill(idx[None, :] > idx[:, None], float("-inf"))
        hd = x.shape[-1] // self.heads
        for blk in self.blocks:
            q, k, v = blk["qkv"](blk["ln1"](x)).split(x.shape[-1], dim=-1)
            q = q.reshape(b, t, self.heads, hd).transpose(1, 2)
            k = k.reshape(b, t, self.heads, hd).transpose(1, 2)
            v = v.reshape(b, t, self.heads, hd).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) / (hd ** 0.5) + mask
            y = att.softmax(-1) @ v
            x = x + blk["proj"](y.transpose(1, 2).reshape(b, t, -1))
            x = x + blk["out"](nn.functional.gelu(blk["fc"](blk["ln2"](x)), approximate="tanh"))
        return self.head(self.lnf(x))


def image_model(ctor, size=224):
    return lambda: (ctor(weights=None), (3, size, size), torch.float32)


MODELS = {
    "resnet18": image_model(torchvision.models.resnet18),
    "resnet50": image_model(torchvision.models.resnet50),
    "mobilenet_v2": image_model(torchvision.models.mobilenet_v2),
    "mobilenet_v3_small": image_model(torchvision.models.mobilenet_v3_small),
    "efficientnet_b0": image_model(torchvision.models.efficientnet_b0),
    "squeezenet1_1": image_model(torchvision.models.squeezenet1_1),
    "densenet121": image_model(torchvision.models.densenet121),
    "vit_b_16": image_model(torchvision.models.vit_b_16),
    "bert_like": lambda: (BertLike(), (SEQ,), torch.int64),
    "gpt2_like": lambda: (GPT2Like(), (SEQ,), torch.int64),
}
# the models CI checks at batch 1 (the `onnx-models` label runs all of them at batch 1 and 8)
SMALL = ["resnet18", "mobilenet_v2", "mobilenet_v3_small", "squeezenet1_1", "efficientnet_b0",
         "bert_like", "gpt2_like"]
TRANSFORMERS = {"bert_like", "gpt2_like"}


def randomise(model: nn.Module, gen: torch.Generator) -> None:
    """Gives every parameter and BatchNorm statistic a random, non-trivial value (scaled like the
    default initialisation so activations stay in range)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
            elif isinstance(m, nn.LayerNorm):
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
            elif isinstance(m, (nn.Linear, nn.Conv2d)):
                fan_in = m.weight[0].numel()
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen) / fan_in ** 0.5)
                if m.bias is not None:
                    m.bias.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)
            elif isinstance(m, nn.MultiheadAttention):
                d = m.embed_dim
                m.in_proj_weight.copy_(torch.randn(m.in_proj_weight.shape, generator=gen) / d ** 0.5)
                m.in_proj_bias.copy_(torch.randn(m.in_proj_bias.shape, generator=gen) * 0.1)
            elif isinstance(m, nn.Embedding):
                m.weight.copy_(torch.randn(m.weight.shape, generator=gen))
        for name, p in model.named_parameters():
            if name.endswith("class_token") or name.endswith("pos_embedding") or name == "pos":
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)


def save(t: np.ndarray, path: str, name: str) -> None:
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(t, name).SerializeToString())


def save_torchscript(model: nn.Module, example: torch.Tensor, path: str) -> torch.jit.ScriptModule:
    """The eval-mode module traced on `example` and frozen (weights folded in as constants), the way
    a deployment would run it from C++."""
    with torch.no_grad():
        traced = torch.jit.trace(model, example, check_trace=False)
        frozen = torch.jit.freeze(traced)
    frozen.save(path)
    return frozen


def export(name: str, out: str, batches, opset: int, tag: str, torchscript: bool) -> None:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1234)
    model, shape, dtype = MODELS[name]()
    randomise(model, gen)
    model.eval()
    d = os.path.join(out, name + tag)
    os.makedirs(d, exist_ok=True)
    if dtype == torch.int64:
        example = torch.randint(0, VOCAB, (1,) + shape, generator=gen)
    else:
        example = torch.randn((1,) + shape, generator=gen)
    torch.onnx.export(model, example, os.path.join(d, "model.onnx"), opset_version=opset,
                      input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                      do_constant_folding=True)
    frozen = save_torchscript(model, example, os.path.join(d, "model.pt")) if torchscript else None
    for b in batches:
        if dtype == torch.int64:
            x = torch.randint(0, VOCAB, (b,) + shape, generator=gen)
        else:
            x = torch.randn((b,) + shape, generator=gen)
        with torch.no_grad():
            y = model(x)
            if frozen is not None:
                # the traced module must follow the batch size (a trace that baked in batch 1 would
                # time the wrong work)
                yt = frozen(x)
                scale = float(y.abs().max()) or 1.0
                if yt.shape != y.shape or float((yt - y).abs().max()) > 1e-4 * scale:
                    raise RuntimeError(f"{name + tag}: the TorchScript module differs from the eager "
                                       f"one at batch {b}")
        s = os.path.join(d, f"test_data_set_b{b}")
        os.makedirs(s, exist_ok=True)
        save(x.numpy(), os.path.join(s, "input_0.pb"), "input")
        save(y.numpy(), os.path.join(s, "output_0.pb"), "output")
    what = ", model.pt" if torchscript else ""
    print(f"gen_models: {name + tag} (opset {opset}, batches {batches}{what})", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--models", default=",".join(SMALL),
                    help="comma-separated, or 'all' (default: the models CI checks)")
    ap.add_argument("--batches", default="1")
    ap.add_argument("--torchscript", action=argparse.BooleanOptionalAction, default=True,
                    help="also write model.pt, the traced and frozen module (default: on)")
    args = ap.parse_args()
    names = list(MODELS) if args.models == "all" else args.models.split(",")
    for n in names:
        if n not in MODELS:
            print(f"gen_models: unknown model {n} (known: {', '.join(MODELS)})", file=sys.stderr)
            return 2
    batches = [int(b) for b in args.batches.split(",")]
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    for n in names:
        export(n, args.out, batches, 17, "", args.torchscript)
        if n in TRANSFORMERS:
            export(n, args.out, batches, 13, "-op13", False)  # (the same module as <model>'s)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Writes GradGolden.h: forward values and gradients computed with PyTorch, for GradGoldenTest.cpp.

Each case has named inputs (float32-representable values drawn from a fixed seed; integer labels),
the forward result, the weights W of the loss (out * W).sum() (1 for a scalar out) and the gradient
of that loss for every input that takes one; a few cases also record state after the step (the
running statistics of BatchNorm2d). PyTorch computes in float64 from the float32 inputs, so the
expected values carry no float32 rounding of their own; the test runs lazyjit in float32.

PyTorch (1.13, the Debian python3-torch package) is used only here, by hand, never at test time:

    /usr/bin/python3 unittests/Tensor/golden/gen_grad_golden.py

torch 1.13 has no scaled_dot_product_attention; its definition (softmax(q k^T / sqrt(d) + mask) v,
-inf where a bool mask is false) is written out with torch ops.
"""
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "GradGolden.h")

torch.set_default_dtype(torch.float64)


def num(v):
    v = float(v)
    assert math.isfinite(v), v
    r = repr(v)
    return r if ("." in r or "e" in r) else r + ".0"


def vals(a):
    return "{" + ", ".join(num(x) for x in np.asarray(a, dtype=np.float64).ravel()) + "}"


def ints(a):
    return "{" + ", ".join(str(int(x)) for x in a) + "}"


def f32(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(np.float64)


class Case:
    """Inputs are (name, array, kind): kind 'f' takes a gradient, 'i' is an integer tensor."""

    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.inputs = []

    def f(self, name, shape, lo=-1.0, hi=1.0):
        self.inputs.append((name, f32(self.rng, shape, lo, hi), "f"))
        return self

    def i(self, name, values):
        self.inputs.append((name, np.asarray(values, dtype=np.int64), "i"))
        return self

    def run(self, fn):
        t = {}
        for name, a, kind in self.inputs:
            if kind == "f":
                t[name] = torch.tensor(a, dtype=torch.float64, requires_grad=True)
            else:
                t[name] = torch.tensor(a, dtype=torch.int64)
        res = fn(t)
        out, after = res if isinstance(res, tuple) else (res, [])
        w = np.ones(()) if out.dim() == 0 else f32(self.rng, tuple(out.shape))
        (out * torch.tensor(w)).sum().backward()
        lines = [f'    {{"{self.name}",', "     {"]
        for name, a, kind in self.inputs:
            g = t[name].grad if kind == "f" else None
            grad = "{}" if g is None else vals(g.detach().numpy())
            lines.append(f'      {{"{name}", {ints(a.shape)}, {vals(a)}, {grad}, {str(kind == "i").lower()}}},')
        lines.append("     },")
        o = out.detach().numpy()
        lines.append(f'     {{"out", {ints(o.shape)}, {vals(o)}, {vals(w)}, false}},')
        lines.append("     {")
        for name, a in after:
            a = np.asarray(a.detach().numpy() if torch.is_tensor(a) else a, dtype=np.float64)
            lines.append(f'      {{"{name}", {ints(a.shape)}, {vals(a)}, {{}}, false}},')
        lines.append("     }},")
        return lines


def attention(q, k, v, mask=None, causal=False):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        mask = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return s.softmax(-1) @ v


def cases():
    lines = []

    # ---- losses -----------------------------------------------------------------------------------
    lines += Case("sparse_categorical_crossentropy", 1).f("x", (5, 4), -2, 2).i("labels", [1, 0, 3, 3, 2]).run(
        lambda t: F.cross_entropy(t["x"], t["labels"]))
    lines += Case("sparse_categorical_crossentropy ignore_index -1", 2).f("x", (5, 4), -2, 2).i(
        "labels", [1, -1, 3, -1, 2]).run(lambda t: F.cross_entropy(t["x"], t["labels"], ignore_index=-1))
    # 3-d logits (N, L, C) as lazyjit takes them; PyTorch wants the classes in dim 1
    lines += Case("sparse_categorical_crossentropy ignore_index 2, 3-d", 3).f("x", (2, 3, 4), -2, 2).i(
        "labels", [[0, 2, 1], [2, 3, 3]]).run(
        lambda t: F.cross_entropy(t["x"].permute(0, 2, 1), t["labels"], ignore_index=2))
    lines += Case("binary_crossentropy", 4).f("x", (3, 4), 0.05, 0.95).f("y", (3, 4), 0, 1).run(
        lambda t: F.binary_cross_entropy(t["x"], t["y"]))
    lines += Case("binary_crossentropy_logits", 5).f("x", (3, 4), -3, 3).f("y", (3, 4), 0, 1).run(
        lambda t: F.binary_cross_entropy_with_logits(t["x"], t["y"]))
    lines += Case("mean_squared_error", 6).f("x", (3, 4), -2, 2).f("y", (3, 4), -2, 2).run(
        lambda t: F.mse_loss(t["x"], t["y"]))

    # ---- convolution ------------------------------------------------------------------------------
    lines += Case("conv2d", 10).f("x", (2, 3, 5, 5)).f("w", (4, 3, 3, 3)).f("b", (4,)).run(
        lambda t: F.conv2d(t["x"], t["w"], t["b"]))
    lines += Case("conv2d stride 2 padding 1", 11).f("x", (2, 3, 5, 5)).f("w", (4, 3, 3, 3)).f("b", (4,)).run(
        lambda t: F.conv2d(t["x"], t["w"], t["b"], stride=2, padding=1))
    lines += Case("conv2d groups 2", 12).f("x", (1, 4, 5, 5)).f("w", (6, 2, 3, 3)).f("b", (6,)).run(
        lambda t: F.conv2d(t["x"], t["w"], t["b"], groups=2))
    lines += Case("conv2d dilation 2 padding 2 stride (1, 2)", 13).f("x", (1, 2, 6, 6)).f("w", (3, 2, 3, 3)).run(
        lambda t: F.conv2d(t["x"], t["w"], None, stride=(1, 2), padding=2, dilation=2))
    lines += Case("conv2d stride 2 padding 1 dilation 2 groups 2", 14).f("x", (2, 4, 7, 7)).f(
        "w", (4, 2, 2, 2)).f("b", (4,)).run(
        lambda t: F.conv2d(t["x"], t["w"], t["b"], stride=2, padding=1, dilation=2, groups=2))
    lines += Case("conv_transpose2d", 15).f("x", (1, 2, 3, 3)).f("w", (2, 3, 3, 3)).f("b", (3,)).run(
        lambda t: F.conv_transpose2d(t["x"], t["w"], t["b"]))
    lines += Case("conv_transpose2d stride 2 padding 1 output_padding 1", 16).f("x", (2, 2, 3, 3)).f(
        "w", (2, 3, 3, 3)).f("b", (3,)).run(
        lambda t: F.conv_transpose2d(t["x"], t["w"], t["b"], stride=2, padding=1, output_padding=1))
    lines += Case("conv_transpose2d groups 2", 17).f("x", (1, 4, 3, 3)).f("w", (4, 2, 2, 2)).f("b", (4,)).run(
        lambda t: F.conv_transpose2d(t["x"], t["w"], t["b"], groups=2))
    lines += Case("conv_transpose2d stride 2 dilation 2", 18).f("x", (1, 2, 3, 3)).f("w", (2, 2, 2, 2)).run(
        lambda t: F.conv_transpose2d(t["x"], t["w"], None, stride=2, dilation=2))

    # ---- pooling ----------------------------------------------------------------------------------
    lines += Case("avg_pool2d 2", 20).f("x", (2, 2, 4, 4)).run(lambda t: F.avg_pool2d(t["x"], 2))
    lines += Case("avg_pool2d 3 stride 1", 21).f("x", (1, 2, 5, 5)).run(lambda t: F.avg_pool2d(t["x"], 3, 1))
    lines += Case("avg_pool2d (3, 2) stride (2, 1)", 22).f("x", (1, 2, 5, 5)).run(
        lambda t: F.avg_pool2d(t["x"], (3, 2), (2, 1)))
    lines += Case("max_pool2d 2", 23).f("x", (2, 2, 4, 4)).run(lambda t: F.max_pool2d(t["x"], 2))
    lines += Case("max_pool2d 3 stride 2", 24).f("x", (1, 2, 5, 5)).run(lambda t: F.max_pool2d(t["x"], 3, 2))
    lines += Case("max_pool2d 2 stride 1 dilation 2", 25).f("x", (1, 2, 5, 5)).run(
        lambda t: F.max_pool2d(t["x"], 2, 1, dilation=2))

    # ---- attention --------------------------------------------------------------------------------
    lines += Case("scaled_dot_product_attention", 30).f("q", (2, 2, 3, 4)).f("k", (2, 2, 5, 4)).f(
        "v", (2, 2, 5, 3)).run(lambda t: attention(t["q"], t["k"], t["v"]))
    lines += Case("scaled_dot_product_attention float mask", 31).f("q", (2, 3, 4)).f("k", (2, 5, 4)).f(
        "v", (2, 5, 3)).f("mask", (3, 5), -2, 0).run(lambda t: attention(t["q"], t["k"], t["v"], t["mask"]))
    lines += Case("scaled_dot_product_attention bool mask", 32).f("q", (2, 3, 4)).f("k", (2, 5, 4)).f(
        "v", (2, 5, 3)).i("mask", [[1, 0, 1, 1, 0], [0, 0, 0, 1, 0], [1, 1, 1, 1, 1]]).run(
        lambda t: attention(t["q"], t["k"], t["v"], t["mask"].bool()))
    lines += Case("scaled_dot_product_attention causal", 33).f("q", (2, 2, 4, 4)).f("k", (2, 2, 4, 4)).f(
        "v", (2, 2, 4, 3)).run(lambda t: attention(t["q"], t["k"], t["v"], causal=True))

    # ---- normalization ----------------------------------------------------------------------------
    lines += Case("layernorm", 40).f("x", (3, 5), -2, 2).run(lambda t: F.layer_norm(t["x"], (5,)))
    lines += Case("layernorm two axes", 41).f("x", (2, 3, 4), -2, 2).run(lambda t: F.layer_norm(t["x"], (3, 4)))
    lines += Case("nn.LayerNorm affine", 42).f("x", (2, 3, 4), -2, 2).f("weight", (4,), 0.5, 1.5).f(
        "bias", (4,)).run(lambda t: F.layer_norm(t["x"], (4,), t["weight"], t["bias"]))

    def batchnorm(t):
        # what nn.BatchNorm2d does in training mode: batch statistics, and running statistics
        # (from mean 0, var 1) updated with momentum 0.1 and the unbiased batch variance
        rm, rv = torch.zeros(3), torch.ones(3)
        out = F.batch_norm(t["x"], rm, rv, t["weight"], t["bias"], True, 0.1, 1e-5)
        return out, [("running_mean", rm), ("running_var", rv), ("num_batches_tracked", np.array([1.0]))]

    lines += Case("nn.BatchNorm2d training", 43).f("x", (4, 3, 2, 2), -2, 3).f("weight", (3,), 0.5, 1.5).f(
        "bias", (3,)).run(batchnorm)
    lines += Case("nn.GroupNorm", 44).f("x", (2, 4, 3, 3), -2, 2).f("weight", (4,), 0.5, 1.5).f(
        "bias", (4,)).run(lambda t: F.group_norm(t["x"], 2, t["weight"], t["bias"], 1e-5))

    # ---- models -----------------------------------------------------------------------------------
    def mlp(t):
        h = F.linear(t["x"], t["l1.weight"], t["l1.bias"]).relu()
        return F.cross_entropy(F.linear(h, t["l2.weight"], t["l2.bias"]), t["labels"])

    lines += Case("mlp", 50).f("x", (6, 5), -2, 2).i("labels", [0, 3, 1, 1, 2, 3]).f("l1.weight", (8, 5)).f(
        "l1.bias", (8,)).f("l2.weight", (4, 8)).f("l2.bias", (4,)).run(mlp)

    def cnn(t):
        rm, rv = torch.zeros(3), torch.ones(3)
        h = F.conv2d(t["x"], t["conv.weight"], t["conv.bias"])
        h = F.batch_norm(h, rm, rv, t["bn.weight"], t["bn.bias"], True, 0.1, 1e-5).relu()
        h = F.max_pool2d(h, 2).flatten(1)
        out = F.cross_entropy(F.linear(h, t["fc.weight"], t["fc.bias"]), t["labels"])
        return out, [("bn.running_mean", rm), ("bn.running_var", rv)]

    lines += Case("cnn", 51).f("x", (2, 1, 6, 6), -2, 2).i("labels", [2, 0]).f("conv.weight", (3, 1, 3, 3)).f(
        "conv.bias", (3,)).f("bn.weight", (3,), 0.5, 1.5).f("bn.bias", (3,)).f("fc.weight", (4, 12)).f(
        "fc.bias", (4,)).run(cnn)
    return lines


def main():
    body = [
        f"// Generated by gen_grad_golden.py (torch {torch.__version__}, numpy {np.__version__}); do not edit.",
        "// Rerun the script to regenerate.",
        "#pragma once",
        "",
        "#include <cstdint>",
        "#include <vector>",
        "",
        "namespace lazyjit::golden {",
        "",
        "struct GradGoldenTensor {",
        "  const char *name;",
        "  std::vector<int64_t> shape;",
        "  std::vector<double> values;",
        "  /// d loss / d tensor (empty where it takes none); for `out`, the loss weights W.",
        "  std::vector<double> grad;",
        "  bool isInt;",
        "};",
        "",
        "struct GradGoldenCase {",
        "  const char *name;",
        "  std::vector<GradGoldenTensor> inputs;",
        "  GradGoldenTensor out; ///< the forward result; loss = (out * out.grad).sum()",
        "  std::vector<GradGoldenTensor> after; ///< state after the step (running statistics)",
        "};",
        "",
        "// PyTorch in float64 from these float32 inputs",
        "inline const std::vector<GradGoldenCase> kGradCases = {",
    ]
    body += cases()
    body += ["};", "", "} // namespace lazyjit::golden", ""]
    with open(OUT, "w") as f:
        f.write("\n".join(body))


if __name__ == "__main__":
    main()

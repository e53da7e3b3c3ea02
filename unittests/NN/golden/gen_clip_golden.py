#!/usr/bin/env python3
"""Writes clip_golden.json for ClipGradTest.cpp: PyTorch's gradient clipping
(torch.nn.utils.clip_grad_norm_ and clip_grad_value_, Debian's python3-torch 1.13) on fixed
gradients, and SGD steps taken after clipping.

CMake runs it at build time (unittests/NN/CMakeLists.txt) with the output directory as its one
argument; the data is never committed. Every input is float32-representable (drawn here from a
seeded generator and written out); PyTorch computes in float64 from those values, the test in
float32 and compares within a relative 1e-6.

    /usr/bin/python3 unittests/NN/golden/gen_clip_golden.py <outdir>
"""
import json
import math
import os
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
RNG = np.random.default_rng(4646)

# gradients of four parameters of different ranks (one of them 0-d), float32 values
GRAD_SHAPES = [(5, 4), (5,), (2, 5), ()]
# max_norm values far below and far above every norm of GRADS, and one between the inf norm and
# the 2-norm (clips the 1- and 2-norms, not the inf norm)
MAX_NORMS = [0.25, 1.5, 1000.0]
NORM_TYPES = [2.0, 1.0, math.inf, 3.0]
CLIP_VALUES = [0.0, 0.3, 1.2, 100.0]


def f32(shape, lo, hi):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32).astype(np.float64)


def flat(a):
    return [float(x) for x in np.asarray(a, dtype=np.float64).ravel()]


def norm_name(p):
    return "inf" if math.isinf(p) else p


GRADS = [f32(s, -1.5, 1.5) for s in GRAD_SHAPES]


def clipped_norm_case(norm_type, max_norm):
    params = [torch.zeros(g.shape, requires_grad=True) for g in GRADS]
    for p, g in zip(params, GRADS):
        p.grad = torch.tensor(g)
    total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
    return {"norm_type": norm_name(norm_type), "max_norm": max_norm, "total_norm": float(total),
            "grads": [flat(p.grad) for p in params]}


def clipped_value_case(clip_value):
    params = [torch.zeros(g.shape, requires_grad=True) for g in GRADS]
    for p, g in zip(params, GRADS):
        p.grad = torch.tensor(g)
    torch.nn.utils.clip_grad_value_(params, clip_value)
    return {"clip_value": clip_value, "grads": [flat(p.grad) for p in params]}


# SGD after clipping: Linear(4, 5) -> tanh -> Linear(5, 2), mean squared error on a fixed batch,
# three steps of SGD(lr 0.1, momentum 0.9, weight_decay 0.01) with clip_grad_norm_ before each
SGD_SHAPES = [(5, 4), (5,), (2, 5), (2,)]
SGD_INIT = [f32(s, -0.8, 0.8) for s in SGD_SHAPES]
SGD_X = f32((6, 4), -2, 2)
SGD_Y = f32((6, 2), -3, 3)
SGD_STEPS = 3


def sgd_case(max_norm, norm_type):
    params = [torch.tensor(v, requires_grad=True) for v in SGD_INIT]
    opt = torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=0.01)
    x, y = torch.tensor(SGD_X), torch.tensor(SGD_Y)
    norms, steps = [], []
    for _ in range(SGD_STEPS):
        opt.zero_grad()
        h = torch.tanh(x @ params[0].T + params[1])
        loss = ((h @ params[2].T + params[3] - y) ** 2).mean()
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)))
        opt.step()
        steps.append([flat(p.detach()) for p in params])
    return {"max_norm": max_norm, "norm_type": norm_name(norm_type), "norms": norms, "steps": steps}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    data = {
        "grads": [{"shape": list(s), "values": flat(g)} for s, g in zip(GRAD_SHAPES, GRADS)],
        "norm_cases": [clipped_norm_case(p, m) for p in NORM_TYPES for m in MAX_NORMS],
        "value_cases": [clipped_value_case(v) for v in CLIP_VALUES],
        "sgd": {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01,
                "init": [{"shape": list(s), "values": flat(v)} for s, v in zip(SGD_SHAPES, SGD_INIT)],
                "x": {"shape": [6, 4], "values": flat(SGD_X)}, "y": {"shape": [6, 2], "values": flat(SGD_Y)},
                "cases": [sgd_case(0.5, 2.0), sgd_case(0.2, math.inf), sgd_case(100.0, 2.0)]},
    }
    # the cases must clip where they say they do
    n2 = math.sqrt(sum(float((g ** 2).sum()) for g in GRADS))
    ninf = max(float(abs(g).max()) for g in GRADS)
    assert ninf < MAX_NORMS[1] < n2 and n2 < MAX_NORMS[2] and MAX_NORMS[0] < ninf, (ninf, n2)
    tmp = os.path.join(out, "clip_golden.json.tmp")
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, os.path.join(out, "clip_golden.json"))


if __name__ == "__main__":
    main()

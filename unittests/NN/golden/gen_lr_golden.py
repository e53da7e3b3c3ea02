#!/usr/bin/env python3
"""Writes lr_schedules.json for LRSchedulerTest.cpp: the learning rate of PyTorch's schedulers
(torch.optim.lr_scheduler, Debian's python3-torch 1.13) after construction and after each of 100
steps, for every case listed in CASES.

CMake runs it at build time (unittests/NN/CMakeLists.txt) with the output directory as its one
argument; the data is never committed. The file holds, besides the schedules, the metric sequence
ReduceLROnPlateau is stepped with (a deterministic, noisy, decreasing curve with plateaus) and the
base learning rate: lazyjit's optimizer holds its lr in a float32 tensor, so a scheduler starts
from 0.1 rounded to float32; PyTorch's SGD gets that very double, and both then compute in double.

    /usr/bin/python3 unittests/NN/golden/gen_lr_golden.py <outdir>
"""
import json
import math
import os
import sys
import warnings

import numpy as np
import torch
from torch.optim import lr_scheduler

STEPS = 100
BASE_LR = float(np.float32(0.1))

# Every case: a scheduler's PyTorch class name and keyword arguments (the test builds lazyjit's
# scheduler from the same entry). SequentialLR lists its children the same way.
CASES = [
    {"name": "MultiStepLR milestones 25,50,75", "scheduler": "MultiStepLR",
     "args": {"milestones": [25, 50, 75]}},
    {"name": "MultiStepLR repeated milestone, gamma 0.5", "scheduler": "MultiStepLR",
     "args": {"milestones": [10, 30, 30, 70], "gamma": 0.5}},
    {"name": "CosineAnnealingLR T_max 100", "scheduler": "CosineAnnealingLR",
     "args": {"T_max": 100}},
    {"name": "CosineAnnealingLR T_max 30 eta_min 1e-3 (past T_max)",
     "scheduler": "CosineAnnealingLR", "args": {"T_max": 30, "eta_min": 1e-3}},
    {"name": "LinearLR warmup 0.1 -> 1 over 10", "scheduler": "LinearLR",
     "args": {"start_factor": 0.1, "end_factor": 1.0, "total_iters": 10}},
    {"name": "LinearLR 0.25 -> 0.5 over 40", "scheduler": "LinearLR",
     "args": {"start_factor": 0.25, "end_factor": 0.5, "total_iters": 40}},
    {"name": "OneCycleLR cos", "scheduler": "OneCycleLR",
     "args": {"max_lr": 0.5, "total_steps": 100, "cycle_momentum": False}},
    {"name": "OneCycleLR linear pct 0.25 div 10 final 100", "scheduler": "OneCycleLR",
     "args": {"max_lr": 0.3, "total_steps": 100, "pct_start": 0.25, "anneal_strategy": "linear",
              "div_factor": 10.0, "final_div_factor": 100.0, "cycle_momentum": False}},
    {"name": "OneCycleLR three phase cos, total 120", "scheduler": "OneCycleLR",
     "args": {"max_lr": 1.0, "total_steps": 120, "pct_start": 0.2, "three_phase": True,
              "cycle_momentum": False}},
    {"name": "OneCycleLR three phase linear", "scheduler": "OneCycleLR",
     "args": {"max_lr": 0.2, "total_steps": 100, "pct_start": 0.35, "anneal_strategy": "linear",
              "three_phase": True, "cycle_momentum": False}},
    {"name": "ReduceLROnPlateau min rel", "scheduler": "ReduceLROnPlateau",
     "args": {"mode": "min", "patience": 3}},
    {"name": "ReduceLROnPlateau min abs cooldown min_lr", "scheduler": "ReduceLROnPlateau",
     "args": {"mode": "min", "factor": 0.5, "patience": 2, "threshold": 0.01,
              "threshold_mode": "abs", "cooldown": 4, "min_lr": 0.02}},
    {"name": "ReduceLROnPlateau max rel eps", "scheduler": "ReduceLROnPlateau",
     "args": {"mode": "max", "factor": 0.3, "patience": 1, "threshold": 0.05, "eps": 1e-3}},
    {"name": "ReduceLROnPlateau max abs", "scheduler": "ReduceLROnPlateau",
     "args": {"mode": "max", "factor": 0.7, "patience": 4, "threshold": 0.002,
              "threshold_mode": "abs", "cooldown": 1}},
    {"name": "SequentialLR warmup then cosine", "scheduler": "SequentialLR",
     "args": {"milestones": [5], "schedulers": [
         {"scheduler": "LinearLR", "args": {"start_factor": 0.1, "total_iters": 5}},
         {"scheduler": "CosineAnnealingLR", "args": {"T_max": 95, "eta_min": 1e-4}}]}},
    {"name": "SequentialLR warmup, steps, cosine", "scheduler": "SequentialLR",
     "args": {"milestones": [10, 40], "schedulers": [
         {"scheduler": "LinearLR",
          "args": {"start_factor": 0.2, "end_factor": 0.8, "total_iters": 8}},
         {"scheduler": "MultiStepLR", "args": {"milestones": [5, 20], "gamma": 0.5}},
         {"scheduler": "CosineAnnealingLR", "args": {"T_max": 25, "eta_min": 1e-3}}]}},
]


def metrics():
    """A validation loss that falls, flattens, and jitters: every ReduceLROnPlateau branch runs."""
    out = []
    for i in range(STEPS):
        trend = max(0.35, math.exp(-i / 12.0)) + (0.1 if 40 <= i < 55 else 0.0)
        out.append(trend + 0.03 * math.sin(2.3 * i) * math.cos(0.7 * i))
    return out


def build(optimizer, entry):
    kind, args = entry["scheduler"], dict(entry["args"])
    if kind == "SequentialLR":
        children = [build(optimizer, c) for c in args.pop("schedulers")]
        return lr_scheduler.SequentialLR(optimizer, children, **args)
    return getattr(lr_scheduler, kind)(optimizer, **args)


def run(entry, metric_values):
    param = torch.zeros(1, requires_grad=True, dtype=torch.float64)
    optimizer = torch.optim.SGD([param], lr=BASE_LR)
    scheduler = build(optimizer, entry)
    lrs = [optimizer.param_groups[0]["lr"]]
    for i in range(STEPS):
        optimizer.step()  # no gradient: nothing moves, but PyTorch sees the usual call order
        if entry["scheduler"] == "ReduceLROnPlateau":
            scheduler.step(metric_values[i])
        else:
            scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])
    assert all(math.isfinite(v) for v in lrs), entry["name"]
    return dict(entry, lrs=lrs)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_lr_golden.py <outdir>")
    warnings.filterwarnings("ignore")  # SequentialLR's step(0) warns that epoch is deprecated
    metric_values = metrics()
    golden = {"base_lr": BASE_LR, "steps": STEPS, "metrics": metric_values,
              "cases": [run(c, metric_values) for c in CASES]}
    os.makedirs(sys.argv[1], exist_ok=True)
    path = os.path.join(sys.argv[1], "lr_schedules.json")
    with open(path + ".tmp", "w") as f:
        json.dump(golden, f, indent=1, allow_nan=False)  # repr floats: exact round trip
    os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()

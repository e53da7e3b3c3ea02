#!/usr/bin/env python3
"""Writes TensorGolden.h: expected values for the Tensor tests that are computed with numpy.

The cases are the ones whose expected values are easiest to get right from an independent
implementation: float16/bfloat16 rounding, numpy indexing (basic and integer-array), gather by its
definition, conv_transpose2d by its scatter definition, and np.einsum. Inputs are deterministic
(fixed seeds, values rounded to float32) and every number is printed with 17 significant digits, so
the header is reproducible bit for bit:

    /usr/bin/python3 unittests/Tensor/golden/gen_golden.py

Only numpy is used; lazyjit and tinygrad are not imported.
"""
import math
import os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "TensorGolden.h")


def num(v):
    v = float(v)
    if math.isnan(v):
        return "kNaN"
    if math.isinf(v):
        return "kInf" if v > 0 else "-kInf"
    r = repr(v)
    return r if ("." in r or "e" in r) else r + ".0"


def vals(a):
    return "{" + ", ".join(num(x) for x in np.asarray(a, dtype=np.float64).ravel()) + "}"


def ints(a):
    return "{" + ", ".join(str(int(x)) for x in a) + "}"


def f32(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32).astype(np.float64)


# ---- float16 / bfloat16 rounding -------------------------------------------------------------------

ROUND_IN = np.array([
    0.1, 0.2, 1 / 3, -2 / 3, 3.14159265, 65504.0, 65519.0, 65520.0, 1e5, -1e5, 6.0e-5, 6.103515625e-05,
    5.9604644775390625e-08, 2.98023223876953125e-08, 2.99e-08, 1e-8, 1.0009765625, 1.00048828125,
    1.00146484375, 2048.5, 2049.0, 4097.0, -0.0, 1.00390625, 1.01171875, 1.005859375, 255.5, 3.0e38,
    3.4028234663852886e38, 1e-39, 1e-45, -1.5e-40, float("inf"), float("-inf"), 123456.789, -7.7e-3,
], dtype=np.float32)


def to_bf16(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    nan = np.isnan(x)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    out = u.astype(np.uint32).view(np.float32).astype(np.float64)
    out[nan] = np.nan
    return out


def rounding():
    with np.errstate(over="ignore"):
        f16 = ROUND_IN.astype(np.float16).astype(np.float64)
    bf16 = to_bf16(ROUND_IN)
    return [
        "// float32 inputs and their float16 (numpy astype) and bfloat16 (round-to-nearest-even of",
        "// the top 16 bits) values",
        f"inline const std::vector<double> kRoundIn = {vals(ROUND_IN)};",
        f"inline const std::vector<double> kRoundF16 = {vals(f16)};",
        f"inline const std::vector<double> kRoundBF16 = {vals(bf16)};",
    ]


# ---- indexing ---------------------------------------------------------------------------------------

S = slice


def cpp_index(ix):
    def one(i):
        if i is None:
            return "Index::newAxis()"
        if i is Ellipsis:
            return "Index::ellipsis()"
        if isinstance(i, int):
            return f"Index::at({i})"
        opt = lambda v: "std::nullopt" if v is None else str(v)
        return f"Index::range({opt(i.start)}, {opt(i.stop)}, {1 if i.step is None else i.step})"
    return "{" + ", ".join(one(i) for i in ix) + "}"


def py_index(ix):
    def one(i):
        if i is None:
            return "None"
        if i is Ellipsis:
            return "..."
        if isinstance(i, int):
            return str(i)
        f = lambda v: "" if v is None else str(v)
        return f"{f(i.start)}:{f(i.stop)}" + ("" if i.step is None else f":{i.step}")
    return ", ".join(one(i) for i in ix)


INDEX_CASES = [
    (1,), (-1,), (S(1, 3),), (S(None, None, 2),), (S(None, None, -1),), (S(None, None, -2),),
    (S(1, None), S(None, None, -2), 3), (Ellipsis, 2), (None,), (S(None), None, S(1, 4, 2)),
    (2, 3, 4), (-3, -4, -5), (S(-3, -1), S(1, -1, 2), S(None, None, 3)), (Ellipsis, None, S(None, None, -1)),
    (1, Ellipsis, S(-2, None)), (S(5, 10),), (S(None), S(3, 1)), (S(None, None, -3), S(None, None, -1), 1),
    (S(None), S(None), S(None, None, 4)), (S(0, 100),), (S(-100, 2),), (S(1, 2), None, None, S(None, None, -1)),
    (S(None, None, -1), S(None, None, -1), S(None, None, -1)), (S(2, 0, -1), 0, S(4, 0, -3)), (Ellipsis,),
    (None, 1, None, Ellipsis, None), (S(None, None, 5), S(None, None, 3), S(None, None, 2)),
]


def indexing():
    x = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    xt = x.transpose(2, 0, 1)  # (5, 3, 4): the tests index a permuted view too
    lines = ["// x = arange(60).reshape(3, 4, 5); xt = x.transpose(2, 0, 1)",
             "inline const std::vector<IndexCase> kIndexCases = {"]
    for name, arr in (("x", x), ("xt", xt)):
        for ix in INDEX_CASES:
            try:
                r = arr[ix]
            except IndexError:
                continue
            r = np.asarray(r)
            lines.append(f'    {{"{name}[{py_index(ix)}]", {str(name == "xt").lower()}, {cpp_index(ix)}, '
                         f'{ints(r.shape)}, {vals(r)}}},')
    lines.append("};")
    # integer-array index on dim 0 (negative entries count from the end)
    lines.append("// x[idx] for an integer index tensor idx (numpy advanced indexing on dim 0)")
    lines.append("inline const std::vector<TensorIndexCase> kTensorIndexCases = {")
    for idx in ([2, 0, -1, 1], [[0, 2], [1, 1]], [1], [[-3]]):
        a = np.array(idx)
        r = x[a]
        lines.append(f"    {{{ints(a.shape)}, {vals(a)}, {ints(r.shape)}, {vals(r)}}},")
    lines.append("};")
    return lines


# ---- gather -------------------------------------------------------------------------------------------

def gather():
    rng = np.random.default_rng(7)
    x = f32(rng, (3, 4, 5), -5, 5)
    lines = ["// torch.gather(x, dim, idx) by its definition: out[i][j][k] = x[idx[i][j][k]][j][k] for",
             "// dim 0 (likewise for the other dims); idx may be smaller than x in every dim",
             f"inline const std::vector<double> kGatherX = {vals(x)}; // shape (3, 4, 5)",
             "inline const std::vector<GatherCase> kGatherCases = {"]
    for dim, ishape in ((0, (2, 4, 5)), (1, (3, 2, 5)), (2, (3, 4, 3)), (-1, (1, 2, 5)), (1, (2, 3, 1)),
                        (0, (3, 1, 2))):
        d = dim % 3
        idx = rng.integers(0, x.shape[d], size=ishape)
        out = np.empty(ishape)
        for pos in np.ndindex(*ishape):
            src = list(pos)
            src[d] = idx[pos]
            out[pos] = x[tuple(src)]
        lines.append(f"    {{{dim}, {ints(ishape)}, {vals(idx)}, {vals(out)}}},")
    lines.append("};")
    return lines


# ---- conv_transpose2d ------------------------------------------------------------------------------------

def conv_transpose2d(x, w, b, groups, stride, dilation, padding, output_padding):
    n, cin, h, wd = x.shape
    _, coutg, kh, kw = w.shape
    cing = cin // groups
    (sh, sw), (dh, dw), (ph, pw), (oph, opw) = stride, dilation, padding, output_padding
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    out = np.zeros((n, coutg * groups, oh, ow))
    for bi in range(n):
        for ci in range(cin):
            g = ci // cing
            for y in range(h):
                for xx in range(wd):
                    for oc in range(coutg):
                        for ky in range(kh):
                            for kx in range(kw):
                                oy, ox = y * sh - ph + ky * dh, xx * sw - pw + kx * dw
                                if 0 <= oy < oh and 0 <= ox < ow:
                                    out[bi, g * coutg + oc, oy, ox] += x[bi, ci, y, xx] * w[ci, oc, ky, kx]
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def conv_transpose():
    rng = np.random.default_rng(11)
    cases = [  # name, x shape, w shape, bias, groups, stride, dilation, padding, output_padding
        ("basic", (1, 2, 3, 3), (2, 3, 2, 2), False, 1, (1, 1), (1, 1), (0, 0), (0, 0)),
        ("stride2_bias", (2, 2, 3, 4), (2, 2, 3, 3), True, 1, (2, 2), (1, 1), (0, 0), (0, 0)),
        ("pad1_stride2_outpad1", (1, 3, 4, 3), (3, 2, 3, 3), True, 1, (2, 2), (1, 1), (1, 1), (1, 1)),
        ("dilation2", (1, 1, 3, 3), (1, 2, 2, 3), False, 1, (1, 1), (2, 2), (0, 0), (0, 0)),
        ("groups2_stride_rect", (1, 4, 3, 2), (4, 1, 2, 3), True, 2, (2, 3), (1, 1), (0, 1), (1, 0)),
    ]
    lines = ["// conv_transpose2d by its scatter definition (PyTorch semantics), weight (cin, cout/groups, kh, kw)",
             "inline const std::vector<ConvTransposeCase> kConvTransposeCases = {"]
    for name, xs, ws, has_b, groups, st, dil, pad, opad in cases:
        x, w = f32(rng, xs), f32(rng, ws)
        b = f32(rng, (ws[1] * groups,)) if has_b else None
        out = conv_transpose2d(x, w, b, groups, st, dil, pad, opad)
        bias = vals(b) if has_b else "{}"
        lines.append(f'    {{"{name}", {ints(xs)}, {vals(x)}, {ints(ws)}, {vals(w)}, {str(has_b).lower()}, {bias}, '
                     f"{groups}, {ints(st)}, {ints(dil)}, {ints(pad)}, {ints(opad)}, {ints(out.shape)}, {vals(out)}}},")
    lines.append("};")
    return lines


# ---- einsum -----------------------------------------------------------------------------------------------

def einsum():
    rng = np.random.default_rng(13)
    cases = [
        ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij->ji", [(2, 5)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 3)]),
        ("i,i->", [(7,)]), ("i,j->ij", [(3,), (4,)]), ("ijk->k", [(2, 3, 5)]), ("ij,ij->ij", [(3, 3), (3, 3)]),
        ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]), ("abc->cab", [(2, 3, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
        ("ijk,ik->j", [(2, 3, 4), (2, 4)]),
    ]
    lines = ["// np.einsum", "inline const std::vector<EinsumCase> kEinsumCases = {"]
    for formula, shapes in cases:
        if formula == "i,i->":
            shapes = [(7,), (7,)]
        xs = [f32(rng, s) for s in shapes]
        out = np.asarray(np.einsum(formula, *xs))
        ins = ", ".join("{" + f"{ints(x.shape)}, {vals(x)}" + "}" for x in xs)
        lines.append(f'    {{"{formula}", {{{ins}}}, {ints(out.shape)}, {vals(out)}}},')
    lines.append("};")
    return lines


HEADER = """// Generated by gen_golden.py (numpy {np}); do not edit. Rerun the script to regenerate.
#pragma once

#include "lazyjit/Tensor/Tensor.h"

#include <cstdint>
#include <limits>
#include <vector>

namespace lazyjit::golden {{

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct IndexCase {{
  const char *expr;
  bool transposed; // index xt = x.permute(2, 0, 1) instead of x
  std::vector<Index> index;
  std::vector<int64_t> shape;
  std::vector<double> values;
}};

struct TensorIndexCase {{
  std::vector<int64_t> idxShape;
  std::vector<double> idx;
  std::vector<int64_t> shape;
  std::vector<double> values;
}};

struct GatherCase {{
  int64_t dim;
  std::vector<int64_t> idxShape;
  std::vector<double> idx;
  std::vector<double> values; // shape idxShape
}};

struct ConvTransposeCase {{
  const char *name;
  std::vector<int64_t> xShape;
  std::vector<double> x;
  std::vector<int64_t> wShape;
  std::vector<double> w;
  bool hasBias;
  std::vector<double> bias;
  int64_t groups;
  std::vector<int64_t> stride, dilation, padding, outputPadding;
  std::vector<int64_t> outShape;
  std::vector<double> out;
}};

struct EinsumInput {{
  std::vector<int64_t> shape;
  std::vector<double> values;
}};

struct EinsumCase {{
  const char *formula;
  std::vector<EinsumInput> inputs;
  std::vector<int64_t> outShape;
  std::vector<double> out;
}};

"""


def main():
    parts = [HEADER.format(np=np.__version__)]
    for section in (rounding, indexing, gather, conv_transpose, einsum):
        parts.append("\n".join(section()) + "\n\n")
    parts.append("} // namespace lazyjit::golden\n")
    with open(OUT, "w") as f:
        f.write("".join(parts))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

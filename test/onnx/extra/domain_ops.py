"""Extra node cases for the ops outside ONNX 1.12's default domain: the training optimizers
(ai.onnx.preview.training), the classic-ML ops (ai.onnx.ml), ONNX Runtime's contrib ops that
transformer exporters write (com.microsoft), and default-domain ops of opsets 18-21
(GroupNormalization, Gelu, the bitwise ops, CenterCropPad, Col2Im, AffineGrid).

References: numpy, written from each op's spec (ONNX's Operators.md, ONNX Runtime's
ContribOperators.md), never from lazyjit. Debian's onnx 1.12 does not know the newer ops, so
these models are not run through onnx.checker.

    /usr/bin/python3 domain_ops.py OUT    # writes OUT/node/dom_<case>/
"""
import math
import os

import numpy as np
import onnx
from onnx import helper

import common

TRAINING = 'ai.onnx.preview.training'
ML = 'ai.onnx.ml'
MS = 'com.microsoft'


def model(name, node, inputs, outputs, opsets):
    graph = helper.make_graph([node], name, inputs, outputs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v)
                                                for d, v in opsets.items()])
    m.ir_version = 8
    return m


def dnode(c, name, op, inputs, outputs, opsets, domain='', **attrs):
    """One `op` node of `domain` in a model importing `opsets` ({domain: version}); inputs are
    named x0, x1, ... (None: omitted), outputs y0, y1, ... (None: an omitted optional output)."""
    d = c._dir(name)
    in_names = [f'x{i}' if a is not None else '' for i, a in enumerate(inputs)]
    out_names = [f'y{i}' if a is not None else '' for i, a in enumerate(outputs)]
    while out_names and not out_names[-1]:
        out_names.pop()
    given = [(n, np.asarray(a)) for n, a in zip(in_names, inputs) if a is not None]
    want = [(n, np.asarray(a)) for n, a in zip(out_names, outputs) if a is not None]
    node = helper.make_node(op, in_names, out_names, domain=domain or None, **attrs)
    m = model(name, node, [common.value_info(n, a) for n, a in given],
              [common.value_info(n, a) for n, a in want], opsets)
    c._write(d, m, given, want)


def derror(c, name, op, inputs, message, opsets, domain='', num_outputs=1, **attrs):
    """One `op` node that must fail with a lazyjit Error containing `message`."""
    d = c._dir(name)
    in_names = [f'x{i}' if a is not None else '' for i, a in enumerate(inputs)]
    out_names = [f'y{i}' for i in range(num_outputs)]
    given = [(n, np.asarray(a)) for n, a in zip(in_names, inputs) if a is not None]
    outs = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in out_names]
    node = helper.make_node(op, in_names, out_names, domain=domain or None, **attrs)
    m = model(name, node, [common.value_info(n, a) for n, a in given], outs, opsets)
    c._write(d, m, given, [])
    with open(os.path.join(d, 'expected_error.txt'), 'w') as f:
        f.write(message + '\n')


f32 = np.float32


# ---- ai.onnx.preview.training -------------------------------------------------------------------

def adagrad(r, t, x, g, h, norm, eps, decay):
    r_ = r / (1 + t * decay)
    gr = norm * x + g
    h_new = h + gr * gr
    return x - r_ * gr / (np.sqrt(h_new) + eps), h_new


def adam(r, t, x, g, v, h, norm, post, alpha, beta, eps):
    gr = norm * x + g
    v_new = alpha * v + (1 - alpha) * gr
    h_new = beta * h + (1 - beta) * gr * gr
    r_ = r * math.sqrt(1 - beta ** t) / (1 - alpha ** t) if t > 0 else r
    x_new = x - r_ * v_new / (np.sqrt(h_new) + eps)
    return (1 - post) * x_new, v_new, h_new


def momentum(r, t, x, g, v, norm, alpha, beta, nesterov):
    gr = norm * x + g
    v_new = alpha * v + (beta if t > 0 else 1) * gr
    x_new = x - r * (gr + alpha * v_new if nesterov else v_new)
    return x_new, v_new


def training(c, rnd):
    ops = {TRAINING: 1, '': 17}
    cast = lambda arrs, dt: [np.asarray(a, dt) for a in arrs]
    # Adagrad: two tensors, a decayed rate at step 3
    xs, gs, hs = [rnd(3), rnd(2, 2)], [rnd(3), rnd(2, 2)], [np.abs(rnd(3)), np.abs(rnd(2, 2))]
    res = [adagrad(0.1, 3, x, g, h, 0.01, 1e-5, 0.2) for x, g, h in zip(xs, gs, hs)]
    dnode(c, 'adagrad_two', 'Adagrad', [f32(0.1), np.int64(3)] + xs + gs + hs,
          cast([r[0] for r in res] + [r[1] for r in res], f32), ops, TRAINING,
          norm_coefficient=0.01, epsilon=1e-5, decay_factor=0.2)
    x, g, h = (a.astype(np.float64) for a in (rnd(4), rnd(4), np.abs(rnd(4))))
    dnode(c, 'adagrad_double_defaults', 'Adagrad', [np.float64(0.05), np.int64(0), x, g, h],
          list(adagrad(0.05, 0, x, g, h, 0.0, 1e-6, 0.0)), ops, TRAINING)
    # Adam: step 0 (no bias correction) and step 5, with the post-update decay
    for t in (0, 5):
        xs, gs = [rnd(3), rnd(2, 3)], [rnd(3), rnd(2, 3)]
        vs, hs = [rnd(3), rnd(2, 3)], [np.abs(rnd(3)), np.abs(rnd(2, 3))]
        res = [adam(0.02, t, *a, 0.001, 0.01, 0.8, 0.9, 1e-3) for a in zip(xs, gs, vs, hs)]
        dnode(c, f'adam_step{t}', 'Adam', [f32(0.02), np.int64(t)] + xs + gs + vs + hs,
              cast([r[k] for k in range(3) for r in res], f32), ops, TRAINING,
              norm_coefficient=0.001, norm_coefficient_post=0.01, alpha=0.8, beta=0.9,
              epsilon=1e-3)
    x, g, v, h = rnd(5), rnd(5), rnd(5), np.abs(rnd(5))
    dnode(c, 'adam_defaults', 'Adam', [f32(0.1), np.int64(2), x, g, v, h],
          cast(adam(0.1, 2, x, g, v, h, 0.0, 0.0, 0.9, 0.999, 1e-6), f32), ops, TRAINING)
    # Momentum: standard and Nesterov, first and later steps
    for mode in ('standard', 'nesterov'):
        for t in (0, 4):
            xs, gs, vs = [rnd(4), rnd(2, 2)], [rnd(4), rnd(2, 2)], [rnd(4), rnd(2, 2)]
            res = [momentum(0.1, t, x, g, v, 0.02, 0.9, 0.3, mode == 'nesterov')
                   for x, g, v in zip(xs, gs, vs)]
            dnode(c, f'momentum_{mode}_step{t}', 'Momentum', [f32(0.1), np.int64(t)] + xs + gs + vs,
                  cast([r[0] for r in res] + [r[1] for r in res], f32), ops, TRAINING,
                  norm_coefficient=0.02, alpha=0.9, beta=0.3, mode=mode)
    derror(c, 'momentum_bad_mode', 'Momentum', [f32(0.1), np.int64(1), rnd(2), rnd(2), rnd(2)],
           "attribute 'mode' = 'heavy' is not supported", ops, TRAINING, num_outputs=2,
           norm_coefficient=0.0, alpha=0.9, beta=0.1, mode='heavy')


# ---- ai.onnx.ml ---------------------------------------------------------------------------------

def classic_ml(c, rnd):
    ops = {ML: 3, '': 17}
    x = rnd(3, 5)
    dnode(c, 'afe_2d', 'ArrayFeatureExtractor', [x, np.array([4, 0, 2], np.int64)],
          [x[..., [4, 0, 2]]], ops, ML)
    x3 = rnd(2, 3, 4)
    dnode(c, 'afe_3d', 'ArrayFeatureExtractor', [x3, np.array([[1, 3]], np.int64)],
          [x3[..., [1, 3]]], ops, ML)
    x1 = np.arange(6, dtype=np.int64)
    dnode(c, 'afe_1d', 'ArrayFeatureExtractor', [x1, np.array([5, 1], np.int64)],
          [x1[[5, 1]].reshape(1, 2)], ops, ML)

    x = rnd(4, 3)
    dnode(c, 'binarizer', 'Binarizer', [x], [(x > 0.3).astype(f32)], ops, ML, threshold=0.3)
    xd = rnd(6).astype(np.float64)
    dnode(c, 'binarizer_double_default', 'Binarizer', [xd], [(xd > 0).astype(np.float64)], ops, ML)

    pos = np.abs(rnd(3, 4))
    pos[1] = 0
    dnode(c, 'normalizer_max', 'Normalizer', [pos],
          [np.where(pos.max(1, keepdims=True) == 0, pos, pos / np.where(
              pos.max(1, keepdims=True) == 0, 1, pos.max(1, keepdims=True)))], ops, ML, norm='MAX')
    mixed = np.array([[-3, 1, 2], [-1, -2, -4], [1, -5, 0.5]], f32)
    dnode(c, 'normalizer_max_signed', 'Normalizer', [mixed], [mixed / mixed.max(1, keepdims=True)],
          ops, ML, norm='MAX')
    x = rnd(3, 4)
    x[2] = 0
    l1 = np.abs(x).sum(1, keepdims=True)
    dnode(c, 'normalizer_l1', 'Normalizer', [x],
          [np.where(l1 == 0, x, x / np.where(l1 == 0, 1, l1))], ops, ML, norm='L1')
    l2 = np.sqrt((x * x).sum(1, keepdims=True))
    dnode(c, 'normalizer_l2', 'Normalizer', [x],
          [np.where(l2 == 0, x, x / np.where(l2 == 0, 1, l2))], ops, ML, norm='L2')
    xi = np.array([[3, -4], [1, 1]], np.int64)
    dnode(c, 'normalizer_l2_int', 'Normalizer', [xi],
          [(xi / np.sqrt((xi * xi).sum(1, keepdims=True))).astype(f32)], ops, ML, norm='L2')

    x = rnd(4, 3)
    off, sc = [0.5, -1.0, 2.0], [2.0, 0.5, -1.0]
    dnode(c, 'scaler', 'Scaler', [x], [((x - f32(off)) * f32(sc)).astype(f32)], ops, ML,
          offset=off, scale=sc)
    xi = np.arange(6, dtype=np.int64).reshape(2, 3)
    dnode(c, 'scaler_int_single', 'Scaler', [xi], [((xi - 1.5) * 0.25).astype(f32)], ops, ML,
          offset=[1.5], scale=[0.25])

    ops2 = {ML: 2, '': 17}
    xi = np.array([[1, 7, 3], [9, 3, 1]], np.int64)
    dnode(c, 'label_encoder_int_int', 'LabelEncoder', [xi],
          [np.vectorize({1: 10, 3: 30, 7: 70}.get)(xi, -5).astype(np.int64)], ops2, ML,
          keys_int64s=[1, 3, 7], values_int64s=[10, 30, 70], default_int64=-5)
    dnode(c, 'label_encoder_int_float', 'LabelEncoder', [xi],
          [np.vectorize({1: 0.5, 9: 2.5}.get)(xi, -0.0).astype(f32)], ops2, ML,
          keys_int64s=[1, 9], values_floats=[0.5, 2.5])
    xf = np.array([0.5, np.nan, 2.0, -1.0, 0.5], f32)
    dnode(c, 'label_encoder_float_int_nan', 'LabelEncoder', [xf],
          [np.array([1, 7, 2, -1, 1], np.int64)], ops2, ML,
          keys_floats=[0.5, 2.0, float('nan')], values_int64s=[1, 2, 7])
    derror(c, 'label_encoder_strings', 'LabelEncoder', [xi], "attribute 'keys_strings'", ops2, ML,
           keys_strings=['a', 'b'], values_int64s=[1, 2])

    derror(c, 'label_encoder_v1', 'LabelEncoder', [xi], 'LabelEncoder-1', {ML: 1, '': 17}, ML,
           default_int64=1)

    x = rnd(4, 3)
    coef, icpt = rnd(2, 3), rnd(2)
    dnode(c, 'linear_regressor', 'LinearRegressor', [x], [(x @ coef.T + icpt).astype(f32)], ops,
          ML, coefficients=coef.ravel().tolist(), intercepts=icpt.tolist(), targets=2)
    xi = np.arange(3, dtype=np.int64)
    dnode(c, 'linear_regressor_1d_int', 'LinearRegressor', [xi],
          [(xi.astype(f32) @ coef[:1].T).reshape(1, 1).astype(f32)], ops, ML,
          coefficients=coef[0].tolist())
    derror(c, 'linear_regressor_probit', 'LinearRegressor', [x], "'post_transform'", ops, ML,
           coefficients=coef[0].tolist(), post_transform='PROBIT')
    x = rnd(3, 4)
    x[0, 1] = x[2, 3] = x[1, 1] = np.nan
    fill = f32([1, 2, 3, 4])
    dnode(c, 'imputer_nan_per_feature', 'Imputer', [x],
          [np.where(np.isnan(x), fill, x)], ops, ML, imputed_value_floats=fill.tolist(),
          replaced_value_float=float('nan'))
    xi = np.array([[0, 5, -1], [-1, 2, -1]], np.int64)
    dnode(c, 'imputer_int', 'Imputer', [xi], [np.where(xi == -1, 7, xi)], ops, ML,
          imputed_value_int64s=[7], replaced_value_int64=-1)

    cats = [4, 1, 9]
    xi = np.array([[1, 9], [5, 4]], np.int64)
    onehot = lambda v: (v[..., None] == np.array(cats)).astype(f32)
    dnode(c, 'onehot_encoder_int', 'OneHotEncoder', [xi], [onehot(xi)], ops, ML, cats_int64s=cats)
    xf = np.array([1.0, 4.7, 9.0], f32)
    dnode(c, 'onehot_encoder_float_zeros0', 'OneHotEncoder', [xf], [onehot(xf.astype(np.int64))],
          ops, ML, cats_int64s=cats, zeros=0)


# ---- com.microsoft ------------------------------------------------------------------------------

def erf(x):
    return np.vectorize(math.erf)(x.astype(np.float64))


def gelu(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + erf(x / math.sqrt(2)))


def gelu_tanh(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def layer_norm(x, eps, simplified=False):
    x = x.astype(np.float64)
    mean = x.mean(-1, keepdims=True)
    if simplified:
        inv = 1 / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
        return x * inv, mean, inv
    inv = 1 / np.sqrt(x.var(-1, keepdims=True) + eps)
    return (x - mean) * inv, mean, inv


def attention(x, w, b, heads, sizes=None, mask=None, past=None, unidirectional=False,
              scale=None, filt=-10000.0, rel=None):
    """ONNX Runtime's Attention: masked positions get `filt` added to their scores."""
    B, S, _ = x.shape
    sizes = sizes or [w.shape[1] // 3] * 3
    qkv = x.astype(np.float64) @ w + (0 if b is None else b)
    q, k, v = np.split(qkv, [sizes[0], sizes[0] + sizes[1]], axis=-1)
    heads_of = lambda t: t.reshape(B, S, heads, -1).transpose(0, 2, 1, 3)
    q, k, v = heads_of(q), heads_of(k), heads_of(v)
    P = 0
    if past is not None:
        P = past.shape[3]
        k = np.concatenate([past[0], k], 2)
        v = np.concatenate([past[1], v], 2)
    T = P + S
    scale = scale or 1 / math.sqrt(sizes[0] // heads)
    s = q @ k.transpose(0, 1, 3, 2) * scale
    if mask is not None:
        keep = np.ones((B, S, T), bool)
        if mask.ndim == 1:
            j = np.arange(T)
            for bi in range(B):
                keep[bi] = j[None, :] < mask[bi]
                if mask.shape[0] == 2 * B:
                    keep[bi] &= j[None, :] >= mask[B + bi]
        elif mask.ndim == 2:
            keep = np.broadcast_to(mask[:, None, :] != 0, (B, S, T))
        elif mask.ndim == 3:
            keep = mask != 0
        else:  # Megatron's [B, 1, max, max]: rows P..T, columns 0..T
            keep = mask[:, 0, P:T, :T] != 0
        s = s + np.where(keep, 0, filt)[:, None]
    if unidirectional:
        i, j = np.arange(S)[:, None], np.arange(T)[None, :]
        s = s + np.where(j <= i + P, 0, filt)
    if rel is not None:
        s = s + rel
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = (p @ v).transpose(0, 2, 1, 3).reshape(B, S, -1)
    present = np.stack([k, v]).astype(f32) if k.shape == v.shape else None
    return out.astype(f32), present


def microsoft(c, rnd, rng):
    ops = {MS: 1, '': 17}
    x, b = rnd(2, 3, 8), rnd(8)
    dnode(c, 'ms_gelu', 'Gelu', [x], [gelu(x).astype(f32)], ops, MS)
    dnode(c, 'ms_bias_gelu', 'BiasGelu', [x, b], [gelu(x + b).astype(f32)], ops, MS)
    dnode(c, 'ms_fast_gelu', 'FastGelu', [x], [gelu_tanh(x).astype(f32)], ops, MS)
    dnode(c, 'ms_fast_gelu_bias', 'FastGelu', [x, b], [gelu_tanh(x + b).astype(f32)], ops, MS)
    dnode(c, 'ms_quick_gelu', 'QuickGelu', [x], [(x / (1 + np.exp(-1.5 * x))).astype(f32)], ops, MS,
          alpha=1.5)

    h = (rnd(3, 8) * 2).astype(np.float16)
    dnode(c, 'ms_fast_gelu_half', 'FastGelu', [h], [gelu_tanh(h).astype(np.float16)], ops, MS)
    dnode(c, 'ms_gelu_half', 'Gelu', [h], [gelu(h).astype(np.float16)], ops, MS)

    a, bm = rnd(2, 3, 4), rnd(2, 5, 4)
    dnode(c, 'ms_fused_matmul', 'FusedMatMul', [a, bm],
          [(0.5 * a @ bm.transpose(0, 2, 1)).astype(f32)], ops, MS, alpha=0.5, transB=1)
    a2 = rnd(4, 3)
    dnode(c, 'ms_fused_matmul_trans_a_broadcast', 'FusedMatMul', [a2, bm.transpose(0, 2, 1)],
          [(a2.T @ bm.transpose(0, 2, 1)).astype(f32)], ops, MS, transA=1)

    # SkipLayerNormalization with every input and output, then the minimal form
    x, skip, gamma, beta, bias = rnd(2, 3, 8), rnd(2, 3, 8), rnd(8), rnd(8), rnd(8)
    s = x + skip + bias
    n, mean, inv = layer_norm(s, 1e-5)
    dnode(c, 'ms_skip_layer_norm_full', 'SkipLayerNormalization', [x, skip, gamma, beta, bias],
          [(n * gamma + beta).astype(f32), mean.astype(f32), inv.astype(f32), s.astype(f32)], ops,
          MS, epsilon=1e-5)
    n, _, _ = layer_norm(x + skip, 1e-12)
    dnode(c, 'ms_skip_layer_norm_min', 'SkipLayerNormalization', [x, skip, gamma],
          [(n * gamma).astype(f32)], ops, MS)
    n, _, _ = layer_norm(x + skip + bias, 1e-12)
    dnode(c, 'ms_skip_layer_norm_bias_only', 'SkipLayerNormalization',
          [x, skip, gamma, None, bias], [(n * gamma).astype(f32), None, None, s.astype(f32)], ops,
          MS)
    hx, hs, hg, hb = (a.astype(np.float16) for a in (x, skip, gamma, beta))
    n, mean, inv = layer_norm(hx.astype(f32) + hs.astype(f32), 1e-5)
    dnode(c, 'ms_skip_layer_norm_half', 'SkipLayerNormalization', [hx, hs, hg, hb],
          [(n * hg.astype(f32) + hb.astype(f32)).astype(np.float16), mean.astype(f32),
           inv.astype(f32)], ops, MS, epsilon=1e-5)
    skip2 = rnd(3, 8)
    n, _, _ = layer_norm(x + skip2 + bias, 1e-12)
    dnode(c, 'ms_skip_layer_norm_broadcast_skip', 'SkipLayerNormalization',
          [x, skip2, gamma, beta, bias], [(n * gamma + beta).astype(f32)], ops, MS)
    n, _, inv = layer_norm(x + skip + bias, 1e-6, simplified=True)
    dnode(c, 'ms_skip_simplified_layer_norm', 'SkipSimplifiedLayerNormalization',
          [x, skip, gamma, bias], [(n * gamma).astype(f32), None, inv.astype(f32), s.astype(f32)],
          ops, MS, epsilon=1e-6)

    # EmbedLayerNormalization: BERT's word + position + segment embeddings
    V, P, G, H, B, S = 10, 6, 2, 8, 2, 4
    ids = rng.integers(0, V, (B, S)).astype(np.int32)
    seg = rng.integers(0, G, (B, S)).astype(np.int32)
    word, posn, segt = rnd(V, H), rnd(P, H), rnd(G, H)
    gamma, beta = rnd(H), rnd(H)
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.int32)
    emb = word[ids] + posn[np.arange(S)][None] + segt[seg]
    n, _, _ = layer_norm(emb, 1e-5)
    dnode(c, 'ms_embed_layer_norm_full', 'EmbedLayerNormalization',
          [ids, seg, word, posn, segt, gamma, beta, mask],
          [(n * gamma + beta).astype(f32), mask.sum(1).astype(np.int32), emb.astype(f32)], ops, MS,
          epsilon=1e-5)
    pos_ids = np.array([[3, 2, 1, 0], [0, 0, 5, 5]], np.int32)
    emb = word[ids] + posn[pos_ids]
    n, _, _ = layer_norm(emb, 1e-12)
    dnode(c, 'ms_embed_layer_norm_position_ids', 'EmbedLayerNormalization',
          [ids, None, word, posn, None, gamma, beta, None, pos_ids],
          [(n * gamma + beta).astype(f32), np.zeros(B, np.int32), emb.astype(f32)], ops, MS)
    bad = ids.copy()
    bad[0, 0] = V
    derror(c, 'ms_embed_layer_norm_bad_id', 'EmbedLayerNormalization',
           [bad, None, word, posn, None, gamma, beta], 'out of range', ops, MS)

    # Attention: the packed QKV projection with each kind of mask
    B, S, D, heads = 2, 4, 6, 2
    x, w, b = rnd(B, S, D), rnd(D, 3 * 4), rnd(3 * 4)
    dnode(c, 'ms_attention_plain', 'Attention', [x, w, b], [attention(x, w, b, heads)[0]], ops, MS,
          num_heads=heads)
    dnode(c, 'ms_attention_no_bias_scale', 'Attention', [x, w], [attention(x, w, None, heads,
                                                                           scale=0.3)[0]],
          ops, MS, num_heads=heads, scale=0.3)
    ends = np.array([3, 2], np.int32)
    dnode(c, 'ms_attention_mask_1d', 'Attention', [x, w, b, ends],
          [attention(x, w, b, heads, mask=ends)[0]], ops, MS, num_heads=heads)
    ends_starts = np.array([4, 3, 1, 0], np.int32)
    dnode(c, 'ms_attention_mask_1d_start', 'Attention', [x, w, b, ends_starts],
          [attention(x, w, b, heads, mask=ends_starts)[0]], ops, MS, num_heads=heads)
    m2 = np.array([[1, 0, 1, 1], [1, 1, 1, 0]], np.int32)
    dnode(c, 'ms_attention_mask_2d', 'Attention', [x, w, b, m2],
          [attention(x, w, b, heads, mask=m2)[0]], ops, MS, num_heads=heads)
    m3 = (rng.random((B, S, S)) > 0.3).astype(np.int32)
    m3[:, :, 0] = 1
    dnode(c, 'ms_attention_mask_3d_filter', 'Attention', [x, w, b, m3],
          [attention(x, w, b, heads, mask=m3, filt=-1000.0)[0]], ops, MS, num_heads=heads,
          mask_filter_value=-1000.0)
    dnode(c, 'ms_attention_unidirectional', 'Attention', [x, w, b, m2],
          [attention(x, w, b, heads, mask=m2, unidirectional=True)[0]], ops, MS, num_heads=heads,
          unidirectional=1)
    sizes = [4, 4, 6]
    w2, b2 = rnd(D, 14), rnd(14)
    rel = rnd(1, heads, S, S)
    dnode(c, 'ms_attention_qkv_sizes_rel_bias', 'Attention', [x, w2, b2, None, None, rel],
          [attention(x, w2, b2, heads, sizes=sizes, rel=rel)[0]], ops, MS, num_heads=heads,
          qkv_hidden_sizes=sizes)
    past = rnd(2, B, heads, 3, 2)
    out, present = attention(x, w, b, heads, past=past, unidirectional=True)
    dnode(c, 'ms_attention_past', 'Attention', [x, w, b, None, past], [out, present], ops, MS,
          num_heads=heads, unidirectional=1)
    m4 = np.tril(np.ones((B, 1, 8, 8), np.int32))
    m4[1, 0, :, 1] = 0
    dnode(c, 'ms_attention_mask_4d', 'Attention', [x, w, b, m4],
          [attention(x, w, b, heads, mask=m4)[0]], ops, MS, num_heads=heads)
    out, present = attention(x, w, b, heads, mask=m4, past=past)
    dnode(c, 'ms_attention_mask_4d_past', 'Attention', [x, w, b, m4, past], [out, present], ops,
          MS, num_heads=heads)
    derror(c, 'ms_attention_mask_5d', 'Attention', [x, w, b, m4[None]],
           'a mask_index of rank 5 is not supported', ops, MS, num_heads=heads)
    derror(c, 'ms_attention_rotary', 'Attention', [x, w, b], "'do_rotary'", ops, MS,
           num_heads=heads, do_rotary=1)


# ---- default domain, opsets 18-21 ---------------------------------------------------------------

def group_norm(x, groups, scale, bias, eps, per_group):
    N, C = x.shape[:2]
    xs = x.astype(np.float64).reshape(N, groups, -1)
    y = ((xs - xs.mean(-1, keepdims=True)) / np.sqrt(xs.var(-1, keepdims=True) + eps))
    y = y.reshape(x.shape)
    if per_group:
        scale, bias = np.repeat(scale, C // groups), np.repeat(bias, C // groups)
    shape = (1, C) + (1,) * (x.ndim - 2)
    return (y * scale.reshape(shape) + bias.reshape(shape)).astype(x.dtype)


def col2im(x, image, block, strides, dilations, pads):
    N, CK, L = x.shape
    nd = len(image)
    K = int(np.prod(block))
    C = CK // K
    full = [image[i] + pads[i] + pads[nd + i] for i in range(nd)]
    grid = [(full[i] - dilations[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(nd)]
    y = np.zeros((N, C, *full), x.dtype)
    cols = x.reshape(N, C, K, *grid)
    for kk, bpos in enumerate(np.ndindex(*block)):
        for gpos in np.ndindex(*grid):
            at = tuple(gpos[i] * strides[i] + bpos[i] * dilations[i] for i in range(nd))
            y[(slice(None), slice(None)) + at] += cols[(slice(None), slice(None), kk) + gpos]
    return y[(slice(None), slice(None)) + tuple(slice(pads[i], pads[i] + image[i])
                                                for i in range(nd))]


def affine_grid(theta, size, align):
    spatial = size[2:]
    nd = len(spatial)

    def coords(s):
        if align:
            return np.zeros(1) if s == 1 else -1 + 2 * np.arange(s) / (s - 1)
        return -1 + (2 * np.arange(s) + 1) / s

    axes = np.meshgrid(*[coords(s) for s in spatial], indexing='ij')
    # (x, y, z): x runs along the last spatial dim
    base = np.stack([axes[nd - 1 - j] for j in range(nd)] + [np.ones(spatial)], -1)
    out = np.einsum('...k,njk->n...j', base, theta.astype(np.float64))
    return out.astype(theta.dtype)


def center_crop_pad(x, shape, axes):
    for s, a in zip(shape, axes):
        a = a % x.ndim
        n = x.shape[a]
        if n > s:
            begin = (n - s) // 2
            x = np.take(x, np.arange(begin, begin + s), axis=a)
        elif n < s:
            left = (s - n) // 2
            pad = [(0, 0)] * x.ndim
            pad[a] = (left, s - n - left)
            x = np.pad(x, pad)
    return x


def newer_default(c, rnd, rng):
    x = rnd(2, 6, 3, 2)
    scale_g, bias_g = rnd(3), rnd(3)
    dnode(c, 'group_norm_18', 'GroupNormalization', [x, scale_g, bias_g],
          [group_norm(x, 3, scale_g, bias_g, 1e-5, True)], {'': 18}, num_groups=3)
    scale, bias = rnd(6), rnd(6)
    dnode(c, 'group_norm_21_eps', 'GroupNormalization', [x, scale, bias],
          [group_norm(x, 2, scale, bias, 1e-2, False)], {'': 21}, num_groups=2, epsilon=1e-2)
    x3 = rnd(3, 4, 5)
    s4, b4 = rnd(4), rnd(4)
    dnode(c, 'group_norm_21_instance_like', 'GroupNormalization', [x3, s4, b4],
          [group_norm(x3, 4, s4, b4, 1e-5, False)], {'': 21}, num_groups=4)
    xd = rnd(2, 4, 3).astype(np.float64)
    sd, bd = rnd(4).astype(np.float64), rnd(4).astype(np.float64)
    dnode(c, 'group_norm_21_double_one_group', 'GroupNormalization', [xd, sd, bd],
          [group_norm(xd, 1, sd, bd, 1e-5, False)], {'': 21}, num_groups=1, stash_type=11)

    derror(c, 'group_norm_bad_groups', 'GroupNormalization', [x, scale, bias],
           'do not split into 4 groups', {'': 21}, num_groups=4)

    def rms(x, axis, eps):
        axes = tuple(range(axis % x.ndim, x.ndim))
        inv = 1 / np.sqrt((x.astype(np.float64) ** 2).mean(axes, keepdims=True) + eps)
        return x * inv, inv
    x, sc = rnd(2, 3, 4), rnd(4)
    n, _ = rms(x, -1, 1e-5)
    dnode(c, 'rms_norm_23', 'RMSNormalization', [x, sc], [(n * sc).astype(f32)], {'': 23})
    sc2 = rnd(3, 4)
    n, _ = rms(x, 1, 1e-3)
    dnode(c, 'rms_norm_23_axis1_eps', 'RMSNormalization', [x, sc2], [(n * sc2).astype(f32)],
          {'': 23}, axis=1, epsilon=1e-3)
    n, inv = rms(x, -1, 1e-6)
    dnode(c, 'simplified_layer_norm', 'SimplifiedLayerNormalization', [x, sc],
          [(n * sc).astype(f32), inv.astype(f32)], {'': 17}, epsilon=1e-6)

    x = rnd(3, 7) * 3
    dnode(c, 'gelu_20', 'Gelu', [x], [gelu(x).astype(f32)], {'': 20})
    dnode(c, 'gelu_20_tanh', 'Gelu', [x], [gelu_tanh(x).astype(f32)], {'': 20}, approximate='tanh')
    h = x.astype(np.float16)
    dnode(c, 'gelu_20_half', 'Gelu', [h], [gelu(h).astype(np.float16)], {'': 20})

    for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64):
        info = np.iinfo(dt)
        a = rng.integers(info.min, info.max, (3, 4), dtype=dt, endpoint=True)
        b = rng.integers(info.min, info.max, (4,), dtype=dt, endpoint=True)
        a[0, :2] = [info.min, info.max]
        name = np.dtype(dt).name
        dnode(c, f'bitwise_and_{name}', 'BitwiseAnd', [a, b], [a & b], {'': 18})
        dnode(c, f'bitwise_or_{name}', 'BitwiseOr', [a, b], [a | b], {'': 18})
        dnode(c, f'bitwise_xor_{name}', 'BitwiseXor', [a, b], [a ^ b], {'': 18})
        dnode(c, f'bitwise_not_{name}', 'BitwiseNot', [a], [~a], {'': 18})

    x = rnd(5, 6, 3)
    for name, shape, axes in (('crop', [3, 4, 3], None), ('pad', [8, 7, 4], None),
                              ('mixed_axes', [3, 9], [0, -2]), ('odd', [2, 3], [1, 0])):
        attrs = {} if axes is None else {'axes': axes}
        dnode(c, f'center_crop_pad_{name}', 'CenterCropPad', [x, np.array(shape, np.int64)],
              [center_crop_pad(x, shape, axes or range(x.ndim))], {'': 18}, **attrs)
    xi = np.arange(12, dtype=np.int32).reshape(3, 4)
    dnode(c, 'center_crop_pad_int', 'CenterCropPad', [xi, np.array([5, 2], np.int64)],
          [center_crop_pad(xi, [5, 2], [0, 1])], {'': 18})

    for name, image, block, strides, dilations, pads in (
            ('basic', [5, 5], [2, 2], [1, 1], [1, 1], [0, 0, 0, 0]),
            ('strides_pads', [6, 5], [3, 2], [2, 1], [1, 1], [1, 0, 1, 2]),
            ('dilations', [7, 6], [2, 3], [1, 2], [2, 1], [0, 1, 0, 0]),
            ('3d', [4, 3, 4], [2, 2, 2], [1, 1, 2], [1, 1, 1], [0, 0, 1, 0, 0, 1])):
        nd = len(image)
        full = [image[i] + pads[i] + pads[nd + i] for i in range(nd)]
        grid = [(full[i] - dilations[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(nd)]
        x = rnd(2, 3 * int(np.prod(block)), int(np.prod(grid)))
        attrs = {}
        if strides != [1] * nd: attrs['strides'] = strides
        if dilations != [1] * nd: attrs['dilations'] = dilations
        if any(pads): attrs['pads'] = pads
        dnode(c, f'col2im_{name}', 'Col2Im',
              [x, np.array(image, np.int64), np.array(block, np.int64)],
              [col2im(x, image, block, strides, dilations, pads)], {'': 18}, **attrs)

    xb = np.arange(12).reshape(3, 4) % 3 == 0
    dnode(c, 'center_crop_pad_bool', 'CenterCropPad', [xb, np.array([1, 6], np.int64)],
          [center_crop_pad(xb, [1, 6], [0, 1])], {'': 18})
    x = rng.integers(-50, 50, (1, 2 * 4, 9)).astype(np.int64)
    dnode(c, 'col2im_int64', 'Col2Im', [x, np.array([4, 4], np.int64), np.array([2, 2], np.int64)],
          [col2im(x, [4, 4], [2, 2], [1, 1], [1, 1], [0] * 4)], {'': 18})

    for align in (0, 1):
        theta = rnd(2, 2, 3)
        size = [2, 3, 4, 5]
        dnode(c, f'affine_grid_2d_align{align}', 'AffineGrid', [theta, np.array(size, np.int64)],
              [affine_grid(theta, size, align)], {'': 20}, align_corners=align)
        theta = rnd(1, 3, 4)
        size = [1, 2, 3, 4, 2]
        dnode(c, f'affine_grid_3d_align{align}', 'AffineGrid', [theta, np.array(size, np.int64)],
              [affine_grid(theta, size, align)], {'': 20}, align_corners=align)


def generate(c):
    rng = np.random.default_rng(0)
    rnd = lambda *s: rng.standard_normal(s).astype(np.float32)
    training(c, rnd)
    classic_ml(c, rnd)
    microsoft(c, rnd, rng)
    newer_default(c, rnd, rng)


if __name__ == '__main__':
    common.main(generate, 'dom')

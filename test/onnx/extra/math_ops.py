"""Extra node cases for elementwise math, reductions and the small linear-algebra ops: NaN and
infinity handling, float16/float64/integer dtypes, empty reductions, old opsets' attributes.

    /usr/bin/python3 math_ops.py OUT    # writes OUT/node/math_<case>/
"""
import math

import numpy as np

import common

f32, f16 = np.float32, np.float16


def topk(a, k, axis, largest):
    """TopK with the spec's tie rule: of equal values, the lower index comes first."""
    idx = np.argsort(-a if largest else a, axis=axis, kind='stable')
    idx = np.take(idx, np.arange(k), axis=axis)
    return np.take_along_axis(a, idx, axis=axis), idx.astype(np.int64)


def cumsum(a, axis, exclusive, reverse):
    b = np.flip(a, axis) if reverse else a
    r = np.cumsum(b, axis)
    if exclusive: r = r - b
    return (np.flip(r, axis) if reverse else r).astype(a.dtype)


def coerced_2d(a, axis):
    """`a` as the [prod(shape[:axis]), prod(shape[axis:])] matrix of the opset <13 softmaxes."""
    return a.reshape(int(np.prod(a.shape[:axis])), -1)


def hardmax_v11(a, axis):
    s = coerced_2d(a, axis)
    o = np.zeros_like(s)
    o[np.arange(s.shape[0]), s.argmax(1)] = 1
    return o.reshape(a.shape)


def logsoftmax_v11(a, axis):
    s = coerced_2d(a, axis).astype(np.float64)
    r = s - s.max(1, keepdims=True)
    r = r - np.log(np.exp(r).sum(1, keepdims=True))
    return r.reshape(a.shape).astype(f32)


def reductions(c, rng):
    x = rng.standard_normal((3, 4, 5)).astype(f32)
    l1 = lambda a, axis, keepdims: np.sum(np.abs(a), axis=axis, keepdims=keepdims)
    lse = lambda a, axis, keepdims: np.log(np.sum(np.exp(a), axis=axis, keepdims=keepdims))
    for op, fn in [('ReduceMax', np.max), ('ReduceMin', np.min), ('ReduceMean', np.mean),
                   ('ReduceProd', np.prod), ('ReduceL1', l1), ('ReduceLogSumExp', lse)]:
        c.node(f'{op}_18', op, [x, np.array([0, -1], np.int64)],
               [fn(x, axis=(0, 2), keepdims=False).astype(f32)], 18,
               keepdims=0)
        c.node(f'{op}_18_noop', op, [x], [x], 18, noop_with_empty_axes=1)
        c.node(f'{op}_18_all', op, [x], [fn(x, axis=None, keepdims=True).astype(f32)], 18)
    # an empty reduction gives the identity: 0, 1, -inf (max; opset 18 says so), +inf (min), log(0)
    e = np.zeros((2, 0, 3), f32)
    axis1 = np.array([1], np.int64)
    c.node('ReduceSum_empty', 'ReduceSum', [e, axis1], [np.zeros((2, 1, 3), f32)], 13)
    c.node('ReduceProd_empty', 'ReduceProd', [e], [np.ones((2, 1, 3), f32)], 13, axes=[1])
    c.node('ReduceMax_empty', 'ReduceMax', [e, axis1], [np.full((2, 1, 3), -np.inf, f32)], 18)
    c.node('ReduceMin_empty', 'ReduceMin', [e, axis1], [np.full((2, 1, 3), np.inf, f32)], 18)
    c.node('ReduceLogSumExp_empty', 'ReduceLogSumExp', [e, axis1], [np.full((2, 1, 3), -np.inf, f32)], 18)
    xi = rng.integers(-5, 6, (3, 4)).astype(np.int64)
    c.node('ReduceProd_int', 'ReduceProd', [xi], [np.prod(xi, axis=1, keepdims=True)], 13, axes=[1])
    x32 = xi.astype(np.int32)
    c.node('ReduceSum_int32', 'ReduceSum', [x32, np.array([0], np.int64)],
           [np.sum(x32, axis=0, keepdims=True, dtype=np.int32)], 13)
    c.node('ReduceMin_int', 'ReduceMin', [xi], [np.min(xi, axis=0)], 13, axes=[0], keepdims=0)
    xu = rng.integers(0, 200, (3, 4)).astype(np.uint8)
    c.node('ReduceMax_u8', 'ReduceMax', [xu], [np.max(xu, axis=1, keepdims=True)], 13, axes=[1])
    c.node('ReduceMin_u8', 'ReduceMin', [xu], [np.min(xu, axis=1, keepdims=True)], 13, axes=[1])
    h = x.astype(f16)
    c.node('ReduceMean_f16', 'ReduceMean', [h],
           [np.mean(h.astype(f32), axis=1, keepdims=True).astype(f16)], 13, axes=[1])
    x64 = x.astype(np.float64)
    c.node('ReduceL2_f64', 'ReduceL2', [x64], [np.sqrt(np.sum(x64**2, axis=(0, 1)))], 13,
           axes=[0, 1], keepdims=0)
    p = rng.standard_normal((2, 1000)).astype(f32) * 0.1 + 1
    c.node('ReduceProd_1000', 'ReduceProd', [p], [np.prod(p.astype(np.float64), axis=1).astype(f32)],
           13, axes=[1], keepdims=0)
    # NaN propagates through max/min (as numpy's and PyTorch's amax/amin); -inf rows stay -inf
    a = np.array([[1, np.nan, 3], [4, 2, 1], [-np.inf, -np.inf, -np.inf]], f32)
    c.node('ReduceMax_nan', 'ReduceMax', [a], [np.max(a, axis=1, keepdims=True)], 13, axes=[1])
    c.node('ReduceMin_nan', 'ReduceMin', [a], [np.min(a, axis=1, keepdims=True)], 13, axes=[1])
    with np.errstate(divide='ignore'):
        lse_inf = np.log(np.sum(np.exp(a[1:].astype(np.float64)), axis=1, keepdims=True)).astype(f32)
    c.node('ReduceLogSumExp_inf', 'ReduceLogSumExp', [a[1:]], [lse_inf], 13, axes=[1])


def elementwise(c, rng):
    x = rng.standard_normal((3, 4, 5)).astype(f32)
    xi = rng.integers(-5, 6, (3, 4)).astype(np.int64)
    xn = np.array([np.nan, 1, -2, np.inf, -np.inf, 0.5], f32)
    # Clip: attributes (opset 6), one bound, integer data, NaN stays NaN
    c.node('Clip6', 'Clip', [x], [np.clip(x, -0.5, 0.7)], 6, min=-0.5, max=0.7)
    c.node('Clip6_min', 'Clip', [x], [np.maximum(x, f32(-0.5))], 6, min=-0.5)
    c.node('Clip_int_max', 'Clip', [xi, None, np.array(2, np.int64)], [np.minimum(xi, 2)], 13)
    c.node('Clip_nan', 'Clip', [xn, np.array(-1, f32), np.array(1, f32)], [np.clip(xn, -1, 1)], 13)
    # comparisons with NaN are false (IEEE 754); Max/Min propagate NaN
    other = np.array([1, np.nan, 0, 0, 0, 0.5], f32)
    c.node('Less_nan', 'Less', [xn, other], [xn < other], 17)
    c.node('Greater_nan', 'Greater', [xn, other], [xn > other], 17)
    c.node('GreaterOrEqual_nan', 'GreaterOrEqual', [xn, other], [xn >= other], 17)
    c.node('Equal_nan', 'Equal', [xn, xn], [xn == xn], 17)
    c.node('IsNaN', 'IsNaN', [xn], [np.isnan(xn)], 17)
    c.node('IsInf', 'IsInf', [xn], [np.isinf(xn)], 17)
    c.node('Max_nan', 'Max', [xn, np.zeros(6, f32)], [np.maximum(xn, 0)], 17)
    c.node('Min_nan', 'Min', [xn, np.zeros(6, f32)], [np.minimum(xn, 0)], 17)
    c.node('Sign_nan', 'Sign', [xn], [np.sign(xn)], 17)
    c.node('Sign_int', 'Sign', [xi], [np.sign(xi)], 17)
    fl = np.array([np.nan, np.inf, -np.inf, -1.5, 1e10, -1e10, 3e38], f32)
    c.node('Floor_nan', 'Floor', [fl], [np.floor(fl)], 17)
    # Round is half to even
    r = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 2.4999998, -0.50000006, 1e9 + 0.5, 7.5e6 + 0.5,
                  np.nan, np.inf], f32)
    c.node('Round_edges', 'Round', [r], [np.round(r)], 17)

    # transcendental functions over their whole range
    g = np.concatenate([np.linspace(-4, 4, 801), [1e-6, -1e-7, 1e-30, 0.0]]).astype(f32)
    c.node('Erf_grid', 'Erf', [g], [np.array([math.erf(v) for v in g.astype(np.float64)], f32)], 17)
    g16 = g.astype(f16)
    c.node('Erf_f16', 'Erf', [g16], [np.array([math.erf(v) for v in g16.astype(np.float64)], f16)], 17)
    u = np.concatenate([np.linspace(-1, 1, 201), [0.9999, -0.9999, 1e-5]]).astype(f32)
    c.node('Asin_grid', 'Asin', [u], [np.arcsin(u)], 17)
    c.node('Acos_grid', 'Acos', [u], [np.arccos(u)], 17)
    a = np.concatenate([np.linspace(-20, 20, 401), [1e20, -1e20, np.inf, -np.inf, 1e-5]]).astype(f32)
    c.node('Atan_grid', 'Atan', [a], [np.arctan(a)], 17)
    c.node('Asinh_grid', 'Asinh', [a[:401]], [np.arcsinh(a[:401])], 17)
    c.node('Atanh_grid', 'Atanh', [u[1:200]], [np.arctanh(u[1:200])], 17)
    sp = np.array([-100, -20, 0, 20, 100], f32)
    c.node('Softplus_big', 'Softplus', [sp], [np.log1p(np.exp(sp.astype(np.float64))).astype(f32)], 17)
    c.node('Mish', 'Mish', [x], [(x * np.tanh(np.log1p(np.exp(x)))).astype(f32)], 18)
    c.node('Celu', 'Celu', [x], [np.where(x > 0, x, 2.0 * (np.exp(x / 2.0) - 1)).astype(f32)], 12, alpha=2.0)
    alpha, gamma = 1.6732632423543772, 1.0507009873554805
    c.node('Selu', 'Selu', [x], [np.where(x > 0, gamma * x, gamma * alpha * (np.exp(x) - 1)).astype(f32)], 17)
    c.node('ThresholdedRelu', 'ThresholdedRelu', [x], [np.where(x > 0.5, x, 0).astype(f32)], 17, alpha=0.5)
    slope = np.array([[0.1], [0.2], [0.3], [0.4]], f32)
    c.node('PRelu_channel', 'PRelu', [x, slope], [np.where(x < 0, x * slope, x)], 17)

    # float16 through the unary ops (reference in float32, rounded to float16)
    h = x.astype(f16)
    hf = h.astype(f32)
    for op, fn in [('Sin', np.sin), ('Cos', np.cos), ('Ceil', np.ceil), ('Floor', np.floor),
                   ('Round', np.round), ('Atan', np.arctan), ('Softsign', lambda v: v / (1 + np.abs(v))),
                   ('Sign', np.sign)]:
        c.node(f'{op}_f16', op, [h], [fn(hf).astype(f16)], 17)
    c.node('HardSwish_f16', 'HardSwish', [h], [(hf * np.clip(hf / 6 + 0.5, 0, 1)).astype(f16)], 17)
    c.node('Clip_f16', 'Clip', [h, np.array(-0.5, f16), np.array(0.5, f16)],
           [np.clip(h, f16(-0.5), f16(0.5))], 17)
    c.node('LeakyRelu_f16', 'LeakyRelu', [h], [np.where(hf < 0, hf * 0.1, hf).astype(f16)], 17, alpha=0.1)

    # Mod (integer sign of the divisor, fmod), BitShift of uint64, Pow with integers and 0^0
    ai = np.array([-7, 7, -7, 7, 0, 5], np.int32)
    bi = np.array([3, -3, -3, 3, 4, -5], np.int32)
    c.node('Mod_int', 'Mod', [ai, bi], [np.mod(ai, bi)], 17)
    c.node('Mod_int_fmod', 'Mod', [ai, bi], [np.fmod(ai, bi)], 17, fmod=1)
    af = np.array([-7.5, 7.5, -7.5, 7.5, 0, 5], f32)
    bf = np.array([2, -2, -2, 2, 4, -5], f32)
    c.node('Mod_float_fmod', 'Mod', [af, bf], [np.fmod(af, bf)], 17, fmod=1)
    c.node('Mod_u8', 'Mod', [np.array([7, 200, 5], np.uint8), np.array([3, 7, 5], np.uint8)],
           [np.array([1, 4, 0], np.uint8)], 17)
    c.node('Mod_float_bcast', 'Mod', [x, np.array([0.3], f32)], [np.fmod(x, f32(0.3))], 17, fmod=1)
    su = np.array([1, 3, 0xFFFFFFFFFFFFFFFF, 5], np.uint64)
    sh = np.array([63, 1, 4, 2], np.uint64)
    c.node('BitShift_u64_left', 'BitShift', [su, sh], [np.left_shift(su, sh)], 17, direction='LEFT')
    c.node('BitShift_u64_right', 'BitShift', [su, sh], [np.right_shift(su, sh)], 17, direction='RIGHT')
    pb = np.array([-2, -3, 0, 2, 5], np.int64)
    pe = np.array([3, 2, 0, 10, 0], np.int64)
    c.node('Pow_int_neg_base', 'Pow', [pb, pe], [np.power(pb, pe)], 17)
    c.node('Pow_float_zero', 'Pow', [np.array([0, -2, 2.5], f32), np.array([0, 3, 2], f32)],
           [np.array([1, -8, 6.25], f32)], 17)
    c.node('Pow_f16', 'Pow', [np.array([1.5, -2, 3], f16), np.array([2, 3, 0.5], f16)],
           [np.array([2.25, -8, math.sqrt(3)], f16)], 17)

    # variadic and logical ops with broadcasting
    c.node('Mean3', 'Mean', [x, x[0], x[:, :1, :]], [((x + x[0] + x[:, :1, :]) / 3).astype(f32)], 17)
    c.node('Sum1', 'Sum', [x], [x], 17)
    x32 = rng.integers(-5, 6, (3, 4)).astype(np.int32)
    c.node('Max_int_bcast', 'Max', [x32, x32[:1], np.array([0], np.int32)],
           [np.maximum(np.maximum(x32, x32[:1]), 0)], 17)
    c.node('Min_u8', 'Min', [x32.astype(np.uint8), np.array([3], np.uint8)],
           [np.minimum(x32.astype(np.uint8), 3)], 17)
    c.node('Where_bcast', 'Where', [x > 0, x, np.array(0, f32)], [np.where(x > 0, x, 0).astype(f32)], 17)
    c.node('Where_int', 'Where', [x32 > 0, x32, -x32], [np.where(x32 > 0, x32, -x32)], 17)
    c.node('Not', 'Not', [x > 0], [~(x > 0)], 17)
    mask = np.array([True, False, True, True, False])
    c.node('And_bcast', 'And', [x > 0, mask], [(x > 0) & mask], 17)
    c.node('Equal_bool', 'Equal', [x > 0, x[0] > 0], [(x > 0) == (x[0] > 0)], 17)
    c.node('Equal_int', 'Equal', [x32, np.array([1], np.int32)], [x32 == 1], 17)


def index_and_linalg(c, rng):
    x32 = rng.integers(-5, 6, (3, 4)).astype(np.int32)
    c.node('ArgMax_int_last', 'ArgMax', [x32], [np.int64(3) - np.argmax(x32[:, ::-1], axis=1)], 17, axis=1,
           keepdims=0, select_last_index=1)
    c.node('ArgMin_int', 'ArgMin', [x32], [np.argmin(x32, axis=0)[None, :].astype(np.int64)], 17, axis=0)
    # CumSum: exclusive and reverse, negative axis; a long positive sum in float32
    ci = rng.integers(-9, 9, (3, 4)).astype(np.int32)
    c.node('CumSum_exclusive_reverse', 'CumSum', [ci, np.array(0, np.int32)], [cumsum(ci, 0, 1, 1)], 17,
           exclusive=1, reverse=1)
    c.node('CumSum_exclusive', 'CumSum', [ci, np.array(-1, np.int64)], [cumsum(ci, 1, 1, 0)], 17, exclusive=1)
    long = rng.random((3, 700)).astype(f32)
    c.node('CumSum_700', 'CumSum', [long, np.array(1, np.int64)],
           [np.cumsum(long.astype(np.float64), axis=1).astype(f32)], 17)
    # Einsum: traces, implicit outputs, ellipses, three operands, integers
    A = rng.standard_normal((3, 3)).astype(f32)
    B = rng.standard_normal((2, 3, 4)).astype(f32)
    C = rng.standard_normal((4, 5)).astype(f32)
    for name, eq, ins in [('diag', 'ii->i', [A]), ('trace', 'ii', [A]), ('implicit_matmul', 'ij,jk', [A, A]),
                          ('ellipsis_matmul', '...ij,jk->...ik', [B, C]),
                          ('three', 'bij,jk,kl->bil', [B, C, C.T.copy()]),
                          ('sum_all', 'ij->', [A]), ('outer', 'i,j->ij', [A[0], A[1]]),
                          ('ellipsis_both', '...j,j...->...', [rng.standard_normal((2, 3)).astype(f32),
                                                               rng.standard_normal((3, 2)).astype(f32)]),
                          ('implicit_transpose', 'ba', [A])]:
        c.node(f'Einsum_{name}', 'Einsum', ins, [np.einsum(eq, *ins).astype(f32)], 12, equation=eq)
    ei = rng.integers(-3, 4, (3, 4)).astype(np.int64)
    c.node('Einsum_int', 'Einsum', [ei, ei], [np.einsum('ij,kj->ik', ei, ei)], 12, equation='ij,kj->ik')
    # TopK: ties, smallest, axis 0, infinities, k = 0, a long axis
    t = np.array([[3, 1, 3, 2, 5, 5], [0, 0, 1, -1, 7, 2]], f32)
    for largest in [0, 1]:
        c.node(f'TopK_l{largest}', 'TopK', [t, np.array([3], np.int64)], list(topk(t, 3, 1, largest)), 17,
               largest=largest)
        c.node(f'TopK_axis0_l{largest}', 'TopK', [t, np.array([1], np.int64)],
               list(topk(t, 1, 0, largest)), 17, axis=0, largest=largest)
    ti = np.array([[np.inf, 1, -np.inf, 2, 2], [5, 4, 3, 2, 1]], np.float64)
    c.node('TopK_inf', 'TopK', [ti, np.array([5], np.int64)], list(topk(ti, 5, 1, 1)), 17)
    c.node('TopK_k0', 'TopK', [ti, np.array([0], np.int64)],
           [np.zeros((2, 0)), np.zeros((2, 0), np.int64)], 17)
    tl = rng.integers(0, 3000, (5000, 3)).astype(np.int64)
    for largest in [0, 1]:
        c.node(f'TopK_long_l{largest}', 'TopK', [tl, np.array([7], np.int64)],
               list(topk(tl, 7, 0, largest)), 17, axis=0, largest=largest)
    # Trilu, Det
    T = rng.integers(1, 9, (2, 3, 5)).astype(np.int64)
    c.node('Trilu_lower_neg', 'Trilu', [T, np.array(-1, np.int64)], [np.tril(T, -1)], 14, upper=0)
    c.node('Trilu_upper_2', 'Trilu', [T, np.array(2, np.int64)], [np.triu(T, 2)], 14)
    D = np.array([[0, 1, 2], [1, 0, 3], [4, -3, 8]], f32)
    c.node('Det_pivot', 'Det', [D], [np.array(np.linalg.det(D.astype(np.float64)), f32)], 11)
    D4 = rng.standard_normal((2, 3, 4, 4)).astype(f32)
    c.node('Det_batch', 'Det', [D4], [np.linalg.det(D4.astype(np.float64)).astype(f32)], 11)
    c.node('Det_singular', 'Det', [np.array([[1, 2], [2, 4]], f32)], [np.array(0, f32)], 11)
    D10 = rng.standard_normal((10, 10)).astype(f32)
    c.node('Det_10', 'Det', [D10], [np.array(np.linalg.det(D10.astype(np.float64)), f32)], 11)
    # Hardmax / LogSoftmax of opset 11 (the input coerced to 2-D at axis); Hardmax ties: the first
    H = rng.standard_normal((2, 3, 4)).astype(f32)
    c.node('Hardmax11', 'Hardmax', [H], [hardmax_v11(H, 1)], 11)
    c.node('LogSoftmax11', 'LogSoftmax', [H], [logsoftmax_v11(H, 1)], 11)
    c.node('LogSoftmax11_axis2', 'LogSoftmax', [H], [logsoftmax_v11(H, 2)], 11, axis=2)
    c.node('Hardmax_ties', 'Hardmax', [np.array([[1, 3, 3, 2], [0, 0, 0, 0]], f32)],
           [np.array([[0, 1, 0, 0], [1, 0, 0, 0]], f32)], 17)


def generate(c):
    rng = np.random.default_rng(0)
    reductions(c, rng)
    elementwise(c, rng)
    index_and_linalg(c, rng)


if __name__ == '__main__':
    common.main(generate, 'math')

"""Extra node cases for the tensor ops: Slice, Split, Pad, Gather*, Scatter*, OneHot, EyeLike,
ConstantOfShape, Range, Expand, Tile, Compress, ReverseSequence, NonZero, Unique, Shape, Size.

    /usr/bin/python3 tensor_ops.py OUT    # writes OUT/node/tensor_<case>/
"""
import numpy as np
from onnx import TensorProto, numpy_helper

import common


def ints(*v):
    return np.array(v, dtype=np.int64)


def scatter_elements(data, idx, upd, axis, reduction='none'):
    """ScatterElements as its spec writes it, one update at a time."""
    out = data.copy()
    for pos in np.ndindex(idx.shape):
        at = list(pos)
        at[axis] = idx[pos] if idx[pos] >= 0 else idx[pos] + data.shape[axis]
        at = tuple(at)
        if reduction == 'none': out[at] = upd[pos]
        elif reduction == 'add': out[at] += upd[pos]
        elif reduction == 'mul': out[at] *= upd[pos]
        elif reduction == 'max': out[at] = max(out[at], upd[pos])
        elif reduction == 'min': out[at] = min(out[at], upd[pos])
    return out


def scatter_nd(data, idx, upd, reduction='none'):
    """ScatterND as its spec writes it, one update slice at a time."""
    out = data.copy()
    for pos in np.ndindex(idx.shape[:-1]):
        at = tuple(int(v) for v in idx[pos])
        if reduction == 'none': out[at] = upd[pos]
        elif reduction == 'add': out[at] += upd[pos]
        elif reduction == 'mul': out[at] *= upd[pos]
        elif reduction == 'max': out[at] = np.maximum(out[at], upd[pos])
        elif reduction == 'min': out[at] = np.minimum(out[at], upd[pos])
    return out


def generate(c):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)

    # Slice: attributes (opset 9), clamped and negative starts/ends/steps, int32 inputs
    c.node('slice_v9', 'Slice', [x], [x[1:3, :, -4:-1]], 9, starts=[1, -4], ends=[3, -1], axes=[0, 2])
    c.node('slice_v9_noaxes', 'Slice', [x], [x[1:100, 2:3]], 9, starts=[1, 2], ends=[100, 3])
    c.node('slice_negstep_big', 'Slice', [x, ints(100, -1), ints(-100, -2**63), ints(2, 0), ints(-2, -1)],
           [x[::-1, :, ::-2]], 13)
    c.node('slice_step3', 'Slice', [x, ints(1, 5), ints(2**63 - 1, -2**63), ints(-1, 1), ints(3, -3)],
           [x[:, 5::-3, 1::3]], 13)
    c.node('slice_empty', 'Slice', [x, ints(3), ints(1), ints(0)], [x[3:1]], 13)
    # a negative step's start before the front clamps to 0 (the spec, and onnxruntime), so one
    # element is taken where numpy's x[:, -100:-200:-1] takes none
    c.node('slice_negstep_start_neg_oob', 'Slice', [x, ints(-100), ints(-200), ints(1), ints(-1)],
           [x[:, 0:1]], 13)
    c.node('slice_int32', 'Slice',
           [x, np.array([1], np.int32), np.array([-1], np.int32), np.array([-1], np.int32)],
           [x[..., 1:-1]], 13)

    # Split: attribute (opset 11), input (13), num_outputs (18, last part smaller), empty parts
    c.node('split_v11_attr', 'Split', [x], np.split(x, [2, 5], axis=2), 11, axis=2, split=[2, 3, 1])
    c.node('split_v11_equal', 'Split', [x], np.split(x, 2, axis=-1), 11, axis=-1)
    c.node('split_v13_input', 'Split', [x, ints(1, 4)], np.split(x, [1], axis=1), 13, axis=1)
    c.node('split_v18_uneven', 'Split', [x], [x[:, 0:2], x[:, 2:4], x[:, 4:5]], 18, axis=1, num_outputs=3)
    c.node('split_zero_part', 'Split', [x, ints(0, 6, 0)], [x[..., :0], x, x[..., 6:]], 13, axis=2)

    # Pad: attributes (opset 2), negative pads, edge pads larger than the dim, axes (18), wrap (19)
    def pads(lo, hi):
        return ints(*lo, *hi)
    c.node('pad_v2_reflect', 'Pad', [x], [np.pad(x, ((0, 0), (2, 3), (1, 0)), 'reflect')], 2,
           pads=[0, 2, 1, 0, 3, 0], mode='reflect')
    c.node('pad_v2_value', 'Pad', [x], [np.pad(x, ((1, 0), (0, 0), (0, 2)), constant_values=1.5)], 2,
           pads=[1, 0, 0, 0, 0, 2], value=1.5)
    c.node('pad_v11_neg', 'Pad', [x, pads([-1, 2, 0], [1, -2, -3]), np.array(3.0, np.float32)],
           [np.pad(x[1:, :3, :3], ((0, 1), (2, 0), (0, 0)), constant_values=3.0)], 11)
    c.node('pad_edge_big', 'Pad', [x, pads([0, 7, 0], [0, 0, 9])],
           [np.pad(x, ((0, 0), (7, 0), (0, 9)), 'edge')], 11, mode='edge')
    # the crops and the reflections are on opposite sides, so their order does not matter
    c.node('pad_reflect_neg', 'Pad', [x, pads([0, -1, 2], [0, 3, -2])],
           [np.pad(x[:, 1:, :4], ((0, 0), (0, 3), (2, 0)), 'reflect')], 11, mode='reflect')
    one_row = np.ones((1, 3), np.float32)
    c.node('pad_reflect_whole_dim', 'Pad', [one_row, ints(0, 2, 0, 1)],
           [np.pad(one_row, ((0, 0), (2, 1)), 'reflect')], 13, mode='reflect')
    xi = rng.integers(-5, 5, (3, 4)).astype(np.int32)
    c.node('pad_int_const', 'Pad', [xi, pads([1, 1], [0, 2]), np.array(7, np.int32)],
           [np.pad(xi, ((1, 0), (1, 2)), constant_values=7)], 13)
    c.node('pad_v18_axes', 'Pad', [x, ints(1, 2), np.array(0.5, np.float32), ints(-1)],
           [np.pad(x, ((0, 0), (0, 0), (1, 2)), constant_values=0.5)], 18)
    c.node('pad_omitted_value', 'Pad', [x, pads([1, 0, 0], [0, 0, 1]), None],
           [np.pad(x, ((1, 0), (0, 0), (0, 1)))], 13)
    c.node('pad_wrap19', 'Pad', [x, pads([0, 4, 1], [0, 2, 0])],
           [np.pad(x, ((0, 0), (4, 2), (1, 0)), 'wrap')], 19, mode='wrap')

    # Gather, GatherElements, GatherND: negative and scalar indices, bool and f16 data, batch_dims
    c.node('gather_scalar_idx', 'Gather', [x, np.array(-2, np.int64)], [x[:, -2]], 13, axis=1)
    idx = rng.integers(-6, 6, (2, 3)).astype(np.int32)
    c.node('gather_axis_neg', 'Gather', [x, idx], [np.take(x, idx, axis=-1)], 13, axis=-1)
    c.node('gather_empty_idx', 'Gather', [x, np.zeros((0,), np.int64)], [x[:, []]], 13, axis=1)
    xh = rng.standard_normal((5, 3)).astype(np.float16)
    c.node('gather_f16', 'Gather', [xh, ints(4, 0, -1)], [xh[[4, 0, -1]]], 13)
    emb = rng.standard_normal((1000, 64)).astype(np.float32)
    tok = rng.integers(0, 1000, (2, 50)).astype(np.int64)
    c.node('gather_embedding', 'Gather', [emb, tok], [emb[tok]], 13)
    ge_idx = rng.integers(-5, 5, (3, 2, 4)).astype(np.int64)
    c.node('gather_elements_small', 'GatherElements', [x, ge_idx],
           [np.take_along_axis(x[:3, :, :4], np.where(ge_idx < 0, ge_idx + 5, ge_idx), 1)], 13, axis=1)
    xb = rng.standard_normal((3, 4)) > 0
    bidx = np.array([[1, 0, 2, 2]], np.int64)
    c.node('gather_elements_bool', 'GatherElements', [xb, bidx], [np.take_along_axis(xb, bidx, 0)], 13,
           axis=0)
    nd_idx = np.array([[1, -2], [3, 0]], np.int64)
    c.node('gathernd_b0', 'GatherND', [x, nd_idx], [np.stack([x[1, -2], x[3, 0]])], 13)
    nd_full = np.array([[1, 2, 3], [0, 0, -1]], np.int64)
    c.node('gathernd_full', 'GatherND', [x, nd_full], [np.array([x[1, 2, 3], x[0, 0, -1]])], 13)
    nd_b1 = np.array([[[1], [0]], [[4], [2]], [[3], [3]], [[0], [1]]], np.int64)
    c.node('gathernd_b1', 'GatherND', [x, nd_b1], [np.stack([x[b, nd_b1[b, :, 0]] for b in range(4)])], 13,
           batch_dims=1)

    # ScatterElements / Scatter / ScatterND: every reduction, duplicate indices (with a
    # reduction; the spec leaves duplicates without one undefined), bool and int data
    d2 = rng.standard_normal((4, 5)).astype(np.float32)
    si = np.array([[1, 1, -1], [0, 0, 2]], np.int64)
    su = rng.standard_normal((2, 3)).astype(np.float32)
    for red, opset in [('mul', 16), ('add', 16), ('max', 18), ('min', 18)]:
        c.node(f'scatter_el_{red}', 'ScatterElements', [d2, si, su],
               [scatter_elements(d2, si, su, 1, red)], opset, axis=1, reduction=red)
    si0 = np.array([[3, 0, 1], [3, 0, 2]], np.int64)
    di = rng.integers(-9, 9, (4, 5)).astype(np.int64)
    sui = rng.integers(-3, 3, (2, 3)).astype(np.int64)
    c.node('scatter_el_int_mul', 'ScatterElements', [di, si0, sui],
           [scatter_elements(di, si0, sui, 0, 'mul')], 16, axis=0, reduction='mul')
    c.node('scatter_v9', 'Scatter', [d2, si, su], [scatter_elements(d2, si, su, 1)], 9, axis=1)
    db = rng.standard_normal((3, 4)) > 0
    bi, bu = np.array([[2, 0]], np.int64), np.array([[True, False]])
    c.node('scatter_el_bool', 'ScatterElements', [db, bi, bu], [scatter_elements(db, bi, bu, 0)], 13, axis=0)
    big = rng.standard_normal((64, 300)).astype(np.float32)
    big_i = rng.integers(0, 64, (10, 300)).astype(np.int64)
    big_u = rng.standard_normal((10, 300)).astype(np.float32)
    c.node('scatter_el_big_add', 'ScatterElements', [big, big_i, big_u],
           [scatter_elements(big, big_i, big_u, 0, 'add')], 16, axis=0, reduction='add')
    ndi = np.array([[1, 2], [1, 2], [3, 0]], np.int64)
    ndu = rng.standard_normal((3, 6)).astype(np.float32)
    for red, opset in [('add', 16), ('mul', 16), ('max', 18), ('min', 18)]:
        c.node(f'scatternd_{red}_dup', 'ScatterND', [x, ndi, ndu], [scatter_nd(x, ndi, ndu, red)], opset,
               reduction=red)
    c.node('scatternd_none_v11', 'ScatterND', [x, ndi[1:], ndu[1:]], [scatter_nd(x, ndi[1:], ndu[1:])], 11)

    # OneHot with float indices (one out of range: all off), EyeLike, ConstantOfShape, Range
    oi = np.array([[1.0, -1.0], [5.0, 0.0]], np.float32)
    oh = np.full((4, 2, 2), 2, np.int32)
    for p in np.ndindex(oi.shape):
        v = int(oi[p])
        v = v + 4 if v < 0 else v
        if 0 <= v < 4: oh[(v,) + p] = 9
    c.node('onehot_float', 'OneHot', [oi, np.array([4.0], np.float32), np.array([2, 9], np.int32)], [oh], 11,
           axis=0)
    c.node('eyelike_int_k', 'EyeLike', [np.zeros((3, 5), np.int32)], [np.eye(3, 5, k=-1, dtype=np.int64)], 9,
           k=-1, dtype=TensorProto.INT64)
    c.node('eyelike_bool', 'EyeLike', [np.zeros((4, 2), np.float32)], [np.eye(4, 2, k=1, dtype=bool)], 9,
           k=1, dtype=TensorProto.BOOL)
    big_int = np.array([2**40 + 1], np.int64)
    c.node('constantofshape_int64', 'ConstantOfShape', [ints(2, 3)], [np.full((2, 3), 2**40 + 1, np.int64)],
           9, value=numpy_helper.from_array(big_int))
    c.node('constantofshape_scalar', 'ConstantOfShape', [np.zeros((0,), np.int64)],
           [np.zeros((), np.float32)], 9)
    c.node('range_i64', 'Range', [np.array(10, np.int64), np.array(-3, np.int64), np.array(-4, np.int64)],
           [np.arange(10, -3, -4, dtype=np.int64)], 11)
    c.node('range_empty', 'Range', [np.float32(1.0), np.float32(0.5), np.float32(1.0)],
           [np.zeros((0,), np.float32)], 11)
    # the spec's formula, in float32: n = ceil((limit - start) / delta), out[i] = start + i * delta
    start, limit, delta = np.float32(1.0), np.float32(-2.0), np.float32(-0.3)
    n = int(np.ceil((limit - start) / delta))
    c.node('range_float_neg', 'Range', [start, limit, delta],
           [np.array([start + np.float32(i) * delta for i in range(n)], np.float32)], 11)

    # Expand, Tile, Compress, ReverseSequence, NonZero
    c.node('expand_lower_rank', 'Expand', [np.full((3, 1), 2, np.float32), ints(1)],
           [np.full((3, 1), 2, np.float32)], 13)
    e = rng.standard_normal((3, 1)).astype(np.float32)
    c.node('expand_ones', 'Expand', [e, ints(2, 1, 4)], [np.broadcast_to(e, (2, 3, 4)).copy()], 13)
    c.node('tile_int', 'Tile', [xi, ints(2, 3)], [np.tile(xi, (2, 3))], 13)
    c.node('tile_zero', 'Tile', [xi, ints(0, 2)], [np.tile(xi, (0, 2))], 13)
    c.node('compress_short', 'Compress', [x, np.array([0, 1, 1], bool)], [np.compress([0, 1, 1], x, axis=2)],
           11, axis=2)
    cond = rng.standard_normal(120) > 0
    c.node('compress_flat_many', 'Compress', [x, cond], [np.compress(cond, x)], 11)
    seq = rng.standard_normal((3, 5, 2)).astype(np.float32)
    lens = ints(5, 1, 3)
    rs = seq.copy()
    for b in range(3): rs[b, :lens[b]] = seq[b, :lens[b]][::-1]
    c.node('reversesequence_batch0', 'ReverseSequence', [seq, lens], [rs], 10, batch_axis=0, time_axis=1)
    nz = rng.standard_normal((2, 3, 4)) > 0.5
    c.node('nonzero_bool3d', 'NonZero', [nz], [np.array(np.nonzero(nz), np.int64)], 13)
    c.node('nonzero_none', 'NonZero', [np.zeros((2, 2), np.float32)], [np.zeros((2, 0), np.int64)], 13)

    # Unique: sorted along an axis, one output, first-occurrence order (sorted=0), empty input
    u = np.array([[1, 3, 1, 3], [2, 0, 2, 0], [5, 5, 5, 5]], np.int64)
    y, ix, inv, cnt = np.unique(u, True, True, True, axis=1)
    c.node('unique_axis1', 'Unique', [u], [y, ix.astype(np.int64), inv.astype(np.int64).reshape(-1),
                                           cnt.astype(np.int64)], 11, axis=1)
    c.node('unique_one_output', 'Unique', [u], [np.unique(u)], 11)
    uf = np.array([[2., 1.], [0., 0.], [2., 1.], [-1., 3.]], np.float32)
    y, ix, inv, cnt = np.unique(uf, True, True, True, axis=0)
    order = np.argsort(ix)  # the sorted uniques, by first occurrence
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    c.node('unique_unsorted_axis0', 'Unique', [uf],
           [uf[np.sort(ix)], np.sort(ix).astype(np.int64), rank[inv.reshape(-1)].astype(np.int64),
            cnt[order].astype(np.int64)], 11, axis=0, sorted=0)
    empty = np.zeros((0,), np.int64)
    c.node('unique_empty', 'Unique', [np.zeros((0,), np.float32)],
           [np.zeros((0,), np.float32), empty, empty, empty], 11)

    # Shape (with start/end), Size
    c.node('shape_v13', 'Shape', [x], [ints(4, 5, 6)], 13)
    c.node('shape_0d', 'Shape', [np.float32(1.0)], [np.zeros((0,), np.int64)], 15, start=-5)
    c.node('size_0d', 'Size', [np.float32(3.0)], [np.array(1, np.int64)], 13)


if __name__ == '__main__':
    common.main(generate, 'tensor')

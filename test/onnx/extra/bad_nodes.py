"""Malformed or unsupported nodes: each must fail to load or run with a lazyjit Error (not an
internal error, not a crash) whose message names the op and the attribute, value or shapes at fault.
Every case has an expected_error.txt with a piece of that message.

    /usr/bin/python3 bad_nodes.py OUT    # writes OUT/node/bad_<case>/
"""
import numpy as np
from onnx import TensorProto

import common


def ints(*v):
    return np.array(v, dtype=np.int64)


def generate(c):
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    x = f32(4, 5, 6)
    d2 = f32(4, 5)
    si = np.array([[1, 1, -1], [0, 0, 2]], np.int64)

    # attribute values an opset does not have, or that lazyjit does not implement
    c.error('scatter_elements_max_v16', 'ScatterElements', [d2, si, f32(2, 3)],
            "(ScatterElements, opset 16): attribute 'reduction' = 'max' is not supported", 16,
            axis=1, reduction='max')
    c.error('mod_float_fmod0', 'Mod', [d2, f32(4, 5)],
            "(Mod, opset 13): Mod of float32 needs the attribute fmod=1", 13)
    c.error('pad_wrap_v13', 'Pad', [x, ints(0, 1, 0, 0, 0, 1)],
            "(Pad, opset 13): attribute 'mode' = 'wrap' is not supported", 13, mode='wrap')
    c.error('clip_min_attribute_v13', 'Clip', [x],
            "(Clip, opset 13): attribute 'min' is not supported from opset 11",
            13, min=0.0)
    c.error('conv_auto_pad', 'Conv', [f32(1, 3, 5, 5), f32(2, 3, 3, 3)],
            "(Conv, opset 11): attribute 'auto_pad' = 'FOO' is not supported", 11, auto_pad='FOO')
    c.error('resize_mode', 'Resize', [f32(1, 3, 5, 5), None, np.array([1, 1, 2, 2], np.float32)],
            "(Resize, opset 13): attribute 'mode' = 'area' is not supported", 13, mode='area')
    c.error('lpnorm_p3', 'LpNormalization', [f32(1, 3, 5, 5)],
            "(LpNormalization, opset 1): attribute 'p' = 3", 1, p=3)
    c.error('lrn_size0', 'LRN', [f32(1, 3, 5, 5)], "(LRN, opset 13): attribute 'size' = 0 must be positive",
            13, size=0)
    c.error('maxpool_no_kernel', 'MaxPool', [f32(1, 3, 5, 5)],
            "(MaxPool, opset 12): the required attribute 'kernel_shape' is missing", 12)
    c.error('conv_pads_length', 'Conv', [f32(1, 3, 5, 5), f32(2, 3, 3, 3)],
            "(Conv, opset 11): attribute 'pads' [1, 1] needs 4 values, not 2", 11, pads=[1, 1])
    c.error('dropout_training', 'Dropout', [f32(1, 3, 5, 5), np.array(0.5, np.float32), np.array(True)],
            "(Dropout, opset 13): training-mode dropout", 13)
    c.error('gridsample_5d', 'GridSample', [f32(1, 1, 2, 2, 2), f32(1, 2, 2, 2, 3)],
            "(GridSample, opset 16): only 2-D sampling ([N, C, H, W] input) is supported", 16)
    c.error('gridsample_mode', 'GridSample', [f32(1, 1, 2, 2), f32(1, 2, 2, 2)],
            "(GridSample, opset 16): attribute 'mode' = 'foo' is not supported", 16, mode='foo')
    c.error('depthtospace_mode', 'DepthToSpace', [f32(1, 4, 2, 2)],
            "(DepthToSpace, opset 13): attribute 'mode' = 'XYZ' is not supported", 13,
            blocksize=2, mode='XYZ')
    c.error('cast_to_string', 'Cast', [x], "(Cast, opset 13): casting to STRING is not supported", 13,
            to=TensorProto.STRING)
    c.error('attribute_type', 'Softmax', [x], "(Softmax, opset 13): attribute 'axis' is FLOAT, not INT", 13,
            axis=1.5)
    c.error('unknown_op', 'FooBar', [x], "(FooBar, opset 13): op type FooBar is not supported", 13)

    # axes, indices and values out of range
    c.error('slice_step0', 'Slice', [x, ints(0), ints(1), ints(0), ints(0)],
            "(Slice, opset 13): steps [0] has a 0", 13)
    c.error('gather_axis', 'Gather', [x, ints(0)], "(Gather, opset 13): axis 3 is out of range for rank 3",
            13, axis=3)
    c.error('resize_both_scales_and_sizes', 'Resize',
            [f32(1, 3, 5, 5), None, np.array([1, 1, 2, 2], np.float32), ints(1, 3, 10, 10)],
            "(Resize, opset 13): exactly one of scales and sizes must be given", 13)
    c.error('resize_scales_length', 'Resize', [f32(1, 3, 5, 5), None, np.array([2, 2], np.float32)],
            "(Resize, opset 13): scales has 2 values for 4 axes", 13)
    c.error('resize_roi_length', 'Resize', [f32(1, 1, 2, 2), f32(3), np.array([1, 1, 2, 2], np.float32)],
            "(Resize, opset 13): roi has 3 values for 4 axes", 13,
            coordinate_transformation_mode='tf_crop_and_resize')
    for op, opset, extra, attrs in [('ArgMax', 13, [], dict(axis=-4)), ('Flatten', 13, [], dict(axis=4)),
                                    ('ReduceSum', 13, [ints(3)], {}), ('CumSum', 14, [ints(3)], {}),
                                    ('Concat', 13, [x], dict(axis=3))]:
        c.error(f'{op.lower()}_axis', op, [x] + extra,
                f"({op}, opset {opset}): axis {attrs.get('axis', 3)} is out of range for rank 3",
                opset, **attrs)
    c.error('softmax_axis', 'Softmax', [x],
            "(Softmax, opset 13): softmax: axis 5 is out of range for float32[4, 5, 6]", 13,
            axis=5)
    c.error('reshape_two_minus1', 'Reshape', [x, ints(-1, -1)],
            "(Reshape, opset 14): shape [-1, -1] has more than one -1", 14)
    c.error('transpose_perm', 'Transpose', [x],
            "(Transpose, opset 13): permute: (0, 0, 1) is not a permutation", 13,
            perm=[0, 0, 1])
    c.error('unsqueeze_repeated_axis', 'Unsqueeze', [x, ints(1, 1)],
            "(Unsqueeze, opset 13): axes [1, 1] repeat an axis", 13)
    c.error('squeeze_not_1', 'Squeeze', [x, ints(1)],
            "(Squeeze, opset 13): cannot squeeze axis 1 of [4, 5, 6]", 13)
    c.error('topk_k_too_big', 'TopK', [x, ints(9)],
            "(TopK, opset 11): k = 9 is out of range for axis 2 of [4, 5, 6]", 11,
            num_outputs=2)
    c.error('onehot_depth0', 'OneHot',
            [ints(0, 1), np.array([0.0], np.float32), np.array([0, 1], np.float32)],
            "(OneHot, opset 11): depth must be positive, not 0", 11)
    c.error('constantofshape_negative', 'ConstantOfShape', [ints(2, -3)],
            "(ConstantOfShape, opset 9): shape [2, -3] has a negative dim", 9)

    # shapes that do not fit
    c.error('expand', 'Expand', [x, ints(3, 5, 6)],
            "(Expand, opset 13): cannot broadcast the input [4, 5, 6] to shape [3, 5, 6]", 13)
    c.error('split_unequal', 'Split', [x],
            "(Split, opset 13): dim 1 (size 5) of [4, 5, 6] does not split into 2 equal parts",
            13, num_outputs=2, axis=1)
    c.error('split_sum', 'Split', [x, ints(2, 2)],
            "(Split, opset 13): split [2, 2] sums to 4, but dim 1 of [4, 5, 6] is 5",
            13, num_outputs=2, axis=1)
    c.error('slice_lengths', 'Slice', [x, ints(0, 1), ints(1)],
            "(Slice, opset 13): starts [0, 1], ends [1]", 13)
    c.error('pad_length', 'Pad', [x, ints(1, 1)],
            "(Pad, opset 13): pads [1, 1] must have 2 entries per padded axis", 13)
    c.error('tile_repeats_length', 'Tile', [x, ints(2, 2)],
            "(Tile, opset 13): repeats [2, 2] must have one entry per dim of the rank-3 input", 13)
    c.error('reshape_size', 'Reshape', [x, ints(7, 9)],
            "(Reshape, opset 14): reshape: cannot reshape float32[4, 5, 6] (120 elements) to [7, 9]", 14)
    c.error('expand_rank', 'Expand', [x, ints(2, 5)],
            "(Expand, opset 13): cannot broadcast the input [4, 5, 6] to shape [2, 5]", 13)
    c.error('add_broadcast', 'Add', [x, f32(4)],
            "(Add, opset 14): add: cannot broadcast float32[4, 5, 6] with float32[4]", 14)
    c.error('where_broadcast', 'Where', [x > 0, x, f32(3)],
            "(Where, opset 16): where: cannot broadcast bool[4, 5, 6] with float32[3]", 16)
    c.error('concat_dims', 'Concat', [x, f32(4, 6, 6)],
            "(Concat, opset 13): cat: cannot concatenate float32[4, 5, 6] and float32[4, 6, 6]", 13, axis=0)
    c.error('matmul_inner_dims', 'MatMul', [f32(3, 4), f32(5, 6)],
            "(MatMul, opset 13): matmul: float32[3, 4] and float32[5, 6] cannot be multiplied (4 != 5)", 13)
    c.error('gemm_inner_dims', 'Gemm', [f32(3, 4), f32(5, 6)],
            "(Gemm, opset 13): matmul: float32[3, 4] and float32[5, 6] cannot be multiplied (4 != 5)", 13)
    c.error('gather_elements_rank', 'GatherElements', [x, ints(0, 1)],
            "(GatherElements, opset 13): indices [2] do not fit data [4, 5, 6]", 13)
    c.error('scatternd_tuple_length', 'ScatterND', [x, ints(1, 2, 3, 4).reshape(1, 4), f32(1)],
            "(ScatterND, opset 13): index tuples of length 4 do not fit data [4, 5, 6]", 13)
    c.error('einsum_operand_rank', 'Einsum', [x],
            "(Einsum, opset 12): operand 0 ('ij') has rank 3, not 2", 12, equation='ij->i')
    c.error('det_not_square', 'Det', [f32(3, 4)],
            "(Det, opset 11): Det needs square matrices, not [3, 4]", 11)
    c.error('trilu_rank1', 'Trilu', [f32(3)], "(Trilu, opset 14): Trilu needs a rank >= 2 input, not 1", 14)
    c.error('batchnorm_scale_shape', 'BatchNormalization', [f32(2, 3, 4), f32(4), f32(3), f32(3), f32(3)],
            "(BatchNormalization, opset 15): mul: cannot broadcast float32[2, 3, 4] with float32[1, 4, 1]",
            15)
    c.error('lstm_hidden_size', 'LSTM', [f32(2, 1, 3), f32(1, 8, 3), f32(1, 8, 2)],
            "(LSTM, opset 14): hidden_size 3 does not match R [1, 8, 2]", 14, hidden_size=3)
    c.error('conv_group', 'Conv', [f32(1, 3, 5, 5), f32(2, 1, 3, 3)],
            "(Conv, opset 11): conv2d: input float32[1, 3, 5, 5] does not match the weights "
            "float32[2, 1, 3, 3] with groups=2", 11, group=2)
    c.error('conv_rank', 'Conv', [f32(3, 5), f32(2, 3, 3)],
            "(Conv, opset 11): the input must be [N, C, D1, ...] with 1 spatial dim(s) or more, not [3, 5]",
            11)
    c.error('conv_weights', 'Conv', [f32(1, 3, 5, 5), f32(2, 4, 3, 3)],
            "(Conv, opset 11): conv2d: input float32[1, 3, 5, 5] does not match the weights "
            "float32[2, 4, 3, 3]", 11)
    c.error('maxpool_kernel_too_big', 'MaxPool', [f32(1, 3, 5, 5)],
            "(MaxPool, opset 12): the window [7, 7] (dilations [1, 1]) does not fit the padded input [5, 5]",
            12, kernel_shape=[7, 7])
    c.error('depthtospace_blocks', 'DepthToSpace', [f32(1, 3, 5, 5)],
            "(DepthToSpace, opset 13): the input [1, 3, 5, 5] must be [N, C, H, W] with C a multiple of "
            "blocksize^2 = 4", 13, blocksize=2)
    c.error('nll_target_shape', 'NegativeLogLikelihoodLoss', [f32(2, 3), np.zeros((3,), np.int64)],
            "(NegativeLogLikelihoodLoss, opset 13): the target [3] (int64) must be integers of shape [2]", 13)
    c.error('maxunpool_indices_shape', 'MaxUnpool', [f32(1, 1, 2, 2), np.zeros((1, 1, 3, 3), np.int64)],
            "(MaxUnpool, opset 11): the indices [1, 1, 3, 3] (int64) must be integers of the input's shape "
            "[1, 1, 2, 2]", 11, kernel_shape=[2, 2])


if __name__ == '__main__':
    common.main(generate, 'bad')

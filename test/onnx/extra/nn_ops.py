"""Extra node cases for the neural-network ops: Conv and ConvTranspose (groups, dilations,
asymmetric and automatic pads, 1-D and 3-D), the pools (ceil mode, dilations, indices), Resize and
Upsample, the normalizations, RoiAlign, losses, DepthToSpace.

References: numpy where it is short, otherwise PyTorch and torchvision (the same arithmetic, with
the ONNX attributes translated to theirs).

    /usr/bin/python3 nn_ops.py OUT    # writes OUT/node/nn_<case>/
"""
import math

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

import common


def T(a):
    return torch.from_numpy(np.ascontiguousarray(a))


def conv_transpose(x, w, b, strides, dilations, pad_begin, pad_end, output_padding, group):
    """ConvTranspose by scattering every input element through the kernel, then cropping the
    pads (a negative pad adds zeros at that end)."""
    N, C = x.shape[:2]
    nd = x.ndim - 2
    Cg, Mg = C // group, w.shape[1]
    k = w.shape[2:]
    full = [strides[i] * (x.shape[2 + i] - 1) + (k[i] - 1) * dilations[i] + 1 for i in range(nd)]
    yf = np.zeros((N, Mg * group, *full), np.float64)
    for idx in np.ndindex(*x.shape[2:]):
        for kk in np.ndindex(*k):
            pos = tuple(idx[i] * strides[i] + kk[i] * dilations[i] for i in range(nd))
            for g in range(group):
                xs = x[(slice(None), slice(g * Cg, (g + 1) * Cg)) + idx]
                ws = w[(slice(g * Cg, (g + 1) * Cg), slice(None)) + kk]
                yf[(slice(None), slice(g * Mg, (g + 1) * Mg)) + pos] += xs @ ws
    out = [full[i] + output_padding[i] - pad_begin[i] - pad_end[i] for i in range(nd)]
    y = np.zeros((N, Mg * group, *out))
    for o in np.ndindex(*out):
        src = tuple(o[i] + pad_begin[i] for i in range(nd))
        if all(0 <= src[i] < full[i] for i in range(nd)):
            y[(slice(None), slice(None)) + o] = yf[(slice(None), slice(None)) + src]
    if b is not None: y += b.reshape(1, -1, *([1] * nd))
    return y.astype(np.float32)


def lrn(x, size, alpha, beta, bias):
    """LRN as its spec writes it: the sum of squares over channels
    [c - floor((size-1)/2), c + ceil((size-1)/2)]."""
    C = x.shape[1]
    sq = np.zeros(x.shape, np.float64)
    for c in range(C):
        lo, hi = max(0, c - (size - 1) // 2), min(C - 1, c + math.ceil((size - 1) / 2))
        sq[:, c] = (x[:, lo:hi + 1].astype(np.float64) ** 2).sum(1)
    return (x / (bias + alpha / size * sq) ** beta).astype(np.float32)


def resize_crop_nearest(x, roi, sizes, extrapolation):
    """Resize, tf_crop_and_resize + nearest (round_prefer_floor), as its spec writes it."""
    out = np.zeros(sizes, np.float32)
    H, W = x.shape[2:]
    for i in range(sizes[2]):
        for j in range(sizes[3]):
            yy = roi[2] * (H - 1) + i * (roi[6] - roi[2]) * (H - 1) / (sizes[2] - 1)
            xx = roi[3] * (W - 1) + j * (roi[7] - roi[3]) * (W - 1) / (sizes[3] - 1)
            if yy < 0 or yy > H - 1 or xx < 0 or xx > W - 1:
                out[0, 0, i, j] = extrapolation
            else:
                iy = int(np.floor(yy)) + (1 if yy - np.floor(yy) > 0.5 else 0)
                ix = int(np.floor(xx)) + (1 if xx - np.floor(xx) > 0.5 else 0)
                out[0, 0, i, j] = x[0, 0, min(iy, H - 1), min(ix, W - 1)]
    return out


def convs(c, f32):
    x, w, b = f32(2, 4, 9, 8), f32(6, 2, 3, 2), f32(6)
    y = F.conv2d(F.pad(T(x), (0, 1, 1, 2)), T(w), T(b), stride=(2, 1), dilation=(2, 1), groups=2).numpy()
    c.node('conv_group_asym', 'Conv', [x, w, b], [y], 11, group=2, strides=[2, 1], dilations=[2, 1],
           pads=[1, 0, 2, 1])
    # SAME pads: out = ceil(in / stride), the odd unit of padding at the end (UPPER) or start (LOWER)
    x, w = f32(1, 3, 10), f32(2, 3, 4)
    y = F.conv1d(F.pad(T(x), (1, 1)), T(w), stride=2).numpy()
    c.node('conv_1d_same_upper', 'Conv', [x, w], [y], 11, auto_pad='SAME_UPPER', strides=[2])
    x = f32(1, 3, 9)
    y = F.conv1d(F.pad(T(x), (2, 1)), T(w), stride=2).numpy()
    c.node('conv_1d_same_lower', 'Conv', [x, w], [y], 11, auto_pad='SAME_LOWER', strides=[2])
    x, w, b = f32(1, 2, 5, 6, 4), f32(3, 2, 3, 3, 2), f32(3)
    y = F.conv3d(T(x), T(w), T(b), padding=(1, 0, 1), stride=(1, 2, 1)).numpy()
    c.node('conv_3d', 'Conv', [x, w, b], [y], 11, pads=[1, 0, 1, 1, 0, 1], strides=[1, 2, 1])
    x, w = f32(1, 2, 7, 7), f32(4, 2, 3, 3)
    c.node('conv_valid_v1', 'Conv', [x, w], [F.conv2d(T(x), T(w)).numpy()], 1, auto_pad='VALID',
           kernel_shape=[3, 3])

    x, w, b = f32(2, 4, 3, 4), f32(4, 3, 3, 2), f32(6)
    y = conv_transpose(x, w, b, [2, 3], [2, 1], [1, 0], [0, 1], [1, 0], 2)
    c.node('convtranspose_group_asym', 'ConvTranspose', [x, w, b], [y], 11, group=2, strides=[2, 3],
           dilations=[2, 1], pads=[1, 0, 0, 1], output_padding=[1, 0])
    # SAME_LOWER: output 10, full 11, the one unit of padding at the start
    x, w = f32(1, 2, 5), f32(2, 1, 3)
    y = conv_transpose(x, w, None, [2], [1], [1], [0], [0], 1)
    c.node('convtranspose_1d_same_lower', 'ConvTranspose', [x, w], [y], 11, auto_pad='SAME_LOWER',
           strides=[2])
    # output_shape 7 from a full output of 6: total padding -1, which the spec's formula (floor
    # division) and ONNX Runtime both turn into one row of zeros at the end
    x, w = f32(1, 2, 3, 3), f32(2, 3, 2, 2)
    y = conv_transpose(x, w, None, [2, 2], [1, 1], [0, 0], [-1, -1], [0, 0], 1)
    c.node('convtranspose_outshape_bigger', 'ConvTranspose', [x, w], [y], 11, strides=[2, 2],
           output_shape=[7, 7])


def pools(c, f32, rng):
    # ceil mode as the spec now states it: a window starting in the right padding is dropped
    x = f32(2, 3, 9, 10)
    y = F.max_pool2d(T(x), (3, 2), stride=(2, 3), padding=(1, 1), dilation=(2, 1), ceil_mode=True).numpy()
    c.node('maxpool_ceil_dil_pad', 'MaxPool', [x], [y], 12, kernel_shape=[3, 2], strides=[2, 3],
           pads=[1, 1, 1, 1], dilations=[2, 1], ceil_mode=1)
    # Indices count over the whole flattened input, N and C included
    x1 = x[:, :, 0, :]
    y, i = F.max_pool1d(T(x1), 3, stride=2, padding=1, return_indices=True)
    i = i.numpy() + np.arange(6).reshape(2, 3, 1) * 10
    c.node('maxpool_1d_indices', 'MaxPool', [x1], [y.numpy(), i.astype(np.int64)], 12, kernel_shape=[3],
           strides=[2], pads=[1, 1])
    x3 = f32(1, 2, 4, 5, 6)
    y, i = F.max_pool3d(T(x3), (2, 3, 2), stride=(2, 2, 2), padding=(1, 1, 0), return_indices=True)
    i = i.numpy() + np.arange(2).reshape(1, 2, 1, 1, 1) * 120
    c.node('maxpool_3d_indices', 'MaxPool', [x3], [y.numpy(), i.astype(np.int64)], 12, kernel_shape=[2, 3, 2],
           strides=[2, 2, 2], pads=[1, 1, 0, 1, 1, 0])
    xi = rng.integers(-100, 100, (1, 2, 5, 5)).astype(np.int32)
    y = F.max_pool2d(T(xi.astype(np.float32)), 3, stride=2, padding=1).numpy().astype(np.int32)
    c.node('maxpool_int32_pad', 'MaxPool', [xi], [y], 12, kernel_shape=[3, 3], strides=[2, 2],
           pads=[1, 1, 1, 1])
    y = F.avg_pool2d(T(x), (3, 3), stride=2, padding=1, ceil_mode=True, count_include_pad=True).numpy()
    c.node('avgpool_ceil_include', 'AveragePool', [x], [y], 11, kernel_shape=[3, 3], strides=[2, 2],
           pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)
    y = F.avg_pool2d(T(x), (3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True,
                     count_include_pad=False).numpy()
    c.node('avgpool_ceil_exclude', 'AveragePool', [x], [y], 11, kernel_shape=[3, 2], strides=[2, 3],
           pads=[1, 1, 1, 1], ceil_mode=1)
    x5 = f32(1, 1, 5, 5)
    y = F.avg_pool2d(T(x5), 2, stride=2, padding=1, ceil_mode=True, count_include_pad=True).numpy()
    c.node('avgpool_ceil_lastwindow', 'AveragePool', [x5], [y], 11, kernel_shape=[2, 2], strides=[2, 2],
           pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1)
    xa = np.abs(x)
    y = F.lp_pool2d(T(xa), 3, (3, 2), stride=(2, 1)).numpy()
    c.node('lppool_p3', 'LpPool', [xa], [y], 11, kernel_shape=[3, 2], strides=[2, 1], p=3)
    xb = np.abs(f32(1, 2, 6, 8))
    y = np.sqrt((xb.astype(np.float64) ** 2).reshape(1, 2, 3, 2, 4, 2).sum(axis=(3, 5))).astype(np.float32)
    c.node('lppool_v1_float_p', 'LpPool', [xb], [y], 1, kernel_shape=[2, 2], strides=[2, 2], p=2.0)
    y = np.sqrt((x.astype(np.float64) ** 2).sum(axis=(2, 3), keepdims=True)).astype(np.float32)
    c.node('globallppool', 'GlobalLpPool', [x], [y], 2)


def resizes(c, f32, rng):
    x = f32(1, 2, 5, 7)
    sizes = lambda *s: np.array(s, np.int64)
    scales = lambda *s: np.array(s, np.float32)
    y = F.interpolate(T(x), size=(8, 3), mode='bilinear', align_corners=False).numpy()
    c.node('resize_bilinear_sizes', 'Resize', [x, None, None, sizes(1, 2, 8, 3)], [y], 13, mode='linear',
           coordinate_transformation_mode='pytorch_half_pixel')
    y = F.interpolate(T(x), size=(9, 4), mode='bicubic', align_corners=True).numpy()
    c.node('resize_bicubic_align_corners', 'Resize', [x, None, None, sizes(1, 2, 9, 4)], [y], 13,
           mode='cubic', coordinate_transformation_mode='align_corners')
    y = F.interpolate(T(x), size=(9, 4), mode='nearest').numpy()
    c.node('resize_nearest_floor_v11', 'Resize', [x, scales(), scales(), sizes(1, 2, 9, 4)], [y], 11,
           mode='nearest', coordinate_transformation_mode='asymmetric', nearest_mode='floor')
    x5 = f32(1, 2, 3, 4, 5)
    y = F.interpolate(T(x5), scale_factor=(2.0, 0.5, 1.5), mode='trilinear', align_corners=False,
                      recompute_scale_factor=False).numpy()
    c.node('resize_trilinear_scales', 'Resize', [x5, None, scales(1, 1, 2, 0.5, 1.5)], [y], 13, mode='linear')
    # opset 10 Resize and Upsample: nearest is x_in = floor(x_out / scale) (Upsample's example)
    y = np.repeat(np.repeat(x, 2, axis=2), 3, axis=3)
    c.node('resize_v10', 'Resize', [x, scales(1, 1, 2, 3)], [y], 10, mode='nearest')
    c.node('upsample_v7', 'Upsample', [x], [y], 7, mode='nearest', scales=[1.0, 1.0, 2.0, 3.0])
    xi = rng.integers(0, 100, (1, 1, 3, 3)).astype(np.int64)
    y = np.repeat(np.repeat(xi, 2, axis=2), 2, axis=3)
    c.node('resize_nearest_int64', 'Resize', [xi, None, scales(1, 1, 2, 2)], [y], 13, mode='nearest',
           coordinate_transformation_mode='asymmetric', nearest_mode='floor')
    x = f32(1, 2, 6, 8)
    y = x[:, :, ::2, ::4]
    c.node('resize_nearest_down', 'Resize', [x, None, scales(1, 1, 0.5, 0.25)], [y], 13, mode='nearest',
           coordinate_transformation_mode='asymmetric', nearest_mode='floor')
    # half_pixel + round_prefer_floor with integer scales repeats each element
    y = x.repeat(2, axis=2).repeat(3, axis=3)
    c.node('resize_nearest_up_half_pixel', 'Resize', [x, None, scales(1, 1, 2, 3)], [y], 13, mode='nearest')
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    roi = np.array([0, 0, -0.2, 0.3, 1, 1, 0.9, 1.4], np.float32)
    y = resize_crop_nearest(x, roi.astype(np.float64), [1, 1, 3, 5], 7.0)
    c.node('resize_crop_nearest', 'Resize', [x, roi, None, sizes(1, 1, 3, 5)], [y], 13, mode='nearest',
           coordinate_transformation_mode='tf_crop_and_resize', extrapolation_value=7.0)
    y = x[:, :, :, [0, 0, 1, 1, 2, 2, 3, 3]]
    c.node('resize_v18_axes', 'Resize', [x, None, scales(2)], [y], 18, mode='nearest', axes=[3],
           coordinate_transformation_mode='asymmetric', nearest_mode='floor')
    # not_larger: the scale is min(4/4, 9/4) = 1 on both axes
    c.node('resize_v18_keep_ratio', 'Resize', [x, None, None, sizes(4, 9)], [x], 18, mode='nearest',
           axes=[2, 3], keep_aspect_ratio_policy='not_larger')


def norms(c, f32, rng):
    x = f32(2, 3, 4)
    s, bb, m, v = f32(3, 4), f32(3, 4), f32(3, 4), np.abs(f32(3, 4))
    y = ((x - m) / np.sqrt(v + 1e-5) * s + bb).astype(np.float32)
    c.node('batchnorm_spatial0', 'BatchNormalization', [x, s, bb, m, v], [y], 7, spatial=0)
    s, bb = f32(3), f32(3)
    x64 = x.astype(np.float64)
    mean, var = x64.mean(-1, keepdims=True), x64.var(-1, keepdims=True)
    y = ((x64 - mean) / np.sqrt(var + 1e-5) * s[:, None] + bb[:, None]).astype(np.float32)
    c.node('instancenorm_1d', 'InstanceNormalization', [x, s, bb], [y], 6)
    x = f32(2, 7, 3, 2)
    c.node('lrn_even_size', 'LRN', [x], [lrn(x, 4, 0.5, 0.7, 1.5)], 13, size=4, alpha=0.5, beta=0.7, bias=1.5)
    c.node('lrn_odd_size', 'LRN', [x], [lrn(x, 3, 0.9, 0.75, 1.0)], 13, size=3, alpha=0.9)
    c.node('lpnorm_p1', 'LpNormalization', [x],
           [(x / np.abs(x).sum(axis=1, keepdims=True)).astype(np.float32)], 1,
           axis=1, p=1)
    c.node('lpnorm_p2', 'LpNormalization', [x],
           [(x / np.sqrt((x.astype(np.float64) ** 2).sum(-1, keepdims=True)))
                                                  .astype(np.float32)], 1)


def others(c, f32, rng):
    x = f32(3, 5).astype(np.float64)
    c.node('dropout_v7_mask', 'Dropout', [x], [x, np.ones_like(x)], 7, ratio=0.3)
    c.node('dropout_v12_mask', 'Dropout', [x], [x, np.ones(x.shape, bool)], 12)
    # SoftmaxCrossEntropyLoss in float64 with int32 targets: mean of -log_softmax at the target
    x = rng.standard_normal((3, 5, 2)).astype(np.float64)
    t = rng.integers(0, 5, (3, 2)).astype(np.int32)
    lp = x - x.max(1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(1, keepdims=True))
    loss = -np.take_along_axis(lp, t[:, None, :].astype(np.int64), 1).mean()
    c.node('softmaxcrossentropy_f64_int32', 'SoftmaxCrossEntropyLoss', [x, t], [np.array(loss), lp], 13)
    # DepthToSpace-1 is DCR
    x = f32(1, 8, 2, 3)
    y = x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 3, 4, 1, 5, 2).reshape(1, 2, 4, 6)
    c.node('depthtospace_v1', 'DepthToSpace', [x], [y], 1, blocksize=2)
    # RoiAlign (avg): half_pixel is torchvision's aligned=True, output_half_pixel aligned=False;
    # positive data, so that no average cancels to near 0 (float32 summation order)
    x = rng.random((2, 3, 10, 12)).astype(np.float32) + 0.5
    rois = np.array([[0.5, 1.2, 7.3, 8.1], [2, 2, 3, 3], [-1, 0.5, 11.5, 9.7], [3.3, 4.4, 3.5, 4.6]],
                    np.float32)
    bi = np.array([0, 1, 1, 0], np.int64)
    boxes = torch.cat([T(bi).float().unsqueeze(1), T(rois)], 1)
    for aligned, mode, sr in [(True, 'half_pixel', 2), (False, 'output_half_pixel', 0),
                              (True, 'half_pixel', 0)]:
        y = torchvision.ops.roi_align(T(x), boxes, (3, 4), spatial_scale=0.8, sampling_ratio=sr,
                                      aligned=aligned).numpy()
        c.node(f'roialign_{mode}_{sr}', 'RoiAlign', [x, rois, bi], [y], 16, output_height=3, output_width=4,
               spatial_scale=0.8, sampling_ratio=sr, coordinate_transformation_mode=mode)
    y = torchvision.ops.roi_align(T(x), boxes, (2, 2), spatial_scale=0.5, sampling_ratio=2,
                                  aligned=False).numpy()
    c.node('roialign_v10', 'RoiAlign', [x, rois, bi], [y], 10, output_height=2, output_width=2,
           spatial_scale=0.5, sampling_ratio=2)


def generate(c):
    rng = np.random.default_rng(0)
    f32 = lambda *s: rng.standard_normal(s).astype(np.float32)
    convs(c, f32)
    pools(c, f32, rng)
    resizes(c, f32, rng)
    norms(c, f32, rng)
    others(c, f32, rng)


if __name__ == '__main__':
    common.main(generate, 'nn')

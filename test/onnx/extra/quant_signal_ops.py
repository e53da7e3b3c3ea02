"""Extra node cases for quantization (QuantizeLinear, DequantizeLinear, MatMulInteger,
ConvInteger, QLinearConv), signal processing (DFT, STFT, HannWindow) and NonMaxSuppression.

    /usr/bin/python3 quant_signal_ops.py OUT    # writes OUT/node/qs_<case>/
"""
import numpy as np
from onnx import TensorProto, helper

import common


def conv2d_int(x, w, strides, dilations, group):
    """A direct 2-D convolution (no padding) in int64: exact for the integer convolutions."""
    N, C, H, W = x.shape
    M, Cg, kh, kw = w.shape
    oh = (H - ((kh - 1) * dilations[0] + 1)) // strides[0] + 1
    ow = (W - ((kw - 1) * dilations[1] + 1)) // strides[1] + 1
    y = np.zeros((N, M, oh, ow), np.int64)
    Mg = M // group
    for m in range(M):
        g = m // Mg
        for i in range(kh):
            for j in range(kw):
                patch = x[:, g * Cg:(g + 1) * Cg,
                          i * dilations[0]:i * dilations[0] + (oh - 1) * strides[0] + 1:strides[0],
                          j * dilations[1]:j * dilations[1] + (ow - 1) * strides[1] + 1:strides[1]]
                y[:, m] += np.einsum('nchw,c->nhw', patch, w[m, :, i, j])
    return y


def quantization(c, rng, rnd):
    # QuantizeLinear rounds half to even, then saturates
    x = np.array([-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 300, -300, 0.49999997], np.float32)
    c.node('quantize_int8', 'QuantizeLinear', [x, np.float32(1), np.int8(-1)],
           [np.clip(np.rint(x) - 1, -128, 127).astype(np.int8)], 13)
    c.node('quantize_no_zero_point', 'QuantizeLinear', [x, np.float32(0.5)],
           [np.clip(np.rint(x / np.float32(0.5)), 0, 255).astype(np.uint8)], 13)
    xq = rnd(2, 3, 4) * 100
    s = np.array([0.7, 1.3, 2.1, 0.9], np.float32)
    z = np.array([-3, 0, 5, 100], np.int8)
    c.node('quantize_axis_last', 'QuantizeLinear', [xq, s, z],
           [np.clip(np.rint(xq / s) + z, -128, 127).astype(np.int8)],
           13, axis=-1)
    xi = rng.integers(-128, 127, (2, 3, 4)).astype(np.int8)
    c.node('dequantize_axis_last', 'DequantizeLinear', [xi, s, z],
           [((xi.astype(np.float32) - z) * s).astype(np.float32)],
           13, axis=2)
    xi32 = rng.integers(-1000, 1000, (5,)).astype(np.int32)
    c.node('dequantize_int32', 'DequantizeLinear', [xi32, np.float32(0.25)],
           [(xi32 * np.float32(0.25)).astype(np.float32)], 13)
    # MatMulInteger with a per-row zero point for A ([M]) and a per-column one for B ([N])
    A = rng.integers(0, 255, (2, 4, 3)).astype(np.uint8)
    Bm = rng.integers(-128, 127, (3, 5)).astype(np.int8)
    az = np.array([1, 2, 3, 4], np.uint8)
    bz = rng.integers(-5, 5, (5,)).astype(np.int8)
    c.node('matmulinteger_rows', 'MatMulInteger', [A, Bm, az, bz],
           [((A.astype(np.int32) - az[:, None]) @ (Bm.astype(np.int32) - bz)).astype(np.int32)], 10)

    # ConvInteger / QLinearConv: strides, asymmetric pads, dilations, groups, per-channel w zero point
    x = rng.integers(0, 255, (1, 4, 7, 6)).astype(np.uint8)
    w = rng.integers(0, 255, (6, 2, 3, 2)).astype(np.uint8)
    xz, wz = np.uint8(100), rng.integers(0, 255, (6,)).astype(np.uint8)
    pads = [1, 0, 2, 1]  # (H begin, W begin, H end, W end); pads hold x's zero point, i.e. 0 after the shift
    xp = np.pad(x.astype(np.int64) - 100, [(0, 0), (0, 0), (1, 2), (0, 1)])
    acc = conv2d_int(xp, w.astype(np.int64) - wz[:, None, None, None], (2, 1), (1, 2), 2)
    c.node('convinteger_full', 'ConvInteger', [x, w, xz, wz], [acc.astype(np.int32)], 10, pads=pads,
           strides=[2, 1], dilations=[1, 2], group=2)
    xs, ws = np.float32(0.02), (rng.random(6) * 0.01 + 0.001).astype(np.float32)
    ys, yz = np.float32(3.7), np.int8(-7)
    bias = rng.integers(-5000, 5000, (6,)).astype(np.int32)
    scale = np.float64(xs) * ws.astype(np.float64) / np.float64(ys)  # per output channel
    real = (acc + bias[None, :, None, None]) * scale[None, :, None, None]
    yq = np.clip(np.rint(real) + yz, -128, 127).astype(np.int8)
    c.node('qlinearconv_full', 'QLinearConv', [x, xs, xz, w, ws, wz, ys, yz, bias], [yq], 10, pads=pads,
           strides=[2, 1], dilations=[1, 2], group=2)
    x = rng.integers(0, 255, (1, 1, 5, 5)).astype(np.uint8)
    w = rng.integers(0, 255, (1, 1, 2, 2)).astype(np.uint8)
    # SAME_LOWER with an even kernel: the one unit of padding goes at the start
    acc = conv2d_int(np.pad(x.astype(np.int64), [(0, 0), (0, 0), (1, 0), (1, 0)]), w.astype(np.int64),
                     (1, 1), (1, 1), 1)
    c.node('convinteger_same_lower', 'ConvInteger', [x, w], [acc.astype(np.int32)], 10, auto_pad='SAME_LOWER')


def complex_pairs(z):
    return np.stack([z.real, z.imag], -1).astype(np.float32)


def signal(c, rnd):
    x = rnd(2, 7, 3, 1)  # real signals along axis 1
    for length, onesided in [(None, 1), (9, 0), (5, 1)]:
        n = length or 7
        y = np.fft.fft(x[..., 0], n=n, axis=1)  # zero-padded or truncated to dft_length
        if onesided: y = y[:, :n // 2 + 1]
        ins = [x] if length is None else [x, np.int64(length)]
        c.node(f'dft_length{length}_onesided{onesided}', 'DFT', ins, [complex_pairs(y)], 17, axis=1,
               onesided=onesided)
    xc = rnd(2, 3, 6, 2)
    zc = xc[..., 0] + 1j * xc[..., 1]
    c.node('dft_complex_axis_neg', 'DFT', [xc], [complex_pairs(np.fft.fft(zc, axis=-1))], 17, axis=-2)
    c.node('idft_complex', 'DFT', [xc], [complex_pairs(np.fft.ifft(zc, axis=1))], 17, axis=1, inverse=1)
    # STFT of a complex signal, two-sided, with a window: frames of 8 every 3 samples
    sig, win = rnd(2, 40, 2), rnd(8)
    zs = sig[..., 0] + 1j * sig[..., 1]
    frames = 1 + (40 - 8) // 3
    out = np.stack([np.fft.fft(zs[:, f * 3:f * 3 + 8] * win, axis=-1) for f in range(frames)], 1)
    c.node('stft_complex', 'STFT', [sig, np.int64(3), win], [complex_pairs(out)], 17, onesided=0)
    c.node('hannwindow_double', 'HannWindow', [np.int64(7)],
           [(0.5 - 0.5 * np.cos(2 * np.pi * np.arange(7) / 7)).astype(np.float64)], 17,
           output_datatype=TensorProto.DOUBLE)


def nms(boxes, scores, max_out, iou_threshold, score_threshold, center):
    """NonMaxSuppression: per batch and class, boxes by decreasing score (above the threshold),
    each kept when its IoU with every kept box is <= iou_threshold, at most max_out of them."""
    res = []
    for b in range(boxes.shape[0]):
        def corners(i):
            bx = boxes[b, i]
            if center: return (bx[1] - bx[3] / 2, bx[0] - bx[2] / 2, bx[1] + bx[3] / 2, bx[0] + bx[2] / 2)
            return (min(bx[0], bx[2]), min(bx[1], bx[3]), max(bx[0], bx[2]), max(bx[1], bx[3]))

        def iou(i, j):
            p, q = corners(i), corners(j)
            ih = max(0, min(p[2], q[2]) - max(p[0], q[0]))
            iw = max(0, min(p[3], q[3]) - max(p[1], q[1]))
            inter = ih * iw
            union = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter
            return inter / union if union > 0 else 0
        for cl in range(scores.shape[1]):
            s = scores[b, cl]
            order = [i for i in np.argsort(-s, kind='stable')
                     if score_threshold is None or s[i] > score_threshold]
            kept = []
            for i in order:
                if len(kept) >= max_out: break
                if all(iou(i, k) <= iou_threshold for k in kept): kept.append(i)
            res += [[b, cl, k] for k in kept]
    return np.array(res, np.int64).reshape(-1, 3)


def non_max_suppression(c, rng):
    boxes = (rng.random((2, 12, 4)) * 10).astype(np.float32)
    boxes[..., 2:] += boxes[..., :2]
    scores = rng.random((2, 3, 12)).astype(np.float32)
    c.node('nms_score_threshold', 'NonMaxSuppression',
           [boxes, scores, np.int64(4), np.float32(0.3), np.float32(0.2)],
           [nms(boxes, scores, 4, 0.3, 0.2, False)], 11)
    cb = (rng.random((1, 10, 4)) * 5).astype(np.float32)
    cs = scores[:1, :, :10].copy()
    c.node('nms_center_point_box', 'NonMaxSuppression', [cb, cs, np.int64(10), np.float32(0.1)],
           [nms(cb, cs, 10, 0.1, None, True)], 11, center_point_box=1)
    # max_output_boxes_per_class defaults to 0: no output
    c.node('nms_no_max', 'NonMaxSuppression', [boxes, scores], [np.zeros((0, 3), np.int64)], 11)


def generate(c):
    rng = np.random.default_rng(0)
    rnd = lambda *s: rng.standard_normal(s).astype(np.float32)
    quantization(c, rng, rnd)
    signal(c, rnd)
    non_max_suppression(c, rng)


if __name__ == '__main__':
    common.main(generate, 'qs')

"""Extra node cases for the recurrent and control-flow ops: LSTM, GRU and RNN (directions,
layouts, sequence_lens, clip, peepholes, activations) and Loop, Scan, If.

References: PyTorch's LSTM/GRU/RNN for the standard cells (packed sequences: outputs past a
sequence's length are 0 and Y_h is its last valid state, as in ONNX Runtime), numpy loops
following the spec's equations for everything PyTorch lacks.

    /usr/bin/python3 sequence_ops.py OUT    # writes OUT/node/seq_<case>/
"""
import numpy as np
import torch
from onnx import TensorProto, helper

import common


def torch_rnn(kind, X, lens, W, R, B, h0, c0, bidir, act='tanh'):
    """Runs ONNX weights (gates iofc for LSTM, zrh for GRU) through torch.nn.{LSTM,GRU,RNN}."""
    T, batch, inputs = X.shape
    D, H = (2 if bidir else 1), R.shape[2]
    if kind == 'LSTM': m = torch.nn.LSTM(inputs, H, bidirectional=bidir)
    elif kind == 'GRU': m = torch.nn.GRU(inputs, H, bidirectional=bidir)
    else: m = torch.nn.RNN(inputs, H, nonlinearity=act, bidirectional=bidir)

    def reorder(w):
        if kind == 'LSTM':  # iofc -> torch's ifgo
            i, o, f, c = np.split(w, 4)
            return np.concatenate([i, f, c, o])
        if kind == 'GRU':  # zrh -> torch's rzn
            z, r, h = np.split(w, 3)
            return np.concatenate([r, z, h])
        return w
    G = W.shape[1]
    with torch.no_grad():
        for d in range(D):
            sfx = '_reverse' if d == 1 else ''
            getattr(m, 'weight_ih_l0' + sfx).copy_(torch.tensor(reorder(W[d])))
            getattr(m, 'weight_hh_l0' + sfx).copy_(torch.tensor(reorder(R[d])))
            getattr(m, 'bias_ih_l0' + sfx).copy_(torch.tensor(reorder(B[d, :G])))
            getattr(m, 'bias_hh_l0' + sfx).copy_(torch.tensor(reorder(B[d, G:])))
        packed = torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(X), torch.tensor(lens),
                                                         enforce_sorted=False)
        if kind == 'LSTM': out, (h, c) = m(packed, (torch.tensor(h0), torch.tensor(c0)))
        else: (out, h), c = m(packed, torch.tensor(h0)), None
        y, _ = torch.nn.utils.rnn.pad_packed_sequence(out, total_length=T)
    y = y.numpy().reshape(T, batch, D, H).transpose(0, 2, 1, 3)
    c = None if c is None else c.numpy().astype(np.float32)
    return y.astype(np.float32), h.numpy().astype(np.float32), c


def gru_numpy(X, W, R, B, H, linear_before_reset):
    """GRU's spec equations, forward, no initial state."""
    T, batch, _ = X.shape
    h = np.zeros((batch, H), np.float32)
    Wz, Wr, Wh = np.split(W[0], 3)
    Rz, Rr, Rh = np.split(R[0], 3)
    Wbz, Wbr, Wbh, Rbz, Rbr, Rbh = np.split(B[0], 6)
    sig = lambda v: 1 / (1 + np.exp(-v))
    ys = []
    for t in range(T):
        x = X[t]
        z = sig(x @ Wz.T + h @ Rz.T + Wbz + Rbz)
        r = sig(x @ Wr.T + h @ Rr.T + Wbr + Rbr)
        if linear_before_reset: hh = np.tanh(x @ Wh.T + r * (h @ Rh.T + Rbh) + Wbh)
        else: hh = np.tanh(x @ Wh.T + (r * h) @ Rh.T + Rbh + Wbh)
        h = (1 - z) * hh + z * h
        ys.append(h)
    return np.stack(ys)[:, None].astype(np.float32), h[None].astype(np.float32)


def lstm_numpy(X, W, R, B, P, H, clip, input_forget, acts, alphas, betas):
    """LSTM's spec equations, forward, no initial state: peepholes P (iof), `clip` applied to
    every activation's input, input_forget couples f = 1 - i."""
    T, batch, _ = X.shape
    h = np.zeros((batch, H), np.float32)
    c = np.zeros((batch, H), np.float32)
    Wb, Rb = np.split(B[0], 2)
    pi, po, pf = np.split(P[0], 3)

    def act(k, v):
        a, b = alphas[k], betas[k]
        return dict(Sigmoid=lambda: 1 / (1 + np.exp(-v)), Tanh=lambda: np.tanh(v),
                    HardSigmoid=lambda: np.clip(a * v + b, 0, 1), ScaledTanh=lambda: a * np.tanh(b * v),
                    LeakyRelu=lambda: np.where(v > 0, v, a * v))[acts[k]]()
    cl = lambda v: np.clip(v, -clip, clip)
    ys = []
    for t in range(T):
        i, o, f, cc = np.split(X[t] @ W[0].T + h @ R[0].T + Wb + Rb, 4, axis=1)
        i = act(0, cl(i + pi * c))
        f = 1 - i if input_forget else act(0, cl(f + pf * c))
        c = f * c + i * act(1, cl(cc))
        o = act(0, cl(o + po * c))
        h = o * act(2, c)
        ys.append(h)
    return np.stack(ys)[:, None].astype(np.float32), h[None].astype(np.float32), c[None].astype(np.float32)


def recurrent(c, rnd):
    for kind, G in [('LSTM', 4), ('GRU', 3), ('RNN', 1)]:
        for bidir in [False, True]:
            for layout in [0, 1]:
                T, batch, I, H = 5, 3, 4, 6
                D = 2 if bidir else 1
                X = rnd(T, batch, I)
                W, R, B = rnd(D, G * H, I) * 0.5, rnd(D, G * H, H) * 0.5, rnd(D, 2 * G * H) * 0.5
                h0, c0 = rnd(D, batch, H), rnd(D, batch, H)
                lens = np.array([5, 3, 1], dtype=np.int32)
                y, yh, yc = torch_rnn(kind, X, lens, W, R, B, h0, c0, bidir)
                attrs = dict(hidden_size=H, direction='bidirectional' if bidir else 'forward', layout=layout)
                if kind == 'GRU': attrs['linear_before_reset'] = 1  # PyTorch's GRU
                ins = dict(X=X, W=W, R=R, B=B, sequence_lens=lens, initial_h=h0)
                outs = dict(Y=y, Y_h=yh)
                if kind == 'LSTM':
                    ins['initial_c'], outs['Y_c'] = c0, yc
                if layout == 1:  # batch first
                    for k in ['X', 'initial_h', 'initial_c']:
                        if k in ins: ins[k] = ins[k].transpose(1, 0, 2).copy()
                    outs['Y'] = y.transpose(2, 0, 1, 3).copy()
                    for k in ['Y_h', 'Y_c']:
                        if k in outs: outs[k] = outs[k].transpose(1, 0, 2).copy()
                c.graph(f'{kind.lower()}_bi{int(bidir)}_layout{layout}',
                        [helper.make_node(kind, list(ins), list(outs), **attrs)], ins, outs, 14)

    # direction=reverse: the reverse half of a bidirectional run
    for kind, G in [('LSTM', 4), ('GRU', 3), ('RNN', 1)]:
        T, batch, I, H = 4, 2, 3, 5
        X = rnd(T, batch, I)
        W, R, B = rnd(2, G * H, I) * 0.5, rnd(2, G * H, H) * 0.5, rnd(2, 2 * G * H) * 0.5
        h0, c0 = rnd(2, batch, H), rnd(2, batch, H)
        lens = np.array([4, 2], dtype=np.int32)
        y, yh, yc = torch_rnn(kind, X, lens, W, R, B, h0, c0, True)
        ins = dict(X=X, W=W[1:], R=R[1:], B=B[1:], sequence_lens=lens, initial_h=h0[1:])
        outs = dict(Y=y[:, 1:].copy(), Y_h=yh[1:].copy())
        attrs = dict(hidden_size=H, direction='reverse')
        if kind == 'GRU': attrs['linear_before_reset'] = 1
        if kind == 'LSTM':
            ins['initial_c'], outs['Y_c'] = c0[1:], yc[1:].copy()
        c.graph(f'{kind.lower()}_reverse', [helper.make_node(kind, list(ins), list(outs), **attrs)],
                ins, outs, 14)

    T, batch, I, H = 3, 2, 3, 4
    X, W, R, B, h0 = rnd(T, batch, I), rnd(1, H, I), rnd(1, H, H), rnd(1, 2 * H), rnd(1, batch, H)
    lens = np.array([3, 3], np.int32)
    y, yh, _ = torch_rnn('RNN', X, lens, W, R, B, h0, None, False, act='relu')
    ins = dict(X=X, W=W, R=R, B=B, sequence_lens=lens, initial_h=h0)
    c.graph('rnn_relu',
            [helper.make_node('RNN', list(ins), ['Y', 'Y_h'], hidden_size=H, activations=['Relu'])],
            ins, dict(Y=y, Y_h=yh), 14)

    T, batch, I, H = 4, 2, 3, 5
    X, W, R, B = rnd(T, batch, I), rnd(1, 3 * H, I), rnd(1, 3 * H, H), rnd(1, 6 * H)
    y, yh = gru_numpy(X, W, R, B, H, False)
    c.graph('gru_linear_before_reset0',
            [helper.make_node('GRU', ['X', 'W', 'R', 'B'], ['Y', 'Y_h'], hidden_size=H)],
            dict(X=X, W=W, R=R, B=B), dict(Y=y, Y_h=yh), 14)

    T, batch, I, H = 4, 2, 3, 3
    X, W, R, B, P = rnd(T, batch, I) * 3, rnd(1, 4 * H, I), rnd(1, 4 * H, H), rnd(1, 8 * H), rnd(1, 3 * H)
    acts, alphas = ['HardSigmoid', 'ScaledTanh', 'LeakyRelu'], [0.3, 0.8, 0.1]
    for input_forget in [0, 1]:
        # activation_beta is consumed in order by the activations that take one (not LeakyRelu)
        y, yh, yc = lstm_numpy(X, W, R, B, P, H, 1.5, input_forget, acts, alphas, [0.4, 1.2, None])
        node = helper.make_node('LSTM', ['X', 'W', 'R', 'B', '', '', '', 'P'], ['Y', 'Y_h', 'Y_c'],
                                hidden_size=H, clip=1.5, input_forget=input_forget, activations=acts,
                                activation_alpha=alphas, activation_beta=[0.4, 1.2])
        c.graph(f'lstm_clip_acts_input_forget{input_forget}', [node], dict(X=X, W=W, R=R, B=B, P=P),
                dict(Y=y, Y_h=yh, Y_c=yc), 14)

    T, batch, I, H = 100, 2, 3, 4
    X, W, R = rnd(T, batch, I), rnd(1, 4 * H, I) * 0.3, rnd(1, 4 * H, H) * 0.3
    m = torch.nn.LSTM(I, H, bias=False)
    with torch.no_grad():
        i, o, f, cc = np.split(W[0], 4)
        m.weight_ih_l0.copy_(torch.tensor(np.concatenate([i, f, cc, o])))
        i, o, f, cc = np.split(R[0], 4)
        m.weight_hh_l0.copy_(torch.tensor(np.concatenate([i, f, cc, o])))
        y, (h, _) = m(torch.tensor(X))
    c.graph('lstm_long', [helper.make_node('LSTM', ['X', 'W', 'R'], ['Y', 'Y_h'], hidden_size=H)],
            dict(X=X, W=W, R=R), dict(Y=y.numpy()[:, None].copy(), Y_h=h.numpy()), 14)


def vinfo(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def control_flow(c, rnd):
    F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
    # Loop: s += i; emit s*s; continue while s < lim (an outer-scope value)
    body = helper.make_graph(
        [helper.make_node('Cast', ['i'], ['fi'], to=F), helper.make_node('Add', ['s_in', 'fi'], ['s_out']),
         helper.make_node('Less', ['s_out', 'lim'], ['c_out']),
         helper.make_node('Mul', ['s_out', 's_out'], ['sq'])],
        'body', [vinfo('i', I64, []), vinfo('c', B, []), vinfo('s_in', F, [])],
        [vinfo('c_out', B, []), vinfo('s_out', F, []), vinfo('sq', F, [])])
    s, sqs = 0.0, []
    for i in range(100):
        s += i
        sqs.append(s * s)
        if not s < 20: break
    c.graph('loop_cond', [helper.make_node('Loop', ['M', 'cond', 's0'], ['s', 'sqs'], body=body)],
            dict(M=np.int64(100), cond=np.bool_(True), s0=np.float32(0), lim=np.float32(20)),
            dict(s=np.float32(s), sqs=np.array(sqs, np.float32)), 13)
    # a trip count and no condition input: the body's condition output is ignored
    s, sqs = 0.0, []
    for i in range(7):
        s += i
        sqs.append(s * s)
    c.graph('loop_trip_count_only', [helper.make_node('Loop', ['M', '', 's0'], ['s', 'sqs'], body=body)],
            dict(M=np.int64(7), s0=np.float32(0), lim=np.float32(5)),
            dict(s=np.float32(s), sqs=np.array(sqs, np.float32)), 13)
    copy = helper.make_graph(
        [helper.make_node('Identity', ['c'], ['c_out']), helper.make_node('Add', ['s_in', 's_in'], ['s_out']),
         helper.make_node('Identity', ['s_in'], ['sc'])],
        'body', [vinfo('i', I64, []), vinfo('c', B, []), vinfo('s_in', F, [3])],
        [vinfo('c_out', B, []), vinfo('s_out', F, [3]), vinfo('sc', F, [3])])
    s0 = rnd(3)
    c.graph('loop_zero_trips', [helper.make_node('Loop', ['M', 'cond', 's0'], ['s', 'sc'], body=copy)],
            dict(M=np.int64(0), cond=np.bool_(True), s0=s0), dict(s=s0, sc=np.zeros((0, 3), np.float32)), 13)
    c.graph('loop_cond_false', [helper.make_node('Loop', ['', 'cond', 's0'], ['s'], body=copy)],
            dict(cond=np.bool_(False), s0=s0), dict(s=s0), 13)
    add_one = helper.make_graph(
        [helper.make_node('Identity', ['c'], ['c_out']), helper.make_node('Add', ['s_in', 'one'], ['s_out']),
         helper.make_node('Identity', ['s_in'], ['sc'])], 'body', copy.input, copy.output)
    c.graph('loop_long', [helper.make_node('Loop', ['M', '', 's0'], ['s', 'sc'], body=add_one)],
            dict(M=np.int64(300), s0=s0, one=np.ones(3, np.float32)),
            dict(s=s0 + 300,
                 sc=(s0[None] + np.arange(300, dtype=np.float32)[:, None]).astype(np.float32)), 13)

    # Scan-16: acc += a[t]; o1 = acc * b[:, 3 - t] (b scanned backwards along its last axis),
    # o1 stacked along axis 1 by prepending, o2 = a[t] stacked along axis 0
    sbody = helper.make_graph(
        [helper.make_node('Add', ['acc', 'a'], ['acc_out']),
         helper.make_node('Mul', ['acc_out', 'b'], ['o1']),
         helper.make_node('Identity', ['a'], ['o2'])],
        'sbody', [vinfo('acc', F, [3]), vinfo('a', F, [3]), vinfo('b', F, [3])],
        [vinfo('acc_out', F, [3]), vinfo('o1', F, [3]), vinfo('o2', F, [3])])
    a, b = rnd(4, 3), rnd(3, 4)
    acc, o1, o2 = np.zeros(3, np.float32), [], []
    for t in range(4):
        acc = acc + a[t]
        o1.append(acc * b[:, 3 - t])
        o2.append(a[t])
    c.graph('scan_axes_directions',
            [helper.make_node('Scan', ['init', 'a', 'b'], ['fin', 'o1', 'o2'], body=sbody, num_scan_inputs=2,
                              scan_input_axes=[0, -1], scan_input_directions=[0, 1], scan_output_axes=[1, 0],
                              scan_output_directions=[1, 0])],
            dict(init=np.zeros(3, np.float32), a=a, b=b),
            dict(fin=acc, o1=np.stack(o1[::-1], 1), o2=np.stack(o2, 0)), 16)
    # Scan-8 (batch axis 0) with sequence_lens, backwards: each sequence's first lens[b] elements
    # reversed; scan outputs padded to the full length (with 0, as ONNX Runtime)
    sbody8 = helper.make_graph(
        [helper.make_node('Add', ['acc', 'a'], ['acc_out']),
         helper.make_node('Mul', ['acc_out', 'a'], ['o1'])],
        'sbody', [vinfo('acc', F, [2]), vinfo('a', F, [2])], [vinfo('acc_out', F, [2]), vinfo('o1', F, [2])])
    a, init, lens = rnd(3, 5, 2), rnd(3, 2), np.array([5, 2, 0], np.int64)
    fin, o1 = init.copy(), np.zeros((3, 5, 2), np.float32)
    for bi in range(3):
        acc = init[bi].copy()
        for t in range(lens[bi]):
            v = a[bi, lens[bi] - 1 - t]
            acc = acc + v
            o1[bi, t] = acc * v
        fin[bi] = acc
    c.graph('scan8_lens_reverse', [helper.make_node('Scan', ['lens', 'init', 'a'], ['fin', 'o1'], body=sbody8,
                                                    num_scan_inputs=1, directions=[1])],
            dict(lens=lens, init=init, a=a), dict(fin=fin, o1=o1), 8)

    # If whose branches read the outer scope
    then_g = helper.make_graph([helper.make_node('Add', ['p', 'q'], ['r1'])], 'then', [],
                               [vinfo('r1', F, [2])])
    else_g = helper.make_graph([helper.make_node('Sub', ['p', 'q'], ['r2'])], 'else', [],
                               [vinfo('r2', F, [2])])
    p, q = rnd(2), rnd(2)
    for cond in [True, False]:
        c.graph(f'if_outer_scope_{int(cond)}',
                [helper.make_node('If', ['c'], ['r'], then_branch=then_g, else_branch=else_g)],
                dict(c=np.bool_(cond), p=p, q=q), dict(r=(p + q) if cond else (p - q)), 13)


def generate(c):
    rng = np.random.default_rng(0)
    rnd = lambda *s: rng.standard_normal(s).astype(np.float32)
    recurrent(c, rnd)
    control_flow(c, rnd)


if __name__ == '__main__':
    common.main(generate, 'seq')

"""Writes lazyjit's extra ONNX node cases in the layout of ONNX's backend node tests.

Each case is OUT/node/<family>_<name>/model.onnx plus test_data_set_0/input_<i>.pb and
output_<i>.pb, which onnx-node-tests scores like ONNX's own runner. A case that must fail instead
has no outputs and an expected_error.txt holding a piece of the lazyjit Error message.

References are computed here, independently of lazyjit, from the op's ONNX spec with numpy (or
PyTorch where numpy has no such op). Where the spec leaves a detail open (NaN through Max, padding
past a sequence's length), a case follows what ONNX Runtime and PyTorch agree on and says so; a
case whose answer nobody agrees on does not belong here.
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def tensor_type(dtype):
    return onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dtype)]


def value_info(name, arr):
    arr = np.asarray(arr)
    return helper.make_tensor_value_info(name, tensor_type(arr.dtype), arr.shape)


class Cases:
    """Writes one family's cases under OUT/node; `name`s get the family as a prefix."""

    def __init__(self, out, family):
        self.root = os.path.join(out, 'node')
        self.family = family
        self.count = 0
        if os.path.isdir(self.root):
            for d in os.listdir(self.root):
                if d.startswith(family + '_'):
                    shutil.rmtree(os.path.join(self.root, d))

    def _dir(self, name):
        d = os.path.join(self.root, f'{self.family}_{name}')
        if os.path.exists(d):
            raise RuntimeError(f'case {self.family}_{name} is written twice')
        os.makedirs(os.path.join(d, 'test_data_set_0'))
        self.count += 1
        return d

    def _write(self, d, model, inputs, outputs):
        onnx.save(model, os.path.join(d, 'model.onnx'))
        data = os.path.join(d, 'test_data_set_0')
        for kind, values in (('input', inputs), ('output', outputs)):
            for i, (name, arr) in enumerate(values):
                with open(os.path.join(data, f'{kind}_{i}.pb'), 'wb') as f:
                    f.write(numpy_helper.from_array(np.asarray(arr), name).SerializeToString())

    @staticmethod
    def _model(name, nodes, inputs, outputs, opset):
        graph = helper.make_graph(nodes, name, inputs, outputs)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', opset)])
        model.ir_version = 8
        return model

    def node(self, name, op, inputs, outputs, opset, **attrs):
        """One `op` node. `inputs` are arrays named x0, x1, ... (None: an omitted optional input);
        `outputs` are the expected arrays, named y0, y1, ..."""
        d = self._dir(name)
        in_names = [f'x{i}' if a is not None else '' for i, a in enumerate(inputs)]
        out_names = [f'y{i}' for i in range(len(outputs))]
        given = [(n, np.asarray(a)) for n, a in zip(in_names, inputs) if a is not None]
        want = [(n, np.asarray(a)) for n, a in zip(out_names, outputs)]
        model = self._model(name, [helper.make_node(op, in_names, out_names, **attrs)],
                            [value_info(n, a) for n, a in given],
                            [value_info(n, a) for n, a in want], opset)
        self._write(d, model, given, want)

    def graph(self, name, nodes, inputs, outputs, opset):
        """A graph of `nodes` whose inputs and expected outputs are the dicts name -> array."""
        d = self._dir(name)
        model = self._model(name, nodes, [value_info(n, a) for n, a in inputs.items()],
                            [value_info(n, a) for n, a in outputs.items()], opset)
        self._write(d, model, list(inputs.items()), list(outputs.items()))

    def error(self, name, op, inputs, message, opset, num_outputs=1, **attrs):
        """One `op` node that must fail to load or run with a lazyjit Error containing
        `message`; its outputs are float tensors of unknown shape."""
        d = self._dir(name)
        in_names = [f'x{i}' if a is not None else '' for i, a in enumerate(inputs)]
        out_names = [f'y{i}' for i in range(num_outputs)]
        given = [(n, np.asarray(a)) for n, a in zip(in_names, inputs) if a is not None]
        outs = [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in out_names]
        model = self._model(name, [helper.make_node(op, in_names, out_names, **attrs)],
                            [value_info(n, a) for n, a in given], outs, opset)
        self._write(d, model, given, [])
        assert '\n' not in message
        with open(os.path.join(d, 'expected_error.txt'), 'w') as f:
            f.write(message + '\n')


def main(generate, family):
    """Runs `generate(cases)` for a family script called as `script.py OUT`."""
    if len(sys.argv) != 2:
        sys.exit(f'usage: {sys.argv[0]} OUT')
    cases = Cases(sys.argv[1], family)
    generate(cases)
    print(f'{family}: {cases.count} cases')

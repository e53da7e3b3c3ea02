"""Writes a small ONNX model for the lit tests: y = softmax(relu(x @ W1 + b1) @ W2 + b2) with a
symbolic batch dim, fixed weights from a seed, and a test-data directory (input_0.pb, output_0.pb
computed with numpy) beside it:  make_mlp.py OUT.onnx DATA_DIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out, data = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
w1 = rng.standard_normal((4, 8)).astype(np.float32)
b1 = rng.standard_normal(8).astype(np.float32)
w2 = rng.standard_normal((8, 3)).astype(np.float32)
b2 = rng.standard_normal(3).astype(np.float32)
nodes = [
    helper.make_node("MatMul", ["x", "W1"], ["h0"], name="fc1"),
    helper.make_node("Add", ["h0", "b1"], ["h1"], name="bias1"),
    helper.make_node("Relu", ["h1"], ["h2"], name="act"),
    helper.make_node("Gemm", ["h2", "W2", "b2"], ["z"], name="fc2"),
    helper.make_node("Softmax", ["z"], ["y"], name="prob", axis=-1),
]
graph = helper.make_graph(
    nodes, "mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])],
    [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(b1, "b1"),
     numpy_helper.from_array(w2, "W2"), numpy_helper.from_array(b2, "b2")])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.save(model, out)

x = rng.standard_normal((2, 4)).astype(np.float32)
z = np.maximum(x @ w1 + b1, 0) @ w2 + b2
y = np.exp(z - z.max(-1, keepdims=True))
y /= y.sum(-1, keepdims=True)
os.makedirs(data, exist_ok=True)
with open(os.path.join(data, "input_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())
with open(os.path.join(data, "output_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(y, "y").SerializeToString())
np.save(os.path.join(data, "x.npy"), x)

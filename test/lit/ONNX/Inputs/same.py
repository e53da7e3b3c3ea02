"""Exits 0 when two TensorProto/.npy files hold the same dtype, shape and values (rtol 1e-5),
else prints the difference and exits 1:  same.py A B"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def load(path):
    if path.endswith(".npy"):
        return np.load(path)
    return numpy_helper.to_array(onnx.load_tensor(path))


a, b = load(sys.argv[1]), load(sys.argv[2])
if a.dtype != b.dtype or a.shape != b.shape or not np.allclose(a, b, rtol=1e-5, atol=1e-6):
    print(f"differ: {a.dtype}{a.shape} vs {b.dtype}{b.shape}\n{a}\n{b}")
    sys.exit(1)
print(f"same: {a.dtype}{list(a.shape)}")

#!/usr/bin/env python3
"""Generates ONNX's backend node tests into OUT/node/<test>/ (model.onnx, test_data_set_0/...).

Debian's python3-onnx 1.12 ships the generators (onnx/backend/test/case/node/*.py) but not the
data. Its case files use np.float and np.object, which numpy 1.24 removed: the aliases are restored
before the generators are imported. Run with the system Python (/usr/bin/python3), which has the
python3-onnx package:
    /usr/bin/python3 test/onnx/gen_node_tests.py OUT
"""
import argparse
import os
import shutil
import sys

import numpy as np

# the aliases numpy 1.24 removed, which onnx 1.12's case files still use
np.float = float  # type: ignore[attr-defined]
np.object = object  # type: ignore[attr-defined]

import onnx.backend.test.cmd_tools as cmd_tools  # noqa: E402


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    cmd_tools.generate_data(argparse.Namespace(output=tmp, op_type=None))
    # only the node tests: the 'real' cases download models, the 'simple' ones are a handful of
    # model tests outside the node suite
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    os.rename(os.path.join(tmp, "node"), os.path.join(out, "node"))
    shutil.rmtree(tmp)
    print(f"gen_node_tests: {len(os.listdir(os.path.join(out, 'node')))} node tests in {out}/node")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Writes all of lazyjit's extra ONNX node cases (the family scripts here) into OUT/node/; the
onnx-extra-data target runs it, the onnx-extra test runs them with onnx-node-tests.

    /usr/bin/python3 generate.py OUT
"""
import os
import shutil
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree

import common  # noqa: E402
import bad_nodes  # noqa: E402
import domain_ops  # noqa: E402
import math_ops  # noqa: E402
import nn_ops  # noqa: E402
import quant_signal_ops  # noqa: E402
import sequence_ops  # noqa: E402
import tensor_ops  # noqa: E402

FAMILIES = [('tensor', tensor_ops), ('math', math_ops), ('nn', nn_ops), ('seq', sequence_ops),
            ('qs', quant_signal_ops), ('bad', bad_nodes), ('dom', domain_ops)]

if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(f'usage: {sys.argv[0]} OUT')
    shutil.rmtree(os.path.join(sys.argv[1], 'node'), ignore_errors=True)
    counts = []
    for family, module in FAMILIES:
        cases = common.Cases(sys.argv[1], family)
        module.generate(cases)
        counts.append(f'{family} {cases.count}')
    print('extra ONNX node cases:', ', '.join(counts))

#!/usr/bin/env bash
# Quick start: installs what is missing, builds gacc, and runs the pipeline on
# the bundled reference example (examples/linear_regression.mlir) with a
# 3 + 1 micro-batch split, printing the input and the compiled step, then
# trains a small GPT from PyTorch with gacc.torch (examples/torch/train_gpt.py).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Only what the quick start runs: gacc-opt, gacc-run with its runtime, and
# gacc.torch with gacc-compile. scripts/test.sh builds the rest (gacc-check,
# unit tests, CUDA runtime, benchmarks).
scripts/build.sh gacc-opt gacc-run gacc-compile gacc-python
EXAMPLE=examples/linear_regression.mlir
OPTIONS=${GACC_OPTIONS:-micro-batch-sizes=3,1}
echo
echo "=== input: $EXAMPLE ==="
grep -v '^//' "$EXAMPLE" | sed '/^$/N;/^\n$/D'
echo
echo "=== gacc-opt --gacc-pipeline=\"$OPTIONS\" ==="
build/bin/gacc-opt "$EXAMPLE" --gacc-pipeline="$OPTIONS"
echo
echo "=== gacc-run (w = 0, x = (1,2,3,4), y = 2x): loss 30, gradient -30 ==="
inputs=$(mktemp -d)
trap 'rm -rf "$inputs"' EXIT
python3 - "$inputs" <<'PY'
import struct, sys
def save(path, values, shape):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (
        "()" if not shape else "(%d,)" % shape[0])
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%df" % len(values), *values))
d = sys.argv[1]
save(d + "/arg0.npy", [0.0], ())
save(d + "/arg1.npy", [1, 2, 3, 4], (4,))
save(d + "/arg2.npy", [2, 4, 6, 8], (4,))
PY
build/bin/gacc-run "$EXAMPLE" --micro-batch-sizes=3,1 --input-dir="$inputs" --print-results

echo
echo "=== a PyTorch model: examples/torch/train_gpt.py (gacc.torch, m = 4, against PyTorch's full-batch step) ==="
PYTHONPATH=build/python /usr/bin/python3 examples/torch/train_gpt.py --steps 5

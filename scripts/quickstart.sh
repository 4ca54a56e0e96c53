#!/usr/bin/env bash
# Quick start: installs what is missing, builds gacc, and runs the pipeline on
# the bundled reference example (examples/linear_regression.mlir) with a
# 3 + 1 micro-batch split, printing the input and the compiled step.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
EXAMPLE=examples/linear_regression.mlir
OPTIONS=${GACC_OPTIONS:-micro-batch-sizes=3,1}
echo
echo "=== input: $EXAMPLE ==="
grep -v '^//' "$EXAMPLE" | sed '/^$/N;/^\n$/D'
echo
echo "=== gacc-opt --gacc-pipeline=\"$OPTIONS\" ==="
build/bin/gacc-opt "$EXAMPLE" --gacc-pipeline="$OPTIONS"

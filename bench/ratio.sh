#!/usr/bin/env bash
# The cost of micro-batching: the step time of the MLP at m micro-batches
# over its time at m = 1 (m * T(b) / T(B), b = B / m), timed in one process
# with the steps interleaved (gacc-bench-step-ratio), so that the drift of a
# shared machine's speed from one process to the next, which is larger than
# the ratio, cancels. Prints a Markdown table.
#
#   bench/ratio.sh [THREADS]      (default 1)
#
# Environment: GACC_BUILD_DIR (default build), BENCH_DIMS (default
# 512,512,512,512,10), BENCH_BATCH (default 256), BENCH_MS (default
# "1 2 4 8"; the first is the base), BENCH_ROUNDS (default 30),
# BENCH_STEPS (steps of each m per round, default 3), BENCH_WARMUP (warm-up
# steps of each m before the rounds, default 20: "auto" times each GEMM shape
# in its first 18 calls, which at m = 1 are the first 18 steps), GACCRT_GEMM
# (the GEMM library, default auto; runtime/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-1}
BUILD=${GACC_BUILD_DIR:-build}
DIMS=${BENCH_DIMS:-512,512,512,512,10}
BATCH=${BENCH_BATCH:-256}
MS=${BENCH_MS:-1 2 4 8}
ROUNDS=${BENCH_ROUNDS:-30}
STEPS=${BENCH_STEPS:-3}
WARMUP=${BENCH_WARMUP:-20}
cmake --build "$BUILD" --target gacc-compile gacc-bench-step-ratio > /dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 bench/gen_mlp.py --batch "$BATCH" --dims "$DIMS" > "$tmp/mlp.mlir"
steps=()
for m in $MS; do
  "$BUILD/bin/gacc-compile" "$tmp/mlp.mlir" --micro-batches="$m" \
    -o "$tmp/m$m.so"
  steps+=("m$m.so")
done
export OPENBLAS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS
echo "MLP dims $DIMS, B = $BATCH, $THREADS thread(s), GEMMs: ${GACCRT_GEMM:-auto}; m<M>.so is the step at m = M"
cd "$tmp"
"$OLDPWD/$BUILD/bin/gacc-bench-step-ratio" "${steps[@]}" \
  --rounds="$ROUNDS" --steps="$STEPS" --warmup="$WARMUP"

#!/usr/bin/env bash
# Overlap benchmark: the step time of a 2-rank MPI run of gacc-run with the
# bucket all-reduces overlapped with the final region (the default,
# --overlap-all-reduce=true) and without (=false), alternating in this run.
# Prints a Markdown table row per bucket size.
#
#   bench/overlap.sh
#
# Environment: GACC_BUILD_DIR (default build), BENCH_DIMS (default
# 1024,1024,1024,1024,10: 3.2 M parameters, 12.6 MB of gradients),
# BENCH_BATCH (default 32 per rank), BENCH_M (default 2), BENCH_BUCKETS
# (bucket-bytes values, default "4194304 26214400"), BENCH_STEPS (default
# 20, after 3 warm-up steps), BENCH_ROUNDS (default 3: on and off
# alternate, each keeps its best median), OPENBLAS_NUM_THREADS (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${GACC_BUILD_DIR:-build}
DIMS=${BENCH_DIMS:-1024,1024,1024,1024,10}
BATCH=${BENCH_BATCH:-32}
M=${BENCH_M:-2}
BUCKETS=${BENCH_BUCKETS:-4194304 26214400}
STEPS=${BENCH_STEPS:-20}
ROUNDS=${BENCH_ROUNDS:-3}
WARMUP=3
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
cmake --build "$BUILD" --target gacc-run > /dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 bench/gen_mlp.py --batch "$BATCH" --dims "$DIMS" > "$tmp/mlp.mlir"
MPIRUN=(mpirun --allow-run-as-root --oversubscribe -x OPENBLAS_NUM_THREADS -np 2)

echo "MLP dims $DIMS, B = $BATCH per rank, m = $M, 2 MPI ranks on $(nproc) cores, $OPENBLAS_NUM_THREADS BLAS thread(s) per rank"
echo "best of $ROUNDS alternating runs of the median of $STEPS steps after $WARMUP warm-up steps (rank 0's summary)"
echo
echo "| bucket-bytes | buckets on / off | overlap on ms/step | overlap off ms/step | on / off |"
echo "|---|---|---|---|---|"
best() { python3 -c "import sys; print(min(float(v) for v in sys.argv[1:]))" "$@"; }
for bucket in $BUCKETS; do
  on=() off=()
  for round in $(seq "$ROUNDS"); do
    for mode in true false; do
      "${MPIRUN[@]}" "$BUILD/bin/gacc-run" "$tmp/mlp.mlir" --micro-batches="$M" \
        --bucket-bytes="$bucket" --overlap-all-reduce=$mode \
        --steps=$((STEPS + WARMUP)) --warmup=$WARMUP > "$tmp/run.out"
      t=$(sed -n 's/.*time\/step median \([0-9.]*\) ms.*/\1/p' "$tmp/run.out" | head -1)
      n=$(sed -n 's/.*collectives\/step \([0-9]*\).*/\1/p' "$tmp/run.out" | head -1)
      if [ "$mode" = true ]; then on+=("$t"); non=$n; else off+=("$t"); noff=$n; fi
    done
  done
  a=$(best "${on[@]}")
  b=$(best "${off[@]}")
  ratio=$(python3 -c "print(f'{$a / $b:.2f}')")
  echo "| $bucket | $non / $noff | $a | $b | $ratio |"
done

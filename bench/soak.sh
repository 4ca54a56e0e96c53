#!/usr/bin/env bash
# Soak (issue 49): many steps in one gacc-run process with a flat resident
# set. Runs SOAK_SMALL_STEPS (default 10000) steps of examples/mlp.mlir (on
# one rank, then on two under mpirun) and
# SOAK_MLP_STEPS (default 1000) of the bench MLP (bench/gen_mlp.py, dims
# SOAK_DIMS, default 512,512,512,512,10, batch SOAK_BATCH, default 256,
# m = 4), each with gacc-run --rss-every, and compares the resident set
# after the first fifth of the steps (the early sample: allocations of the
# first steps and the GEMM library's tuning are done) with the one after
# the last step. Prints per run the two samples, the growth in KiB, the
# ratio late / early and the largest sample after the early one; exits 1
# when a ratio exceeds SOAK_MAX_RATIO (default 1.02) or the growth exceeds
# SOAK_MAX_GROWTH_KIB (default 1024).
#
#   bench/soak.sh            (GACC_BUILD_DIR, default build)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${GACC_BUILD_DIR:-build}
SMALL_STEPS=${SOAK_SMALL_STEPS:-10000}
MLP_STEPS=${SOAK_MLP_STEPS:-1000}
DIMS=${SOAK_DIMS:-512,512,512,512,10}
BATCH=${SOAK_BATCH:-256}
MAX_RATIO=${SOAK_MAX_RATIO:-1.02}
MAX_GROWTH=${SOAK_MAX_GROWTH_KIB:-1024}
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 bench/gen_mlp.py --batch "$BATCH" --dims "$DIMS" > "$tmp/mlp.mlir"

status=0
# soak NAME STEPS STEP.mlir GACC-RUN-FLAGS...
soak() {
  local name=$1 steps=$2 input=$3
  shift 3
  local every=$((steps / 100))
  [ "$every" -ge 1 ] || every=1
  local start=$SECONDS
  ${LAUNCH:-} "$BUILD/bin/gacc-run" "$input" --steps="$steps" \
    --rss-every="$every" "$@" > "$tmp/$name.out"
  local seconds=$((SECONDS - start))
  python3 - "$tmp/$name.out" "$name" "$steps" "$seconds" "$MAX_RATIO" \
    "$MAX_GROWTH" <<'EOF' || status=1
import re, sys
path, name, steps, seconds, max_ratio, max_growth = sys.argv[1:]
steps = int(steps)
text = open(path).read()
samples = [(int(k), int(r)) for k, r in
           re.findall(r"^step (\d+): resident set (\d+) KiB$", text, re.M)]
losses = re.findall(r"^step \d+: loss = (\S+)", text, re.M)
if not samples or samples[-1][0] != steps:
    sys.exit(f"{name}: no resident-set samples up to step {steps}")
early_step = max(1, steps // 5)
early = next(r for k, r in samples if k >= early_step)
late = samples[-1][1]
peak_after = max(r for k, r in samples if k >= early_step)
ratio = late / early
growth = late - early
summary = re.search(r"^summary: .*$", text, re.M)
print(f"{name}: {steps} steps in {seconds} s; resident set {early} KiB "
      f"after step {early_step}, {late} KiB after step {steps} "
      f"(growth {growth:+d} KiB, ratio {ratio:.4f}; largest sample after "
      f"step {early_step}: {peak_after} KiB); loss {losses[0]} -> "
      f"{losses[-1]}")
if summary:
    print("  " + summary.group(0))
if ratio > float(max_ratio) or growth > int(max_growth):
    print(f"{name}: FAIL: the resident set grew (ratio > {max_ratio} or "
          f"growth > {max_growth} KiB)")
    sys.exit(1)
EOF
}

soak small "$SMALL_STEPS" examples/mlp.mlir --micro-batches=2
# The same on 2 MPI ranks (rank 0's resident set): the collectives too.
LAUNCH="mpirun --allow-run-as-root --oversubscribe -np 2 -x OPENBLAS_NUM_THREADS" \
  soak small-2-ranks "$SMALL_STEPS" examples/mlp.mlir --micro-batches=2
soak bench-mlp "$MLP_STEPS" "$tmp/mlp.mlir" --micro-batches=4
if [ "$status" -eq 0 ]; then
  echo "soak: PASS (resident set flat)"
else
  echo "soak: FAIL"
fi
exit "$status"

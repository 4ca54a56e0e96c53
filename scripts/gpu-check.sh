#!/usr/bin/env bash
# scripts/gpu-check.sh [BUNDLE]
#
# The GPU checks, run on the GPU host with the device bundle that
# scripts/make-device-bundle.sh built elsewhere (default: device-bundle/ in
# the repository root). Installs nothing and builds nothing: the host needs
# the NVIDIA driver, and cuBLAS/NCCL from its CUDA install or PyTorch wheel
# (found by the bundle's env.sh), and PyTorch for the bench baseline.
# Stages, each under its own timeout, logs under $OUT (default
# /tmp/gpu-check):
#   1. ldd: every bundled binary and step library resolves its libraries;
#   2. the runtime's device tests (gaccrt-cuda-tests);
#   3. each fixture's CUDA step on its inputs against its CPU reference;
#   4. compute-sanitizer (memcheck) on one step, when the host has it;
#   5. the bench MLP steps against bench/torch_mlp.py (same dims, m), a table;
#   6. the bench GPT steps (exported from PyTorch by gacc.torch) against
#      bench/torch_gpt.py, a table.
# The tables give gacc's kernel launches and host syncs per step.
# Ends with one line "N passed, N failed"; exits non-zero on a failure.
# Budget: GPU_CHECK_BUDGET_S (default 400 s) for all stages together; a stage
# that would start past it fails as "no time left". GPU_CHECK_STAGES (e.g.
# 5,6; default all) runs only the listed stages.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUNDLE=$(cd "${1:-$ROOT/device-bundle}" 2> /dev/null && pwd) || {
  echo "gpu-check: no bundle at ${1:-$ROOT/device-bundle} (build it with scripts/make-device-bundle.sh)"
  echo "0 passed, 1 failed"
  exit 1
}
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT"
export BUNDLE OUT
START=$(date +%s)
# shellcheck source=/dev/null
source "$BUNDLE/env.sh"
command -v nvidia-smi > /dev/null &&
  timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/nvidia-smi.log"
echo "library path: $LD_LIBRARY_PATH" > "$OUT/env.log"

passed=0 failed=0
STAGES=${GPU_CHECK_STAGES:-1,2,3,4,5,6}
want() { [[ ",$STAGES," == *",$1,"* ]]; }
# stage NAME SECONDS COMMAND...: runs COMMAND under `timeout`, its output in
# $OUT/NAME.log.
# A stage's limit is cut to what is left of the whole check's budget
# (GPU_CHECK_BUDGET_S, default 400 s), so that the check ends in time.
BUDGET=${GPU_CHECK_BUDGET_S:-400}
stage() {
  local name=$1 seconds=$2
  shift 2
  local log="$OUT/$name.log"
  local left=$((START + BUDGET - $(date +%s)))
  if [ "$left" -lt 5 ]; then
    failed=$((failed + 1)); echo "FAIL  $name (no time left of the ${BUDGET}s budget)"
    return 1
  fi
  [ "$left" -lt "$seconds" ] && seconds=$left
  # bash -c: COMMAND may be one of the exported functions below.
  timeout -k 5 "$seconds" bash -c '"$@"' stage "$@" > "$log" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    passed=$((passed + 1)); echo "PASS  $name"
  else
    failed=$((failed + 1))
    [ $rc -eq 124 ] && echo "FAIL  $name (timed out after ${seconds}s)" || echo "FAIL  $name (exit $rc)"
    tail -15 "$log" | sed 's/^/      /'
  fi
  return $rc
}

if want 1; then
echo "== 1. libraries"
ldd_check() {
  local bad=0 f
  for f in "$BUNDLE"/bin/* "$BUNDLE"/lib/*.so* "$BUNDLE"/steps/*/*.so "$BUNDLE"/bench/*.so; do
    [ -e "$f" ] || continue
    echo "--- $f"
    ldd "$f" || bad=1
    ldd "$f" | grep -q "not found" && { echo "MISSING in $f"; bad=1; }
  done
  return $bad
}
export -f ldd_check
stage ldd 30 ldd_check
fi

if want 2; then
echo "== 2. runtime device tests"
if [ -x "$BUNDLE/bin/gaccrt-cuda-tests" ]; then
  stage runtime-device-tests 90 "$BUNDLE/bin/gaccrt-cuda-tests"
else
  echo "SKIP  runtime-device-tests (not in the bundle)"
fi
fi

if want 3; then
echo "== 3. fixtures on the GPU against their CPU references"
fixture() { # NAME TOLERANCE
  local name=$1 tol=$2
  if [ -f "$BUNDLE/cases/$name.compile-error.txt" ]; then
    echo "not compiled for CUDA:"; cat "$BUNDLE/cases/$name.compile-error.txt"; return 1
  fi
  "$BUNDLE/bin/gacc-run-aot" "$BUNDLE/steps/cuda/$name.so" --input-dir="$BUNDLE/cases/$name/inputs" \
    --steps=2 --output-dir="$OUT/$name" || return 1
  python3 "$BUNDLE/check_results.py" "$OUT/$name" "$BUNDLE/cases/$name/ref" "$tol"
}
export -f fixture
while read -r name tol; do
  stage "fixture-$name" 45 fixture "$name" "$tol"
done < "$BUNDLE/cases.txt"
fi

if want 4; then
echo "== 4. compute-sanitizer on one step"
SANITIZER=$(command -v compute-sanitizer || ls "${CUDA_HOME:-/usr/local/cuda}"/bin/compute-sanitizer /usr/local/cuda*/bin/compute-sanitizer 2> /dev/null | head -1)
if [ -n "$SANITIZER" ] && [ -f "$BUNDLE/steps/cuda/mlp-m2.so" ]; then
  stage compute-sanitizer 120 "$SANITIZER" --tool memcheck --error-exitcode 1 \
    "$BUNDLE/bin/gacc-run-aot" "$BUNDLE/steps/cuda/mlp-m2.so" --input-dir="$BUNDLE/cases/mlp-m2/inputs"
else
  echo "SKIP  compute-sanitizer (not found on this host)"
fi
fi

# shellcheck disable=SC1090
source <(sed 's/ /\n/g' "$BUNDLE/bench/config.txt")
: > "$OUT/bench.md"
# bench_row NAME M: a table row from the gacc and torch logs of NAME at M.
bench_row() {
  local g t gms tms gmem tmem ratio launches syncs
  g=$(tail -1 "$OUT/bench-$1-gacc-m$2.log") t=$(tail -1 "$OUT/bench-$1-torch-m$2.log")
  gms=$(echo "$g" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
  tms=$(echo "$t" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
  gmem=$(echo "$g" | sed -n 's/.*peak memory \([0-9.]* [A-Za-z]*\).*/\1/p')
  tmem=$(echo "$t" | sed -n 's/.*peak device memory \([0-9.]* [A-Za-z]*\).*/\1/p')
  launches=$(echo "$g" | sed -n 's/.*kernel launches\/step \([0-9]*\).*/\1/p')
  syncs=$(echo "$g" | sed -n 's/.*host syncs\/step \([0-9]*\).*/\1/p')
  ratio=$(python3 -c "print(f'{float(\"${gms:-nan}\") / float(\"${tms:-nan}\"):.2f}')" 2> /dev/null || echo "?")
  echo "| $2 | ${gms:-error} | ${tms:-error} | $ratio | ${launches:-?} | ${syncs:-?} | ${gmem:-?} | ${tmem:-?} |"
}
HEAD="| m | gacc ms/step | torch ms/step | gacc / torch | gacc kernels/step | gacc host syncs/step | gacc device peak | torch device peak |"
SEP="|---|---|---|---|---|---|---|---|"

if want 5; then
echo "== 5. bench: gacc (ahead of time) against PyTorch eager accumulation"
echo "MLP: dims $dims, B = $batch, median of 20 steps after 3 warm-up steps (gacc: CUDA events around the step call)" | tee -a "$OUT/bench.md"
echo "$HEAD" | tee -a "$OUT/bench.md"
echo "$SEP" | tee -a "$OUT/bench.md"
for m in ${ms//,/ }; do
  stage "bench-mlp-gacc-m$m" 60 "$BUNDLE/bin/gacc-run-aot" "$BUNDLE/bench/mlp-m$m.so" --steps=23 --warmup=3
  stage "bench-mlp-torch-m$m" 60 python3 "$BUNDLE/bench/torch_mlp.py" --batch "$batch" --dims "$dims" --micro-batches "$m" --device cuda
  bench_row mlp "$m" | tee -a "$OUT/bench.md"
done
fi

if want 6; then
echo "== 6. bench: the GPT from PyTorch (gacc.torch) against PyTorch eager accumulation"
if [ -n "${gpt_vocab:-}" ]; then
  echo "GPT: vocabulary $gpt_vocab, T = $gpt_seq, D = $gpt_dim, $gpt_heads heads, B = $gpt_batch, AdamW" | tee -a "$OUT/bench.md"
  echo "$HEAD" | tee -a "$OUT/bench.md"
  echo "$SEP" | tee -a "$OUT/bench.md"
  for m in ${ms//,/ }; do
    stage "bench-gpt-gacc-m$m" 60 "$BUNDLE/bin/gacc-run-aot" "$BUNDLE/bench/gpt-m$m.so" --steps=23 --warmup=3
    stage "bench-gpt-torch-m$m" 60 python3 "$BUNDLE/bench/torch_gpt.py" --vocab "$gpt_vocab" --seq "$gpt_seq" \
      --dim "$gpt_dim" --heads "$gpt_heads" --batch "$gpt_batch" --micro-batches "$m" --device cuda
    bench_row gpt "$m" | tee -a "$OUT/bench.md"
  done
fi
fi

echo
echo "took $(( $(date +%s) - START )) s; logs in $OUT"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

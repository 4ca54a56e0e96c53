#!/usr/bin/env bash
# The GPU checks, for a machine with an NVIDIA GPU, its driver, CUDA 13 (with
# NCCL) at $CUDA_HOME or /usr/local/cuda and PyTorch in python3; no network
# needed. Builds gacc (installing missing Debian packages when it can), then:
#   1. gacc-check --device=cuda on every fixture (m = 1, 2, 4);
#   2. gacc-check --device=cuda --ranks=2 when there are two GPUs;
#   3. the generated MLP step on the GPU: gacc-run --device=cuda against
#      PyTorch eager gradient accumulation of the same model on the same GPU,
#      printed as a table.
# Prints a summary line "N passed, N failed"; exits non-zero on a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${GACC_BUILD_DIR:-build}
if [ "$(id -u)" -eq 0 ] && command -v apt-get > /dev/null; then
  scripts/install-deps.sh || echo "gpu-check: could not install packages; using what is there"
fi
scripts/build.sh || exit 1
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv

passed=0 failed=0
check() {
  local name=$1; shift
  if "$@" > "/tmp/gpu-check.$$.log" 2>&1; then
    passed=$((passed + 1)); echo "PASS  $name"
  else
    failed=$((failed + 1)); echo "FAIL  $name"; tail -20 "/tmp/gpu-check.$$.log"
  fi
}

echo "== gacc-check --device=cuda on every fixture"
for f in linear_regression mlp lm_head_masked tied_weights adamw_clip bf16_linear; do
  for m in 1 2 4; do
    check "$f m=$m" "$BUILD/bin/gacc-check" "examples/$f.mlir" --micro-batches=$m --device=cuda
  done
done
check "linear_regression 3+1" "$BUILD/bin/gacc-check" examples/linear_regression.mlir --micro-batch-sizes=3,1 --device=cuda
gpus=$(nvidia-smi -L 2> /dev/null | wc -l)
if [ "$gpus" -ge 2 ]; then
  check "mlp --ranks=2 (NCCL)" "$BUILD/bin/gacc-check" examples/mlp.mlir --micro-batches=2 --ranks=2 --device=cuda
fi

echo
echo "== MLP step on the GPU: gacc-run --device=cuda vs PyTorch eager accumulation"
DIMS=${BENCH_DIMS:-1024,1024,1024,1024,10}
BATCH=${BENCH_BATCH:-512}
python3 bench/gen_mlp.py --batch "$BATCH" --dims "$DIMS" > /tmp/gpu-check-mlp.mlir
echo "dims $DIMS, B = $BATCH, median of 20 steps after 3 warm-up steps"
echo "| m | gacc ms/step | torch ms/step | gacc / torch | gacc device peak | torch device peak |"
echo "|---|---|---|---|---|---|"
for m in 1 4 8; do
  g=$("$BUILD/bin/gacc-run" /tmp/gpu-check-mlp.mlir --device=cuda --micro-batches=$m --steps=23 --warmup=3 2>&1 | tail -1)
  t=$(python3 bench/torch_mlp.py --batch "$BATCH" --dims "$DIMS" --micro-batches $m --device cuda 2>&1 | tail -1)
  gms=$(echo "$g" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
  tms=$(echo "$t" | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
  gmem=$(echo "$g" | sed -n 's/.*peak memory \([0-9.]* [A-Za-z]*\).*/\1/p')
  tmem=$(echo "$t" | sed -n 's/.*peak device memory \([0-9.]* [A-Za-z]*\).*/\1/p')
  ratio=$(python3 -c "print(f'{float(\"${gms:-nan}\") / float(\"${tms:-nan}\"):.2f}')" 2> /dev/null || echo "?")
  echo "| $m | ${gms:-error} | ${tms:-error} | $ratio | ${gmem:-?} | ${tmem:-?} |"
  [ -n "$gms" ] || echo "$g"
done
echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

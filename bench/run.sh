#!/usr/bin/env bash
# MLP benchmark: gacc-run (CPU, OpenBLAS) against LibTorch eager gradient
# accumulation (loss / m, backward, step, zero_grad) of the same MLP, same
# thread count, same B and m, in this run. Prints a Markdown table.
#
#   bench/run.sh [THREADS]      (default 1)
#
# Environment: GACC_BUILD_DIR (default build), BENCH_DIMS (default
# 512,512,512,512,10), BENCH_BATCH (default 256), BENCH_MS (default "1 4 8"),
# BENCH_STEPS (default 20), BENCH_WARMUP (warm-up steps before them, default
# 20: "auto" times each GEMM shape in its first 18 calls, 6 on each of 3
# libraries, which at m = 1 are the first 18 steps), BENCH_ROUNDS (default 3:
# gacc and LibTorch alternate, each keeps its best median, which damps the
# noise of a shared machine), BENCH_RUNNER (default jit: gacc-run compiles
# the step in the process; aot: gacc-compile builds the step as a shared
# library once per m, outside the timing, and gacc-run-aot runs it without
# LLVM/MLIR in the process, as a deployed step would), BENCH_TORCH_THREADS
# (LibTorch's intra-op threads, torch::set_num_threads; default 1: its
# GEMMs run on OpenBLAS's THREADS threads either way, and with THREADS
# intra-op threads as well its OpenMP and OpenBLAS threads compete, which
# made its 3x512 step 2-3x slower on 2 threads than this, its best setting;
# bench/README.md), BENCH_TUNE_GEMM (1: gacc-run --tune-gemm once per m
# before the timed runs, which then use the step's tuned GEMM library on
# several threads; default 0: the first gacc-run of a step on several
# threads tunes it unless the GEMM cache has its choice, docs/Tools.md).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-1}
BUILD=${GACC_BUILD_DIR:-build}
DIMS=${BENCH_DIMS:-512,512,512,512,10}
BATCH=${BENCH_BATCH:-256}
MS=${BENCH_MS:-1 4 8}
STEPS=${BENCH_STEPS:-20}
ROUNDS=${BENCH_ROUNDS:-3}
RUNNER=${BENCH_RUNNER:-jit}
TORCH_THREADS=${BENCH_TORCH_THREADS:-1}
WARMUP=${BENCH_WARMUP:-20}
case "$RUNNER" in
  jit | aot) ;;
  *) echo "error: BENCH_RUNNER must be jit or aot, got '$RUNNER'" >&2; exit 2 ;;
esac
cmake --build "$BUILD" --target gacc-run gacc-compile gacc-run-aot \
  gacc-bench-torch-mlp > /dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 bench/gen_mlp.py --batch "$BATCH" --dims "$DIMS" > "$tmp/mlp.mlir"
export OPENBLAS_NUM_THREADS=$THREADS OMP_NUM_THREADS=$THREADS

blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 || echo unknown)
# gaccrt's GEMM libraries (runtime/README.md#gemm): by default ("auto") each
# GEMM shape is timed on oneDNN (its matmul and its sgemm), OpenBLAS and
# gaccrt's AVX-512 kernels in its first calls and keeps the fastest (with one
# thread; with several every GEMM runs on the kernels, oneDNN or OpenBLAS, as
# timed on whole steps at the step's first run and kept in the GEMM cache,
# oneDNN's two GEMMs then timed per shape); "onednn" is a fixed shape rule on
# one thread. What each m's step ended up with is printed after the table.
case "${GACCRT_GEMM:-auto}" in
  auto) if [ "$THREADS" = 1 ]; then
          gemm="oneDNN, gaccrt's AVX-512 kernels or OpenBLAS per shape, timed in the first calls (auto)"
        else
          gemm="gaccrt's AVX-512 kernels, oneDNN or OpenBLAS for every GEMM on $THREADS threads, the step's choice timed at its first run (auto, GEMM cache)"
        fi ;;
  avx512) gemm="gaccrt's AVX-512 kernels" ;;
  onednn) gemm="oneDNN (one thread: its matmul for forward, backward-data, weight gradients with b >= 512, OpenBLAS for the rest; several: every GEMM, its matmul or sgemm per shape as timed)" ;;
  onednn-sgemm) gemm="oneDNN's sgemm" ;;
  *) gemm="OpenBLAS" ;;
esac
echo "MLP dims $DIMS, B = $BATCH, $THREADS thread(s), BLAS: $blas, gacc runner: $RUNNER, gacc GEMMs: $gemm, LibTorch GEMMs: the BLAS on $THREADS thread(s), $TORCH_THREADS intra-op thread(s)"
echo "best of $ROUNDS alternating runs of the median of $STEPS steps after $WARMUP warm-up steps; RSS = peak resident set of the whole process (/usr/bin/time -v)"
echo
echo "| m | b | gacc ms/step | torch ms/step | gacc / torch | gacc peak RSS | torch peak RSS | gacc accounted peak |"
echo "|---|---|---|---|---|---|---|---|"
best() { python3 -c "import sys; print(min(float(v) for v in sys.argv[1:]))" "$@"; }
libs=()
for m in $MS; do
  gs=() ts=()
  if [ "$RUNNER" = aot ]; then
    "$BUILD/bin/gacc-compile" "$tmp/mlp.mlir" --micro-batches="$m" \
      -o "$tmp/step.so"
    gacc=("$BUILD/bin/gacc-run-aot" "$tmp/step.so")
  else
    # No step cache: every round compiles, so that the peak resident set is
    # that of a run that compiles (a cache hit would leave the compiler out).
    gacc=("$BUILD/bin/gacc-run" "$tmp/mlp.mlir" --micro-batches="$m"
      --step-cache=off)
    # BENCH_TUNE_GEMM=1: the step's GEMM library on several threads timed
    # first (gacc-run --tune-gemm, recorded in the GEMM cache, which the
    # timed runs then read).
    if [ "${BENCH_TUNE_GEMM:-0}" = 1 ]; then
      "${gacc[@]}" --tune-gemm --quiet
    fi
  fi
  for round in $(seq "$ROUNDS"); do
    /usr/bin/time -v -o "$tmp/gacc.time" "${gacc[@]}" \
      --steps=$((STEPS + WARMUP)) --warmup=$WARMUP > "$tmp/gacc.out"
    /usr/bin/time -v -o "$tmp/torch.time" "$BUILD/bin/gacc-bench-torch-mlp" \
      --batch "$BATCH" --dims "$DIMS" --micro-batches "$m" --steps "$STEPS" \
      --warmup $WARMUP --threads "$TORCH_THREADS" > "$tmp/torch.out"
    gs+=("$(sed -n 's/.*time\/step median \([0-9.]*\) ms.*/\1/p' "$tmp/gacc.out")")
    ts+=("$(sed -n 's/.*time\/step median \([0-9.]*\) ms.*/\1/p' "$tmp/torch.out")")
  done
  g=$(best "${gs[@]}")
  t=$(best "${ts[@]}")
  acc=$(sed -n 's/.*peak memory \([0-9.]* [A-Za-z]*\) .*/\1/p' "$tmp/gacc.out")
  grss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/gacc.time")
  trss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$tmp/torch.time")
  ratio=$(python3 -c "print(f'{$g / $t:.2f}')")
  echo "| $m | $((BATCH / m)) | $g | $t | $ratio | $((grss / 1024)) MiB | $((trss / 1024)) MiB | $acc |"
  # Which library ran which GEMMs (a short traced run; not timed).
  "${gacc[@]}" --steps=16 --quiet --trace="$tmp/trace.json"
  libs+=("m = $m: $(python3 - "$tmp/trace.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
# After the last decision of "auto" (none with another choice): the calls
# of the tuned steps.
decided = max([e["ts"] for e in events if e.get("cat") == "gemm-tuning"],
              default=-1)
groups = {}
for e in events:
    if e.get("cat") not in ("gemm", "accumulate") or e["ts"] <= decided:
        continue
    a = e["args"]
    role = ("n < 64" if a["n"] < 64
            else "weight gradients" if e["cat"] == "accumulate" or a["trans_a"]
            else "forward/backward-data")
    groups.setdefault(role, set()).add(a["library"])
print("; ".join("%s: %s" % (k, "+".join(sorted(v)))
                for k, v in sorted(groups.items())))
PY
)")
done
echo
echo "gacc's GEMM libraries (trace of 16 steps, calls after the last tuning decision):"
for line in "${libs[@]}"; do echo "- $line"; done

#!/usr/bin/env bash
# make-device-bundle.sh OUT_DIR
#
# Builds, on this machine, everything scripts/gpu-check.sh runs on the GPU
# host (which has the driver, CUDA and PyTorch but no LLVM/MLIR, OpenMPI or
# OpenBLAS, and takes at most 64 MiB of files): the fixtures and the bench
# MLPs compiled ahead of time for sm_90 (gacc-compile --device=cuda), the
# same fixtures for the CPU, their inputs and CPU reference outputs (gacc-run,
# the JIT, on the CPU), gacc-run-aot, libgaccrt and libgaccrt_cuda with the
# libraries they need that the GPU host lacks, the runtime's device tests,
# bench/torch_mlp.py, and env.sh, which finds cuBLAS, NCCL and the driver
# there. Step libraries carry RUNPATH $ORIGIN/../lib, gacc-run-aot
# $ORIGIN/../lib. Ends with the bundle's size; fails above 64 MiB.
#
# Builds gacc first (scripts/build.sh) when GACC_BUILD_DIR has no
# gacc-compile. Environment: GACC_BUILD_DIR (default build, with CUDA),
# BENCH_DIMS (default 1024,1024,1024,1024,10), BENCH_BATCH (512),
# BENCH_MS (1,2,4,8), GACC_BUNDLE_MCPU (host CPU of the step code, x86-64-v2).
#
# All or nothing (issue 49): the bundle is built in a hidden temporary
# folder next to OUT_DIR and renamed into place only when complete; a failed
# or interrupted build leaves a previous OUT_DIR as it was and removes the
# temporary. Test only: GACC_TEST_BUNDLE_FAIL=1 fails the build once the
# libraries are copied.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# From a clean clone: configure and build first (scripts/build.sh).
if [ ! -x "${GACC_BUILD_DIR:-$ROOT/build}/bin/gacc-compile" ]; then
  GACC_BUILD_DIR=${GACC_BUILD_DIR:-$ROOT/build} "$ROOT/scripts/build.sh"
fi
BUILD=$(cd "${GACC_BUILD_DIR:-$ROOT/build}" && pwd)
FINAL=$1
DIMS=${BENCH_DIMS:-1024,1024,1024,1024,10}
BATCH=${BENCH_BATCH:-512}
BENCH_MS=${BENCH_MS:-1,2,4,8}
MCPU=${GACC_BUNDLE_MCPU:-x86-64-v2}
PY=/usr/bin/python3
for tool in gacc-compile gacc-run gacc-run-aot; do
  [ -x "$BUILD/bin/$tool" ] || { echo "make-device-bundle: $BUILD/bin/$tool is not built" >&2; exit 1; }
done
[ -f "$BUILD/lib/libgaccrt_cuda.so" ] || {
  echo "make-device-bundle: $BUILD/lib/libgaccrt_cuda.so is not built (configure with the CUDA toolkit)" >&2
  exit 1
}

mkdir -p "$(dirname "$FINAL")"
FINAL="$(cd "$(dirname "$FINAL")" && pwd)/$(basename "$FINAL")"
OUT="$(dirname "$FINAL")/.$(basename "$FINAL").gacc-tmp-$$"
TORCH_DIR=
cleanup() {
  [ -n "$TORCH_DIR" ] && rm -rf "$TORCH_DIR"
  rm -rf "$OUT"
}
trap cleanup EXIT
rm -rf "$OUT"
mkdir -p "$OUT"/{bin,lib,steps/cuda,steps/cpu,cases,bench}

# Runners, runtime and the runtime's device tests.
cp "$BUILD/bin/gacc-run-aot" "$OUT/bin/"
[ -x "$BUILD/bin/gaccrt-cuda-tests" ] && cp "$BUILD/bin/gaccrt-cuda-tests" "$OUT/bin/"
cp "$BUILD/lib/libgaccrt.so" "$BUILD/lib/libgaccrt_cuda.so" "$OUT/lib/"
# What libgaccrt needs beyond glibc, libstdc++ and the CUDA libraries
# (OpenBLAS, OpenMPI and their dependencies), with the real files' sonames.
ldd "$BUILD/lib/libgaccrt.so" | awk '/=> \//{print $1, $3}' | while read -r soname path; do
  case "$soname" in
    libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) ;;
    *) cp -L "$path" "$OUT/lib/$soname" ;;
  esac
done
cp "$ROOT/scripts/device/env.sh" "$ROOT/scripts/device/check_results.py" "$OUT/"
if [ "${GACC_TEST_BUNDLE_FAIL:-}" = 1 ]; then
  echo "make-device-bundle: failing on purpose (GACC_TEST_BUNDLE_FAIL=1)" >&2
  exit 1
fi
cp "$ROOT/bench/torch_mlp.py" "$ROOT/bench/torch_gpt.py" \
  "$ROOT/examples/torch/train_gpt.py" "$OUT/bench/"

compile() { # DEVICE NAME STEP OPTIONS...
  local device=$1 name=$2 step=$3
  shift 3
  "$BUILD/bin/gacc-compile" "$step" "$@" --device="$device" --mcpu="$MCPU" \
    --rpath='$ORIGIN/../../lib' -o "$OUT/steps/$device/$name.so"
}

# The fixtures: NAME TOLERANCE(GPU vs CPU) FIXTURE OPTIONS. The reference
# example reads its files (w = 0, x = 1..4, y = 2x); the others read inputs
# drawn from a seed and saved.
# mlp-m4-buckets starts three bucket all-reduces inside the final region and
# waits for them in the epilogue (overlap-all-reduce, the default):
# gaccrt_cuda_all_reduce_start/_wait, which order the compute and
# communication streams through events even on one rank; mlp-m4-blocking is
# the same step with blocking all-reduces. (The check runs one rank: NCCL
# needs a device per rank, so the two-rank overlap is checked only by
# gaccrt-nccl-mpi-test where there are two GPUs.)
CASES="lr-m1 1e-5 linear_regression.mlir --micro-batches=1
lr-m2 1e-5 linear_regression.mlir --micro-batches=2
lr-m4 1e-5 linear_regression.mlir --micro-batches=4
lr-3+1 1e-5 linear_regression.mlir --micro-batch-sizes=3,1
mlp-m1 1e-4 mlp.mlir --micro-batches=1
mlp-m2 1e-4 mlp.mlir --micro-batches=2
mlp-m4 1e-4 mlp.mlir --micro-batches=4
mlp-m4-buckets 1e-4 mlp.mlir --micro-batches=4 --bucket-bytes=128
mlp-m4-blocking 1e-4 mlp.mlir --micro-batches=4 --bucket-bytes=128 --overlap-all-reduce=false
bf16-m2 3e-2 bf16_linear.mlir --micro-batches=2
bf16-m2-f32acc 3e-2 bf16_linear.mlir --micro-batches=2 --accumulate-type=f32
adamw-clip-m1 1e-4 adamw_clip.mlir --micro-batches=1
adamw-clip-m4 1e-4 adamw_clip.mlir --micro-batches=4
lm-head-m2 1e-4 lm_head_masked.mlir --micro-batches=2
tied-m2 1e-4 tied_weights.mlir --micro-batches=2"
# Steps from PyTorch (gacc.torch, Debian's python3-torch here): the tests'
# GPT returning its gradients (an optimizer would turn the rounding noise of
# its key bias's zero gradient into updates of up to lr), with its
# embedding gradient as gacc.scatter_add.
TORCH_DIR=$(mktemp -d)
PYTHONPATH="$BUILD/python" $PY "$ROOT/test/Python/export_models.py" "$TORCH_DIR" gpt_grads > /dev/null
CASES="$CASES
gpt-m2 1e-4 $TORCH_DIR/gpt_grads.mlir --micro-batches=2
gpt-3+1 1e-4 $TORCH_DIR/gpt_grads.mlir --micro-batch-sizes=3,1"
: > "$OUT/cases.txt"
while read -r name tol fixture options; do
  step="$ROOT/examples/$fixture"
  [ "${fixture:0:1}" = / ] && step=$fixture
  # shellcheck disable=SC2086
  compile cpu "$name" "$step" $options
  # shellcheck disable=SC2086
  if ! compile cuda "$name" "$step" $options 2> "$OUT/cases/$name.compile-error.txt"; then
    echo "make-device-bundle: $name does not compile for CUDA (recorded; gpu-check reports it)" >&2
    cat "$OUT/cases/$name.compile-error.txt" >&2
  else
    rm "$OUT/cases/$name.compile-error.txt"
  fi
  mkdir -p "$OUT/cases/$name"
  if [ "$fixture" = linear_regression.mlir ]; then
    mkdir -p "$OUT/cases/$name/inputs"
    $PY -c "import numpy as np, sys; d = sys.argv[1]; np.save(d + '/arg0.npy', np.array(0, np.float32)); np.save(d + '/arg1.npy', np.arange(1, 5, dtype=np.float32)); np.save(d + '/arg2.npy', 2 * np.arange(1, 5, dtype=np.float32))" "$OUT/cases/$name/inputs"
  else
    "$BUILD/bin/gacc-run-aot" "$OUT/steps/cpu/$name.so" --seed=7 --quiet \
      --save-inputs="$OUT/cases/$name/inputs"
  fi
  # The CPU reference: the JIT, two steps (param_out/state_out fed back).
  # shellcheck disable=SC2086
  "$BUILD/bin/gacc-run" "$step" $options --input-dir="$OUT/cases/$name/inputs" \
    --steps=2 --quiet --output-dir="$OUT/cases/$name/ref"
  echo "$name $tol" >> "$OUT/cases.txt"
done <<< "$CASES"

# The bench MLPs (random inputs, drawn by the runner): one step per m.
$PY "$ROOT/bench/gen_mlp.py" --batch "$BATCH" --dims "$DIMS" > "$OUT/bench/mlp.mlir"
echo "dims=$DIMS batch=$BATCH ms=$BENCH_MS" > "$OUT/bench/config.txt"
for m in ${BENCH_MS//,/ }; do
  "$BUILD/bin/gacc-compile" "$OUT/bench/mlp.mlir" --micro-batches="$m" --device=cuda \
    --mcpu="$MCPU" --rpath='$ORIGIN/../lib' -o "$OUT/bench/mlp-m$m.so"
done
rm "$OUT/bench/mlp.mlir"
# The bench GPT (examples/torch/train_gpt.py's model: vocabulary 256, T = 32,
# D = 128, 4 heads, B = 32, AdamW), exported by gacc.torch, one step per m.
PYTHONPATH="$BUILD/python:$ROOT/examples/torch" $PY - "$OUT/bench/gpt.mlir" <<'PY'
import sys
import torch
import gacc.io
import gacc.torch
from train_gpt import GPT, batch_of, loss_fn
torch.manual_seed(0)
model = GPT(256, 32, 128, 4)
batch = batch_of(torch.Generator().manual_seed(0), 32, 32, 256)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
gacc.io.write_file_atomically(sys.argv[1], gacc.torch.export_step(model, loss_fn, batch, optimizer=opt))
PY
echo "gpt_vocab=256 gpt_seq=32 gpt_dim=128 gpt_heads=4 gpt_batch=32" >> "$OUT/bench/config.txt"
for m in ${BENCH_MS//,/ }; do
  "$BUILD/bin/gacc-compile" "$OUT/bench/gpt.mlir" --micro-batches="$m" --device=cuda \
    --mcpu="$MCPU" --rpath='$ORIGIN/../lib' -o "$OUT/bench/gpt-m$m.so"
done
rm "$OUT/bench/gpt.mlir"

# The CPU cases, runnable here and on the device: each CPU step library
# against the JIT's outputs (within 1e-6).
cat > "$OUT/run-cpu-cases.sh" <<'SH'
#!/usr/bin/env bash
# Runs every CPU step library of the bundle on its inputs and compares with
# the JIT's outputs (1e-6). Prints PASS/FAIL per case and "N passed, N failed".
B=$(cd "$(dirname "$0")" && pwd)
source "$B/env.sh"
out=${1:-$(mktemp -d)}
mkdir -p "$out"
passed=0 failed=0
while read -r name tol; do
  if "$B/bin/gacc-run-aot" "$B/steps/cpu/$name.so" --input-dir="$B/cases/$name/inputs" \
       --steps=2 --quiet --output-dir="$out/$name" > "$out/$name.log" 2>&1 &&
     python3 "$B/check_results.py" "$out/$name" "$B/cases/$name/ref" 1e-6 >> "$out/$name.log" 2>&1; then
    passed=$((passed + 1)); echo "PASS  cpu $name"
  else
    failed=$((failed + 1)); echo "FAIL  cpu $name"; tail -5 "$out/$name.log"
  fi
done < "$B/cases.txt"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
SH
chmod +x "$OUT/run-cpu-cases.sh"

size=$(du -sb "$OUT" | cut -f1)
echo "device bundle: $FINAL, $(wc -l < "$OUT/cases.txt") cases, $((size / 1048576)) MiB ($size bytes)"
if [ "$size" -ge $((64 * 1048576)) ]; then
  echo "make-device-bundle: the bundle is over 64 MiB" >&2
  exit 1
fi
# Complete: the previous bundle out of the way, the new one in place.
if [ -e "$FINAL" ]; then
  mv "$FINAL" "$OUT.old"
fi
mv "$OUT" "$FINAL" || { [ -e "$OUT.old" ] && mv "$OUT.old" "$FINAL"; exit 1; }
rm -rf "$OUT.old"

#!/usr/bin/env bash
# The whole CPU picture in one command (issue 44): for each MLP config, each
# thread count and each m, gacc's step time against LibTorch eager gradient
# accumulation (bench/run.sh: alternating runs in this run, best of the
# rounds' medians), the ratio, both peak resident sets, the step's GFLOP/s
# and its fraction of the best rate a single GEMM library reaches at the
# step's shapes on this machine (bench/gemm_libs.sh: OpenBLAS, BLIS, oneDNN,
# gaccrt); then the compile-time table (bench/compile_time.py --tool run:
# until the first step can run) at widths 64, 512 and 1024.
#
#   bench/matrix.sh            the full matrix (hours on a 2-core machine)
#   bench/matrix.sh --quick    one config, m = 1 and 4, one thread, one
#                              round, width 64 and 512 at 10/20 layers
#
# The step's FLOPs are 6 B d_i d_(i+1) per layer (forward, backward-data and
# weight-gradient GEMMs; 4 for the first layer, whose input needs no
# gradient; elementwise work not counted);
# "of best GEMM" divides the step's rate by the best library's
# forward+backward+weights rate for a d x d layer at b = B / m samples on
# the same number of threads, so 1.0 would mean a step made of nothing but
# the best GEMMs.
#
# Environment: MATRIX_CONFIGS (space-separated DIMS:BATCH, default the three
# of issue 44: 3x512 at B = 256, 4x1024 at B = 512, 4x256 at B = 8192),
# MATRIX_MS (default "1 2 4 8"), MATRIX_THREADS (default "1 2"),
# MATRIX_ROUNDS (default 3), MATRIX_STEPS (default 10), MATRIX_WIDTHS
# (default "64 512 1024"), MATRIX_DEPTHS (default "25,50,100"),
# MATRIX_COMPILE_M (default 8), GACC_BUILD_DIR (default build), and
# bench/run.sh's BENCH_RUNNER (jit or aot).
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIGS=${MATRIX_CONFIGS:-"512,512,512,512,10:256 1024,1024,1024,1024,1024,10:512 256,256,256,256,256,10:8192"}
MS=${MATRIX_MS:-1 2 4 8}
THREADS=${MATRIX_THREADS:-1 2}
ROUNDS=${MATRIX_ROUNDS:-3}
STEPS=${MATRIX_STEPS:-10}
WIDTHS=${MATRIX_WIDTHS:-64 512 1024}
DEPTHS=${MATRIX_DEPTHS:-25,50,100}
COMPILE_M=${MATRIX_COMPILE_M:-8}
if [ "${1:-}" = --quick ]; then
  CONFIGS=${MATRIX_CONFIGS:-"256,256,256,10:128"}
  MS=${MATRIX_MS:-1 4}
  THREADS=${MATRIX_THREADS:-1}
  ROUNDS=${MATRIX_ROUNDS:-1}
  STEPS=${MATRIX_STEPS:-5}
  WIDTHS=${MATRIX_WIDTHS:-64 512}
  DEPTHS=${MATRIX_DEPTHS:-10,20}
elif [ $# -gt 0 ]; then
  echo "usage: bench/matrix.sh [--quick]" >&2
  exit 2
fi
BUILD=${GACC_BUILD_DIR:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "# bench/matrix.sh on $cpu, $(nproc) hardware thread(s), $(date -u +%F)"
echo
echo "| config | B | threads | m | gacc ms | LibTorch ms | gacc / LibTorch | gacc peak RSS | LibTorch peak RSS | step GFLOP/s | of best GEMM |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
cc -O2 -o "$tmp/gemm_libs" bench/gemm_libs.c -ldl
export GACCRT_LIB="$PWD/$BUILD/lib/libgaccrt.so"
for config in $CONFIGS; do
  dims=${config%%:*}
  batch=${config##*:}
  IFS=, read -r -a d <<< "$dims"
  flops=0
  for ((i = 0; i + 1 < ${#d[@]}; ++i)); do
    # The first layer has no backward-data GEMM (the input needs no
    # gradient).
    gemms=$((i == 0 ? 4 : 6))
    flops=$((flops + gemms * batch * d[i] * d[i + 1]))
  done
  width=${d[1]}
  name="$(( ${#d[@]} - 2 ))x$width"
  for threads in $THREADS; do
    BENCH_DIMS=$dims BENCH_BATCH=$batch BENCH_MS=$MS BENCH_ROUNDS=$ROUNDS \
      BENCH_STEPS=$STEPS bench/run.sh "$threads" > "$tmp/run.md"
    for m in $MS; do
      row=$(grep "^| $m | " "$tmp/run.md" | head -1)
      IFS='|' read -r _ _ _ g t ratio grss trss _ <<< "$row"
      g=$(echo $g) t=$(echo $t) ratio=$(echo $ratio)
      # The best library's rate for one d x d layer at b = B / m.
      b=$((batch / m))
      OPENBLAS_NUM_THREADS=$threads BLIS_NUM_THREADS=$threads \
        OMP_NUM_THREADS=$threads "$tmp/gemm_libs" "$width" "$b" > "$tmp/gemm.md"
      best=$(awk -F'|' 'NR > 2 && $7 + 0 > 0 { if ($7 + 0 > best) best = $7 + 0 }
                        END { printf "%.1f", best }' "$tmp/gemm.md")
      read -r rate frac < <(python3 -c "
g, best = float('$g'), float('$best')
rate = $flops / (g * 1e-3) * 1e-9
print(f'{rate:.1f}', f'{rate / best:.2f}' if best > 0 else '-')")
      echo "| $name | $batch | $threads | $m | $g | $t | $ratio |$grss|$trss| $rate | $frac (best GEMM $best) |"
    done
  done
done

echo
echo "## Compile time until the first step can run (gacc-run --steps=1, m = $COMPILE_M)"
for width in $WIDTHS; do
  echo
  echo "### width $width"
  echo
  python3 bench/compile_time.py --tool run --width "$width" --batch 256 \
    --depths "$DEPTHS" --ms "$COMPILE_M" --depth-m "$COMPILE_M" \
    --m-depth "${DEPTHS##*,}" --no-targets
done

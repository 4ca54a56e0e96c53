#!/usr/bin/env bash
# GEMM libraries at the micro-batch sizes gacc's steps produce: OpenBLAS
# (what LibTorch uses), BLIS, oneDNN's dnnl_sgemm and gaccrt_sgemm (what
# gacc's compiled steps call: oneDNN's matmul primitive or sgemm, gaccrt's
# kernels or OpenBLAS per GEMM,
# from $GACC_BUILD_DIR/lib/libgaccrt.so), each loaded with dlopen (a library
# that is not installed or built is reported as such; BLIS is Debian's
# libblis4-pthread, oneDNN's libdnnl.so.2 comes with libtorch).
#
#   bench/gemm_libs.sh [THREADS]     (default 1)
#
# Environment: BENCH_WIDTH (default 512), BENCH_BS (default "32 64 128 256"),
# GACC_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-1}
WIDTH=${BENCH_WIDTH:-512}
BS=${BENCH_BS:-32 64 128 256}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/gemm_libs" bench/gemm_libs.c -ldl
export GACCRT_LIB="$PWD/${GACC_BUILD_DIR:-build}/lib/libgaccrt.so"
export OPENBLAS_NUM_THREADS=$THREADS BLIS_NUM_THREADS=$THREADS \
  OMP_NUM_THREADS=$THREADS
echo "GEMMs of one ${WIDTH}x${WIDTH} layer at micro-batch b, $THREADS thread(s); median of 41"
echo
# shellcheck disable=SC2086
"$tmp/gemm_libs" "$WIDTH" $BS

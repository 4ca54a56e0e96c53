#!/usr/bin/env bash
# Configures (once) and builds gacc into build/ with Ninja against Debian's
# LLVM/MLIR 22 (shared libMLIR.so and libLLVM.so). With arguments, builds
# only those targets (and what they need): scripts/build.sh gacc-opt gacc-run.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${GACC_BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -G Ninja -S . -B "$BUILD_DIR" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir
fi
cmake --build "$BUILD_DIR" ${1:+--target "$@"}

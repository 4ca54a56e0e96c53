#!/usr/bin/env bash
# Installs what is missing, builds gacc, and runs every test (lit: FileCheck,
# -verify-diagnostics, numerical runs, the no-crash sweep, the find_package
# embedding test). Prints "N passed, N failed" at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
BUILD_DIR=${GACC_BUILD_DIR:-build}
LIT=/usr/lib/llvm-22/bin/lit
log=$(mktemp)
status=0
"$LIT" -sv "$BUILD_DIR/test" 2>&1 | tee "$log" || status=$?
passed=$(sed -n 's/^ *Passed *: *\([0-9]*\).*/\1/p' "$log" | tail -1)
failed=$(sed -n 's/^ *Failed *: *\([0-9]*\).*/\1/p' "$log" | tail -1)
rm -f "$log"
echo "${passed:-0} passed, ${failed:-0} failed"
if [ "${passed:-0}" -eq 0 ]; then
  echo "test.sh: no test ran" >&2
  exit 1
fi
exit $status

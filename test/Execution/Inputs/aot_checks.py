"""Checks of ahead-of-time compiled steps for the lit tests (numpy,
/usr/bin/python3).

  aot_checks.py same BIN_DIR STEP OUT OPTIONS...
      gacc-compile STEP with OPTIONS (a quoted string) into a library, runs
      it with gacc-run-aot and the JIT (gacc-run) on the same seeded inputs
      for 2 steps (param_out/state_out fed back), compares every result:
      bitwise, or within 1e-6 relative.
  aot_checks.py compare DIR_A DIR_B
      the result<j>.npy of two output folders agree as above.

Each prints what it compared and exits non-zero on a mismatch.
"""

import os
import shutil
import subprocess
import sys

import numpy as np


def run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"FAILED ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def load_results(folder):
    results = []
    while os.path.exists(f"{folder}/result{len(results)}.npy"):
        results.append(np.load(f"{folder}/result{len(results)}.npy"))
    return results


def compare(name, a_dir, b_dir):
    a, b = load_results(a_dir), load_results(b_dir)
    if not a or len(a) != len(b):
        sys.exit(f"{name}: {len(a)} results against {len(b)}\nMISMATCH")
    bitwise, worst = True, 0.0
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            sys.exit(f"{name}: {x.shape} {x.dtype} against {y.shape} {y.dtype}\nMISMATCH")
        if x.tobytes() == y.tobytes():
            continue
        bitwise = False
        x64, y64 = x.astype(np.float64), y.astype(np.float64)
        scale = max(float(np.max(np.abs(y64))), 1e-30)
        worst = max(worst, float(np.max(np.abs(x64 - y64))) / scale)
    print(f"{name}: {len(a)} results, " +
          ("bitwise equal" if bitwise else f"max relative difference {worst:.2e}"))
    if worst > 1e-6:
        sys.exit("MISMATCH")
    print("SAME")


def same(bin_dir, step, out, options):
    name = f"{os.path.basename(step)} [{options}]"
    folder = f"{out}/{os.path.basename(step)}-{abs(hash(options)) % 10**8}"
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    library = f"{folder}/step.so"
    opts = options.split()
    run([f"{bin_dir}/gacc-compile", step, "-o", library] + opts)
    common = ["--seed=5", "--steps=2", "--quiet"]
    run([f"{bin_dir}/gacc-run-aot", library, f"--output-dir={folder}/aot"] + common)
    run([f"{bin_dir}/gacc-run", step, f"--output-dir={folder}/jit"] + common + opts)
    compare(name, f"{folder}/aot", f"{folder}/jit")


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "same":
        for options in sys.argv[5:] or [""]:
            same(sys.argv[2], sys.argv[3], sys.argv[4], options)
    elif mode == "compare":
        compare(f"{sys.argv[2]} vs {sys.argv[3]}", sys.argv[2], sys.argv[3])
    else:
        sys.exit(f"unknown mode {mode}")

"""Checks that compiled steps need no compiler-runtime routine on the host.

Usage: jit_symbols.py BIN_DIR TMP_DIR STEP.mlir...

For every step (and an f16 copy of every bf16 step):
  1. gacc-run --micro-batches=2 must not report an unresolved JIT symbol
     ("Symbols not found", "JIT session error") and must exit 0, except for
     the graphs listed in REJECTED, which must fail with a diagnostic;
  2. the host code (gacc-opt --gacc-pipeline --gacc-lower-to-cpu,
     mlir-translate, llc for the baseline x86-64 CPU, which has no f16 or
     bf16 conversion instructions) must not call a soft-float conversion
     (__truncsfbf2, __extendhfsf2, __truncsfhf2, ...), which the host's
     libgcc may lack.
Prints one line per failure and a summary; exits 1 on any failure.
"""

import pathlib
import re
import subprocess
import sys

REJECTED = {"batchnorm.mlir"}
SOFT_FLOAT = re.compile(r"(call\w*|jmp)\s+_*(trunc|extend)\w*[hb]f\d?\w*")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          **kw)


def main():
    bin_dir = pathlib.Path(sys.argv[1])
    tmp = pathlib.Path(sys.argv[2])
    tmp.mkdir(parents=True, exist_ok=True)
    steps = [pathlib.Path(p) for p in sys.argv[3:]]
    for path in list(steps):
        text = path.read_text()
        if "bf16" in text:
            copy = tmp / (path.stem + "_as_f16.mlir")
            copy.write_text(text.replace("bf16", "f16"))
            steps.append(copy)
    failures = 0
    for path in steps:
        proc = run([str(bin_dir / "gacc-run"), str(path), "--micro-batches=2"])
        out = proc.stdout + proc.stderr
        if "Symbols not found" in out or "JIT session error" in out:
            failures += 1
            print(f"FAIL unresolved JIT symbol: {path.name}\n{out[-1000:]}")
            continue
        rejected = path.name in REJECTED
        if (proc.returncode != 0) != rejected or proc.returncode < 0:
            failures += 1
            print(f"FAIL gacc-run exit {proc.returncode}: {path.name}\n"
                  f"{out[-1000:]}")
            continue
        if rejected:
            continue
        lowered = run([str(bin_dir / "gacc-opt"), str(path),
                       "--gacc-pipeline=micro-batches=2",
                       "--gacc-lower-to-cpu"])
        ir = run(["mlir-translate", "--mlir-to-llvmir"], input=lowered.stdout)
        asm = run(["llc", "-O2", "-mtriple=x86_64-unknown-linux-gnu",
                   "-mcpu=x86-64"], input=ir.stdout)
        if lowered.returncode or ir.returncode or asm.returncode:
            failures += 1
            print(f"FAIL lowering to x86-64 assembly: {path.name}\n"
                  f"{(lowered.stderr + ir.stderr + asm.stderr)[-1000:]}")
            continue
        calls = sorted(set(m.group(0) for m in SOFT_FLOAT.finditer(asm.stdout)))
        if calls:
            failures += 1
            print(f"FAIL soft-float conversion calls in {path.name}: {calls}")
    print(f"{len(steps)} steps, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

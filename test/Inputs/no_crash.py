"""Runs gacc-opt over every .mlir input with many pipeline options.

Usage: no_crash.py GACC_OPT DIR [DIR ...]

Each file is split at '// -----' (gacc-opt --split-input-file) and run with
each option set. A run passes when gacc-opt exits with 0 or 1 (a diagnostic);
a negative exit code (a signal) or any other code fails the test. An
"internal error" diagnostic fails it too.
"""

import pathlib
import subprocess
import sys

OPTIONS = [
    "micro-batches=1",
    "micro-batches=2",
    "micro-batches=3",
    "micro-batches=4",
    "micro-batches=8",
    "micro-batches=0",
    "micro-batches=100",
    "micro-batch-sizes=3,1",
    "micro-batch-sizes=1,1,1,1,1",
    "micro-batches=2 accumulate-type=f32",
    "micro-batches=2 bucket-bytes=4",
    "micro-batches=2 allow-micro-batch-statistics",
    "micro-batches=2 test-skip-global-normalizer",
]


def main():
    gacc_opt = sys.argv[1]
    files = []
    for root in sys.argv[2:]:
        files += sorted(pathlib.Path(root).rglob("*.mlir"))
    failures = 0
    runs = 0
    for path in files:
        for options in OPTIONS:
            cmd = [gacc_opt, str(path), "--split-input-file",
                   f"--gacc-pipeline={options}", "-o", "/dev/null"]
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=120)
            runs += 1
            bad = proc.returncode not in (0, 1) or "internal error" in proc.stderr
            if bad:
                failures += 1
                print(f"FAIL ({proc.returncode}): {' '.join(cmd)}")
                print(proc.stderr[-2000:])
    print(f"{runs} runs over {len(files)} files, {failures} crashed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

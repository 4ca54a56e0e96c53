"""Runs gacc-opt over every .mlir input with many pipeline options and checks
the outcome of each run against a table of expected outcomes.

Usage: no_crash.py GACC_OPT EXPECTED ROOT DIR [DIR ...]
       no_crash.py --update GACC_OPT EXPECTED ROOT DIR [DIR ...]

Each file is run with `--split-input-file` and each option set. The outcome
of a run is "ok" (exit 0, no error printed) or the first error diagnostic
with its location stripped (exit 1). EXPECTED lists one line per run:
    PATH (relative to ROOT) | OPTIONS | OUTCOME
A run fails the test when it dies of a signal or prints a crash report,
prints "error:" and exits 0, exits with another code, or its outcome differs
from the table (an input that must succeed fails, or fails with another
diagnostic); a run missing from the table fails too. --update rewrites the
table from the current outcomes (review the diff).
"""

import pathlib
import re
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

CRASH_MARKERS = ("PLEASE submit a bug report", "Stack dump:", "LLVM ERROR:",
                 "internal error")


def neutralize(text):
    return re.sub(r"expected-(error|warning|remark|note)", r"annotated-\1", text)


def outcome(stderr):
    for line in stderr.splitlines():
        m = re.search(r"error: (.*)", line)
        if m:
            return "error: " + m.group(1).strip()
    return "ok"


def main():
    args = sys.argv[1:]
    update = args and args[0] == "--update"
    if update:
        args = args[1:]
    gacc_opt, expected_path, root = args[0], pathlib.Path(args[1]), pathlib.Path(args[2])
    files = []
    for d in args[3:]:
        files += sorted(pathlib.Path(d).rglob("*.mlir"))
    expected = {}
    if not update:
        for line in expected_path.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                path, options, result = (s.strip() for s in line.split(" | ", 2))
                expected[(path, options)] = result
    rows, failures, runs = [], 0, 0
    for path in files:
        rel = str(path.resolve().relative_to(root.resolve()))
        for options in OPTIONS:
            # The input on stdin, with its -verify-diagnostics annotations
            # neutralized: mlir-opt checks `expected-*` comments even
            # without --verify-diagnostics (and then prints "error: expected
            # ... was not produced" with exit 0).
            cmd = [gacc_opt, "-", "--split-input-file",
                   f"--gacc-pipeline={options}", "-o", "/dev/null"]
            proc = subprocess.run(cmd, capture_output=True, text=True,
                                  timeout=120, input=neutralize(path.read_text()))
            runs += 1
            got = outcome(proc.stderr)
            rows.append(f"{rel} | {options} | {got}")
            problem = None
            if proc.returncode < 0 or any(m in proc.stderr for m in CRASH_MARKERS):
                problem = f"crashed (exit {proc.returncode})"
            elif proc.returncode == 0 and got != "ok":
                problem = "printed an error and exited 0"
            elif proc.returncode not in (0, 1) or (proc.returncode == 1 and got == "ok"):
                problem = f"exit {proc.returncode}"
            elif not update and expected.get((rel, options)) != got:
                problem = ("expected " + expected.get((rel, options), "<no entry>")
                           + ", got " + got)
            if problem:
                failures += 1
                print(f"FAIL {rel} | {options}: {problem}")
                print(proc.stderr[-1500:])
    if update:
        expected_path.write_text(
            "# Expected outcome of gacc-opt --split-input-file --gacc-pipeline=OPTIONS\n"
            "# for each input (test/no-crash.test): ok, or the first error.\n"
            "# Regenerate with: no_crash.py --update (and review the diff).\n"
            + "\n".join(rows) + "\n")
    print(f"{runs} runs over {len(files)} files, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

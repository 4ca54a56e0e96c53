"""gacc-check on every training step that gacc-pipeline accepts.

  check_accepted.py BIN_DIR WORK PATH...

Each PATH is a .mlir file or a folder searched for .mlir files. Files with
`// -----` are split into their cases (lit's --split-input-file). For each
case with gacc roles: gacc-opt --gacc-pipeline at micro-batches=2 (1 when the
batch has one sample or 2 is refused); a refusal must be a located
diagnostic; an accepted step must pass gacc-check at the same split (exit 0;
exit 2 for a step marked DELIBERATELY WRONG INPUT GRAPH).
Prints one line per step and `checked N accepted steps: P passed, F failed
(R refused)`; exits 1 on any failure.
"""

import os
import re
import subprocess
import sys

# Steps that need options to be compiled at all.
EXTRA = {"dynamic_batch.mlir": ["--batch-size=4"]}


def cases(path):
    with open(path) as f:
        text = f.read()
    parts = re.split(r"^// -----\s*$", text, flags=re.M)
    for i, part in enumerate(parts):
        if "gacc.loss" in part and "func.func" in part:
            yield i, part


def run(cmd, timeout=300):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return -1, "timeout"


def main():
    bindir, work, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
    os.makedirs(work, exist_ok=True)
    files = []
    for p in paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, n) for n in sorted(names)
                          if n.endswith(".mlir")]
        else:
            files.append(p)
    passed = failed = refused = 0
    for path in sorted(files):
        name = os.path.basename(path)
        extra = EXTRA.get(name, [])
        for index, text in cases(path):
            step = os.path.join(work, f"{name}.{index}.mlir")
            with open(step, "w") as f:
                f.write(text)
            label = f"{path}#{index}" if index else path
            accepted = None
            for m in (2, 1):
                rc, out = run([f"{bindir}/gacc-opt", step,
                               f"--gacc-pipeline=micro-batches={m} "
                               + " ".join(o.lstrip("-") for o in extra),
                               "-o", os.devnull])
                if rc == 0:
                    accepted = m
                    break
            if accepted is None:
                if rc < 0 or not re.search(r":\d+:\d+: error:", out):
                    failed += 1
                    print(f"FAIL {label}: refused without a located "
                          f"diagnostic (exit {rc})\n{out[-2000:]}")
                else:
                    refused += 1
                    print(f"refused {label}")
                continue
            expect = 2 if "DELIBERATELY WRONG INPUT GRAPH" in text else 0
            rc, out = run([f"{bindir}/gacc-check", step,
                           f"--micro-batches={accepted}"] + extra)
            if rc == expect:
                passed += 1
                print(f"PASS {label} (m = {accepted}, exit {rc})")
            else:
                failed += 1
                print(f"FAIL {label} (m = {accepted}): gacc-check exit {rc}, "
                      f"expected {expect}\n{out[-3000:]}")
    print(f"checked {passed + failed} accepted steps: {passed} passed, "
          f"{failed} failed ({refused} refused)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

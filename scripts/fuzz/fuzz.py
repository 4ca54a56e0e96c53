#!/usr/bin/env python3
"""Graph mutator and option sweep for gacc (issue 11).

Usage:
  fuzz.py --bin BUILD/bin [--seed S] [--mutants N] [--sweep short|long]
          [--jobs J] [--timeout T] [--keep DIR] [--execute] [--progress K]
          PATH...

Collects the training steps (.mlir files with a gacc.loss result, split at
'// -----') under the PATHs, then:
  * the option sweep: every step through gacc-opt with each pipeline option
    set and each lowering (CPU, CUDA kernels) and bad lowering options;
  * N mutants: a step with one to three random textual mutations (iterator
    types swapped, constants replaced by NaN/inf/0/-1, ops swapped, shapes,
    batch dims, lines deleted, a result returned twice), each run through
    the pipeline with a random option set and a lowering.
A run fails the harness when gacc-opt dies of a signal, prints a crash
report, prints "error:" but exits 0, prints an error without a location
(a line starting with "error:" or "<unknown>:") that names no option, or
does not finish within the timeout (a hang). Exit status 0 and 1 (with a diagnostic) are both fine otherwise.
With --execute (issue 49), every mutant that the pipeline accepts (with a
lowering other than CUDA's) is also compiled for the CPU, run and compared against LibTorch by
gacc-check with the same options (random inputs, one step; not with the
test-* options, which break the step on purpose, nor with
allow-micro-batch-statistics, whose per-micro-batch statistics differ from
the full-batch reference by design): that run fails the
harness on a signal, a crash report, a hang, "error:" with exit 0, an exit
status other than gacc-check's 0 (pass), 2 (the input's own backward is
wrong) and 3 (an error: the mutant refused, LibTorch cannot evaluate it, a
reported run-time error), or a mismatch (exit 1), which is where a read of
undefined contents shows.
Failing inputs are written to --keep (default: a temporary folder) with the
command line. Prints one line per failure and a summary; exits 1 on any.

The short sweep with a fixed seed runs in the test suite
(test/Fuzz/fuzz-short.test); the long run (>= 10,000 mutants) is opt-in:
  scripts/fuzz/fuzz.py --bin build/bin --seed 7 --mutants 10000 --sweep long \\
      examples test
"""

import argparse
import concurrent.futures
import os
import pathlib
import random
import re
import subprocess
import sys
import tempfile

PIPELINE_SHORT = [
    "micro-batches=1",
    "micro-batches=2",
    "micro-batches=3",
    "micro-batch-sizes=3,1",
    "micro-batches=2 accumulate-type=f32 bucket-bytes=4",
]
PIPELINE_LONG = PIPELINE_SHORT + [
    "micro-batches=4", "micro-batches=8", "micro-batches=0",
    "micro-batches=100", "micro-batch-sizes=1,1,1,1,1",
    "micro-batch-sizes=0,4", "micro-batch-sizes=-1,5",
    "micro-batches=2 allow-micro-batch-statistics",
    "micro-batches=2 test-skip-global-normalizer",
    "micro-batches=2 accumulate-type=f64", "micro-batches=2 accumulate-type=junk",
    "micro-batches=2 bucket-bytes=0", "micro-batches=2 bucket-bytes=-5",
    "micro-batches=2 entry=nope",
    "micro-batches=2 runtime-batch-size=true",
    "micro-batch-sizes=3,1 runtime-batch-size=true",
    "micro-batches=4 runtime-batch-size=true loss-scale=dynamic",
]
LOWERINGS_SHORT = [
    ["--gacc-lower-to-cpu"],
    ["--gacc-lower-to-cuda=kernels-only"],
]
LOWERINGS_LONG = LOWERINGS_SHORT + [
    [],
    ["--gacc-lower-to-cpu=blas=false"],
    ["--gacc-lower-to-cpu=bufferize-only"],
    ["--gacc-lower-to-cuda"],
    ["--gacc-lower-to-cuda=chip="],
    ["--gacc-lower-to-cuda=chip=sm_xx"],
    ["--gacc-lower-to-cuda=format=junk"],
    ["--gacc-lower-to-cuda=tile-sizes=-1,8"],
    ["--gacc-lower-to-cuda=tile-sizes=100000,100000"],
    ["--gacc-lower-to-cuda=cuda-path=/nonexistent"],
    ["--gacc-inline-micro-batches", "--gacc-pipeline=micro-batches=2"],
    ["--gacc-pipeline=micro-batches=2"],
    ["--canonicalize", "--cse"],
]

# Names a location-less error may mention instead of a location: the pass
# and tool options (pass options and their values are what such errors are
# about).
OPTION_WORDS = re.compile(
    r"(?<![\w-])--[a-z][a-z0-9-]*|\b[a-z][a-z0-9-]*=|\boption\b|"
    r"\b(micro-batches|micro-batch-sizes|bucket-bytes|accumulate-type|entry|"
    r"batch-size|chip|format|tile-sizes|cuda-path|libdevice|blas)\b")


def unlocated_error(err):
    """Returns the first error line without a location that names no
    option, or None."""
    for line in err.splitlines():
        if (line.startswith("error:") or line.startswith("<unknown>:")) \
                and "error" in line and not OPTION_WORDS.search(line):
            return line
    return None


CRASH_MARKERS = ("PLEASE submit a bug report", "Stack dump:",
                 "LLVM ERROR:", "Assertion", "terminate called")


def collect_steps(paths):
    steps = []
    for root in paths:
        root = pathlib.Path(root)
        files = [root] if root.is_file() else sorted(root.rglob("*.mlir"))
        for path in files:
            for k, part in enumerate(path.read_text().split("// -----")):
                if "gacc.loss" in part and "func.func" in part:
                    # mlir-opt checks expected-* annotations even without
                    # --verify-diagnostics; the harness wants plain runs.
                    part = re.sub(r"expected-(error|warning|remark|note)",
                                  r"annotated-\1", part)
                    steps.append((f"{path}#{k}", part))
    return steps


def mutate(text, rng):
    """Applies one random mutation; returns (text, description)."""
    kinds = ["iterator", "constant", "op", "shape", "batch-dim", "delete",
             "return-twice", "map", "swap-operands"]
    kind = rng.choice(kinds)

    def replace_nth(pattern, repl, what):
        matches = list(re.finditer(pattern, text))
        if not matches:
            return None
        m = rng.choice(matches)
        new = repl(m) if callable(repl) else repl
        return text[:m.start()] + new + text[m.end():], f"{kind}: {what} at {m.start()}"

    result = None
    if kind == "iterator":
        result = replace_nth(r'"(parallel|reduction)"',
                             lambda m: '"reduction"' if m.group(1) == "parallel"
                             else '"parallel"', "swap")
    elif kind == "constant":
        value = rng.choice(["0x7FC00000", "0x7F800000", "0.0", "-1.0", "1.0e30"])
        result = replace_nth(r"arith\.constant (dense<)?-?[0-9]+\.[0-9]+(e[-+]?[0-9]+)?",
                             lambda m: "arith.constant " + (m.group(1) or "") + value,
                             value)
    elif kind == "op":
        ops = ["arith.addf", "arith.subf", "arith.mulf", "arith.divf",
               "arith.maximumf", "arith.minimumf"]
        result = replace_nth(r"arith\.(addf|subf|mulf|divf|maximumf|minimumf)\b",
                             lambda m: rng.choice(ops), "op")
    elif kind == "shape":
        result = replace_nth(r"tensor<([0-9]+)x",
                             lambda m: f"tensor<{max(1, int(m.group(1)) + rng.choice([-1, 1]))}x",
                             "dim")
    elif kind == "batch-dim":
        result = replace_nth(r"gacc\.batch = ([0-9]+)",
                             lambda m: f"gacc.batch = {rng.choice([0, 1, 2])}",
                             "batch")
    elif kind == "delete":
        lines = text.split("\n")
        body = [i for i, l in enumerate(lines)
                if l.strip().startswith("%") and "=" in l]
        if body:
            i = rng.choice(body)
            del lines[i]
            result = "\n".join(lines), f"delete line {i}"
    elif kind == "return-twice":
        m = re.search(r"return (%[\w#]+)(.*?) : (tensor<[^>]*>)(.*)\n", text)
        sig = re.search(r"-> \((tensor<[^>]*>) \{gacc\.loss\}", text)
        if m and sig:
            new_ret = (f"return {m.group(1)}{m.group(2)}, {m.group(1)} : "
                       f"{m.group(3)}{m.group(4)}, {m.group(3)}\n")
            t = text[:m.start()] + new_ret + text[m.end():]
            close = t.find(")", sig.end())
            t = t[:close] + f", {m.group(3)} {{gacc.metric}}" + t[close:]
            result = t, "return-twice"
    elif kind == "map":
        result = replace_nth(r"affine_map<\(d0, d1\) -> \((d0|d1)\)>",
                             lambda m: "affine_map<(d0, d1) -> (" +
                             ("d1" if m.group(1) == "d0" else "d0") + ")>",
                             "map")
    elif kind == "swap-operands":
        result = replace_nth(r"ins\((%[\w#]+), (%[\w#]+) :",
                             lambda m: f"ins({m.group(2)}, {m.group(1)} :",
                             "ins")
    return result if result else (text, f"{kind}: no site")


def run(cmd, timeout):
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang", None
    rc, err = proc.returncode, proc.stderr
    if rc < 0:
        return f"signal {-rc}", err
    if any(marker in err for marker in CRASH_MARKERS):
        return "crash report", err
    if rc == 0 and "error:" in err:
        return "error with exit 0", err
    if rc not in (0, 1):
        return f"exit {rc}", err
    line = unlocated_error(err)
    if line:
        return f"error without location: {line[:200]}", err
    return None, err


def check_flags(pipeline):
    """gacc-check's flags for a gacc-pipeline option string: "a=b c" ->
    ["--a=b", "--c"]."""
    return ["--" + word for word in pipeline.split()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mutants", type=int, default=50)
    parser.add_argument("--sweep", choices=["short", "long"], default="short")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("--keep", default=None)
    parser.add_argument("--execute", action="store_true",
                        help="also compile, run and check accepted mutants "
                        "with gacc-check")
    parser.add_argument("--progress", type=int, default=0,
                        help="print a progress line every K runs")
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()

    gacc_opt = str(pathlib.Path(args.bin) / "gacc-opt")
    gacc_check = str(pathlib.Path(args.bin) / "gacc-check")
    pipelines = PIPELINE_SHORT if args.sweep == "short" else PIPELINE_LONG
    lowerings = LOWERINGS_SHORT if args.sweep == "short" else LOWERINGS_LONG
    steps = collect_steps(args.paths)
    if not steps:
        print("fuzz: no training steps found")
        return 1
    keep = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="gacc-fuzz-"))
    keep.mkdir(parents=True, exist_ok=True)
    work = pathlib.Path(tempfile.mkdtemp(prefix="gacc-fuzz-work-"))
    rng = random.Random(args.seed)

    jobs = []  # (name, text, pipeline, lowering)
    for name, text in steps:
        for pipeline in pipelines:
            lowering = lowerings[len(jobs) % len(lowerings)]
            jobs.append((name, text, pipeline, lowering))
    sweep_runs = len(jobs)
    for k in range(args.mutants):
        name, text = rng.choice(steps)
        what = []
        for _ in range(rng.randint(1, 3)):
            text, description = mutate(text, rng)
            what.append(description)
        jobs.append((f"mutant {k} of {name} [{'; '.join(what)}]", text,
                     rng.choice(pipelines), rng.choice(lowerings)))

    def execute(index):
        name, text, pipeline, lowering = jobs[index]
        path = work / f"input{index}.mlir"
        path.write_text(text)
        cmd = [gacc_opt, str(path), f"--gacc-pipeline={pipeline}", *lowering,
               "-o", os.devnull]
        problem, err = run(cmd, args.timeout)
        if problem:
            saved = keep / f"failure{index}.mlir"
            saved.write_text(f"// {name}\n// {' '.join(cmd[2:])}\n" + text)
            return (f"FAIL ({problem}): {name}: gacc-opt {saved} "
                    f"{' '.join(cmd[2:-2])}\n" + (err or "")[-1500:]), False
        executed = False
        if (args.execute and index >= sweep_runs and
                "error:" not in (err or "") and
                not any("cuda" in flag for flag in lowering) and
                "test-" not in pipeline and
                "allow-micro-batch-statistics" not in pipeline):
            executed = True
            check = [gacc_check, str(path), *check_flags(pipeline)]
            try:
                proc = subprocess.run(check, capture_output=True, text=True,
                                      timeout=args.timeout)
                rc, out = proc.returncode, proc.stdout + proc.stderr
                if rc < 0:
                    problem = f"gacc-check: signal {-rc}"
                elif any(marker in out for marker in CRASH_MARKERS):
                    problem = "gacc-check: crash report"
                elif rc == 0 and "error:" in out:
                    problem = "gacc-check: error with exit 0"
                elif rc == 1:
                    problem = "gacc-check: mismatch"
                elif rc not in (0, 2, 3):
                    problem = f"gacc-check: exit {rc}"
            except subprocess.TimeoutExpired:
                problem, out = "gacc-check: hang", ""
            if problem:
                saved = keep / f"failure{index}.mlir"
                saved.write_text(f"// {name}\n// gacc-check "
                                 f"{' '.join(check[2:])}\n" + text)
                return (f"FAIL ({problem}): {name}: gacc-check {saved} "
                        f"{' '.join(check[2:])}\n" + out[-1500:]), executed
        return None, executed

    failures = []
    executions = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for done, (result, executed) in enumerate(
                pool.map(execute, range(len(jobs))), start=1):
            executions += executed
            if result:
                failures.append(result)
                print(result, flush=True)
            if args.progress and done % args.progress == 0:
                print(f"fuzz: progress: {done} of {len(jobs)} runs, "
                      f"{executions} executions, {len(failures)} failures",
                      flush=True)
    print(f"fuzz: {len(steps)} steps, {sweep_runs} sweep runs, "
          f"{args.mutants} mutants (seed {args.seed}), "
          + (f"{executions} executed and checked, " if args.execute else "")
          + f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

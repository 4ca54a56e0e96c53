#!/usr/bin/env python3
"""Compile-time benchmark: gacc-pipeline + gacc-lower-to-cpu on deep MLPs.

  bench/compile_time.py [--full] [--depths 10,50,...] [--ms 1,8,...]
                        [--width 64] [--batch 64] [--timeout 120]
                        [--lower cpu|cuda] [--graph mlp|random]

Generates MLPs with bench/gen_mlp.py (DEPTH layers of width WIDTH, 10
classes, SGD in the step, an average all-reduce per gradient), runs

  gacc-opt MLP --gacc-pipeline=micro-batches=M --gacc-lower-to-cpu

once per point (--lower cuda: --gacc-lower-to-cuda instead, kernels through
NVVM to PTX; needs the CUDA toolkit's libdevice, no GPU). --tool run times
everything until the first step can run instead (gacc-run --steps=1, LLVM's
optimization and code generation included; the seconds column is its
"compiled in"; with --cached each point runs twice with a step cache of
its own, and the second run's "compiled in", wall and CPU seconds, linked
from the cache, are printed beside the first's), --tool compile the
ahead-of-time compiler (gacc-compile to a
step library, linked from objects generated in parallel). It prints wall
seconds, CPU seconds (user + system) and
the peak resident set of the gacc-opt process (from wait4's rusage); on a
shared machine the CPU seconds are the number to compare. Two sweeps: depth at a fixed m
(--depth-m, default 8) and m at a fixed depth (--m-depth, default 100).
The batch is max(BATCH, M) so that every region has a sample. At the end it
fits time = c * x^k by least squares on log-log and prints the growth
exponents k in depth and in m, plus the issue's target points.

--graph random: deep random steps of scripts/difftest/gen_step.py instead
(--depth DEPTH layers of every kind it draws: softmax, layer norm, residuals,
token mixing, Conv1d, pads and slices, ...; widths 2-6; its seed 6, a batch
of 6 samples), the depth sweep only, at micro-batches=2.

Default: a subset that runs in a few minutes on a 2-core machine; --full
sweeps depth 10..400 and m 1..256. Environment: GACC_BUILD_DIR (default
build).
"""

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def command(tool, bin_dir, graph, m, lower, tmp, cache="off"):
    """The command line that compiles `graph` with `tool`."""
    if tool == "run":
        # Compile time only: no GEMM tuning at a step's first run (it times
        # the step on each GEMM library, docs/Tools.md). No step cache
        # unless --cached: each point compiles (a repeated point would link
        # the machine code its first run kept).
        return [os.path.join(bin_dir, "gacc-run"), graph,
                f"--micro-batches={m}", "--steps=1", "--auto-tune-gemm=false",
                f"--step-cache={cache}"]
    if tool == "compile":
        return [os.path.join(bin_dir, "gacc-compile"), graph,
                f"--micro-batches={m}", "-o", os.path.join(tmp, "step.so")]
    return [os.path.join(bin_dir, "gacc-opt"), graph,
            f"--gacc-pipeline=micro-batches={m}", f"--gacc-lower-to-{lower}",
            "-o", os.devnull]


def measure(cmd, timeout):
    """Returns (seconds, CPU seconds, peak RSS in MiB, ok) for one command;
    for gacc-run the seconds are its "compiled in"."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            pid, status, usage = os.wait4(proc.pid, 0)
            return (time.monotonic() - start,
                    usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
                    False)
        time.sleep(0.01)
    seconds = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    out = proc.stdout.read().decode(errors="replace")
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode != 0:
        sys.stderr.write(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                         f"{err[-2000:]}\n")
    compiled = re.search(r"compiled in (\d+) ms", out)
    if compiled:
        seconds = int(compiled.group(1)) / 1000
    return (seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
            proc.returncode == 0)


def generate_random(tmp, depth):
    path = os.path.join(tmp, f"random-{depth}.mlir")
    if not os.path.exists(path):
        subprocess.run([sys.executable,
                        os.path.join(ROOT, "scripts", "difftest",
                                     "gen_step.py"),
                        "--seed", "6", "--depth", str(depth), "-o", path],
                       check=True, stderr=subprocess.DEVNULL)
    return path


def generate(tmp, depth, width, batch):
    path = os.path.join(tmp, f"mlp-{depth}x{width}-b{batch}.mlir")
    if not os.path.exists(path):
        dims = ",".join([str(width)] * depth + ["10"])
        with open(path, "w") as f:
            subprocess.run([sys.executable, os.path.join(HERE, "gen_mlp.py"),
                            "--batch", str(batch), "--dims", dims],
                           stdout=f, check=True)
    return path


def fit_exponent(points):
    """Least-squares slope of log(time) against log(x)."""
    pts = [(math.log(x), math.log(t)) for x, t in points if x > 0 and t > 0]
    if len(pts) < 2:
        return float("nan")
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    sxy = sum((p[0] - mx) * (p[1] - my) for p in pts)
    return sxy / sxx if sxx else float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--full", action="store_true",
                   help="depth 10..400 and m 1..256 (slow)")
    p.add_argument("--depths", help="comma-separated depths")
    p.add_argument("--ms", help="comma-separated micro-batch counts")
    p.add_argument("--depth-m", type=int, default=8,
                   help="m of the depth sweep (default 8)")
    p.add_argument("--m-depth", type=int, default=100,
                   help="depth of the m sweep (default 100)")
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--timeout", type=float, default=120,
                   help="seconds per point (default 120)")
    p.add_argument("--lower", choices=["cpu", "cuda"], default="cpu",
                   help="the lowering to time (default cpu)")
    p.add_argument("--tool", choices=["opt", "run", "compile"],
                   default="opt",
                   help="gacc-opt (the MLIR part, default), gacc-run (until "
                   "the first step can run) or gacc-compile (to an object)")
    p.add_argument("--graph", choices=["mlp", "random"], default="mlp",
                   help="deep MLPs (default) or deep random steps of "
                   "gen_step.py (depth sweep only, m = 2)")
    p.add_argument("--cached", action="store_true",
                   help="--tool run: each point a second time from the step "
                   "cache the first run filled (gacc-run --step-cache)")
    p.add_argument("--no-targets", action="store_true",
                   help="skip the 400-layer m=256 target point")
    args = p.parse_args()

    build = os.environ.get("GACC_BUILD_DIR", os.path.join(ROOT, "build"))
    bin_dir = os.path.join(build, "bin")
    tool = {"opt": "gacc-opt", "run": "gacc-run",
            "compile": "gacc-compile"}[args.tool]
    if not os.access(os.path.join(bin_dir, tool), os.X_OK):
        sys.exit(f"error: {bin_dir}/{tool} not found; build it first "
                 f"(ninja -C build {tool}) or set GACC_BUILD_DIR")
    if args.cached and args.tool != "run":
        sys.exit("error: --cached times gacc-run's step cache: use --tool run")
    if args.tool != "opt" and args.lower != "cpu":
        sys.exit("error: --tool run/compile times the CPU lowering only")
    if args.full:
        depths = [10, 25, 50, 100, 200, 400]
        ms = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    else:
        depths = [10, 50, 100, 200]
        ms = [1, 8, 32, 128]
    if args.depths:
        depths = [int(v) for v in args.depths.split(",")]
    if args.ms:
        ms = [int(v) for v in args.ms.split(",")]

    random_graph = args.graph == "random"
    if random_graph:
        # The random step's batch is its seed's (6 samples): m = 2 only.
        args.depth_m = 2
        if not args.depths:
            depths = [50, 100, 200, 400]
        print(f"gacc-opt --gacc-pipeline=micro-batches=2 "
              f"--gacc-lower-to-{args.lower}; random steps of gen_step.py "
              f"(seed 6, batch 6), {os.cpu_count()} CPUs")
    else:
        what = {"opt": f"gacc-opt --gacc-pipeline=micro-batches=M "
                       f"--gacc-lower-to-{args.lower}",
                "run": "gacc-run --micro-batches=M --steps=1 (compiled in)",
                "compile": "gacc-compile --micro-batches=M -o step.o"}
        print(f"{what[args.tool]}; "
              f"MLP width {args.width}, batch max({args.batch}, M), "
              f"{os.cpu_count()} CPUs")
    print()
    if args.cached:
        print("| depth | m | batch | seconds | CPU seconds | peak RSS (MiB) "
              "| cached: seconds | wall seconds | CPU seconds | peak RSS "
              "(MiB) |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    else:
        print("| depth | m | batch | seconds | CPU seconds | peak RSS (MiB) |")
        print("|---|---|---|---|---|---|")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        def point(depth, m):
            if (depth, m) in results:
                return results[(depth, m)]
            batch = 6 if random_graph else max(args.batch, m)
            graph = (generate_random(tmp, depth) if random_graph else
                     generate(tmp, depth, args.width, batch))
            cache = os.path.join(tmp, "cache") if args.cached else "off"
            cmd = command(args.tool, bin_dir, graph, m, args.lower, tmp,
                          cache)
            seconds, cpu, rss, ok = measure(cmd, args.timeout)
            mark = "" if ok else (" (timeout)" if seconds >= args.timeout
                                  else " (failed)")
            row = (f"| {depth} | {m} | {batch} | {seconds:.2f}{mark} | "
                   f"{cpu:.2f} | {rss:.0f} |")
            if args.cached:
                start = time.monotonic()
                hit, hit_cpu, hit_rss, hit_ok = measure(cmd, args.timeout)
                wall = time.monotonic() - start
                row += (f" {hit:.2f}{'' if hit_ok else ' (failed)'} | "
                        f"{wall:.2f} | {hit_cpu:.2f} | {hit_rss:.0f} |")
            print(row, flush=True)
            results[(depth, m)] = (seconds, rss, ok)
            return results[(depth, m)]

        depth_points = []
        for depth in depths:
            seconds, _, ok = point(depth, args.depth_m)
            if ok:
                depth_points.append((depth, seconds))
        m_points = []
        for m in [] if random_graph else ms:
            seconds, _, ok = point(args.m_depth, m)
            if ok:
                m_points.append((m, seconds))
        targets = [] if random_graph else [(100, 8)] + (
            [] if args.no_targets else [(400, 256)])
        for depth, m in targets:
            point(depth, m)

    print()
    print(f"growth exponent in depth (m = {args.depth_m}): "
          f"{fit_exponent(depth_points):.2f}  (target <= 1.2)")
    if random_graph:
        return
    print(f"growth exponent in m (depth = {args.m_depth}): "
          f"{fit_exponent(m_points):.2f}  (target <= 0.2)")
    s, rss, ok = results[(100, 8)]
    print(f"100 layers, m = 8: {s:.2f} s{'' if ok else ' (not completed)'} "
          f"(target < 5 s)")
    if (400, 256) in results:
        s, rss, ok = results[(400, 256)]
        print(f"400 layers, m = 256: {s:.2f} s, {rss:.0f} MiB"
              f"{'' if ok else ' (not completed)'} (target < 30 s, < 2 GB)")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Differential testing of gacc against LibTorch on random training steps.

Generates steps with gen_step.py (random layers, losses, backward passes,
collectives, optimizers, batch sizes, micro-batch splits and rank counts) and
checks each one:

1. `gacc-opt STEP --gacc-pipeline=OPTIONS`: the pipeline accepts the step, or
   refuses it with a located diagnostic (`STEP:LINE:COL: error: ...`). A
   signal, an internal error or an error without a location is a failure.
2. `gacc-check STEP --micro-batches=M | --micro-batch-sizes=... [--ranks=2]
   --input-dir=DIR` on every accepted step: exit 0 (every compiled result
   within tolerance of LibTorch). Exit 1 (a compiled result is wrong) is a
   miscompile, exit 2 (the step's backward disagrees with autograd) a
   generator bug, anything else an error; all three are failures.
3. For about a third of the steps of 3 or more samples (all with --tail):
   the step compiled with runtime-batch-size (or refused with a located
   diagnostic) and `gacc-check --runtime-batch-size` on the first B' < B
   samples of its inputs, an epoch's tail step.
4. For a tenth of the accepted steps (all with --aot): the step compiled
   ahead of time (gacc-compile) and run by gacc-run-aot gives gacc-run's
   results.
4b. For a fifth of the accepted steps (all with --pairs): where
   gacc-pair-accumulating-gemms{any-size} pairs two micro-batches' weight
   gradients (and runs the copies side by side, or in lockstep on one
   thread, or as copies of two micro-batches each with quads from four
   micro-batches on: for half of the drawn steps of fewer micro-batches
   whose batch divides by 4 per rank, this check uses m = 4),
   gacc-check --pair-any-size on 2 GEMM threads (1 for odd seeds)
   passes too. The size rules keep pairs off the small
   graphs generated here; without this check no random step would reach
   the pairs or the concurrent copies.

5. With --cuda, every accepted step is also lowered for CUDA
   (gacc-lower-to-cuda), translated to LLVM IR and its kernels assembled by
   ptxas for sm_90 (test/Lowering/CUDA/Inputs/translate_check.py; no GPU needed).

With --tosa the steps come from gen_tosa_step.py instead: written in TOSA
ops, lowered by mlir-opt's TOSA passes, and checked the same way (the
TOSA source is kept next to each step as STEP.tosa.mlir).

Prints one line per step and a summary
`difftest: tried N graphs: P passed, R refused, F failed` and exits 1 when
any step failed. Failing steps are copied with their inputs and the command
that reproduces them to WORK/failures/.

Usage:
  run.py --gacc-bin=build/bin [--count=N] [--seed=S] [--seeds=a,b] [--gather]
         [--loops]
         [--no-keepdim] [--dynamic] [--depth=N] [--tail] [--aot] [--pairs]
         [--cuda]
         [--tosa] [--work=DIR]
         [--timeout=SECONDS] [--verbose]

gacc-check evaluates keepdim (d0, 0) maps. Should it report that it cannot
evaluate a step with keepdim maps, the step is checked through its twin
instead: the same step generated without keepdim maps (the same computation
on the same inputs) must pass gacc-check, and the keepdim step's compiled
results (gacc-run) must equal the twin's; such steps are counted as "passed
via twin" in the summary.

Environment (for the opt-in long sweep through lit): GACC_DIFFTEST_COUNT
overrides --count, GACC_DIFFTEST_SEED --seed, GACC_DIFFTEST_GATHER=1 sets
--gather, GACC_DIFFTEST_KEEPDIM=1 clears --no-keepdim.
"""

import argparse
import collections
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
import gen_step  # noqa: E402
import gen_tosa_step  # noqa: E402

LOCATED = re.compile(r"^(?P<file>[^:\s]+\.mlir):\d+:\d+: error: (?P<msg>.*)$",
                     re.M)


def run(cmd, timeout, env=None):
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True,
                           timeout=timeout, env=env)
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        return "timeout", e.stdout or "", e.stderr or "", time.time() - t0


def load_npy(path):
    """Reads a little-endian f32/f64/i64/i32 .npy file (any shape) as a flat
    list of floats, with the standard library only."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError("not a .npy file: " + path)
    if data[6] == 1:
        hlen = struct.unpack("<H", data[8:10])[0]
        start = 10 + hlen
    else:
        hlen = struct.unpack("<I", data[8:12])[0]
        start = 12 + hlen
    header = data[start - hlen:start].decode("latin1")
    descr = re.search(r"'descr':\s*'([^']*)'", header).group(1)
    fmt = {"<f4": "f", "<f8": "d", "<i8": "q", "<i4": "i", "|b1": "?",
           "|u1": "B"}[descr]
    body = data[start:]
    n = len(body) // struct.calcsize(fmt)
    return [float(v) for v in struct.unpack("<%d%s" % (n, fmt), body)]


def run_flags(step):
    """gacc-check's flags for `step` that gacc-run and gacc-compile take too
    (all but the rank count, which mpirun sets)."""
    return [f for f in gen_step.check_flags(step) if not f.startswith("--ranks")]


def run_compiled(runner, step, indir, outdir, timeout):
    """Runs `runner` (gacc-run STEP FLAGS, or gacc-run-aot LIBRARY) on the
    step's inputs, with mpirun for several ranks, and returns {relative
    result path: values} or an error string."""
    shutil.rmtree(outdir, ignore_errors=True)
    cmd = runner + ["--input-dir=" + indir, "--output-dir=" + outdir,
                    "--quiet"]
    if step.config["ranks"] > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-x",
               "OPENBLAS_NUM_THREADS=1", "-np", str(step.config["ranks"])] + cmd
    rc, out, err, _ = run(cmd, timeout)
    if rc != 0:
        return "%s exit %s: %s" % (os.path.basename(runner[0]), rc,
                                   (out + err)[-800:])
    results = {}
    for root, _, files in os.walk(outdir):
        for name in files:
            if not name.endswith(".npy"):
                continue  # the set's MANIFEST
            full = os.path.join(root, name)
            results[os.path.relpath(full, outdir)] = load_npy(full)
    return results


def compare_twins(args, step, twin, path, indir):
    """For a step gacc-check reports it cannot evaluate (keepdim maps): checks its twin
    without keepdim maps (the same computation, the same inputs) against
    LibTorch, then the step's compiled results against the twin's. Returns
    (verdict, detail)."""
    tpath = path.replace(".mlir", ".twin.mlir")
    with open(tpath, "w") as f:
        f.write(twin.mlir)
    check = os.path.join(args.gacc_bin, "gacc-check")
    rc, out, err, _ = run([check, tpath] + gen_step.check_flags(twin) +
                          ["--input-dir=" + indir], args.timeout)
    if rc != 0:
        return "TWIN-FAIL", "the twin without keepdim maps: gacc-check " \
            "exit %s\n%s" % (rc, (out + err)[-2000:])
    gacc_run = os.path.join(args.gacc_bin, "gacc-run")
    mine = run_compiled([gacc_run, path] + run_flags(step), step, indir,
                        path + ".out", args.timeout)
    ref = run_compiled([gacc_run, tpath] + run_flags(twin), twin, indir,
                       tpath + ".out", args.timeout)
    if isinstance(mine, str) or isinstance(ref, str):
        return "ERROR", mine if isinstance(mine, str) else ref
    if sorted(mine) != sorted(ref):
        return "ERROR", "different result files: %s vs %s" % (sorted(mine),
                                                              sorted(ref))
    worst = compare_results(mine, ref)
    if worst > 1e-5:
        return "FAIL", "compiled keepdim step vs its twin: relative " \
            "difference %.2e" % worst
    return "PASS", "twin passes gacc-check; compiled results equal " \
        "(relative difference %.1e)" % worst


def compare_results(mine, ref):
    """The largest difference of two result sets relative to the largest
    magnitude of all results (a result that cancels to about zero is
    rounding noise); inf when they differ in shape."""
    if sorted(mine) != sorted(ref):
        return float("inf")
    scale = max([abs(v) for values in ref.values() for v in values if v == v]
                + [1e-30])
    worst = 0.0
    for key in mine:
        a, b = mine[key], ref[key]
        if len(a) != len(b):
            return float("inf")
        diffs = [abs(x - y) for x, y in zip(a, b) if not (x != x and y != y)]
        worst = max(worst, max(diffs + [0.0]) / scale)
    return worst


def aot_check(args, step, seed, path, indir):
    """For some steps (all with --aot): the step compiled ahead of time
    (gacc-compile, a shared library) and run by gacc-run-aot must give the
    JIT's results (gacc-run) on the same inputs. Returns None when not
    drawn, else (verdict, detail)."""
    if not (args.aot or random.Random(seed * 409 + 17).random() < 0.1):
        return None
    flags = run_flags(step)
    lib = path.replace(".mlir", ".so")
    rc, out, err, _ = run([os.path.join(args.gacc_bin, "gacc-compile"), path]
                          + flags + ["-o", lib], args.timeout)
    if rc != 0:
        return "AOT-ERROR", "gacc-compile exit %s: %s" % (rc, (out + err)[-800:])
    jit = run_compiled([os.path.join(args.gacc_bin, "gacc-run"), path] + flags,
                       step, indir, path + ".jit.out", args.timeout)
    aot = run_compiled([os.path.join(args.gacc_bin, "gacc-run-aot"), lib],
                       step, indir, path + ".aot.out", args.timeout)
    for result in (jit, aot):
        if isinstance(result, str):
            return "AOT-ERROR", result
    worst = compare_results(aot, jit)
    if worst > 1e-5:
        return "AOT-FAIL", "gacc-run-aot vs gacc-run: relative difference " \
            "%.2e" % worst
    return "PASS", ""


def pair_check(args, step, seed, path, opt, check, flags, indir):
    """For some steps (all with --pairs): the step lowered with
    gacc-lower-to-cpu{pair-any-size}, which pairs the weight gradients of
    two micro-batches and runs the copies side by side whatever the sizes
    (the rules that decide where this pays keep it off small graphs), must
    still match LibTorch: gacc-check --pair-any-size on 2 GEMM threads for
    even seeds, so that gaccrt_parallel_copies runs one copy per thread
    where the runtime can (runtime/README.md), and on 1 thread for odd
    ones, where the copies run in lockstep (their GEMMs of one weight as
    gaccrt_sgemm_rows_pair). Returns None when not drawn, else (verdict,
    detail, what was formed: "" / "pairs" / "pairs+copies")."""
    if not (args.pairs or random.Random(seed * 881 + 3).random() < 0.2):
        return None
    pipeline = "--gacc-pipeline=" + gen_step.pipeline_options(step)
    # Copies of two micro-batches each (paired-copies) need four equal
    # micro-batches or more, which the steps rarely have: for half of the
    # drawn steps with fewer whose batch allows it, the pair check runs
    # m = 4 (the same graph; m is the pipeline's option).
    cfg = step.config
    m = cfg.get("micro_batches")
    if (m is not None and m < 4 and not cfg.get("dynamic") and
            cfg["B"] % (4 * cfg["ranks"]) == 0 and
            random.Random(seed * 883 + 5).random() < 0.5):
        flags = [f for f in flags if not f.startswith("--micro-batches=")]
        flags.append("--micro-batches=4")
        pipeline = "--gacc-pipeline=micro-batches=4"
    lowered = path.replace(".mlir", ".paired.mlir")
    rc, out, err, _ = run([opt, path, pipeline,
                           "--gacc-lower-to-cpu=pair-any-size=1", "-o",
                           lowered], args.timeout)
    if rc != 0:
        return "PAIR-LOWER", (out + err)[-1500:], ""
    with open(lowered) as f:
        text = f.read()
    os.remove(lowered)
    if "@gaccrt_sgemm_pair" not in text:
        return "PASS", "", ""
    formed = "pairs+copies" if "@gaccrt_parallel_copies" in text else "pairs"
    if "call @gaccrt_sgemm_quad(" in text:
        formed = "pairs+quads"
    threads = "1" if seed % 2 else "2"
    env = dict(os.environ, OPENBLAS_NUM_THREADS=threads,
               OMP_NUM_THREADS=threads)
    rc, out, err, _ = run([check, path] + flags +
                          ["--pair-any-size", "--input-dir=" + indir],
                          args.timeout, env)
    if rc == 0:
        return "PASS", "", formed
    return ({1: "PAIR-FAIL", 2: "BACKWARD-WRONG", 3: "PAIR-ERROR"}.get(
        rc, "PAIR-CRASH"), out[-3000:] + err[-1500:], formed)


def tail_check(args, step, seed, path, opt, check, flags):
    """For some steps (all with --tail) of B >= 3 samples: the same step
    compiled with runtime-batch-size and run on the first B' < B samples of
    its inputs (an epoch's incomplete last batch) must match LibTorch on
    those samples, or the pipeline must refuse runtime-batch-size with a
    located diagnostic. Returns None when not drawn, else (verdict, detail,
    B')."""
    rng = random.Random(seed * 613 + 5)
    batch = step.config["B"]
    if batch < 3 or not (args.tail or rng.random() < 0.3):
        return None
    # A static step with a constant that only equals B or 1/B (layer norm's
    # 1/D with D = B) is rescaled as a sample count at run time: the known
    # limit of README "Tail steps", not checked.
    if not step.config.get("dynamic") and any(
            abs(v - batch) < 1e-12 or abs(v - 1.0 / batch) < 1e-12
            for v in getattr(step, "float_consts", ())):
        return None
    samples = rng.randint(1, batch - 1)
    pipeline = "--gacc-pipeline=%s runtime-batch-size" % \
        gen_step.pipeline_options(step)
    rc, out, err, _ = run([opt, path, pipeline, "-o", os.devnull],
                          args.timeout)
    if rc != 0:
        m = LOCATED.search(err)
        if rc == 1 and m and "internal error" not in err:
            return "REFUSED", m.group("msg"), samples
        return ("CRASH" if not isinstance(rc, int) or rc < 0 or rc > 1
                else "UNDIAGNOSED"), err[-1500:], samples
    tindir = path.replace(".mlir", ".tail.in")
    shutil.rmtree(tindir, ignore_errors=True)
    gen_step.write_inputs(step, tindir, seed, samples=samples)
    rc, out, err, _ = run([check, path] + flags +
                          ["--runtime-batch-size", "--input-dir=" + tindir],
                          args.timeout)
    if rc == 0:
        return "PASS", "", samples
    return ({1: "FAIL", 2: "BACKWARD-WRONG", 3: "ERROR"}.get(rc, "CRASH"),
            (out[-3000:] + err[-1500:]), samples)


def cuda_check(args, step, path):
    """Lowers the step for CUDA and checks it with translate_check.py:
    ("PASS", "") or ("CUDA-LOWER", what failed)."""
    ptxas = os.environ.get("PTXAS", "/usr/local/cuda/bin/ptxas")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([os.path.abspath(args.gacc_bin),
                                   "/usr/lib/llvm-22/bin", env["PATH"]])
    script = os.path.join(ROOT, "test", "Lowering", "CUDA", "Inputs",
                          "translate_check.py")
    out_dir = path.replace(".mlir", ".cuda")
    proc = subprocess.run(
        [sys.executable, script, ptxas, out_dir, path,
         gen_step.pipeline_options(step)],
        capture_output=True, text=True, env=env, timeout=args.timeout)
    if proc.returncode == 0:
        shutil.rmtree(out_dir, ignore_errors=True)
        return "PASS", ""
    return "CUDA-LOWER", proc.stdout + proc.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gacc-bin", required=True,
                    help="folder with gacc-opt and gacc-check")
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seeds", help="comma-separated step seeds to run "
                    "instead of --count steps from --seed")
    gen_step.add_generation_arguments(ap)
    ap.add_argument("--tail", action="store_true",
                    help="also check every step of 3 or more samples as a "
                    "tail step (runtime-batch-size; by default about a third "
                    "of them)")
    ap.add_argument("--aot", action="store_true",
                    help="also run every accepted step ahead of time "
                    "(gacc-compile, gacc-run-aot) and compare with the JIT's "
                    "results (by default a tenth of them)")
    ap.add_argument("--pairs", action="store_true",
                    help="also check every accepted step with its weight "
                    "gradients paired and the copies side by side whatever "
                    "the sizes (gacc-check --pair-any-size on 2 GEMM "
                    "threads, 1 for odd seeds; by default a fifth of them)")
    ap.add_argument("--cuda", action="store_true",
                    help="also lower every accepted step for CUDA, translate "
                    "it to LLVM IR and assemble its PTX with ptxas "
                    "($PTXAS, default /usr/local/cuda/bin/ptxas)")
    ap.add_argument("--tosa", action="store_true",
                    help="generate the steps in TOSA (gen_tosa_step.py) and "
                    "lower them with mlir-opt's TOSA passes first")
    ap.add_argument("--work", default="difftest-work")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if os.environ.get("GACC_DIFFTEST_COUNT"):
        args.count = int(os.environ["GACC_DIFFTEST_COUNT"])
    if os.environ.get("GACC_DIFFTEST_SEED"):
        args.seed = int(os.environ["GACC_DIFFTEST_SEED"])
    if os.environ.get("GACC_DIFFTEST_GATHER") == "1":
        args.gather = True
    if os.environ.get("GACC_DIFFTEST_KEEPDIM") == "1":
        args.no_keepdim = False

    opt = os.path.join(args.gacc_bin, "gacc-opt")
    check = os.path.join(args.gacc_bin, "gacc-check")
    os.makedirs(args.work, exist_ok=True)
    faildir = os.path.join(args.work, "failures")
    env_note = ""

    counts = collections.Counter()
    refusals = collections.Counter()
    failures = []
    families = collections.Counter()
    t_start = time.time()
    seeds = [args.seed * 100000 + i for i in range(args.count)]
    if args.seeds:
        seeds = [int(x) for x in args.seeds.split(",")]
    for i, seed in enumerate(seeds):
        if args.tosa:
            try:
                step = gen_tosa_step.generate(seed)
            except RuntimeError as e:   # mlir-opt rejected the TOSA step
                counts["failed"] += 1
                failures.append(("INVALID-STEP", seed, "gen_tosa_step.py "
                                 "--seed=%d" % seed, str(e)[-1500:]))
                print("graph %d (seed %d): INVALID-STEP (the generator's "
                      "fault)\n%s" % (i, seed, str(e)[-1500:]))
                continue
        else:
            step = gen_step.generate(seed, args.gather, not args.no_keepdim,
                                     True if args.dynamic else None,
                                     args.depth, args.loops)
        name = "step%d" % seed
        path = os.path.join(args.work, name + ".mlir")
        indir = os.path.join(args.work, name + ".in")
        with open(path, "w") as f:
            f.write(step.mlir)
        if args.tosa:
            with open(path.replace(".mlir", ".tosa.mlir"), "w") as f:
                f.write(step.tosa)
        shutil.rmtree(indir, ignore_errors=True)
        gen_step.write_inputs(step, indir, seed)
        flags = gen_step.check_flags(step)
        label = "graph %d (seed %d, %s): " % (i, seed, " ".join(flags))

        # 0. the generated step itself must parse and verify
        rc, out, err, _ = run([opt, path, "-o", os.devnull], args.timeout)
        if rc != 0:
            counts["failed"] += 1
            failures.append(("INVALID-STEP", seed, path, err[-1500:]))
            print(label + "INVALID-STEP (the generator's fault)\n" + err[-1500:])
            continue

        # 1. the pipeline: accepted, or refused with a located diagnostic
        pipeline = "--gacc-pipeline=" + gen_step.pipeline_options(step)
        ocmd = [opt, path, pipeline, "-o", os.devnull]
        rc, out, err, _ = run(ocmd, args.timeout)
        if rc != 0:
            m = LOCATED.search(err)
            if rc == 1 and m and "internal error" not in err:
                counts["refused"] += 1
                msg = re.sub(r"'[^']*'|\"[^\"]*\"", "'...'", m.group("msg"))
                refusals[msg[:110]] += 1
                print(label + "REFUSED: " + m.group("msg"))
                continue
            verdict = "CRASH" if not isinstance(rc, int) or rc < 0 or \
                rc > 1 else "UNDIAGNOSED"
            counts["failed"] += 1
            failures.append((verdict, seed, " ".join(ocmd), err[-1500:]))
            print(label + "%s (gacc-opt exit %s)\n%s" % (verdict, rc,
                                                        err[-1500:]))
            continue

        # 1b. the CUDA lowering: complete, translated, assembled
        if args.cuda:
            verdict, detail = cuda_check(args, step, path)
            if verdict != "PASS":
                counts["failed"] += 1
                failures.append((verdict, seed, path, detail[-1500:]))
                print(label + "%s %s\n%s" % (verdict, step.summary,
                                             detail[-1500:]))
                continue
            counts["cuda pass"] += 1

        # 2. the compiled step against LibTorch
        ccmd = [check, path] + flags + ["--input-dir=" + indir]
        rc, out, err, secs = run(ccmd, args.timeout)
        for fam in step.families:
            families[fam] += 1
        if rc == 0:
            aot = aot_check(args, step, seed, path, indir)
            if aot is not None and aot[0] != "PASS":
                counts["failed"] += 1
                print(label + "%s %s\n%s" % (aot[0], step.summary, aot[1]))
                failures.append((aot[0], seed, " ".join(ccmd) + " (AOT)",
                                 step.summary))
                continue
            if aot is not None:
                counts["aot pass"] += 1
            paired = pair_check(args, step, seed, path, opt, check, flags,
                                indir)
            if paired is not None and paired[0] != "PASS":
                counts["failed"] += 1
                print(label + "%s (%s) %s\n%s" % (paired[0], paired[2],
                                                   step.summary, paired[1]))
                failures.append((paired[0], seed, " ".join(ccmd) +
                                 " --pair-any-size", step.summary))
                continue
            pair_note = ""
            if paired is not None:
                counts["paired " + (paired[2] or "none")] += 1
                pair_note = "; paired (any size): " + (paired[2] or "none")
            tail = tail_check(args, step, seed, path, opt, check, flags)
            if tail is None or tail[0] in ("PASS", "REFUSED"):
                counts["passed"] += 1
                note = ""
                if tail is not None:
                    counts["tail " + tail[0].lower()] += 1
                    note = "; tail of %d samples: %s" % (tail[2], tail[0])
                    if tail[0] == "REFUSED":
                        msg = re.sub(r"'[^']*'|\"[^\"]*\"", "'...'", tail[1])
                        refusals["runtime-batch-size: " + msg[:90]] += 1
                print(label + "PASS (%.1f s)%s%s %s" % (
                    secs, note, pair_note, step.summary))
                if args.verbose:
                    print(out)
                continue
            counts["failed"] += 1
            verdict = "TAIL-" + tail[0]
            print(label + "%s (tail of %d samples) %s\n%s" % (
                verdict, tail[2], step.summary, tail[1]))
            failures.append((verdict, seed, " ".join(ccmd) +
                             " --runtime-batch-size (tail inputs)",
                             step.summary))
            continue
        verdict = {1: "FAIL", 2: "BACKWARD-WRONG",
                   3: "ERROR"}.get(rc, "CRASH")
        if rc == 3 and "cannot evaluate" in err:
            verdict = "UNEVALUATED"   # gacc-check's LibTorch evaluator
            twin = None if args.tosa else gen_step.generate(
                seed, args.gather, False, True if args.dynamic else None,
                args.depth, args.loops)
            if not args.tosa and not args.no_keepdim and \
                    twin.mlir != step.mlir:
                # gacc-check could not evaluate the step with keepdim maps:
                # compare with the twin step without them
                verdict, detail = compare_twins(args, step, twin, path, indir)
                if verdict == "PASS":
                    counts["passed"] += 1
                    counts["passed via twin"] += 1
                    print(label + "PASS via twin (%s) %s" % (detail,
                                                            step.summary))
                    continue
                verdict = "KEEPDIM-" + verdict
                err = detail
        counts["failed"] += 1
        print(label + "%s (gacc-check exit %s) %s" % (verdict, rc,
                                                     step.summary))
        print(out[-3000:] + err[-1500:])
        os.makedirs(faildir, exist_ok=True)
        shutil.copy(path, faildir)
        if args.tosa:
            shutil.copy(path.replace(".mlir", ".tosa.mlir"), faildir)
        shutil.rmtree(os.path.join(faildir, name + ".in"), ignore_errors=True)
        shutil.copytree(indir, os.path.join(faildir, name + ".in"))
        failures.append((verdict, seed, " ".join(ccmd), step.summary))

    total = counts["passed"] + counts["refused"] + counts["failed"]
    summary = ("difftest: tried %d graphs: %d passed, %d refused, %d failed "
               "(seed %d, %s, %.0f s)" % (
                   total, counts["passed"], counts["refused"],
                   counts["failed"], args.seed,
                   "TOSA" if args.tosa else
                   ("with" if args.gather else "no") + " gathers, " +
                   ("no" if args.no_keepdim else "with") + " keepdim maps",
                   time.time() - t_start))
    print()
    print(summary)
    print(summary, file=sys.stderr)  # visible in lit -a under FileCheck
    if counts["cuda pass"]:
        print("CUDA lowerings (translated, PTX assembled): %d passed"
              % counts["cuda pass"])
    if counts["aot pass"]:
        print("ahead-of-time steps (gacc-run-aot = gacc-run): %d passed"
              % counts["aot pass"])
    if any(key.startswith("paired ") for key in counts):
        print("paired steps (pair-any-size, 1 or 2 GEMM threads): %d with "
              "pairs side by side, %d with copies of two micro-batches "
              "(quads), %d with pairs in turn, %d without a pair"
              % (counts["paired pairs+copies"], counts["paired pairs+quads"],
                 counts["paired pairs"], counts["paired none"]))
    if counts["tail pass"] or counts["tail refused"]:
        print("tail steps (runtime-batch-size on fewer samples): %d passed, "
              "%d refused" % (counts["tail pass"], counts["tail refused"]))
    if counts["passed via twin"]:
        print("passed via twin: %d (steps with keepdim maps that "
              "gacc-check could not evaluate, compared with the same step "
              "without them)" % counts["passed via twin"])
    if families:
        print("families checked: " + ", ".join(
            "%s %d" % kv for kv in sorted(families.items())))
    for msg, n in refusals.most_common():
        print("refused %dx: %s" % (n, msg))
    for verdict, seed, cmd, what in failures:
        print("%s: seed %d: %s\n    %s" % (verdict, seed, cmd,
                                          what.splitlines()[0] if what else ""))
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""Numerical checks of gacc-run for the lit tests (numpy, /usr/bin/python3).

  run_checks.py across-m GACC_RUN STEP OUT OPTIONS...   results equal across option sets
  run_checks.py train GACC_RUN GEN_MLP OUT              a learnable task: the loss falls
  run_checks.py memory GACC_RUN GEN_MLP OUT             peak memory falls as m grows
  run_checks.py trace GACC_RUN STEP OUT M               the trace is valid JSON with the events
  run_checks.py mpi MPIRUN GACC_RUN GEN_MLP OUT         2 ranks == 1 rank with the whole batch

Each prints what it compared and exits non-zero on a mismatch.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode != 0:
        sys.exit(f"FAILED ({proc.returncode}): {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def load_results(folder):
    results = []
    j = 0
    while os.path.exists(f"{folder}/result{j}.npy"):
        results.append(np.load(f"{folder}/result{j}.npy").astype(np.float64))
        j += 1
    return results


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30)) if a.size else 0.0


def across_m(gacc_run, step, out, option_sets):
    """Runs `step` with the same seeded inputs under each option set."""
    reference = None
    for i, options in enumerate(option_sets):
        folder = f"{out}/{os.path.basename(step)}/run{i}"
        shutil.rmtree(folder, ignore_errors=True)
        run([gacc_run, step, "--seed=3", f"--output-dir={folder}", "--quiet"] + options.split())
        results = load_results(folder)
        if reference is None:
            reference = results
            print(f"{os.path.basename(step)} [{options}]: {len(results)} results")
            continue
        tol = 2e-2 if "bf16" in step else 1e-5
        worst = max(rel_err(r, ref) for r, ref in zip(results, reference))
        print(f"{os.path.basename(step)} [{options}]: max relative error {worst:.2e} (tolerance {tol:g})")
        if len(results) != len(reference) or worst > tol:
            sys.exit("MISMATCH")


def write_inputs(folder, arrays):
    os.makedirs(folder, exist_ok=True)
    for i, a in enumerate(arrays):
        np.save(f"{folder}/arg{i}.npy", a)


def mlp_params(rng, dims):
    params = []
    for k, n in zip(dims[:-1], dims[1:]):
        params.append((rng.normal(size=(k, n)) / np.sqrt(k)).astype(np.float32))
        params.append(np.zeros(n, np.float32))
    return params


def train(gacc_run, gen_mlp, out):
    """A teacher network labels random inputs; 50 SGD steps must learn them."""
    dims = [8, 16, 4]
    batch = 32
    step = f"{out}/mlp.mlir"
    with open(step, "w") as f:
        f.write(run([sys.executable, gen_mlp, "--batch", str(batch), "--dims", ",".join(map(str, dims))]))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch, dims[0])).astype(np.float32)
    teacher = rng.normal(size=(dims[0], dims[-1]))
    labels = np.argmax(x @ teacher, axis=1).astype(np.int64)
    write_inputs(f"{out}/in", mlp_params(rng, dims) + [x, labels, np.array(0.5, np.float32)])
    text = run([gacc_run, step, "--micro-batches=4", "--steps=50", f"--input-dir={out}/in"])
    losses = [float(v) for v in re.findall(r"step \d+: loss = (\S+)", text)]
    print(f"loss: step 1 {losses[0]:.4f}, step 50 {losses[-1]:.4f} ({len(losses)} steps)")
    if len(losses) != 50 or not losses[-1] < 0.5 * losses[0]:
        sys.exit("the loss did not fall to half")


def memory(gacc_run, gen_mlp, out):
    """Activation memory scales with b = B/m, not B."""
    step = f"{out}/mlp.mlir"
    with open(step, "w") as f:
        f.write(run([sys.executable, gen_mlp, "--batch", "64", "--dims", "32,64,64,10"]))
    peaks = []
    for m in [1, 2, 4, 8]:
        text = run([gacc_run, step, f"--micro-batches={m}"])
        value, unit = re.search(r"peak memory ([\d.]+) (\w+)", text).groups()
        scale = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2}[unit]
        peaks.append(float(value) * scale)
        print(f"m = {m}: peak {peaks[-1] / 1024:.1f} KiB")
    if not all(b < a for a, b in zip(peaks, peaks[1:])):
        sys.exit("peak memory does not fall as m grows")


def trace(gacc_run, step, out, m):
    path = f"{out}/trace.json"
    run([gacc_run, step, f"--micro-batches={m}", "--steps=2", f"--trace={path}", "--quiet"])
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    regions = [e for e in events if e.get("cat") == "region"]
    collectives = [e for e in events if e.get("cat") == "collective"]
    gemms = [e for e in events if e.get("cat") in ("gemm", "accumulate")]
    print(f"{len(events)} events: {len(regions)} regions, {len(collectives)} collectives, {len(gemms)} GEMMs")
    for e in collectives:
        print(f"  {e['name']}: {e['args']}")
    if len(regions) != 2 * int(m) or len(collectives) != 2 or not gemms:
        sys.exit("unexpected events")
    if any(e["ph"] == "X" and ("ts" not in e or "dur" not in e) for e in events):
        sys.exit("complete events need ts and dur")


def mpi(mpirun, gacc_run, gen_mlp, out):
    """Two ranks with disjoint halves == one rank with the whole batch."""
    dims = [4, 8, 3]
    half = 8
    for batch in (half, 2 * half):
        with open(f"{out}/mlp{batch}.mlir", "w") as f:
            f.write(run([sys.executable, gen_mlp, "--batch", str(batch), "--dims", ",".join(map(str, dims))]))
    rng = np.random.default_rng(1)
    params = mlp_params(rng, dims)
    x = rng.normal(size=(2 * half, dims[0])).astype(np.float32)
    y = rng.integers(0, dims[-1], 2 * half).astype(np.int64)
    lr = np.array(0.1, np.float32)
    write_inputs(f"{out}/whole", params + [x, y, lr])
    write_inputs(f"{out}/ranks", params + [x[:1], y[:1], lr])  # placeholders, replaced below
    for r in range(2):
        os.makedirs(f"{out}/ranks/rank{r}", exist_ok=True)
        np.save(f"{out}/ranks/rank{r}/arg4.npy", x[r * half:(r + 1) * half])
        np.save(f"{out}/ranks/rank{r}/arg5.npy", y[r * half:(r + 1) * half])
    for i in (4, 5):
        os.remove(f"{out}/ranks/arg{i}.npy")
    run([gacc_run, f"{out}/mlp{2 * half}.mlir", "--micro-batches=4",
         f"--input-dir={out}/whole", f"--output-dir={out}/whole-out", "--quiet"])
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    text = run(mpirun + ["-x", "OPENBLAS_NUM_THREADS", "-np", "2", gacc_run, f"{out}/mlp{half}.mlir",
                         "--micro-batches=2", f"--input-dir={out}/ranks", f"--output-dir={out}/ranks-out"],
               env=env)
    print(text.strip())
    whole = load_results(f"{out}/whole-out")
    ranks = [load_results(f"{out}/ranks-out/rank{r}") for r in range(2)]
    # The loss is each rank's own; their mean is the whole batch's loss.
    loss_err = rel_err((ranks[0][0] + ranks[1][0]) / 2, whole[0])
    print(f"mean of rank losses vs whole-batch loss: relative error {loss_err:.2e}")
    worst = 0.0
    for j in range(1, len(whole)):
        for r in range(2):
            worst = max(worst, rel_err(ranks[r][j], whole[j]))
    print(f"updated parameters, 2 ranks vs 1 rank: max relative error {worst:.2e}")
    if loss_err > 1e-5 or worst > 1e-5:
        sys.exit("MISMATCH")


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "across-m":
        across_m(args[0], args[1], args[2], args[3:])
    elif cmd == "train":
        train(*args)
    elif cmd == "memory":
        memory(*args)
    elif cmd == "trace":
        trace(*args)
    elif cmd == "mpi":
        mpi(args[0].split(), *args[1:])
    else:
        sys.exit(f"unknown check {cmd}")
    print("PASS")


if __name__ == "__main__":
    main()

"""Saving and loading sharded optimizer state (shard-optimizer-state).

  shard_resume.py MPIRUN GACC_RUN STEP OUT RANKS

Runs STEP (the AdamW + clip example) for two steps without the option on
RANKS ranks, and with it: one step from whole inputs, whose per-rank state
shards (result<j>.npy, shape {s}) are passed back as each rank's
arg<i>.npy for the second step. The joined shards of the second step
(rank order, padding dropped) equal the unsharded run's state, and the
parameters are equal on every rank.
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


mpirun, gacc_run, step, out, ranks = sys.argv[1:6]
ranks = int(ranks)
shutil.rmtree(out, ignore_errors=True)
rng = np.random.default_rng(5)
inputs = {0: rng.standard_normal(4).astype(np.float32),
          3: np.zeros(4, np.float32), 4: np.zeros(4, np.float32),
          5: np.array(0, np.float32)}
os.makedirs(f"{out}/in", exist_ok=True)
for r in range(ranks):
    os.makedirs(f"{out}/in/rank{r}")
    np.save(f"{out}/in/rank{r}/arg1.npy", rng.standard_normal((8, 4)).astype(np.float32))
    np.save(f"{out}/in/rank{r}/arg2.npy", rng.standard_normal(8).astype(np.float32))
for i, value in inputs.items():
    np.save(f"{out}/in/arg{i}.npy", value)

mpi = mpirun.split() + ["-x", "OPENBLAS_NUM_THREADS=1", "-np", str(ranks), gacc_run, step,
                        "--micro-batches=2", "--quiet"]
run(mpi + [f"--input-dir={out}/in", f"--output-dir={out}/whole", "--steps=2"])
run(mpi + [f"--input-dir={out}/in", f"--output-dir={out}/one", "--shard-optimizer-state"])

# The second step's inputs: the batches again, the first step's results
# (W whole, the moments as this rank's shards, the step count).
for r in range(ranks):
    d = f"{out}/resume/rank{r}"
    os.makedirs(d)
    for i in (1, 2):
        shutil.copy(f"{out}/in/rank{r}/arg{i}.npy", f"{d}/arg{i}.npy")
    for i, j in ((0, 1), (3, 2), (4, 3), (5, 4)):
        shutil.copy(f"{out}/one/rank{r}/result{j}.npy", f"{d}/arg{i}.npy")
    shard = np.load(f"{d}/arg3.npy")
    if shard.shape != (-(-4 // ranks),):
        sys.exit(f"rank {r}: state shard of shape {shard.shape}")
run(mpi + [f"--input-dir={out}/resume", f"--output-dir={out}/two", "--shard-optimizer-state"])

worst = 0.0
for j in range(5):
    whole = np.load(f"{out}/whole/rank0/result{j}.npy").astype(np.float64)
    if j in (2, 3):
        mine = np.concatenate([np.load(f"{out}/two/rank{r}/result{j}.npy")
                               for r in range(ranks)])[:whole.size].reshape(whole.shape)
        pairs = [(mine, whole)]
    else:
        # The loss is each rank's own; the rest is equal on every rank.
        pairs = [(np.load(f"{out}/two/rank{r}/result{j}.npy"),
                  np.load(f"{out}/whole/rank{r}/result{j}.npy").astype(np.float64))
                 for r in range(ranks)]
    for m, whole in pairs:
        err = float(np.max(np.abs(m - whole)) / max(np.max(np.abs(whole)), 1e-30))
        worst = max(worst, err)
print(f"{ranks} ranks: resumed sharded state vs unsharded, max relative error {worst:.2e}")
sys.exit(0 if worst <= 1e-5 else "MISMATCH")

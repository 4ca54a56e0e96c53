"""Runs one generated MLP with gaccrt_sgemm on oneDNN (the default) and on
OpenBLAS (GACCRT_GEMM=openblas): the losses of every step agree, and the
traces show which library ran each GEMM (oneDNN for the forward and
backward-data GEMMs with n >= 64 on CPUs with AVX-512, OpenBLAS for the
weight gradients and the logits layer; only OpenBLAS when it is chosen or
when GEMMs run on two threads).

  gemm_libraries.py GACC_RUN GEN_MLP WORKDIR
"""
import json
import os
import re
import subprocess
import sys

gacc_run, gen_mlp, work = sys.argv[1:4]
graph = os.path.join(work, "mlp.mlir")
with open(graph, "w") as out:
    subprocess.run([sys.executable, gen_mlp, "--batch", "64", "--dims",
                    "96,128,128,10"], stdout=out, check=True)


def run(library, threads="1"):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=threads)
    if library:
        env["GACCRT_GEMM"] = library
    trace = os.path.join(work, "trace-%s-%s.json" % (library or "default",
                                                      threads))
    text = subprocess.run([gacc_run, graph, "--micro-batches=2", "--steps=4",
                           "--seed=3", "--trace=" + trace], env=env,
                          check=True, capture_output=True, text=True).stdout
    losses = [float(v) for v in re.findall(r"loss = (\S+)", text)]
    events = [e for e in json.load(open(trace))["traceEvents"]
              if e.get("cat") in ("gemm", "accumulate")]
    return losses, events


default_losses, default_events = run(None)
blas_losses, blas_events = run("openblas")
assert len(default_losses) == 4, default_losses
for a, b in zip(default_losses, blas_losses):
    assert abs(a - b) <= 1e-4 * max(1.0, abs(b)), (default_losses, blas_losses)
print("losses agree:", " ".join("%.5f" % v for v in default_losses))


def libraries(events, predicate):
    return sorted({e["args"]["library"] for e in events if predicate(e)})


# oneDNN's brgemm kernels need AVX-512 (avx512_core); without them every
# GEMM stays with OpenBLAS.
flags = set()
for line in open("/proc/cpuinfo"):
    if line.startswith("flags"):
        flags = set(line.split(":", 1)[1].split())
        break
brgemm = {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags
wide = lambda e: e["cat"] == "gemm" and e["args"]["n"] >= 64
expected = ["onednn"] if brgemm else ["openblas"]
got = libraries(default_events, wide)
assert got == expected, (got, expected, "AVX-512: %s" % brgemm)
print("default: forward/backward-data n >= 64: as expected (%s, AVX-512: %s)"
      % (got[0], "yes" if brgemm else "no"))
print("default: weight gradients:",
      libraries(default_events, lambda e: e["cat"] == "accumulate"))
print("default: n < 64:",
      libraries(default_events, lambda e: e["args"]["n"] < 64))
print("GACCRT_GEMM=openblas: all:", libraries(blas_events, lambda e: True))
# With two GEMM threads OpenBLAS runs everything (oneDNN's OpenMP threads and
# OpenBLAS's would compete for the cores).
two_losses, two_events = run(None, threads="2")
for a, b in zip(two_losses, blas_losses):
    assert abs(a - b) <= 1e-4 * max(1.0, abs(b)), (two_losses, blas_losses)
print("2 threads: all:", libraries(two_events, lambda e: True))
print("PASS")

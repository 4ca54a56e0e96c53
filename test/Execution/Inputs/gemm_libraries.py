"""Runs one generated MLP with gaccrt_sgemm's shape rule (GACCRT_GEMM=onednn)
and on OpenBLAS (GACCRT_GEMM=openblas): the losses of every step agree, and
the traces show which library ran each GEMM (oneDNN for the forward and
backward-data GEMMs with n >= 64 on CPUs with AVX-512, OpenBLAS for the
weight gradients and the logits layer; only OpenBLAS when it is chosen; no
oneDNN when GEMMs run on two threads), and with gaccrt's AVX-512 kernels
(GACCRT_GEMM=avx512) where the CPU has AVX-512F. Then a larger MLP with the
default, "auto": each GEMM shape of at least 2^16 multiply-adds is decided
once (a "gemm-tuning" trace event with the fastest time of each library:
oneDNN's matmul and its sgemm, OpenBLAS, the AVX-512 kernels) after 6 calls
per library, and every later call of the shape runs the library decided; the losses agree with OpenBLAS's. On two GEMM threads the
kernels run every GEMM, forced or under "auto", and split those shapes
across both threads.

  gemm_libraries.py GACC_RUN GEN_MLP WORKDIR
"""
import json
import os
import re
import subprocess
import sys

gacc_run, gen_mlp, work = sys.argv[1:4]
def generate(name, batch, dims):
    path = os.path.join(work, name)
    with open(path, "w") as out:
        subprocess.run([sys.executable, gen_mlp, "--batch", batch, "--dims",
                        dims], stdout=out, check=True)
    return path


graph = generate("mlp.mlir", "64", "96,128,128,10")


def run(library, threads="1", steps=4):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=threads)
    if library:
        env["GACCRT_GEMM"] = library
    trace = os.path.join(work, "trace-%s-%s-%s.json" % (
        library or "default", threads, os.path.basename(graph)))
    text = subprocess.run([gacc_run, graph, "--micro-batches=2",
                           "--steps=%d" % steps,
                           "--seed=3", "--trace=" + trace], env=env,
                          check=True, capture_output=True, text=True).stdout
    losses = [float(v) for v in re.findall(r"loss = (\S+)", text)]
    events = [e for e in json.load(open(trace))["traceEvents"]
              if e.get("cat") in ("gemm", "accumulate", "gemm-tuning")]
    return losses, events


def agree(losses, reference):
    assert len(losses) == len(reference), (losses, reference)
    for a, b in zip(losses, reference):
        assert abs(a - b) <= 1e-4 * max(1.0, abs(b)), (losses, reference)


default_losses, default_events = run("onednn")
blas_losses, blas_events = run("openblas")
assert len(default_losses) == 4, default_losses
agree(default_losses, blas_losses)
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
# Forward and backward-data GEMMs read op(A) = A; the weight gradients
# read x^T (trans_a) and accumulate, except in the first micro-batch, which
# writes them (beta = 0, a "gemm" event).
wide = lambda e: not e["args"]["trans_a"] and e["args"]["n"] >= 64
expected = ["onednn"] if brgemm else ["openblas"]
got = libraries(default_events, wide)
assert got == expected, (got, expected, "AVX-512: %s" % brgemm)
print("rule: forward/backward-data n >= 64: as expected (%s, AVX-512: %s)"
      % (got[0], "yes" if brgemm else "no"))
print("rule: weight gradients:",
      libraries(default_events, lambda e: e["args"]["trans_a"]))
print("rule: n < 64:",
      libraries(default_events, lambda e: e["args"]["n"] < 64))
print("GACCRT_GEMM=openblas: all:", libraries(blas_events, lambda e: True))
avx512 = "avx512f" in flags
# With two GEMM threads "auto" runs every GEMM on the AVX-512 kernels where
# the CPU has AVX-512F, else on OpenBLAS (oneDNN's OpenMP threads and
# OpenBLAS's would compete for the cores with the kernels' workers); these
# GEMMs, all below 2^20 multiply-adds, run on the calling thread alone.
two_losses, two_events = run(None, threads="2")
agree(two_losses, blas_losses)
got = libraries(two_events, lambda e: True)
assert got == (["avx512"] if avx512 else ["openblas"]), got
assert not any("threads" in e["args"] for e in two_events), two_events
print("2 threads: no oneDNN: as expected (%s)" % got[0])
# gaccrt's AVX-512 kernels run every GEMM (AVX-512F).
if avx512:
    kernel_losses, kernel_events = run("avx512")
    agree(kernel_losses, blas_losses)
    got = libraries(kernel_events, lambda e: True)
    assert got == ["avx512"], got
print("GACCRT_GEMM=avx512: as expected (AVX-512F: %s)"
      % ("yes" if avx512 else "no"))

# "auto" (the default) on an MLP whose GEMMs are large enough to be timed.
graph = generate("mlp-large.mlir", "128", "256,256,256,10")
# 14 steps of 2 micro-batches: the backward-data shape, once per
# micro-batch, gets 28 calls, more than the 24 of tuning four libraries.
auto_losses, auto_events = run(None, steps=14)
agree(auto_losses, run("openblas", steps=14)[0])
# A shape is its sizes, transposes and whether C is read (beta != 0,
# "accumulate"); the decision event carries the sizes and transposes of the
# call that made it, which is a call of that shape.
decided = {}
calls = {}
last = None
for e in auto_events:
    a = e["args"]
    sizes = (a["m"], a["n"], a["k"], a["trans_a"], a["trans_b"])
    if e["cat"] == "gemm-tuning":
        shape = last
        assert shape[:5] == sizes, (e, last)
        assert shape not in decided, "decided twice: %s" % (shape,)
        timed = sorted(k[:-3] for k in a if k.endswith("_us"))
        # oneDNN's matmul only where its brgemm kernels run (else it
        # declines in its first call and is not timed), the AVX-512 kernels
        # on AVX-512F, oneDNN's sgemm everywhere.
        expected = sorted(["openblas", "onednn-sgemm"] + ["onednn"] * brgemm +
                          ["avx512"] * avx512)
        assert timed == expected, (timed, expected)
        if brgemm:
            assert calls.get(shape) == 6 * len(timed), (shape, calls.get(shape))
        assert a["library"] in timed, a
        decided[shape] = a["library"]
        continue
    shape = sizes + (e["cat"],)
    last = shape
    calls[shape] = calls.get(shape, 0) + 1
    if shape in decided:
        assert a["library"] == decided[shape], (shape, a)
# Tuned: at least 2^16 multiply-adds and the 24 calls of tuning four
# libraries (the first micro-batch's weight gradients, beta = 0, are a shape
# of their own with one call per step: the logits layer's gets 14).
tuned = sorted(s for s in calls
               if s[0] * s[1] * s[2] >= 2 ** 16 and calls[s] >= 24)
print("auto: tuned shapes:",
      " ".join(sorted({"%dx%dx%d" % s[:3] for s in tuned})),
      "(AVX-512: %s)" % ("yes" if brgemm else "no"))
if brgemm:
    assert sorted(decided) == tuned, (sorted(decided), tuned)
else:
    # oneDNN's matmul declines in the first call: its sgemm, OpenBLAS and
    # the kernels where they run are timed after it, one call later.
    assert decided, calls
    assert set(libraries(auto_events, lambda e: True)) <= {
        "openblas", "onednn-sgemm", "avx512"}
print("auto: every call after a shape's decision ran the library decided")

if avx512:
    # Two GEMM threads: the kernels split every GEMM of at least 2^20
    # multiply-adds into one slice of C per thread (the trace's "threads"),
    # forced and under "auto", which times nothing.
    for library in ("avx512", None):
        two_losses, two_events = run(library, threads="2", steps=14)
        agree(two_losses, auto_losses)
        for e in two_events:
            a = e["args"]
            large = a["m"] * a["n"] * a["k"] >= 2 ** 20
            assert e["cat"] != "gemm-tuning", e
            assert a["library"] == "avx512", e
            assert a.get("threads") == (2 if large else None), e
print("2 threads: the kernels run every GEMM and split the large ones "
      "(AVX-512F: %s)" % ("yes" if avx512 else "no"))
print("PASS")

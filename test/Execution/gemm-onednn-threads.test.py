"""Checks a trace of GACCRT_GEMM=onednn on two threads (argv[1]): every GEMM
on oneDNN's matmul, oneDNN's sgemm or OpenBLAS, on the matmul where the CPU
has AVX-512 (its brgemm kernels); a shape timed on both of oneDNN's GEMMs
(a "gemm-tuning" event with both times, when there is one) runs on the one
decided from then on; and that the losses of argv[2] agree with argv[3]'s."""
import json
import re
import sys

# --cached: the shapes' decisions come from the GEMM cache (none timed).
cached = "--cached" in sys.argv
args = [a for a in sys.argv[1:] if a != "--cached"]
events = json.load(open(args[0]))["traceEvents"]
libs = {e["args"]["library"] for e in events
        if e.get("cat") == "gemm" and "library" in e.get("args", {})}
avx512 = "avx512f" in open("/proc/cpuinfo").read()
assert libs <= {"onednn", "onednn-sgemm", "openblas"}, libs
assert ("onednn" in libs) == avx512, (libs, avx512)
print("libraries as expected:", sorted(libs))

# The decision follows the last call of its shape on the calling thread
# (each thread times its own shapes: the copies of a pair may run side by
# side).
decided = {}
last = {}
tuned = 0
for e in events:
    a = e.get("args", {})
    if e.get("cat") == "gemm-tuning":
        if "cached" in a:
            continue
        assert sorted(k for k in a if k.endswith("_us")) == (
            ["onednn-sgemm_us", "onednn_us"] if avx512 else []), a
        shape = last.get(e["tid"])
        assert shape is not None and shape not in decided, (a, shape)
        decided[shape] = a["library"]
        tuned += 1
        continue
    if e.get("cat") not in ("gemm", "accumulate") or "library" not in a:
        continue
    shape = (e["tid"], e["cat"], a["m"], a["n"], a["k"], a["trans_a"],
             a["trans_b"])
    last[e["tid"]] = shape
    if shape in decided:
        assert a["library"] == decided[shape], (shape, a, decided[shape])
assert (tuned > 0) == (avx512 and not cached), (tuned, avx512, cached)
print("both of oneDNN's GEMMs timed, then one kept per shape:", tuned)


def losses(path):
    return [float(x) for x in re.findall(r"loss = ([-0-9.e+]+)", open(path).read())]


# The same seed: the first steps of the longer run are the shorter one's.
a, b = losses(args[1]), losses(args[2])
assert 0 < len(a) <= len(b), (a, b)
assert all(abs(x - y) <= 1e-4 * (1 + abs(y)) for x, y in zip(a, b)), (a, b)
print("losses agree:", a)

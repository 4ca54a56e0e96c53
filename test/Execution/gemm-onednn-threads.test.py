"""Checks a trace of GACCRT_GEMM=onednn on two threads (argv[1]): every GEMM
on oneDNN or OpenBLAS, and on oneDNN where the CPU has AVX-512 (its brgemm
kernels); and that the losses of argv[2] agree with argv[3]'s."""
import json
import re
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
libs = {e["args"]["library"] for e in events
        if e.get("cat") == "gemm" and "library" in e.get("args", {})}
avx512 = "avx512f" in open("/proc/cpuinfo").read()
assert libs <= {"onednn", "openblas"}, libs
assert ("onednn" in libs) == avx512, (libs, avx512)
print("libraries as expected:", sorted(libs))


def losses(path):
    return [float(x) for x in re.findall(r"loss = ([-0-9.e+]+)", open(path).read())]


a, b = losses(sys.argv[2]), losses(sys.argv[3])
assert len(a) == len(b) == 3, (a, b)
assert all(abs(x - y) <= 1e-4 * (1 + abs(y)) for x, y in zip(a, b)), (a, b)
print("losses agree:", a)

"""Counts the one-pass GEMM pairs of lockstep copies in a trace.

    rows_pairs.py TRACE EXPECTED

EXPECTED is the number of "sgemm rows pair" events (gaccrt_sgemm_rows_pair
run as one pass over the weight by gaccrt's AVX-512 kernels). On a CPU
without AVX-512F every such call is two gaccrt_sgemm calls, so none should
be there. Prints "rows pairs: ok" or what differs."""
import json
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
expected = int(sys.argv[2])
if " avx512f" not in open("/proc/cpuinfo").read():
    expected = 0
found = sum(1 for e in events
            if e.get("ph") == "X" and e["name"].startswith("sgemm rows pair"))
tracks = {e["tid"] for e in events
          if e.get("ph") == "X" and e.get("cat") == "region"}
if found == expected and tracks == {0}:
    print("rows pairs: ok")
else:
    print("rows pairs: %d on tracks %s, expected %d on track 0"
          % (found, sorted(tracks), expected))

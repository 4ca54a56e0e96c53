"""Counts the one-pass GEMM pairs of lockstep copies in a trace.

    rows_pairs.py TRACE ROWS [QUADS [TRACKS [ROWS_WITHOUT_AVX512]]]

ROWS is the number of "sgemm rows pair" events: gaccrt_sgemm_rows_pair run
as one GEMM over both micro-batches' rows, either because gacc-plan-arena
placed their rows one after the other (any CPU) or as one pass over the
weight by gaccrt's AVX-512 kernels. QUADS (default 0) is that of "sgemm
quad" events (gaccrt_sgemm_quad as one pass over C: stacked operands or the
kernels), TRACKS (default 1) the number of trace tracks with micro-batch
regions (2 where the copies ran side by side). On a CPU without AVX-512F
the copies run in turn (one track), and only the stacked pairs are one
GEMM: ROWS_WITHOUT_AVX512 (default ROWS) is then expected. Prints "rows
pairs: ok" or what differs."""
import json
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
expected = int(sys.argv[2])
quads = int(sys.argv[3]) if len(sys.argv) > 3 else 0
tracks_expected = int(sys.argv[4]) if len(sys.argv) > 4 else 1
if " avx512f" not in open("/proc/cpuinfo").read():
    expected = int(sys.argv[5]) if len(sys.argv) > 5 else expected
    tracks_expected = 1
found = sum(1 for e in events
            if e.get("ph") == "X" and e["name"].startswith("sgemm rows pair"))
found_quads = sum(1 for e in events
                  if e.get("ph") == "X" and e["name"].startswith("sgemm quad"))
tracks = {e["tid"] for e in events
          if e.get("ph") == "X" and e.get("cat") == "region"}
if (found == expected and found_quads == quads and
        len(tracks) == tracks_expected and 0 in tracks):
    print("rows pairs: ok")
else:
    print("rows pairs: %d and %d quads on tracks %s, expected %d and %d on "
          "%d track(s)" % (found, found_quads, sorted(tracks), expected, quads,
                           tracks_expected))

"""Checks the trace track of concurrent copies (gaccrt_parallel_copies).

    copy_tracks.py TRACE EXPECTED

EXPECTED is the number of micro-batch regions that should run on the track
of the second copy ("copy 2", a track other than 0 and 1). On a CPU without
AVX-512F the runtime runs the copies in turn, so none should. Prints
"copies: ok" or what differs."""
import json
import sys

events = json.load(open(sys.argv[1]))["traceEvents"]
expected = int(sys.argv[2])
if " avx512f" not in open("/proc/cpuinfo").read():
    expected = 0
names = {e["tid"]: e["args"]["name"] for e in events
         if e.get("ph") == "M" and e["name"] == "thread_name"}
tracks = [names[t] for t in sorted(names) if t > 1]
regions = sum(1 for e in events
              if e.get("ph") == "X" and e.get("cat") == "region"
              and e["tid"] > 1)
want_tracks = ["copy 2"] if expected else []
if regions == expected and tracks == want_tracks:
    print("copies: ok")
else:
    print("copies: tracks %s with %d regions, expected %s with %d"
          % (tracks, regions, want_tracks, expected))

"""Reads the per-rank Chrome traces of one gacc-run and reports, for the last
step, when each bucket all-reduce started relative to the end of the final
micro-batch region (the overlap of gacc-overlap-all-reduce).

  overlap_trace.py M TRACE...   M = number of micro-batches
"""
import json
import sys


def main():
    m = int(sys.argv[1])
    for path in sys.argv[2:]:
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        regions = [e for e in events if e.get("cat") == "region"]
        first = max((e for e in regions if e["name"] == "micro-batch 0"), key=lambda e: e["ts"])
        final = max((e for e in regions if e["name"] == f"micro-batch {m - 1}"), key=lambda e: e["ts"])
        final_end = final["ts"] + final["dur"]
        reduces = sorted((e for e in events if e.get("cat") == "collective"
                          and e["name"].startswith("all-reduce bucket") and e["ts"] >= first["ts"]),
                         key=lambda e: e["ts"])
        if not reduces:
            sys.exit(f"{path}: no all-reduce in the last step")
        order = ", ".join(e["name"].split()[-1] for e in reduces)
        tracks = sorted({e["tid"] for e in reduces})
        print(f"{path.rsplit('/', 1)[-1]}: {len(reduces)} bucket all-reduces (start order {order}), tracks {tracks}")
        lead = final_end - reduces[0]["ts"]
        if lead > 0:
            print(f"  the first starts {lead:.0f} us before the final region ends")
        else:
            print(f"  the first starts {-lead:.0f} us after the final region ends")
        late = [e for e in reduces if e["ts"] >= final_end]
        print(f"  {len(reduces) - len(late)} of {len(reduces)} start inside the final region")
        waits = [e for e in events if e.get("cat") == "wait" and e["ts"] >= first["ts"]]
        print(f"  {len(waits)} waits, {sum(e['dur'] for e in waits):.0f} us waited")


if __name__ == "__main__":
    main()

"""Checks that every pass in docs/Passes.md is run by some lit test's RUN
line (as --NAME, --NAME= or inside a pass pipeline string)."""

import os
import re
import sys

root = sys.argv[1]
passes = re.findall(r"^### `-(gacc-[a-z0-9-]+)`",
                    open(os.path.join(root, "docs", "Passes.md")).read(),
                    re.M)
runs = []
for dirpath, _, files in os.walk(os.path.join(root, "test")):
    for f in files:
        if f.endswith((".mlir", ".test")):
            for line in open(os.path.join(dirpath, f), errors="replace"):
                if "RUN:" in line:
                    runs.append(line)
text = "".join(runs)
missing = [p for p in passes
           if not re.search(r"[-\s\"',{(]%s(?![a-z0-9-])" % re.escape(p), text)]
for p in missing:
    print("no RUN line runs %s" % p)
if not passes:
    print("no pass found in docs/Passes.md")
    sys.exit(1)
if missing:
    sys.exit(1)
print("every documented pass is run by a test (%d passes)" % len(passes))

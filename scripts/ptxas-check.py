#!/usr/bin/env python3
"""Assembles every PTX kernel of a module lowered by gacc-lower-to-cuda.

  ptxas-check.py PTXAS ARCH LOWERED.mlir [OUT_DIR]

Extracts the `assembly = "..."` PTX of each `gpu.binary` (format isa),
writes it to OUT_DIR/<binary>.ptx (a temporary folder by default) and runs
`PTXAS -arch=ARCH` on it. Prints one line per kernel and a summary; exits
non-zero when there is no kernel or ptxas rejects one.
"""

import os
import re
import subprocess
import sys
import tempfile


def unescape(text):
    """MLIR string escapes: \\XX hex bytes, \\\\ and \\"."""
    out = bytearray()
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 2 < len(text) + 1:
            nxt = text[i + 1]
            if nxt in "\\\"":
                out.append(ord(nxt))
                i += 2
                continue
            out.append(int(text[i + 1:i + 3], 16))
            i += 3
            continue
        out += c.encode()
        i += 1
    return out.decode()


def main():
    ptxas, arch, lowered = sys.argv[1:4]
    out_dir = sys.argv[4] if len(sys.argv) > 4 else tempfile.mkdtemp()
    os.makedirs(out_dir, exist_ok=True)
    text = open(lowered).read()
    binaries = re.findall(r'gpu\.binary @(\w+)\s+\[#gpu\.object<.*?assembly = "((?:[^"\\]|\\.)*)"', text)
    if not binaries:
        sys.exit("no gpu.binary with PTX assembly found")
    failures = 0
    for name, escaped in binaries:
        path = os.path.join(out_dir, name + ".ptx")
        with open(path, "w") as f:
            f.write(unescape(escaped))
        proc = subprocess.run([ptxas, f"-arch={arch}", path, "-o", os.devnull],
                              capture_output=True, text=True)
        status = "ok" if proc.returncode == 0 else "FAILED"
        print(f"{name}: ptxas -arch={arch} {status}")
        if proc.returncode != 0:
            failures += 1
            print(proc.stderr)
    print(f"{len(binaries)} kernels assembled for {arch}, {failures} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

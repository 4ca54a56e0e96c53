#!/usr/bin/env python3
"""Prints the launch configuration of every kernel of a lowered step.

  launch_report.py LOWERED.mlir [--summary]

Reads the output of gacc-lower-to-cuda="kernels-only" (the kernels still in
the GPU dialect, with known_grid_size/known_block_size). One line per
kernel: "KIND grid=GX,GY,GZ block=BX,BY,BZ threads=N NAME", N the threads
that do work (a one-block dimension guarded by `thread_id < %argK`, with
the launch passing a constant, counts that constant), KIND
  reduction  the kernel loops serially (scf.for) or combines atomically
             (memref.atomic_rmw / memref.generic_atomic_rmw) or across a
             block (gpu.all_reduce / gpu.subgroup_reduce / barriers),
  elementwise otherwise.
A reduction kernel in which one thread does the work (threads=1) and
loops serially is reported as "SINGLE-THREAD reduction" so that tests can reject it. With
--summary, prints only the counts per kind and launch configuration.
"""

import collections
import re
import sys


def main():
    path = sys.argv[1]
    summary = "--summary" in sys.argv[2:]
    text = open(path).read()
    kernels = re.findall(
        r"gpu\.func @(\w+)\([^\n]*\) kernel attributes \{([^\n]*)\} \{\n(.*?)\n    \}\n",
        text, re.S)
    constants = dict(re.findall(r"(%c\w*) = arith\.constant (\d+) : index",
                                text))
    launch_args = {}
    for kernel, args in re.findall(
            r"gpu\.launch_func\s+@\w+::@(\w+) blocks in .*? args\((.*?)\)$",
            text, re.M):
        launch_args[kernel] = [a.split(" : ")[0].strip()
                               for a in args.split(", %")]
    lines = []
    for name, attrs, body in kernels:
        grid = re.search(r"known_grid_size = array<i32: ([0-9, ]+)>", attrs)
        block = re.search(r"known_block_size = array<i32: ([0-9, ]+)>", attrs)
        grid = grid.group(1).replace(" ", "") if grid else "?"
        block = block.group(1).replace(" ", "") if block else "?"
        reduces = re.search(r"\bscf\.for\b|atomic_rmw|gpu\.all_reduce|"
                            r"gpu\.subgroup_reduce|gpu\.barrier|gpu\.shuffle",
                            body)
        kind = "reduction" if reduces else "elementwise"
        threads = 1
        args = launch_args.get(name, [])
        for dim, g, b in zip("xyz", grid.split(","), block.split(",")):
            count = int(g) * int(b)
            guard = re.search(r"arith\.cmpi ult, %thread_id_" + dim +
                              r", %arg(\d+) ", body)
            if g == "1" and guard and int(guard.group(1)) < len(args):
                arg = args[int(guard.group(1))].lstrip("%")
                if "%" + arg in constants:
                    count = min(count, int(constants["%" + arg]))
            threads *= count
        if threads == 1 and re.search(r"\bscf\.for\b", body):
            kind = "SINGLE-THREAD reduction"
        lines.append((kind, grid, block, threads, name))
    if summary:
        counts = collections.Counter((k, g, b, t) for k, g, b, t, _ in lines)
        for (k, g, b, t), n in sorted(counts.items()):
            print(f"{n:4d} x {k} grid={g} block={b} threads={t}")
        return
    for k, g, b, t, n in lines:
        print(f"{k} grid={g} block={b} threads={t} {n}")


if __name__ == "__main__":
    main()

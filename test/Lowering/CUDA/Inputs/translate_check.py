#!/usr/bin/env python3
"""Lowers one step for CUDA and checks that it is complete.

  translate_check.py PTXAS OUT_DIR STEP.mlir "PIPELINE OPTIONS"

Runs gacc-opt --gacc-pipeline="OPTIONS" --gacc-lower-to-cuda, then checks:
no `unrealized_conversion_cast` and no gpu op but gpu.binary and
gpu.launch_func (which mlir-translate turns into the module load and the
launch) in the lowered module; mlir-translate --mlir-to-llvmir succeeds;
the LLVM IR creates one stream and synchronizes it once per step function
(never in a function the step calls: the shared body of micro-batch
regions runs on the step's stream), with no event synchronization, and waits for every all-reduce it starts
(overlap-all-reduce: each gaccrt_cuda_all_reduce_start has its
gaccrt_cuda_all_reduce_wait, on its handle, before the synchronization);
ptxas assembles every kernel for sm_90
(scripts/ptxas-check.py). Prints "NAME: ok" or the failures, and exits
non-zero on any failure.
"""

import os
import re
import subprocess
import sys


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


def main():
    ptxas, out_dir, step, options = sys.argv[1:5]
    name = os.path.splitext(os.path.basename(step))[0]
    os.makedirs(out_dir, exist_ok=True)
    lowered = os.path.join(out_dir, name + ".cuda.mlir")
    ll = os.path.join(out_dir, name + ".ll")
    failures = []
    proc = run(["gacc-opt", step, f"--gacc-pipeline={options}",
                "--gacc-lower-to-cuda", "-o", lowered])
    if proc.returncode != 0:
        print(f"{name}: FAILED to lower\n{proc.stderr}")
        sys.exit(1)
    text = open(lowered).read()
    if "unrealized_conversion_cast" in text:
        failures.append("unrealized_conversion_cast left")
    left = sorted(set(re.findall(r"\bgpu\.(\w+)", text)) -
                  {"binary", "launch_func", "object", "container_module"})
    if left:
        failures.append("gpu ops left: " + ", ".join(left))
    proc = run(["mlir-translate", "--mlir-to-llvmir", lowered, "-o", ll])
    if proc.returncode != 0:
        failures.append("mlir-translate failed:\n" + proc.stderr)
    else:
        ir = open(ll).read()
        bodies = re.findall(r"^define [^@]*@(\w+)\((.*?)^}", ir, re.M | re.S)
        for fname, body in bodies:
            # Step functions: those that allocate or launch (not the
            # module load/unload constructors).
            if ("@mgpuMemAlloc(" not in body and
                    "@mgpuLaunchKernel(" not in body):
                continue
            creates = body.count("@mgpuStreamCreate(")
            syncs = body.count("@mgpuStreamSynchronize(")
            returns = body.count("ret void") + len(re.findall(r"\bret \S+ ", body))
            if creates != 1:
                failures.append(f"@{fname} creates {creates} streams")
            # The shared body of micro-batch regions, called by the step,
            # runs on its caller's stream and never waits.
            called = any(f"call void @{fname}(" in other
                         for other_name, other in bodies if other_name != fname)
            if called and syncs:
                failures.append(f"@{fname}, called by the step, synchronizes "
                                f"{syncs} times")
            if not called and (syncs < 1 or syncs > returns):
                failures.append(f"@{fname} synchronizes {syncs} times "
                                f"for {returns} returns")
            if "@mgpuEventSynchronize(" in body:
                failures.append(f"@{fname} synchronizes an event")
            handles = re.findall(
                r"(%\w+) = call i64 @gaccrt_cuda_all_reduce_start\(", body)
            waited = re.findall(
                r"call void @gaccrt_cuda_all_reduce_wait\(i64 (%\w+),", body)
            # A start in the last iteration of a loop over micro-batches
            # passes its handle to the wait through a stack slot: the
            # handle is stored to it, the wait's operand loaded from it.
            slots = dict(re.findall(r"store i64 (%\w+), ptr (%\w+)", body))
            loads = dict(re.findall(r"(%\w+) = load i64, ptr (%\w+)", body))
            handles = [f"slot {slots[h]}" if h in slots else h
                       for h in handles]
            waited = [f"slot {loads[w]}" if w in loads else w for w in waited]
            if sorted(handles) != sorted(waited):
                failures.append(f"@{fname} starts all-reduces {handles} but "
                                f"waits for {waited}")
            last_wait = body.rfind("@gaccrt_cuda_all_reduce_wait(")
            if last_wait > body.rfind("@mgpuStreamSynchronize("):
                failures.append(f"@{fname} waits for an all-reduce after "
                                "synchronizing its stream")
    proc = run([sys.executable,
                os.path.join(os.path.dirname(__file__), "..", "..", "..", "..",
                             "scripts", "ptxas-check.py"),
                ptxas, "sm_90", lowered, os.path.join(out_dir, name)])
    if proc.returncode != 0:
        failures.append("ptxas:\n" + proc.stdout + proc.stderr)
    if failures:
        print(f"{name}: FAILED\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"{name}: ok")


if __name__ == "__main__":
    main()

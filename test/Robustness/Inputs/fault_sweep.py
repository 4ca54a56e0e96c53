"""Disk full at every point of writing a result set (issue 49).

Runs TOOL ARGS... --output-dir=DIR once to write a complete set, then again
with other inputs (--seed) and GACC_TEST_FAIL_WRITE_AFTER=N, the injected
full disk, for N from 0 to past the bytes a set takes: each failing run must
exit 1 naming the cause and leave DIR exactly as before (no partial file, no
temporary); the first N that suffices must leave the whole new set. Then the
same into a folder that does not exist yet: nothing but an empty folder is
left. Prints "ok: <runs> runs" on success.

usage: fault_sweep.py DIR STRIDE TOOL ARGS...
"""

import os
import subprocess
import sys

import gacc.io  # PYTHONPATH=build/python

out, stride, command = sys.argv[1], int(sys.argv[2]), sys.argv[3:]


def run(directory, seed, fail_after=None):
    env = dict(os.environ)
    env.pop("GACC_TEST_FAIL_WRITE_AFTER", None)
    if fail_after is not None:
        env["GACC_TEST_FAIL_WRITE_AFTER"] = str(fail_after)
    return subprocess.run(command + ["--seed=%d" % seed,
                                     "--output-dir=" + directory],
                          env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)


def snapshot(directory):
    if not os.path.isdir(directory):
        return None
    files = {}
    for name in sorted(os.listdir(directory)):
        with open(os.path.join(directory, name), "rb") as f:
            files[name] = f.read()
    return files


def fail(message):
    sys.exit("FAIL: " + message)


proc = run(out, 1)
if proc.returncode != 0:
    fail("the first run failed:\n" + proc.stdout)
before = snapshot(out)
gacc.io.check_result_set(out)
total = sum(len(data) for data in before.values())
runs, n = 0, 0
while True:
    proc = run(out, 2, n)
    runs += 1
    if proc.returncode == 0:
        break
    if proc.returncode != 1:
        fail("N=%d: exit %d, expected 1:\n%s" % (n, proc.returncode,
                                                  proc.stdout))
    if "No space left on device" not in proc.stdout or out not in proc.stdout:
        fail("N=%d: the error names neither the file nor the cause:\n%s" %
             (n, proc.stdout))
    if snapshot(out) != before:
        fail("N=%d: the folder changed: %s" % (n, sorted(snapshot(out))))
    if n > 2 * total:
        fail("N=%d: still failing" % n)
    n += stride
after = snapshot(out)
gacc.io.check_result_set(out)
if sorted(after) != sorted(before) or after == before:
    fail("N=%d: not the whole new set: %s" % (n, sorted(after)))

fresh = out + ".fresh"
for n in (0, total // 2):
    proc = run(fresh, 2, n)
    runs += 1
    if proc.returncode != 1 or snapshot(fresh) not in (None, {}):
        fail("N=%d into a new folder: exit %d, left %s" %
             (n, proc.returncode, snapshot(fresh)))
print("ok: %d runs" % runs)

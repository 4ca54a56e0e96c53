"""gacc.io round trip for python-io.test: writes the reference example's
inputs (w = 0, x = 1..4, y = 2x) as a result set in DIR, checks it, checks
that a changed file is refused and that a failed write (a file that cannot
be encoded midway) leaves the set as it was."""

import io
import os
import sys

import numpy as np

import gacc.io

out = sys.argv[1]


def npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


x = np.arange(1, 5, dtype=np.float32)
files = {"arg0.npy": npy(np.array(0, np.float32)), "arg1.npy": npy(x),
         "arg2.npy": npy(2 * x)}
gacc.io.write_result_set(out, files)
gacc.io.check_result_set(out)
with open(os.path.join(out, "arg1.npy"), "wb") as f:
    f.write(npy(x + 1))
try:
    gacc.io.check_result_set(out)
    sys.exit("FAIL: a changed file was accepted")
except gacc.io.ResultSetError as e:
    print("refused:", e)
gacc.io.write_result_set(out, files)
before = {n: open(os.path.join(out, n), "rb").read() for n in os.listdir(out)}


class Unwritable:
    def __len__(self):
        return 4


try:
    gacc.io.write_result_set(out, {"arg0.npy": npy(x), "arg1.npy":
                                   Unwritable()})
    sys.exit("FAIL: the write did not fail")
except TypeError:
    pass
after = {n: open(os.path.join(out, n), "rb").read() for n in os.listdir(out)}
print("failed write: %s %s" % (sorted(after),
                               "unchanged" if after == before else "CHANGED"))

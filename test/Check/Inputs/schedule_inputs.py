"""Writes inputs of test/Check/schedule.test: OUT/t<k>/arg<i>.npy for the
step counters k = 0, 1, 3, 7 (warmup, decay, the min's cap)."""
import os
import sys

import numpy as np

out = sys.argv[1]
for k in (0, 1, 3, 7):
    d = os.path.join(out, "t%d" % k)
    os.makedirs(d, exist_ok=True)
    np.save(os.path.join(d, "arg0.npy"), np.array(0.5, dtype=np.float32))
    np.save(os.path.join(d, "arg1.npy"), np.array([1, 2, 3, 4], dtype=np.float32))
    np.save(os.path.join(d, "arg2.npy"), np.array([2, 4, 6, 8], dtype=np.float32))
    np.save(os.path.join(d, "arg3.npy"), np.array(0.1, dtype=np.float32))
    np.save(os.path.join(d, "arg4.npy"), np.array(k, dtype=np.int64))

#!/usr/bin/env python3
"""Compares the result<j>.npy files of two folders (pure Python: no numpy
needed on the device).

  check_results.py GOT_DIR REF_DIR RTOL

Prints one line per result (max abs error, max relative error against the
largest reference value) and exits non-zero when a result is missing, has
another shape, or is off by more than RTOL.
"""

import ast
import math
import os
import struct
import sys

FORMATS = {"<f4": "f", "<f8": "d", "<f2": "e", "<i8": "q", "<i4": "i",
           "|i1": "b", "|u1": "B", "|b1": "?"}


def load_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    major = data[6]
    if major == 1:
        (hlen,), start = struct.unpack("<H", data[8:10]), 10
    else:
        (hlen,), start = struct.unpack("<I", data[8:12]), 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    if header["fortran_order"] or header["descr"] not in FORMATS:
        raise ValueError(f"{path}: unsupported layout {header}")
    code = FORMATS[header["descr"]]
    count = 1
    for d in header["shape"]:
        count *= d
    values = struct.unpack(f"<{count}{code}", data[start + hlen:start + hlen + count * struct.calcsize(code)])
    return tuple(header["shape"]), [float(v) for v in values]


def main():
    got_dir, ref_dir, rtol = sys.argv[1], sys.argv[2], float(sys.argv[3])
    ok, j = True, 0
    while os.path.exists(f"{ref_dir}/result{j}.npy"):
        ref_shape, ref = load_npy(f"{ref_dir}/result{j}.npy")
        path = f"{got_dir}/result{j}.npy"
        if not os.path.exists(path):
            print(f"result{j}: missing {path}")
            ok = False
            j += 1
            continue
        shape, got = load_npy(path)
        if shape != ref_shape:
            print(f"result{j}: shape {shape}, expected {ref_shape}")
            ok = False
            j += 1
            continue
        scale = max([abs(v) for v in ref] + [1e-30])
        err = max([abs(a - b) if not (math.isnan(a) or math.isnan(b)) else math.inf
                   for a, b in zip(got, ref)] + [0.0])
        rel = err / scale
        good = rel <= rtol
        ok &= good
        print(f"result{j} {list(shape)}: max abs error {err:.3e}, relative {rel:.3e} "
              f"(tolerance {rtol:g}) {'ok' if good else 'OFF'}")
        j += 1
    if j == 0:
        print(f"no result0.npy in {ref_dir}")
        ok = False
    print("PASS" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

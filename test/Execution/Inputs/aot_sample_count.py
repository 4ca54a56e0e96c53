"""Calls gacc_step of a step library compiled from
examples/linear_regression.mlir with --runtime-batch-size (B = 4) directly,
as an embedder would, with the sample counts given on the command line, and
prints the loss and what gaccrt_index_errors reports after each call. The
inputs: w = 0, x = 1..4, y = 2x (loss = mean over B' samples of 4x^2)."""
import ctypes
import sys

step = ctypes.CDLL(sys.argv[1])
index_errors = step.gaccrt_index_errors
index_errors.argtypes = [ctypes.POINTER(ctypes.c_int64)] * 3
index_errors.restype = ctypes.c_int64
step.gaccrt_index_errors_reset.restype = None

keep = []


def memref(array, shape):
    """The fields of a memref of `array`: pointers, offset, sizes, strides."""
    fields = [ctypes.c_void_p(ctypes.addressof(array)),
              ctypes.c_void_p(ctypes.addressof(array)), ctypes.c_int64(0)]
    fields += [ctypes.c_int64(s) for s in shape]
    stride = 1
    strides = []
    for s in reversed(shape):
        strides.insert(0, stride)
        stride *= s
    fields += [ctypes.c_int64(s) for s in strides]
    keep.extend(fields)
    return fields


for count in [int(c) for c in sys.argv[2:]]:
    w = (ctypes.c_float * 1)(0.0)
    x = (ctypes.c_float * 4)(1, 2, 3, 4)
    y = (ctypes.c_float * 4)(2, 4, 6, 8)
    n = (ctypes.c_int64 * 1)(count)
    loss = (ctypes.c_float * 1)(-1)
    grad = (ctypes.c_float * 1)(-1)
    fields = (memref(w, []) + memref(x, [4]) + memref(y, [4]) +
              memref(n, []) + memref(loss, []) + memref(grad, []))
    packed = (ctypes.c_void_p * len(fields))(
        *[ctypes.addressof(f) for f in fields])
    step.gaccrt_index_errors_reset()
    step.gacc_step(packed)
    index, bound, site = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
    errors = index_errors(ctypes.byref(index), ctypes.byref(bound),
                          ctypes.byref(site))
    print("count %d: loss %g, count after %d, errors %d" %
          (count, loss[0], n[0], errors), end="")
    if errors:
        print(" (index %d, bound %d, site %d)" %
              (index.value, bound.value, site.value), end="")
    print()

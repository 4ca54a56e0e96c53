"""Writes an MLIR module whose @main checks gacc-expand-narrow-floats.

Usage: narrow_casts.py > casts.mlir

@main converts test values with arith.extf/arith.truncf (which the pass
expands into integer code) and compares the bits with NumPy's IEEE
conversions (round to nearest even): every f16 bit pattern extended to f32;
f32 values at, next to and halfway between neighbouring f16 and bf16 values
(ties), subnormal results, overflow, infinities and random values truncated
to f16 and bf16; NaNs must stay NaNs. It prints the number of mismatches of
each kind: [f16->f32, f32->f16, f32->bf16, NaN], all expected 0.
"""

import numpy as np

rng = np.random.default_rng(0)


def bf16_reference(x):
    """Nearest bf16 of each f32 in x (ties to even), independent of the
    bit trick used by the expansion: compares distances in float64."""
    with np.errstate(invalid="ignore"):
        return _bf16_reference(x)


def _bf16_reference(x):
    bits = x.view(np.uint32)
    down = (bits >> 16).astype(np.uint32)
    up = down + 1
    lo = (down << 16).view(np.float32).astype(np.float64)
    hi = (up << 16).view(np.float32).astype(np.float64)
    v = x.astype(np.float64)
    # Past the largest bf16, IEEE rounds as if the next value were 2^128.
    hi = np.where(np.isinf(hi) & np.isfinite(v), np.copysign(2.0**128, v), hi)
    dlo, dhi = np.abs(v - lo), np.abs(hi - v)
    pick_up = (dhi < dlo) | ((dhi == dlo) & (down % 2 == 1))
    return np.where(pick_up, up, down).astype(np.uint16)


def f32_values():
    halves = np.arange(0, 0x7c00, dtype=np.uint16).view(np.float16)
    h = halves.astype(np.float32)
    nxt = np.arange(1, 0x7c01, dtype=np.uint16).view(np.float16).astype(
        np.float32)
    nxt[-1] = 65536.0  # the point past the largest half that rounds to inf
    mid = ((h.astype(np.float64) + nxt.astype(np.float64)) / 2).astype(
        np.float32)
    around = [h, mid, np.nextafter(mid, np.float32(0)),
              np.nextafter(mid, np.float32(np.inf))]
    special = np.array([0.0, 1e-30, 1e-8, 5.96e-8, 2.98e-8, 2.99e-8, 65504,
                        65519.99, 65520, 65536, 1e10, 3.4e38, np.inf],
                       np.float32)
    random = rng.integers(0, 0x7f800000, 20000, dtype=np.uint32).view(
        np.float32)
    bf = rng.integers(0, 0x7f80, 4000, dtype=np.uint32)
    bf_mid = ((bf << 16) | 0x8000).view(np.float32)  # exact bf16 ties
    bf_near = ((bf << 16) | 0x7fff).view(np.float32)
    bf_exact = (bf << 16).view(np.float32)
    x = np.concatenate(around + [special, random, bf_mid, bf_near, bf_exact])
    return np.concatenate([x, -x]).astype(np.float32)


def hexdense(array):
    return 'dense<"0x' + array.tobytes().hex().upper() + '">'


def main():
    all_halves = np.arange(0, 0x10000, dtype=np.uint32).astype(np.uint16)
    finite = all_halves[~np.isnan(all_halves.view(np.float16))]
    ext_want = finite.view(np.float16).astype(np.float32).view(np.int32)
    x = f32_values()
    with np.errstate(over="ignore"):
        f16_want = x.astype(np.float16).view(np.int16)
    bf16_want = bf16_reference(x).view(np.int16)
    nans = np.array([0x7fc00000, 0x7f800001, 0xffc00000, 0x7fffffff],
                    np.uint32).view(np.float32)
    half_nans = np.array([0x7e00, 0x7c01, 0xfe00, 0x7fff], np.uint16)

    n1, n2, n3 = len(finite), len(x), len(nans)
    print(f"""
memref.global "private" constant @halves : memref<{n1}xi16> = {hexdense(finite.view(np.int16))}
memref.global "private" constant @ext_want : memref<{n1}xi32> = {hexdense(ext_want)}
memref.global "private" constant @x : memref<{n2}xf32> = {hexdense(x)}
memref.global "private" constant @f16_want : memref<{n2}xi16> = {hexdense(f16_want)}
memref.global "private" constant @bf16_want : memref<{n2}xi16> = {hexdense(bf16_want)}
memref.global "private" constant @nans : memref<{n3}xf32> = {hexdense(nans)}
memref.global "private" constant @half_nans : memref<{n3}xi16> = {hexdense(half_nans.view(np.int16))}

func.func private @printMemrefI64(memref<*xi64>)

func.func @main() {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %z = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %halves = memref.get_global @halves : memref<{n1}xi16>
  %ext_want = memref.get_global @ext_want : memref<{n1}xi32>
  %x = memref.get_global @x : memref<{n2}xf32>
  %f16_want = memref.get_global @f16_want : memref<{n2}xi16>
  %bf16_want = memref.get_global @bf16_want : memref<{n2}xi16>
  %nans = memref.get_global @nans : memref<{n3}xf32>
  %half_nans = memref.get_global @half_nans : memref<{n3}xi16>
  %n1 = arith.constant {n1} : index
  %n2 = arith.constant {n2} : index
  %n3 = arith.constant {n3} : index

  %bad1 = scf.for %i = %c0 to %n1 step %c1 iter_args(%acc = %z) -> i64 {{
    %hb = memref.load %halves[%i] : memref<{n1}xi16>
    %h = arith.bitcast %hb : i16 to f16
    %f = arith.extf %h : f16 to f32
    %got = arith.bitcast %f : f32 to i32
    %want = memref.load %ext_want[%i] : memref<{n1}xi32>
    %ne = arith.cmpi ne, %got, %want : i32
    %inc = arith.extui %ne : i1 to i64
    %next = arith.addi %acc, %inc : i64
    scf.yield %next : i64
  }}
  %bad2:2 = scf.for %i = %c0 to %n2 step %c1 iter_args(%a = %z, %b = %z) -> (i64, i64) {{
    %v = memref.load %x[%i] : memref<{n2}xf32>
    %h = arith.truncf %v : f32 to f16
    %hb = arith.bitcast %h : f16 to i16
    %hw = memref.load %f16_want[%i] : memref<{n2}xi16>
    %hne = arith.cmpi ne, %hb, %hw : i16
    %b16 = arith.truncf %v : f32 to bf16
    %bb = arith.bitcast %b16 : bf16 to i16
    %bw = memref.load %bf16_want[%i] : memref<{n2}xi16>
    %bne = arith.cmpi ne, %bb, %bw : i16
    %ai = arith.extui %hne : i1 to i64
    %bi = arith.extui %bne : i1 to i64
    %an = arith.addi %a, %ai : i64
    %bn = arith.addi %b, %bi : i64
    scf.yield %an, %bn : i64, i64
  }}
  %bad4 = scf.for %i = %c0 to %n3 step %c1 iter_args(%acc = %z) -> i64 {{
    %v = memref.load %nans[%i] : memref<{n3}xf32>
    %h = arith.truncf %v : f32 to f16
    %hf = arith.extf %h : f16 to f32
    %b = arith.truncf %v : f32 to bf16
    %bf = arith.extf %b : bf16 to f32
    %hb = memref.load %half_nans[%i] : memref<{n3}xi16>
    %hn = arith.bitcast %hb : i16 to f16
    %hnf = arith.extf %hn : f16 to f32
    %ok1 = arith.cmpf uno, %hf, %hf : f32
    %ok2 = arith.cmpf uno, %bf, %bf : f32
    %ok3 = arith.cmpf uno, %hnf, %hnf : f32
    %ok12 = arith.andi %ok1, %ok2 : i1
    %ok = arith.andi %ok12, %ok3 : i1
    %bad = arith.select %ok, %z, %one : i64
    %next = arith.addi %acc, %bad : i64
    scf.yield %next : i64
  }}
  %out = memref.alloca() : memref<4xi64>
  memref.store %bad1, %out[%c0] : memref<4xi64>
  memref.store %bad2#0, %out[%c1] : memref<4xi64>
  memref.store %bad2#1, %out[%c2] : memref<4xi64>
  memref.store %bad4, %out[%c3] : memref<4xi64>
  %u = memref.cast %out : memref<4xi64> to memref<*xi64>
  call @printMemrefI64(%u) : (memref<*xi64>) -> ()
  return
}}""")


if __name__ == "__main__":
    main()

// RUN: gacc-opt %s --split-input-file --gacc-pair-accumulating-gemms="any-size=1 concurrent-copies=0" | FileCheck %s --check-prefix=PAIR
// RUN: gacc-opt %s --split-input-file --gacc-pair-accumulating-gemms=any-size=1 | FileCheck %s --check-prefix=COPIES

// Loops that gacc-pair-accumulating-gemms must leave unpaired (and whose
// micro-batches must not run side by side): each hides an access or a
// difference from the analysis a first version had.

// A linalg.generic whose operand is another member of the accumulator's
// buffer (disjoint bytes) but whose body adds into the accumulator's C[0,
// 0] from above, between the two micro-batches' GEMMs: it touches C.
// PAIR-LABEL: func.func @nested_toucher
// PAIR-NOT:     gaccrt_sgemm_pair
#id = affine_map<(i, j) -> (i, j)>
func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func @nested_toucher(%x: memref<32x64xf32>, %dy: memref<32x64xf32>, %o: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %buf = memref.alloc() : memref<32768xi8>
  %c = memref.view %buf[%c0][] : memref<32768xi8> to memref<64x64xf32>
  %c16k = arith.constant 16384 : index
  %d = memref.view %buf[%c16k][] : memref<32768xi8> to memref<64x64xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %0 = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%0, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%0, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %first = arith.cmpi eq, %i, %c0 : index
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %beta = arith.select %first, %zero, %one : f32
    %a = memref.cast %xs : memref<8x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %b = memref.cast %ds : memref<8x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %cc = memref.cast %c : memref<64x64xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %t1 = arith.constant 1 : i32
    %t0 = arith.constant 0 : i32
    func.call @gaccrt_sgemm(%t1, %t0, %one, %beta, %a, %b, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%d : memref<64x64xf32>) outs(%o : memref<64x64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %v = memref.load %c[%c0, %c0] : memref<64x64xf32>
      %s = arith.addf %v, %in : f32
      memref.store %s, %c[%c0, %c0] : memref<64x64xf32>
      linalg.yield %in : f32
    }
  }
  memref.copy %c, %o : memref<64x64xf32> to memref<64x64xf32>
  return
}

// -----

// The accumulator's address, made a pointer before the loop, loaded and
// stored in it between the GEMMs.
// PAIR-LABEL: func.func @pointer_before_loop
// PAIR-NOT:     gaccrt_sgemm_pair
func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func @pointer_before_loop(%x: memref<32x64xf32>, %dy: memref<32x64xf32>, %o: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c = memref.alloc() : memref<64x64xf32>
  %p = memref.extract_aligned_pointer_as_index %c : memref<64x64xf32> -> index
  %pi = arith.index_cast %p : index to i64
  %ptr = llvm.inttoptr %pi : i64 to !llvm.ptr
  scf.for %i = %c0 to %c4 step %c1 {
    %0 = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%0, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%0, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %first = arith.cmpi eq, %i, %c0 : index
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %beta = arith.select %first, %zero, %one : f32
    %a = memref.cast %xs : memref<8x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %b = memref.cast %ds : memref<8x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %cc = memref.cast %c : memref<64x64xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %t1 = arith.constant 1 : i32
    %t0 = arith.constant 0 : i32
    func.call @gaccrt_sgemm(%t1, %t0, %one, %beta, %a, %b, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
    %v = llvm.load %ptr : !llvm.ptr -> f32
    %s = arith.addf %v, %one : f32
    llvm.store %s, %ptr : f32, !llvm.ptr
  }
  memref.copy %c, %o : memref<64x64xf32> to memref<64x64xf32>
  return
}

// -----

// The accumulator stored into memory before the loop and reloaded in it,
// where C[0, 0] += 1 between the GEMMs.
// PAIR-LABEL: func.func @stored_memref
// PAIR-NOT:     gaccrt_sgemm_pair
func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func @stored_memref(%x: memref<32x64xf32>, %dy: memref<32x64xf32>, %o: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c = memref.alloc() : memref<64x64xf32>
  %box = memref.alloca() : memref<memref<64x64xf32>>
  memref.store %c, %box[] : memref<memref<64x64xf32>>
  scf.for %i = %c0 to %c4 step %c1 {
    %0 = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%0, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%0, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %first = arith.cmpi eq, %i, %c0 : index
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %beta = arith.select %first, %zero, %one : f32
    %a = memref.cast %xs : memref<8x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %b = memref.cast %ds : memref<8x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %cc = memref.cast %c : memref<64x64xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %t1 = arith.constant 1 : i32
    %t0 = arith.constant 0 : i32
    func.call @gaccrt_sgemm(%t1, %t0, %one, %beta, %a, %b, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
    %c2 = memref.load %box[] : memref<memref<64x64xf32>>
    %v = memref.load %c2[%c0, %c0] : memref<64x64xf32>
    %s = arith.addf %v, %one : f32
    memref.store %s, %c2[%c0, %c0] : memref<64x64xf32>
  }
  memref.copy %c, %o : memref<64x64xf32> to memref<64x64xf32>
  return
}

// -----

// transA that differs between the copies (1 in the first iteration, 0
// after): the pair would take the first copy's for both.
// PAIR-LABEL: func.func @varying_trans_a
// PAIR-NOT:     gaccrt_sgemm_pair
func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func @varying_trans_a(%x: memref<256x64xf32>, %dy: memref<256x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %0 = arith.muli %i, %c64 : index
    %xs = memref.subview %x[%0, 0] [64, 64] [1, 1] : memref<256x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%0, 0] [64, 64] [1, 1] : memref<256x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    %first = arith.cmpi eq, %i, %c0 : index
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %beta = arith.select %first, %zero, %one : f32
    %a = memref.cast %xs : memref<64x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %b = memref.cast %ds : memref<64x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %cc = memref.cast %c : memref<64x64xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %t1 = arith.constant 1 : i32
    %t0 = arith.constant 0 : i32
    %ta = arith.select %first, %t1, %t0 : i32
    func.call @gaccrt_sgemm(%ta, %t0, %one, %beta, %a, %b, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  }
  return
}

// -----

// beta = (i8(iv) == 0) ? 0 : 1 at iv = 0 and 256: 0 in both (256 wraps to
// 0 in i8), so the second GEMM overwrites C; the interval of i8(iv) must
// not be [256, 256].
// PAIR-LABEL: func.func @narrow_iv
// PAIR-NOT:     gaccrt_sgemm_pair
func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func @narrow_iv(%x: memref<16x64xf32>, %dy: memref<16x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c256 = arith.constant 256 : index
  %c512 = arith.constant 512 : index
  scf.for %i = %c0 to %c512 step %c256 {
    %k = arith.divui %i, %c256 : index
    %0 = arith.muli %k, %c8 : index
    %xs = memref.subview %x[%0, 0] [8, 64] [1, 1] : memref<16x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%0, 0] [8, 64] [1, 1] : memref<16x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %i8 = arith.index_cast %i : index to i8
    %z8 = arith.constant 0 : i8
    %first = arith.cmpi eq, %i8, %z8 : i8
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %beta = arith.select %first, %zero, %one : f32
    %a = memref.cast %xs : memref<8x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %b = memref.cast %ds : memref<8x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %cc = memref.cast %c : memref<64x64xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %t1 = arith.constant 1 : i32
    %t0 = arith.constant 0 : i32
    func.call @gaccrt_sgemm(%t1, %t0, %one, %beta, %a, %b, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  }
  return
}

// -----

// The first micro-batch's operand %xt leaves an scf.if after its GEMM and
// is zeroed through the result: the pair would read zeros.
// PAIR-LABEL: func.func @yielded_operand
// PAIR-NOT:     gaccrt_sgemm_pair
// PAIR:         {{^}}// -----
func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func @yielded_operand(%x: memref<32x64xf32>, %dy: memref<32x64xf32>, %c: memref<64x64xf32>, %o: memref<64x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %true = arith.constant true
  scf.for %i = %c0 to %c4 step %c1 {
    %0 = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%0, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%0, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    %first = arith.cmpi eq, %i, %c0 : index
    %one = arith.constant 1.0 : f32
    %zero = arith.constant 0.0 : f32
    %beta = arith.select %first, %zero, %one : f32
    %a = memref.cast %xt : memref<64x8xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %b = memref.cast %ds : memref<8x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %cc = memref.cast %c : memref<64x64xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
    %t1 = arith.constant 1 : i32
    %t0 = arith.constant 0 : i32
    func.call @gaccrt_sgemm(%t0, %t0, %one, %beta, %a, %b, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
    %r = scf.if %true -> (memref<64x8xf32>) {
      scf.yield %xt : memref<64x8xf32>
    } else {
      scf.yield %o : memref<64x8xf32>
    }
    linalg.fill ins(%zero : f32) outs(%r : memref<64x8xf32>)
  }
  return
}

// -----

// Each micro-batch writes and reads back one scratch word through a
// pointer (an effect on an !llvm.ptr, not a memref): the copies would race
// on it side by side.
// COPIES-LABEL: func.func @pointer_scratch
// COPIES-NOT:     gacc.concurrent_copies
module {
  func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
  func.func private @gaccrt_trace_region_begin(i64)
  func.func private @gaccrt_trace_region_end(i64)
  func.func @pointer_scratch(%arg0: memref<32x64xf32>, %arg1: memref<64x64xf32>, %arg2: memref<64x64xf32>, %arg3: memref<64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %cst = arith.constant 0.000000e+00 : f32
    %scratch = memref.alloc() : memref<1xf32>
    scf.for %arg4 = %c0 to %c4 step %c1 {
      %0 = arith.index_cast %arg4 : index to i64
      func.call @gaccrt_trace_region_begin(%0) : (i64) -> ()
      %1 = arith.muli %arg4, %c8 : index
      %subview = memref.subview %arg0[%1, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
      %alloc = memref.alloc() : memref<8x64xf32>
      %cast = memref.cast %subview : memref<8x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
      %cast_0 = memref.cast %arg1 : memref<64x64xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
      %cast_1 = memref.cast %alloc : memref<8x64xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
      %c0_i32 = arith.constant 0 : i32
      %c0_i32_2 = arith.constant 0 : i32
      %cst_3 = arith.constant 1.000000e+00 : f32
      %cst_4 = arith.constant 0.000000e+00 : f32
      func.call @gaccrt_sgemm(%c0_i32, %c0_i32_2, %cst_3, %cst_4, %cast, %cast_0, %cast_1) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
      %sp = memref.extract_aligned_pointer_as_index %scratch : memref<1xf32> -> index
      %spi = arith.index_cast %sp : index to i64
      %ptr = llvm.inttoptr %spi : i64 to !llvm.ptr
      %ivi = arith.index_cast %arg4 : index to i64
      %ivf = arith.sitofp %ivi : i64 to f32
      llvm.store %ivf, %ptr : f32, !llvm.ptr
      %r = llvm.load %ptr : !llvm.ptr -> f32
      %z = arith.constant 0 : index
      memref.store %r, %alloc[%z, %z] : memref<8x64xf32>
      %2 = arith.cmpi eq, %arg4, %c0 : index
      %cst_5 = arith.constant 1.000000e+00 : f32
      %cst_6 = arith.constant 0.000000e+00 : f32
      %3 = arith.select %2, %cst_6, %cst_5 : f32
      %cast_7 = memref.cast %subview : memref<8x64xf32, strided<[64, 1], offset: ?>> to memref<?x?xf32, strided<[?, ?], offset: ?>>
      %cast_8 = memref.cast %alloc : memref<8x64xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
      %cast_9 = memref.cast %arg2 : memref<64x64xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
      %c1_i32 = arith.constant 1 : i32
      %c0_i32_10 = arith.constant 0 : i32
      %cst_11 = arith.constant 1.000000e+00 : f32
      func.call @gaccrt_sgemm(%c1_i32, %c0_i32_10, %cst_11, %3, %cast_7, %cast_8, %cast_9) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
      linalg.reduce { arith.addf } ins(%alloc : memref<8x64xf32>) outs(%arg3 : memref<64xf32>) dimensions = [0]
      func.call @gaccrt_trace_region_end(%0) : (i64) -> ()
    }
    return
  }
}

// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas --gacc-pair-accumulating-gemms=min-accumulator-bytes=0 | FileCheck %s
// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas --gacc-pair-accumulating-gemms=any-size=1 | FileCheck %s --check-prefix=ANY
// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas --gacc-pair-accumulating-gemms | FileCheck %s --check-prefix=SMALL

// The accumulators here take 16 KiB, less than the default
// min-accumulator-bytes (64 KiB: one that stays in L1 gains little from a
// pair), so by default nothing pairs (SMALL); the other runs lower it.
// SMALL-NOT: gaccrt_sgemm_pair

// Four equal micro-batches: the loop runs two per iteration, and the weight
// gradients of the first (beta = 0 in the loop's first iteration) and of the
// second become one gaccrt_sgemm_pair at the second's place. The first
// copy's test for the final region never holds there (iv + 1 <= 3 < 4) and
// goes; the second copy's stays after the pair.

// CHECK-LABEL: func.func @pairs
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[STEP:.*]] = arith.constant 2 : index
// CHECK:         scf.for %[[IV:.*]] = %[[C0]] to %{{.*}} step %[[STEP]] {
// CHECK:           %[[X1:.*]] = memref.subview %arg0
// CHECK:           %[[D1:.*]] = memref.subview %arg1
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[IV]], %[[C0]]
// CHECK:           %[[BETA:.*]] = arith.select %[[FIRST]]
// CHECK:           %[[A1:.*]] = memref.cast %[[X1]]
// CHECK:           %[[B1:.*]] = memref.cast %[[D1]]
// CHECK-NOT:       scf.if
// CHECK-NOT:       call @gaccrt_sgemm(
// CHECK:           %[[IV2:.*]] = arith.addi %[[IV]], %{{c1_.*}} : index
// CHECK:           %[[OFF2:.*]] = arith.muli %[[IV2]]
// CHECK:           %[[X2:.*]] = memref.subview %arg0[%[[OFF2]], 0]
// CHECK:           %[[D2:.*]] = memref.subview %arg1[%[[OFF2]], 0]
// CHECK:           %[[A2:.*]] = memref.cast %[[X2]]
// CHECK:           %[[B2:.*]] = memref.cast %[[D2]]
// CHECK:           %[[C:.*]] = memref.cast %arg2
// CHECK:           call @gaccrt_sgemm_pair(%{{.*}}, %{{.*}}, %{{.*}}, %[[BETA]], %[[A1]], %[[B1]], %[[A2]], %[[B2]], %[[C]])
// CHECK:           scf.if
// CHECK:             memref.extract_aligned_pointer_as_index %arg2
// CHECK:           }
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func private @use(index)
func.func @pairs(%x: memref<32x64xf32>, %dy: memref<32x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %ds : memref<64x8xf32>, memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%c : memref<64x64xf32>)
    %next = arith.addi %i, %c1 : index
    %last = arith.cmpi sge, %next, %c4 : index
    scf.if %last {
      %p = memref.extract_aligned_pointer_as_index %c : memref<64x64xf32> -> index
      func.call @use(%p) : (index) -> ()
    }
  }
  return
}

// -----

// Three micro-batches: one iteration pairs the first two, the third runs
// after the loop with its own GEMM (beta = 1: not the first).

// CHECK-LABEL: func.func @odd
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[UB:.*]] = arith.constant 2 : index
// CHECK-DAG:     %[[STEP:.*]] = arith.constant 2 : index
// CHECK:         scf.for %{{.*}} = %[[C0]] to %[[UB]] step %[[STEP]] {
// CHECK-NOT:       call @gaccrt_sgemm(
// CHECK:           call @gaccrt_sgemm_pair(
// CHECK:         }
// CHECK:         %[[LAST:.*]] = arith.constant 2 : index
// CHECK:         arith.muli %[[LAST]]
// CHECK:         call @gaccrt_sgemm(
// CHECK-NOT:     call @gaccrt_sgemm
// CHECK:         return
func.func @odd(%x: memref<24x64xf32>, %dy: memref<24x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  scf.for %i = %c0 to %c3 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 64] [1, 1] : memref<24x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%off, 0] [8, 64] [1, 1] : memref<24x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %ds : memref<64x8xf32>, memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%c : memref<64x64xf32>)
  }
  return
}

// -----

// Nothing pairs, and the loops stay as they are: C read in the body
// (@read_between), an operand overwritten after the GEMM (@operand_written),
// operands larger than a quarter of C (@large_operands: 4 KiB of operands
// for an 8 KiB C), a GEMM that overwrites C in every iteration
// (@overwrites), one iteration (@single).

// CHECK-LABEL: func.func @read_between
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[ONE:.*]] {
// CHECK:           call @gaccrt_sgemm(
// CHECK:           linalg.reduce
// CHECK-NOT:       call @gaccrt_sgemm
// CHECK:         }
// CHECK-NOT:     gaccrt_sgemm_pair
func.func @read_between(%x: memref<32x64xf32>, %dy: memref<32x64xf32>, %c: memref<64x64xf32>, %s: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %ds : memref<64x8xf32>, memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%c : memref<64x64xf32>)
    linalg.reduce { arith.addf } ins(%c : memref<64x64xf32>) outs(%s : memref<64xf32>) dimensions = [0]
  }
  return
}

// CHECK-LABEL: func.func @operand_written
// CHECK-NOT:     gaccrt_sgemm_pair
// CHECK:         return
func.func @operand_written(%x: memref<32x64xf32>, %dy: memref<32x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %ds : memref<64x8xf32>, memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%c : memref<64x64xf32>)
    linalg.fill ins(%one : f32) outs(%ds : memref<8x64xf32, strided<[64, 1], offset: ?>>)
  }
  return
}

// With any-size (for tests on small graphs) @large_operands pairs; the
// others still do not (their reasons are not sizes).
// ANY-LABEL: func.func @read_between
// ANY-NOT:     gaccrt_sgemm_pair
// ANY-LABEL: func.func @operand_written
// ANY-NOT:     gaccrt_sgemm_pair
// ANY-LABEL: func.func @large_operands
// ANY:         call @gaccrt_sgemm_pair(
// ANY-LABEL: func.func @overwrites
// ANY-NOT:     gaccrt_sgemm_pair
// ANY-LABEL: func.func @single
// ANY-NOT:     gaccrt_sgemm_pair

// CHECK-LABEL: func.func @large_operands
// CHECK-NOT:     gaccrt_sgemm_pair
// CHECK:         return
func.func @large_operands(%x: memref<64x32xf32>, %dy: memref<64x64xf32>, %c: memref<32x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c16 : index
    %xs = memref.subview %x[%off, 0] [16, 32] [1, 1] : memref<64x32xf32> to memref<16x32xf32, strided<[32, 1], offset: ?>>
    %ds = memref.subview %dy[%off, 0] [16, 64] [1, 1] : memref<64x64xf32> to memref<16x64xf32, strided<[64, 1], offset: ?>>
    %xt = memref.alloc() : memref<32x16xf32>
    linalg.transpose ins(%xs : memref<16x32xf32, strided<[32, 1], offset: ?>>) outs(%xt : memref<32x16xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %ds : memref<32x16xf32>, memref<16x64xf32, strided<[64, 1], offset: ?>>) outs(%c : memref<32x64xf32>)
  }
  return
}

// CHECK-LABEL: func.func @overwrites
// CHECK-NOT:     gaccrt_sgemm_pair
// CHECK:         return
func.func @overwrites(%x: memref<32x64xf32>, %dy: memref<32x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
    linalg.matmul ins(%xt, %ds : memref<64x8xf32>, memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%c : memref<64x64xf32>)
  }
  return
}

// CHECK-LABEL: func.func @single
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           call @gaccrt_sgemm(
// CHECK-NOT:     gaccrt_sgemm_pair
// CHECK:         return
func.func @single(%x: memref<8x64xf32>, %dy: memref<8x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c1 step %c1 {
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%x : memref<8x64xf32>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %dy : memref<64x8xf32>, memref<8x64xf32>) outs(%c : memref<64x64xf32>)
  }
  return
}

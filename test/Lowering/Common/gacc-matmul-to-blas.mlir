// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas | FileCheck %s
// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas="split-batches=false" | FileCheck %s --check-prefix=NOSPLIT

// A matmul after a zero fill of its output initializes it (beta = 0, the
// fill goes away); one without accumulates (beta = 1); an operand copied by a
// transpose that only matmuls read is read through the transpose flag.

// CHECK-LABEL: func.func @first_and_accumulate
// CHECK-NOT:     linalg.fill
// CHECK:         %[[C:.*]] = memref.cast %arg2
// CHECK:         %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[ALPHA:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%[[TA]], %[[TB]], %[[ALPHA]], %[[BETA]], %{{.*}}, %{{.*}}, %[[C]])
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[BETA1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[BETA1]],
// CHECK-NOT:     linalg.matmul
func.func @first_and_accumulate(%a: memref<4x3xf32>, %b: memref<3x2xf32>, %c: memref<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c : memref<4x2xf32>)
  return
}

// -----

// CHECK-LABEL: func.func @transposed
// CHECK-NOT:     linalg.transpose
// CHECK-NOT:     memref.alloc
// CHECK:         %[[A:.*]] = memref.cast %arg0 : memref<3x4xf32>
// CHECK:         %[[TA:.*]] = arith.constant 1 : i32
// CHECK:         call @gaccrt_sgemm(%[[TA]], %{{.*}}, %{{.*}}, %{{.*}}, %[[A]],
func.func @transposed(%at: memref<3x4xf32>, %b: memref<3x2xf32>, %c: memref<4x2xf32>) {
  %a = memref.alloc() : memref<4x3xf32>
  linalg.transpose ins(%at : memref<3x4xf32>) outs(%a : memref<4x3xf32>) permutation = [1, 0]
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c : memref<4x2xf32>)
  return
}

// -----

// A transpose read by several matmuls (region 0, and the rolled loop of the
// later regions) is folded into each of them.
// CHECK-LABEL: func.func @shared_transpose
// CHECK-NOT:     linalg.transpose
// CHECK-NOT:     memref.alloc
// CHECK:         %[[W:.*]] = memref.cast %arg0 : memref<3x4xf32>
// CHECK:         %[[T1:.*]] = arith.constant 1 : i32
// CHECK:         call @gaccrt_sgemm(%{{.*}}, %[[T1]], %{{.*}}, %{{.*}}, %{{.*}}, %[[W]],
// CHECK:         scf.for
// CHECK:           %[[W2:.*]] = memref.cast %arg0 : memref<3x4xf32>
// CHECK:           %[[T2:.*]] = arith.constant 1 : i32
// CHECK:           call @gaccrt_sgemm(%{{.*}}, %[[T2]], %{{.*}}, %{{.*}}, %{{.*}}, %[[W2]],
func.func @shared_transpose(%w: memref<3x4xf32>, %x: memref<2x4xf32>, %c: memref<2x3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %wt = memref.alloc() : memref<4x3xf32>
  linalg.transpose ins(%w : memref<3x4xf32>) outs(%wt : memref<4x3xf32>) permutation = [1, 0]
  linalg.matmul ins(%x, %wt : memref<2x4xf32>, memref<4x3xf32>) outs(%c : memref<2x3xf32>)
  scf.for %i = %c1 to %c3 step %c1 {
    linalg.matmul ins(%x, %wt : memref<2x4xf32>, memref<4x3xf32>) outs(%c : memref<2x3xf32>)
  }
  memref.dealloc %wt : memref<4x3xf32>
  return
}

// -----

// The source of the transpose is written after the transpose and before the
// matmul: the copy must stay.
// CHECK-LABEL: func.func @source_written_after_transpose
// CHECK:         linalg.transpose
// CHECK:         linalg.fill
// CHECK:         %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[TB:.*]] = arith.constant 0 : i32
// CHECK:         call @gaccrt_sgemm(%[[TA]], %[[TB]],
func.func @source_written_after_transpose(%b: memref<4x2xf32>, %c: memref<3x2xf32>) {
  %one = arith.constant 1.0 : f32
  %src = memref.alloc() : memref<4x3xf32>
  linalg.fill ins(%one : f32) outs(%src : memref<4x3xf32>)
  %a = memref.alloc() : memref<3x4xf32>
  linalg.transpose ins(%src : memref<4x3xf32>) outs(%a : memref<3x4xf32>) permutation = [1, 0]
  linalg.fill ins(%one : f32) outs(%src : memref<4x3xf32>)
  linalg.matmul ins(%a, %b : memref<3x4xf32>, memref<4x2xf32>) outs(%c : memref<3x2xf32>)
  return
}

// -----

// A zero fill earlier in the block, with no op touching the buffer in
// between, still makes the matmul beta = 0; a read of the filled buffer in
// between keeps the fill (beta = 1).
// CHECK-LABEL: func.func @fill_not_adjacent
// CHECK-NOT:     outs(%arg2
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%arg3
// CHECK-NOT:     linalg.fill
// CHECK:         %[[BETA0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[BETA0]],
func.func @fill_not_adjacent(%a: memref<4x3xf32>, %b: memref<3x2xf32>, %c: memref<4x2xf32>, %d: memref<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x2xf32>)
  linalg.fill ins(%one : f32) outs(%d : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c : memref<4x2xf32>)
  return
}

// CHECK-LABEL: func.func @fill_read_in_between
// CHECK:         linalg.fill
// CHECK:         linalg.copy
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[BETA1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[BETA1]],
func.func @fill_read_in_between(%a: memref<4x3xf32>, %b: memref<3x2xf32>, %c: memref<4x2xf32>, %d: memref<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x2xf32>)
  linalg.copy ins(%c : memref<4x2xf32>) outs(%d : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c : memref<4x2xf32>)
  return
}

// The arguments of a private function may alias: the fill stays.
// CHECK-LABEL: func.func private @fill_private
// CHECK:         linalg.fill
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[BETA2:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[BETA2]],
func.func private @fill_private(%a: memref<4x3xf32>, %b: memref<3x2xf32>, %c: memref<4x2xf32>, %d: memref<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x2xf32>)
  linalg.fill ins(%one : f32) outs(%d : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c : memref<4x2xf32>)
  return
}

// -----

// A buffer whose address reaches a call (the runtime's all-reduce reads and
// writes it) between the transpose and the matmul, or between the zero fill
// and the matmul: neither is folded.
func.func private @gaccrt_all_reduce(i64)

// CHECK-LABEL: func.func @address_escapes
// CHECK:         linalg.transpose
// CHECK:         linalg.fill
// CHECK:         call @gaccrt_all_reduce
// CHECK:         %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[BETA:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%[[TA]], %[[TB]], %{{.*}}, %[[BETA]],
func.func @address_escapes(%b: memref<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %src = memref.alloc() : memref<4x3xf32>
  %c = memref.alloc() : memref<3x2xf32>
  linalg.fill ins(%one : f32) outs(%src : memref<4x3xf32>)
  %p = memref.extract_aligned_pointer_as_index %src : memref<4x3xf32> -> index
  %q = memref.extract_aligned_pointer_as_index %c : memref<3x2xf32> -> index
  %a = memref.alloc() : memref<3x4xf32>
  linalg.transpose ins(%src : memref<4x3xf32>) outs(%a : memref<3x4xf32>) permutation = [1, 0]
  linalg.fill ins(%zero : f32) outs(%c : memref<3x2xf32>)
  %p64 = arith.index_cast %p : index to i64
  %q64 = arith.index_cast %q : index to i64
  call @gaccrt_all_reduce(%p64) : (i64) -> ()
  call @gaccrt_all_reduce(%q64) : (i64) -> ()
  linalg.matmul ins(%a, %b : memref<3x4xf32>, memref<4x2xf32>) outs(%c : memref<3x2xf32>)
  return
}

// -----

// Not f32: left alone.
// CHECK-LABEL: func.func @f64
// CHECK:         linalg.matmul
// CHECK-NOT:     call @gaccrt_sgemm
func.func @f64(%a: memref<4x3xf64>, %b: memref<3x2xf64>, %c: memref<4x2xf64>) {
  linalg.matmul ins(%a, %b : memref<4x3xf64>, memref<3x2xf64>) outs(%c : memref<4x2xf64>)
  return
}

// -----

// A zero-filled tensor shared by several matmuls bufferizes to one fill, a
// copy of it into each matmul's own output and, for its last user, the fill
// itself: every matmul overwrites (beta = 0), the copies and the fill go
// away.
// CHECK-LABEL: func.func @shared_zeros
// CHECK-NOT:     linalg.fill
// CHECK-NOT:     memref.copy
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[B0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[B0]],
// CHECK-NOT:     memref.copy
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[B1:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[B1]],
// CHECK-NOT:     linalg.fill
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[B2:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[B2]],
// CHECK-NEXT:    memref.copy %{{.*}}, %arg3
// CHECK-NEXT:    memref.copy %{{.*}}, %arg4
// CHECK-NEXT:    memref.copy %{{.*}}, %arg5
func.func @shared_zeros(%a: memref<4x3xf32>, %b: memref<3x2xf32>, %u: memref<4x2xf32>, %x: memref<4x2xf32>, %y: memref<4x2xf32>, %w: memref<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %z = memref.alloc() : memref<4x2xf32>
  linalg.fill ins(%zero : f32) outs(%z : memref<4x2xf32>)
  %c1 = memref.alloc() : memref<4x2xf32>
  memref.copy %z, %c1 : memref<4x2xf32> to memref<4x2xf32>
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c1 : memref<4x2xf32>)
  %c2 = memref.alloc() : memref<4x2xf32>
  memref.copy %z, %c2 : memref<4x2xf32> to memref<4x2xf32>
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c2 : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%z : memref<4x2xf32>)
  memref.copy %c1, %x : memref<4x2xf32> to memref<4x2xf32>
  memref.copy %c2, %y : memref<4x2xf32> to memref<4x2xf32>
  memref.copy %z, %w : memref<4x2xf32> to memref<4x2xf32>
  memref.dealloc %c1 : memref<4x2xf32>
  memref.dealloc %c2 : memref<4x2xf32>
  memref.dealloc %z : memref<4x2xf32>
  return
}

// -----

// The copied buffer is not all zeros (written between the fill and the
// copy): the copy and the fill stay, both matmuls accumulate (beta = 1).
// CHECK-LABEL: func.func @copy_not_zeros
// CHECK:         linalg.fill
// CHECK-NEXT:    linalg.copy
// CHECK:         memref.copy
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[B0:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[B0]],
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[B1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[B1]],
func.func @copy_not_zeros(%a: memref<4x3xf32>, %b: memref<3x2xf32>, %x: memref<4x2xf32>, %v: memref<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %z = memref.alloc() : memref<4x2xf32>
  linalg.fill ins(%zero : f32) outs(%z : memref<4x2xf32>)
  linalg.copy ins(%v : memref<4x2xf32>) outs(%z : memref<4x2xf32>)
  %c1 = memref.alloc() : memref<4x2xf32>
  memref.copy %z, %c1 : memref<4x2xf32> to memref<4x2xf32>
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c1 : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%z : memref<4x2xf32>)
  memref.copy %c1, %x : memref<4x2xf32> to memref<4x2xf32>
  memref.dealloc %c1 : memref<4x2xf32>
  memref.dealloc %z : memref<4x2xf32>
  return
}

// -----

// Zeros copied into a matmul's output, and also read by an op that stays
// (a linalg.copy) before the last user of the zero buffer: the copy goes
// (beta = 0), the fill stays for that reader, the last matmul accumulates.
// CHECK-LABEL: func.func @zeros_read_elsewhere
// CHECK:         linalg.fill
// CHECK-NOT:     memref.copy
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[B0:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[B0]],
// CHECK-NEXT:    linalg.copy
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[B1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[B1]],
func.func @zeros_read_elsewhere(%a: memref<4x3xf32>, %b: memref<3x2xf32>, %x: memref<4x2xf32>, %v: memref<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %z = memref.alloc() : memref<4x2xf32>
  linalg.fill ins(%zero : f32) outs(%z : memref<4x2xf32>)
  %c1 = memref.alloc() : memref<4x2xf32>
  memref.copy %z, %c1 : memref<4x2xf32> to memref<4x2xf32>
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c1 : memref<4x2xf32>)
  linalg.copy ins(%z : memref<4x2xf32>) outs(%v : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%z : memref<4x2xf32>)
  memref.copy %c1, %x : memref<4x2xf32> to memref<4x2xf32>
  memref.dealloc %c1 : memref<4x2xf32>
  memref.dealloc %z : memref<4x2xf32>
  return
}

// -----

// A batch_matmul (attention, token mixing) is a loop of GEMM calls on the
// batches' rank-reduced views; with split-batches=false (the CUDA path) it
// stays a batch_matmul.

// CHECK-LABEL: func.func @batched
// CHECK-SAME:    (%[[A:.*]]: memref<3x4x5xf32>, %[[B:.*]]: memref<3x5x2xf32>, %[[C:.*]]: memref<3x4x2xf32>)
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-DAG:       %[[SA:.*]] = memref.subview %[[A]][%[[I]], 0, 0] [1, 4, 5] [1, 1, 1] : memref<3x4x5xf32> to memref<4x5xf32, strided<[5, 1], offset: ?>>
// CHECK-DAG:       %[[SB:.*]] = memref.subview %[[B]][%[[I]], 0, 0] [1, 5, 2] [1, 1, 1] : memref<3x5x2xf32> to memref<5x2xf32, strided<[2, 1], offset: ?>>
// CHECK-DAG:       %[[SC:.*]] = memref.subview %[[C]][%[[I]], 0, 0] [1, 4, 2] [1, 1, 1] : memref<3x4x2xf32> to memref<4x2xf32, strided<[2, 1], offset: ?>>
// CHECK:           call @gaccrt_sgemm
// CHECK:         }
// CHECK-NOT:     linalg.batch_matmul
// NOSPLIT-LABEL: func.func @batched
// NOSPLIT-NOT:   scf.for
// NOSPLIT:       linalg.batch_matmul
func.func @batched(%a: memref<3x4x5xf32>, %b: memref<3x5x2xf32>, %c: memref<3x4x2xf32>) {
  linalg.batch_matmul ins(%a, %b : memref<3x4x5xf32>, memref<3x5x2xf32>) outs(%c : memref<3x4x2xf32>)
  return
}

// -----

// One body per micro-batch size: a loop over the micro-batches whose
// accumulators are zero-filled before it. The matmul initializes its
// accumulator in the first iteration (beta = 0 there, 1 in the others) and
// the fill before the loop goes away. Other members of the same bucket
// (disjoint bytes of one allocation) may be touched in between; the bias
// member's fill stays (a reduction, not a GEMM, accumulates into it).

// CHECK-LABEL: func.func @loop_first_iteration
// CHECK:         %[[W:.*]] = memref.expand_shape
// CHECK-NOT:     linalg.fill ins(%{{.*}} : f32) outs(%[[W]]
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[BIAS:.*]] : memref<2xf32>)
// CHECK:         scf.for %[[I:.*]] = %[[LB:.*]] to
// CHECK:           linalg.reduce {{.*}} outs(%[[BIAS]]
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[I]], %[[LB]] : index
// CHECK-DAG:       %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:       %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:           %[[BETA:.*]] = arith.select %[[FIRST]], %[[ZERO]], %[[ONE]] : f32
// CHECK:           call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[BETA]], %{{.*}}, %{{.*}}, %{{.*}})
func.func @loop_first_iteration(%x: memref<8x3xf32>, %dy: memref<8x2xf32>) -> memref<32xi8> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c24 = arith.constant 24 : index
  %bucket = memref.alloc() : memref<32xi8>
  %wflat = memref.view %bucket[%c0][] : memref<32xi8> to memref<6xf32>
  %w = memref.expand_shape %wflat [[0, 1]] output_shape [3, 2] : memref<6xf32> into memref<3x2xf32>
  %bias = memref.view %bucket[%c24][] : memref<32xi8> to memref<2xf32>
  linalg.fill ins(%zero : f32) outs(%w : memref<3x2xf32>)
  linalg.fill ins(%zero : f32) outs(%bias : memref<2xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    %xt = memref.alloc() : memref<3x8xf32>
    linalg.transpose ins(%x : memref<8x3xf32>) outs(%xt : memref<3x8xf32>) permutation = [1, 0]
    linalg.reduce { arith.addf } ins(%dy : memref<8x2xf32>) outs(%bias : memref<2xf32>) dimensions = [0]
    linalg.matmul ins(%xt, %dy : memref<3x8xf32>, memref<8x2xf32>) outs(%w : memref<3x2xf32>)
  }
  return %bucket : memref<32xi8>
}

// -----

// The fill stays (beta = 1 in every iteration) when the body reads the
// accumulator before the matmul, when an op between the fill and the loop
// touches it, when views of the bucket overlap, or when the loop may run no
// iteration.

// CHECK-LABEL: func.func @loop_keeps_fill
// CHECK-COUNT-4: linalg.fill
// CHECK-NOT:     arith.select
// CHECK-NOT:     arith.cmpi
func.func @loop_keeps_fill(%a: memref<4x3xf32>, %b: memref<3x2xf32>, %v: memref<4x2xf32>, %n: index) -> (memref<4x2xf32>, memref<4x2xf32>, memref<32xi8>, memref<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // Read before the matmul in the body.
  %read = memref.alloc() : memref<4x2xf32>
  linalg.fill ins(%zero : f32) outs(%read : memref<4x2xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    linalg.copy ins(%read : memref<4x2xf32>) outs(%v : memref<4x2xf32>)
    linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%read : memref<4x2xf32>)
  }
  // Touched between the fill and the loop.
  %between = memref.alloc() : memref<4x2xf32>
  linalg.fill ins(%zero : f32) outs(%between : memref<4x2xf32>)
  linalg.copy ins(%between : memref<4x2xf32>) outs(%v : memref<4x2xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%between : memref<4x2xf32>)
  }
  // Overlapping members: bytes 0-31 and 16-23.
  %bucket = memref.alloc() : memref<32xi8>
  %flat = memref.view %bucket[%c0][] : memref<32xi8> to memref<8xf32>
  %c = memref.expand_shape %flat [[0, 1]] output_shape [4, 2] : memref<8xf32> into memref<4x2xf32>
  %c16 = arith.constant 16 : index
  %other = memref.view %bucket[%c16][] : memref<32xi8> to memref<2xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<4x2xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    linalg.fill ins(%zero : f32) outs(%other : memref<2xf32>)
    linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c : memref<4x2xf32>)
  }
  // Maybe no iteration.
  %dynamic = memref.alloc() : memref<4x2xf32>
  linalg.fill ins(%zero : f32) outs(%dynamic : memref<4x2xf32>)
  scf.for %i = %c0 to %n step %c1 {
    linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%dynamic : memref<4x2xf32>)
  }
  return %read, %between, %bucket, %dynamic : memref<4x2xf32>, memref<4x2xf32>, memref<32xi8>, memref<4x2xf32>
}

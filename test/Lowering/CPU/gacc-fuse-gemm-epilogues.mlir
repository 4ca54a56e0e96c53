// RUN: gacc-opt %s --gacc-fuse-gemm-epilogues --split-input-file | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)

// A layer's forward GEMM, bias and ReLU (two outputs: the pre-activation,
// kept for the backward pass, and the activation), as gacc-matmul-to-blas
// leaves them: the outputs' allocations move before the call, the call and
// the generic become one unit, and the pre-activation is written over C
// (C is read by nothing else; the pre-activation's buffer goes away).

// CHECK-LABEL: func.func @bias_relu
// CHECK-SAME:    (%[[X:.*]]: memref<8x16xf32>, %[[W:.*]]: memref<16x32xf32>, %[[B:.*]]: memref<32xf32>
// CHECK:         %[[C:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x32xf32>
// CHECK:         %[[ACT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x32xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         scf.execute_region {
// CHECK-NEXT:      func.call @gaccrt_sgemm
// CHECK-NEXT:      linalg.generic
// CHECK-SAME:        ins(%[[C]], %[[B]] : memref<8x32xf32>, memref<32xf32>) outs(%[[C]], %[[ACT]] : memref<8x32xf32>, memref<8x32xf32>)
// CHECK:           scf.yield
// CHECK-NEXT:    } {gacc.gemm_epilogue}
// CHECK:         call @use(%[[C]], %[[ACT]])
func.func private @use(memref<8x32xf32>, memref<8x32xf32>)
func.func @bias_relu(%x: memref<8x16xf32>, %w: memref<16x32xf32>, %b: memref<32xf32>) {
  %c0 = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() {alignment = 64 : i64} : memref<8x32xf32>
  %xc = memref.cast %x : memref<8x16xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %wc = memref.cast %w : memref<16x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %cc = memref.cast %c : memref<8x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  call @gaccrt_sgemm(%c0, %c0, %one, %zero, %xc, %wc, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  %pre = memref.alloc() {alignment = 64 : i64} : memref<8x32xf32>
  %act = memref.alloc() {alignment = 64 : i64} : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #col, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c, %b : memref<8x32xf32>, memref<32xf32>) outs(%pre, %act : memref<8x32xf32>, memref<8x32xf32>) {
  ^bb0(%in: f32, %bias: f32, %o1: f32, %o2: f32):
    %s = arith.addf %in, %bias : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %s, %r : f32, f32
  }
  call @use(%pre, %act) : (memref<8x32xf32>, memref<8x32xf32>) -> ()
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// C read again after the generic: fused, but its output keeps its buffer.

// CHECK-LABEL: func.func @c_read_later
// CHECK:         %[[C:.*]] = memref.alloc() {{.*}} : memref<8x32xf32>
// CHECK:         %[[OUT:.*]] = memref.alloc() {{.*}} : memref<8x32xf32>
// CHECK:         scf.execute_region {
// CHECK:           linalg.generic
// CHECK-SAME:        outs(%[[OUT]] : memref<8x32xf32>)
// CHECK:         } {gacc.gemm_epilogue}
// CHECK:         call @use(%[[C]], %[[OUT]])
func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func private @use(memref<8x32xf32>, memref<8x32xf32>)
func.func @c_read_later(%x: memref<8x16xf32>, %w: memref<16x32xf32>) {
  %c0 = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() {alignment = 64 : i64} : memref<8x32xf32>
  %xc = memref.cast %x : memref<8x16xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %wc = memref.cast %w : memref<16x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %cc = memref.cast %c : memref<8x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  call @gaccrt_sgemm(%c0, %c0, %one, %zero, %xc, %wc, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  %out = memref.alloc() {alignment = 64 : i64} : memref<8x32xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<8x32xf32>) outs(%out : memref<8x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  call @use(%c, %out) : (memref<8x32xf32>, memref<8x32xf32>) -> ()
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// Not fused, each for its own reason: C read transposed (an element of
// another tile), a generic that writes a buffer the GEMM reads (A), a
// reduction, a write to memory between the call and the generic, and a
// generic whose output is not a buffer of its own (an argument).

// CHECK-LABEL: func.func @refused
// CHECK-NOT:     execute_region
// CHECK:         return
func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func @refused(%x: memref<32x32xf32>, %w: memref<32x32xf32>, %arg: memref<32x32xf32>, %row: memref<32xf32>) {
  %c0 = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %xc = memref.cast %x : memref<32x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %wc = memref.cast %w : memref<32x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  // C read transposed.
  %c1 = memref.alloc() : memref<32x32xf32>
  %cc1 = memref.cast %c1 : memref<32x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  call @gaccrt_sgemm(%c0, %c0, %one, %zero, %xc, %wc, %cc1) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  %o1 = memref.alloc() : memref<32x32xf32>
  linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c1 : memref<32x32xf32>) outs(%o1 : memref<32x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  // The output is A's buffer.
  %a2 = memref.alloc() : memref<32x32xf32>
  %ac2 = memref.cast %a2 : memref<32x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %c2 = memref.alloc() : memref<32x32xf32>
  %cc2 = memref.cast %c2 : memref<32x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  call @gaccrt_sgemm(%c0, %c0, %one, %zero, %ac2, %wc, %cc2) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c2 : memref<32x32xf32>) outs(%a2 : memref<32x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  // A reduction over C's rows.
  %c3 = memref.alloc() : memref<32x32xf32>
  %cc3 = memref.cast %c3 : memref<32x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  call @gaccrt_sgemm(%c0, %c0, %one, %zero, %xc, %wc, %cc3) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  %o3 = memref.alloc() : memref<32xf32>
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%c3 : memref<32x32xf32>) outs(%o3 : memref<32xf32>) {
  ^bb0(%in: f32, %o: f32):
    %s = arith.addf %in, %o : f32
    linalg.yield %s : f32
  }
  // A store between the call and the generic.
  %c4 = memref.alloc() : memref<32x32xf32>
  %cc4 = memref.cast %c4 : memref<32x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  call @gaccrt_sgemm(%c0, %c0, %one, %zero, %xc, %wc, %cc4) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  %i0 = arith.constant 0 : index
  memref.store %zero, %row[%i0] : memref<32xf32>
  %o4 = memref.alloc() : memref<32x32xf32>
  linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c4, %row : memref<32x32xf32>, memref<32xf32>) outs(%o4 : memref<32x32xf32>) {
  ^bb0(%in: f32, %r: f32, %o: f32):
    %s = arith.addf %in, %r : f32
    linalg.yield %s : f32
  }
  // The output is an argument.
  %c5 = memref.alloc() : memref<32x32xf32>
  %cc5 = memref.cast %c5 : memref<32x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  call @gaccrt_sgemm(%c0, %c0, %one, %zero, %xc, %wc, %cc5) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c5 : memref<32x32xf32>) outs(%arg : memref<32x32xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// C allocated outside the loop around the GEMM: fused, but the output,
// yielded to the next iteration, keeps its buffer (the next iteration's
// GEMM overwrites C while the yielded value is still read).

// CHECK-LABEL: func.func @c_outside_loop
// CHECK:         scf.for
// CHECK:           %[[OUT:.*]] = memref.alloc() : memref<8x32xf32>
// CHECK:           scf.execute_region {
// CHECK:             linalg.generic
// CHECK-SAME:          outs(%[[OUT]] : memref<8x32xf32>)
// CHECK:           } {gacc.gemm_epilogue}
// CHECK:           scf.yield %[[OUT]]
func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func @c_outside_loop(%x: memref<8x16xf32>, %w: memref<16x32xf32>, %init: memref<8x32xf32>) -> memref<8x32xf32> {
  %i0 = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %lb = arith.constant 0 : index
  %ub = arith.constant 4 : index
  %st = arith.constant 1 : index
  %c = memref.alloc() : memref<8x32xf32>
  %xc = memref.cast %x : memref<8x16xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %wc = memref.cast %w : memref<16x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %cc = memref.cast %c : memref<8x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %r = scf.for %iv = %lb to %ub step %st iter_args(%prev = %init) -> memref<8x32xf32> {
    func.call @gaccrt_sgemm(%i0, %i0, %one, %one, %xc, %wc, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
    %out = memref.alloc() : memref<8x32xf32>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%c, %prev : memref<8x32xf32>, memref<8x32xf32>) outs(%out : memref<8x32xf32>) {
    ^bb0(%in: f32, %p: f32, %o: f32):
      %s = arith.addf %in, %p : f32
      linalg.yield %s : f32
    }
    scf.yield %out : memref<8x32xf32>
  }
  return %r : memref<8x32xf32>
}

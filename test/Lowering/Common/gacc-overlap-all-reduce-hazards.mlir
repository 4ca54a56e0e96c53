// RUN: gacc-opt %s --split-input-file --gacc-overlap-all-reduce | FileCheck %s

// Accesses of a reduced buffer that are not its views (found by a review):
// the wait comes before each.

// The buffer's address, passed on after the all-reduce.
// CHECK-LABEL: func.func @addr
// CHECK:         call @gaccrt_all_reduce_start
// CHECK:         call @gaccrt_all_reduce_wait
// CHECK-NEXT:    call @read_addr
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func private @read_addr(i64)
func.func @addr(%b: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%b : memref<4xf32>)
  %n = arith.constant 4 : i64
  %dtype = arith.constant 0 : i32
  %kind = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  %p = memref.extract_aligned_pointer_as_index %b : memref<4xf32> -> index
  %a = arith.index_cast %p : index to i64
  call @gaccrt_all_reduce(%a, %n, %dtype, %kind, %id) {gacc.overlap} : (i64, i64, i32, i32, i64) -> ()
  call @read_addr(%a) : (i64) -> ()
  return
}

// -----

// The reduced buffer is an in-place loop's result; its init is filled and
// copied out after the loop: the start follows the fill, the wait precedes
// the copy.
// CHECK-LABEL: func.func @loopres
// CHECK:         scf.for
// CHECK:         linalg.fill
// CHECK:         call @gaccrt_all_reduce_start
// CHECK:         call @gaccrt_all_reduce_wait
// CHECK-NEXT:    memref.copy
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func private @use(memref<4xf32>)
func.func @loopres(%out: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %alloc = memref.alloc() : memref<4xf32>
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%x = %alloc) -> (memref<4xf32>) {
    linalg.fill ins(%zero : f32) outs(%x : memref<4xf32>)
    scf.yield %x : memref<4xf32>
  }
  linalg.fill ins(%one : f32) outs(%alloc : memref<4xf32>)
  %n = arith.constant 4 : i64
  %dtype = arith.constant 0 : i32
  %kind = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  %p = memref.extract_aligned_pointer_as_index %r : memref<4xf32> -> index
  %a = arith.index_cast %p : index to i64
  call @gaccrt_all_reduce(%a, %n, %dtype, %kind, %id) {gacc.overlap} : (i64, i64, i32, i32, i64) -> ()
  memref.copy %alloc, %out : memref<4xf32> to memref<4xf32>
  return
}

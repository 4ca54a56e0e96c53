// RUN: gacc-opt %s --gacc-merge-functions --split-input-file | FileCheck %s
// RUN: gacc-opt %s --gacc-merge-functions="parametrize=false" --split-input-file | FileCheck %s --check-prefix=EXACT

// Two loop bodies that are the same (one per layer, passed to the runtime
// by reference) become one: the references to the second refer to the
// first. The callers that then differ only in the body they pass merge in
// the next round; the third body (another constant factor) stays.

// CHECK-LABEL: func.func @step
// CHECK-NEXT:    call @step_chunk() : () -> ()
// CHECK-NEXT:    call @step_chunk() : () -> ()
// CHECK-NEXT:    call @step_chunk_1() : () -> ()
// CHECK-NEXT:    return
// CHECK:       func.func private @step_parallel(
// CHECK-NOT:   func.func private @step_parallel_0(
// CHECK:       func.func private @step_parallel_1(
// CHECK:       func.func private @step_chunk()
// CHECK-NEXT:    constant @step_parallel :
// CHECK-NOT:   func.func private @step_chunk_0(
// CHECK:       func.func private @step_chunk_1()
// CHECK-NEXT:    constant @step_parallel_1 :
// EXACT-LABEL: func.func @step
// EXACT-NEXT:    call @step_chunk() : () -> ()
// EXACT-NEXT:    call @step_chunk() : () -> ()
// EXACT-NEXT:    call @step_chunk_1() : () -> ()
func.func private @gaccrt_parallel_for((!llvm.ptr, i64, i64) -> (), !llvm.ptr, i64, i64)
func.func @step() {
  call @step_chunk() : () -> ()
  call @step_chunk_0() : () -> ()
  call @step_chunk_1() : () -> ()
  return
}
func.func private @step_parallel(%ctx: !llvm.ptr, %lo: i64, %hi: i64) {
  %c = arith.constant 2.0 : f32
  %v = llvm.load %ctx : !llvm.ptr -> f32
  %w = arith.mulf %v, %c : f32
  llvm.store %w, %ctx : f32, !llvm.ptr
  return
}
func.func private @step_parallel_0(%ctx: !llvm.ptr, %lo: i64, %hi: i64) {
  %c = arith.constant 2.0 : f32
  %v = llvm.load %ctx : !llvm.ptr -> f32
  %w = arith.mulf %v, %c : f32
  llvm.store %w, %ctx : f32, !llvm.ptr
  return
}
func.func private @step_parallel_1(%ctx: !llvm.ptr, %lo: i64, %hi: i64) {
  %c = arith.constant 3.0 : f32
  %v = llvm.load %ctx : !llvm.ptr -> f32
  %w = arith.mulf %v, %c : f32
  llvm.store %w, %ctx : f32, !llvm.ptr
  return
}
func.func private @step_chunk() {
  %f = constant @step_parallel : (!llvm.ptr, i64, i64) -> ()
  %ctx = llvm.mlir.zero : !llvm.ptr
  %c0 = arith.constant 0 : i64
  %c8 = arith.constant 8 : i64
  call @gaccrt_parallel_for(%f, %ctx, %c0, %c8) : ((!llvm.ptr, i64, i64) -> (), !llvm.ptr, i64, i64) -> ()
  return
}
func.func private @step_chunk_0() {
  %f = constant @step_parallel_0 : (!llvm.ptr, i64, i64) -> ()
  %ctx = llvm.mlir.zero : !llvm.ptr
  %c0 = arith.constant 0 : i64
  %c8 = arith.constant 8 : i64
  call @gaccrt_parallel_for(%f, %ctx, %c0, %c8) : ((!llvm.ptr, i64, i64) -> (), !llvm.ptr, i64, i64) -> ()
  return
}
func.func private @step_chunk_1() {
  %f = constant @step_parallel_1 : (!llvm.ptr, i64, i64) -> ()
  %ctx = llvm.mlir.zero : !llvm.ptr
  %c0 = arith.constant 0 : i64
  %c8 = arith.constant 8 : i64
  call @gaccrt_parallel_for(%f, %ctx, %c0, %c8) : ((!llvm.ptr, i64, i64) -> (), !llvm.ptr, i64, i64) -> ()
  return
}

// -----

// Two chunks that update a buffer of the arena each, at other places (one
// place added to the copy's base offset): one function that takes the
// places as arguments, each call passing its own. The loop bound is the
// same in both; a third chunk with another loop bound stays itself.

// CHECK-LABEL: func.func @sgd
// CHECK-SAME:    (%[[BASE:.*]]: index)
// CHECK-DAG:     %[[A0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[A1:.*]] = arith.constant 64 : index
// CHECK:         call @sgd_chunk(%[[BASE]], %[[A0]], %[[A1]])
// CHECK-DAG:     %[[B0:.*]] = arith.constant 128 : index
// CHECK-DAG:     %[[B1:.*]] = arith.constant 192 : index
// CHECK:         call @sgd_chunk(%[[BASE]], %[[B0]], %[[B1]])
// CHECK:         call @sgd_chunk_1(%[[BASE]])
// CHECK:       func.func private @sgd_chunk(%[[B:.*]]: index, %[[S0:.*]]: index, %[[S1:.*]]: index)
// CHECK:         %[[ARENA:.*]] = memref.get_global @arena
// CHECK:         memref.view %[[ARENA]][%[[S0]]][]
// CHECK:         %[[AT:.*]] = arith.addi %[[B]], %[[S1]]
// CHECK:         memref.view %[[ARENA]][%[[AT]]][]
// CHECK:         arith.constant 16 : index
// CHECK-NOT:   func.func private @sgd_chunk_0(
// CHECK:       func.func private @sgd_chunk_1(%{{.*}}: index)
// CHECK:         arith.constant 8 : index

// Without parametrize only identical functions merge: all three stay.
// EXACT-LABEL: func.func @sgd
// EXACT:         call @sgd_chunk(%{{.*}}) : (index) -> ()
// EXACT:         call @sgd_chunk_0(%{{.*}}) : (index) -> ()
// EXACT:         call @sgd_chunk_1(%{{.*}}) : (index) -> ()
memref.global "private" @arena : memref<1024xi8> = uninitialized
func.func @sgd(%base: index) {
  call @sgd_chunk(%base) : (index) -> ()
  call @sgd_chunk_0(%base) : (index) -> ()
  call @sgd_chunk_1(%base) : (index) -> ()
  return
}
func.func private @sgd_chunk(%base: index) {
  %arena = memref.get_global @arena : memref<1024xi8>
  %s0 = arith.constant 0 : index
  %g = memref.view %arena[%s0][] : memref<1024xi8> to memref<16xf32>
  %s1 = arith.constant 64 : index
  %at = arith.addi %base, %s1 : index
  %p = memref.view %arena[%at][] : memref<1024xi8> to memref<16xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 16 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %g[%i] : memref<16xf32>
    %y = memref.load %p[%i] : memref<16xf32>
    %z = arith.subf %y, %x : f32
    memref.store %z, %p[%i] : memref<16xf32>
  }
  return
}
func.func private @sgd_chunk_0(%base: index) {
  %arena = memref.get_global @arena : memref<1024xi8>
  %s0 = arith.constant 128 : index
  %g = memref.view %arena[%s0][] : memref<1024xi8> to memref<16xf32>
  %s1 = arith.constant 192 : index
  %at = arith.addi %base, %s1 : index
  %p = memref.view %arena[%at][] : memref<1024xi8> to memref<16xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 16 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %g[%i] : memref<16xf32>
    %y = memref.load %p[%i] : memref<16xf32>
    %z = arith.subf %y, %x : f32
    memref.store %z, %p[%i] : memref<16xf32>
  }
  return
}
func.func private @sgd_chunk_1(%base: index) {
  %arena = memref.get_global @arena : memref<1024xi8>
  %s0 = arith.constant 256 : index
  %g = memref.view %arena[%s0][] : memref<1024xi8> to memref<16xf32>
  %s1 = arith.constant 320 : index
  %at = arith.addi %base, %s1 : index
  %p = memref.view %arena[%at][] : memref<1024xi8> to memref<16xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 8 : index
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %g[%i] : memref<16xf32>
    %y = memref.load %p[%i] : memref<16xf32>
    %z = arith.subf %y, %x : f32
    memref.store %z, %p[%i] : memref<16xf32>
  }
  return
}

// -----

// A function referred to otherwise than by calls keeps its type: bodies
// that differ in a place of the arena stay apart.

// CHECK-LABEL: func.func private @ref_parallel(
// CHECK:       func.func private @ref_parallel_0(
memref.global "private" @arena : memref<1024xi8> = uninitialized
func.func private @gaccrt_parallel_for((!llvm.ptr, i64, i64) -> (), !llvm.ptr, i64, i64)
func.func @ref(%ctx: !llvm.ptr) {
  %f = constant @ref_parallel : (!llvm.ptr, i64, i64) -> ()
  %g = constant @ref_parallel_0 : (!llvm.ptr, i64, i64) -> ()
  %c0 = arith.constant 0 : i64
  %c8 = arith.constant 8 : i64
  call @gaccrt_parallel_for(%f, %ctx, %c0, %c8) : ((!llvm.ptr, i64, i64) -> (), !llvm.ptr, i64, i64) -> ()
  call @gaccrt_parallel_for(%g, %ctx, %c0, %c8) : ((!llvm.ptr, i64, i64) -> (), !llvm.ptr, i64, i64) -> ()
  return
}
func.func private @ref_parallel(%ctx: !llvm.ptr, %lo: i64, %hi: i64) {
  %arena = memref.get_global @arena : memref<1024xi8>
  %s = arith.constant 0 : index
  %v = memref.view %arena[%s][] : memref<1024xi8> to memref<f32>
  %x = memref.load %v[] : memref<f32>
  llvm.store %x, %ctx : f32, !llvm.ptr
  return
}
func.func private @ref_parallel_0(%ctx: !llvm.ptr, %lo: i64, %hi: i64) {
  %arena = memref.get_global @arena : memref<1024xi8>
  %s = arith.constant 4 : index
  %v = memref.view %arena[%s][] : memref<1024xi8> to memref<f32>
  %x = memref.load %v[] : memref<f32>
  llvm.store %x, %ctx : f32, !llvm.ptr
  return
}

// -----

// The merged function's argument attributes stay one per argument.

// CHECK-LABEL: func.func private @attrs_chunk(
// CHECK-SAME:    %{{.*}}: memref<4xf32> {llvm.noalias}, %{{.*}}: index)
// CHECK-NOT:   func.func private @attrs_chunk_0(
memref.global "private" @arena : memref<64xi8> = uninitialized
func.func @attrs(%a: memref<4xf32>) {
  call @attrs_chunk(%a) : (memref<4xf32>) -> ()
  call @attrs_chunk_0(%a) : (memref<4xf32>) -> ()
  return
}
func.func private @attrs_chunk(%a: memref<4xf32> {llvm.noalias}) {
  %arena = memref.get_global @arena : memref<64xi8>
  %s = arith.constant 0 : index
  %v = memref.view %arena[%s][] : memref<64xi8> to memref<4xf32>
  memref.copy %a, %v : memref<4xf32> to memref<4xf32>
  return
}
func.func private @attrs_chunk_0(%a: memref<4xf32> {llvm.noalias}) {
  %arena = memref.get_global @arena : memref<64xi8>
  %s = arith.constant 16 : index
  %v = memref.view %arena[%s][] : memref<64xi8> to memref<4xf32>
  memref.copy %a, %v : memref<4xf32> to memref<4xf32>
  return
}

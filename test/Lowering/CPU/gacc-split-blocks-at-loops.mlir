// RUN: gacc-opt %s --gacc-split-blocks-at-loops | FileCheck %s

// The entry block is one branch; each loop starts a block of its own; the
// ops up to the next loop stay with it.

// CHECK-LABEL: func.func @two_loops
// CHECK-NEXT:    cf.br ^[[B0:.*]]
// CHECK:       ^[[B0]]:
// CHECK-NEXT:    arith.constant
// CHECK:         memref.alloc
// CHECK-NEXT:    cf.br ^[[B1:.*]]
// CHECK:       ^[[B1]]:
// CHECK-NEXT:    scf.for
// CHECK:         memref.store
// CHECK:         cf.br ^[[B2:.*]]
// CHECK:       ^[[B2]]:
// CHECK-NEXT:    scf.for
// CHECK:         return
func.func @two_loops(%v: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = memref.alloc() : memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %v, %a[%i] : memref<4xf32>
  }
  memref.store %v, %a[%c0] : memref<4xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %v, %a[%i] : memref<4xf32>
  }
  memref.dealloc %a : memref<4xf32>
  return
}

// The leading stack slots (the context structs of
// gacc-parallel-loops-to-runtime) stay in the entry block, before its branch:
// LLVM takes them as static allocas.

// CHECK-LABEL: func.func @slots
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-NEXT:    llvm.alloca %[[ONE]] x !llvm.struct<(f32, i64)>
// CHECK-NEXT:    cf.br ^[[B0:.*]]
// CHECK:       ^[[B0]]:
// CHECK-NEXT:    llvm.mlir.constant(2 : i64)
// CHECK-NEXT:    llvm.alloca
// CHECK:         scf.for
func.func @slots(%v: f32) {
  %one = llvm.mlir.constant(1 : i64) : i64
  %slot = llvm.alloca %one x !llvm.struct<(f32, i64)> : (i64) -> !llvm.ptr
  %two = llvm.mlir.constant(2 : i64) : i64
  %other = llvm.alloca %two x f32 : (i64) -> !llvm.ptr
  llvm.store %two, %slot : i64, !llvm.ptr
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    llvm.store %v, %slot : f32, !llvm.ptr
  }
  return
}

// A function that only returns keeps its one block.

// CHECK-LABEL: func.func @empty
// CHECK-NEXT:    return
// CHECK-NOT:   ^bb
func.func @empty() {
  return
}

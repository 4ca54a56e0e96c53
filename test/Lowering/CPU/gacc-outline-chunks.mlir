// RUN: gacc-opt %s --gacc-outline-chunks="max-loops=2" --split-input-file | FileCheck %s

// Three loops, at most two per chunk: the first two loops and what they
// define become one function, the third loop and the rest another. The
// stack allocation stays in the caller and is passed; the constants are
// cloned into each chunk; the heap buffer made in the first chunk and the
// value loaded there are its results.

// CHECK-LABEL: func.func @body
// CHECK-SAME:    (%[[A:.*]]: memref<8xf32>, %[[N:.*]]: index) -> f32
// CHECK:         %[[ACC:.*]] = memref.alloca() : memref<f32>
// CHECK-NEXT:    %[[R0:.*]]:2 = call @body_chunk(%[[A]]) : (memref<8xf32>) -> (memref<32xi8>, f32)
// CHECK-NEXT:    %[[R1:.*]] = call @body_chunk_0(%[[R0]]#1, %[[ACC]], %[[N]], %[[R0]]#0)
// CHECK-NEXT:    return %[[R1]] : f32

// CHECK:       func.func private @body_chunk_0(%{{.*}}: f32, %{{.*}}: memref<f32>, %{{.*}}: index, %{{.*}}: memref<32xi8>) -> f32
// CHECK-SAME:    attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK-DAG:     arith.constant 0 : index
// CHECK-DAG:     arith.constant 1 : index
// CHECK:         scf.for
// CHECK-NOT:     scf.for
// CHECK:         memref.dealloc
// CHECK:         return

// CHECK:       func.func private @body_chunk(%{{.*}}: memref<8xf32>) -> (memref<32xi8>, f32)
// CHECK:         memref.alloc()
// CHECK:         memref.view
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK-NOT:     scf.for
// CHECK:         return
func.func @body(%a: memref<8xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  %acc = memref.alloca() : memref<f32>
  %buf = memref.alloc() : memref<32xi8>
  %v = memref.view %buf[%c0][] : memref<32xi8> to memref<8xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %one, %v[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %v[%i] : memref<8xf32>
    memref.store %x, %a[%i] : memref<8xf32>
  }
  %s = memref.load %a[%c0] : memref<8xf32>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %s, %acc[] : memref<f32>
  }
  %r = memref.load %acc[] : memref<f32>
  memref.dealloc %buf : memref<32xi8>
  return %r : f32
}

// -----

// A loop with more loops than a chunk may hold: its body is cut instead
// (the induction variable is an argument of each chunk). The buffer stays
// in the caller (no loop to gain from outlining it) and is passed; its view
// is cloned into each chunk (the same base and offset for alias analysis)
// and no longer needed in the caller.

// CHECK-LABEL: func.func @nested
// CHECK:         %[[BUF:.*]] = memref.alloc
// CHECK-NOT:     memref.view
// CHECK:         scf.for %[[I:.*]] =
// CHECK-NEXT:      func.call @nested_chunk(%[[BUF]], %[[I]])
// CHECK-NEXT:      func.call @nested_chunk_0(%[[BUF]], %[[I]])
// CHECK-NEXT:    }
// CHECK:       func.func private @nested_chunk_0
// CHECK:         memref.view %arg0
// CHECK-COUNT-1: scf.for
// CHECK:       func.func private @nested_chunk(
// CHECK:         memref.view %arg0
// CHECK-COUNT-2: scf.for
func.func @nested(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %f = arith.constant 2.0 : f32
  %buf = memref.alloc() : memref<64xi8>
  %v = memref.view %buf[%c0][] : memref<64xi8> to memref<16xf32>
  scf.for %k = %c0 to %n step %c1 {
    scf.for %i = %c0 to %c8 step %c1 {
      memref.store %f, %v[%k] : memref<16xf32>
    }
    scf.for %i = %c0 to %c8 step %c1 {
      memref.store %f, %v[%i] : memref<16xf32>
    }
    scf.for %i = %c0 to %c8 step %c1 {
      memref.store %f, %v[%k] : memref<16xf32>
    }
  }
  memref.dealloc %buf : memref<64xi8>
  return
}

// -----

// A chunk that would return a stack allocation made from its own values is
// not outlined: the allocation and the loops before it stay in the caller;
// the last loop and the load after it are a chunk that takes the
// allocation as an argument.

// CHECK-LABEL: func.func @alloca_result
// CHECK:         %[[S:.*]] = memref.alloca(%{{.*}})
// CHECK-NEXT:    scf.for
// CHECK:         scf.for
// CHECK:         %[[R:.*]] = call @alloca_result_chunk(%{{.*}}, %[[S]])
// CHECK-NEXT:    return %[[R]]
// CHECK:       func.func private @alloca_result_chunk
// CHECK-COUNT-1: scf.for
// CHECK:         memref.load
func.func @alloca_result(%a: memref<8xindex>) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = memref.load %a[%c0] : memref<8xindex>
  %s = memref.alloca(%n) : memref<?xindex>
  scf.for %i = %c0 to %n step %c1 {
    memref.store %i, %s[%i] : memref<?xindex>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %i, %a[%i] : memref<8xindex>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %c0, %a[%i] : memref<8xindex>
  }
  %r = memref.load %s[%c0] : memref<?xindex>
  return %r : index
}

// -----

// Scalar arithmetic of any type is cloned like index arithmetic: the
// coefficient chosen from the region's index (the `beta` of an accumulating
// GEMM) is computed again in each chunk that uses it, not returned by one
// chunk and passed to the next.

// CHECK-LABEL: func.func @beta
// CHECK-SAME:    (%[[A:.*]]: memref<8xf32>, %[[K:.*]]: index)
// CHECK-NEXT:    call @beta_chunk(%[[A]], %[[K]]) : (memref<8xf32>, index) -> ()
// CHECK-NEXT:    call @beta_chunk_0(%[[A]], %[[K]]) : (memref<8xf32>, index) -> ()
// CHECK-NEXT:    return
// CHECK:       func.func private @beta_chunk_0(%{{.*}}: memref<8xf32>, %[[K0:.*]]: index) attributes
// CHECK:         %[[FIRST:.*]] = arith.cmpi eq, %[[K0]]
// CHECK:         arith.select %[[FIRST]]
// CHECK:       func.func private @beta_chunk(%{{.*}}: memref<8xf32>, %[[K1:.*]]: index) attributes
// CHECK:         %[[FIRST1:.*]] = arith.cmpi eq, %[[K1]]
// CHECK:         arith.select %[[FIRST1]]
func.func @beta(%a: memref<8xf32>, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %first = arith.cmpi eq, %k, %c0 : index
  %beta = arith.select %first, %zero, %one : f32
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xf32>
    %y = arith.mulf %x, %beta : f32
    memref.store %y, %a[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %beta, %a[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xf32>
    %y = arith.addf %x, %beta : f32
    memref.store %y, %a[%i] : memref<8xf32>
  }
  return
}

// -----

// A long parallel-loop body reads its captures from the context once, at
// its start (invariant loads, gacc-parallel-loops-to-runtime): each chunk
// loads the fields it uses again, nothing is passed from chunk to chunk. A
// plain load is an operation of the first chunk that uses it, which returns
// its value to the next.

// CHECK-LABEL: func.func private @body_parallel
// CHECK-SAME:    (%[[CTX:.*]]: !llvm.ptr)
// CHECK-NEXT:    %[[X:.*]] = call @body_parallel_chunk(%[[CTX]]) : (!llvm.ptr) -> f32
// CHECK-NEXT:    call @body_parallel_chunk_0(%[[X]], %[[CTX]]) : (f32, !llvm.ptr) -> ()
// CHECK-NEXT:    return
// CHECK:       func.func private @body_parallel_chunk_0(%{{.*}}: f32, %[[C0:.*]]: !llvm.ptr)
// CHECK-NEXT:    %[[G:.*]] = llvm.getelementptr %[[C0]][0, 1]
// CHECK-NEXT:    llvm.load %[[G]] invariant
// CHECK:       func.func private @body_parallel_chunk(%[[C1:.*]]: !llvm.ptr) -> f32
// CHECK-NEXT:    %[[G1:.*]] = llvm.getelementptr %[[C1]][0, 1]
// CHECK-NEXT:    llvm.load %[[G1]] invariant
// CHECK:         llvm.load %[[C1]] : !llvm.ptr -> f32
func.func private @body_parallel(%ctx: !llvm.ptr) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %x = llvm.load %ctx : !llvm.ptr -> f32
  %field = llvm.getelementptr %ctx[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(f32, struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>)>
  %desc = llvm.load %field invariant : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
  %a = builtin.unrealized_conversion_cast %desc : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)> to memref<8xf32>
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %x, %a[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %x, %a[%i] : memref<8xf32>
  }
  scf.for %i = %c0 to %c8 step %c1 {
    memref.store %x, %a[%i] : memref<8xf32>
  }
  return
}

// RUN: gacc-opt %s --split-input-file --gacc-deallocate-buffers --verify-diagnostics | FileCheck %s

// Buffers are freed right after their last use, through views and calls,
// not at the end of the function.

// CHECK-LABEL: func.func @last_use
// CHECK:         %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         %[[V:.*]] = memref.subview %[[A]]
// CHECK:         linalg.fill {{.*}} outs(%[[V]]
// CHECK-NEXT:    memref.dealloc %[[A]]
// CHECK:         %[[B:.*]] = memref.alloc() : memref<8xf32>
// CHECK:         call @use(%[[B]])
// CHECK-NEXT:    memref.dealloc %[[B]]
// CHECK:         linalg.fill
// CHECK-NEXT:    return
func.func private @use(memref<8xf32>)
func.func @last_use(%out: memref<2xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4xf32>
  %v = memref.subview %a[0] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1]>>
  linalg.fill ins(%zero : f32) outs(%v : memref<2xf32, strided<[1]>>)
  %b = memref.alloc() : memref<8xf32>
  call @use(%b) : (memref<8xf32>) -> ()
  linalg.fill ins(%zero : f32) outs(%out : memref<2xf32>)
  return
}

// -----

// A buffer that escapes (returned) is reported, never leaked silently.
func.func @escapes() -> memref<4xf32> {
  // expected-error @below {{'memref.alloc' op escapes its block; gacc-deallocate-buffers cannot place its deallocation}}
  %a = memref.alloc() : memref<4xf32>
  return %a : memref<4xf32>
}

// -----

// An op that hands out a memref it may have been given (arith.select, a
// call that returns one) makes the buffer's later uses unknown: an error
// rather than a free before the select's result is read.
func.func @select(%x: f32, %c: i1, %out: memref<16xf32>) {
  // expected-error @below {{'memref.alloc' op escapes its block; gacc-deallocate-buffers cannot place its deallocation}}
  %a = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<16xf32>)
  %s = arith.select %c, %a, %out : memref<16xf32>
  %t = memref.alloc() : memref<16xf32>
  linalg.add ins(%s, %s : memref<16xf32>, memref<16xf32>) outs(%t : memref<16xf32>)
  linalg.copy ins(%t : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}

// -----

// A branch's result computed into a buffer of its own (bufferization of an
// scf.if that yields a tensor): the result gets a buffer before the
// branch, each branch copies what it yields into it, and the branch's
// buffer is freed in the branch; a result yielded from outside buffers
// only stays as it was. The result buffer is freed after its last use.
// CHECK-LABEL: func.func @branch_result
// CHECK:         %[[R:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
// CHECK:         %[[K:.*]] = scf.if %{{.*}} -> (memref<4xf32>) {
// CHECK:           %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK:           linalg.fill {{.*}} outs(%[[A]]
// CHECK:           memref.copy %[[A]], %[[R]]
// CHECK-NEXT:      memref.dealloc %[[A]]
// CHECK-NEXT:      scf.yield %{{.*}} : memref<4xf32>
// CHECK:         } else {
// CHECK:           memref.copy %{{.*}}, %[[R]]
// CHECK-NEXT:      scf.yield %{{.*}} : memref<4xf32>
// CHECK:         }
// CHECK:         linalg.add ins(%[[R]], %[[K]] : {{.*}}) outs(%{{.*}} :
// CHECK-NEXT:    memref.dealloc %[[R]]
// CHECK-NEXT:    return
func.func @branch_result(%x: f32, %c: i1, %in: memref<4xf32>, %other: memref<4xf32>, %out: memref<4xf32>) {
  %r, %k = scf.if %c -> (memref<4xf32>, memref<4xf32>) {
    %a = memref.alloc() : memref<4xf32>
    linalg.fill ins(%x : f32) outs(%a : memref<4xf32>)
    scf.yield %a, %in : memref<4xf32>, memref<4xf32>
  } else {
    scf.yield %in, %other : memref<4xf32>, memref<4xf32>
  }
  linalg.add ins(%r, %k : memref<4xf32>, memref<4xf32>) outs(%out : memref<4xf32>)
  return
}

// -----

// A loop's iter_arg computed into a new buffer each iteration
// (bufferization with allow-return-allocs-from-loops): one buffer outside
// the loop, initialized with the init value, which the body reads and
// overwrites at its end; the body's buffer is freed in the body and the
// loop carries nothing.
// CHECK-LABEL: func.func @loop_carried
// CHECK:         %[[R:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
// CHECK-NEXT:    memref.copy %[[IN:.*]], %[[R]]
// CHECK-NEXT:    scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      %[[A:.*]] = memref.alloc() : memref<4xf32>
// CHECK-NEXT:      linalg.add ins(%[[R]], %[[R]] : {{.*}}) outs(%[[A]] :
// CHECK-NEXT:      memref.copy %[[A]], %[[R]]
// CHECK-NEXT:      memref.dealloc %[[A]]
// CHECK-NEXT:    }
// CHECK-NEXT:    linalg.copy ins(%[[R]] : memref<4xf32>) outs(%{{.*}} :
// CHECK-NEXT:    memref.dealloc %[[R]]
// CHECK-NEXT:    return
func.func @loop_carried(%n: index, %in: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%v = %in) -> (memref<4xf32>) {
    %a = memref.alloc() : memref<4xf32>
    linalg.add ins(%v, %v : memref<4xf32>, memref<4xf32>) outs(%a : memref<4xf32>)
    scf.yield %a : memref<4xf32>
  }
  linalg.copy ins(%r : memref<4xf32>) outs(%out : memref<4xf32>)
  return
}

// -----

// An unsigned loop stays unsigned when its carried buffer moves out.
// CHECK-LABEL: func.func @unsigned_loop
// CHECK:         scf.for unsigned
func.func @unsigned_loop(%n: index, %in: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for unsigned %i = %c0 to %n step %c1 iter_args(%v = %in) -> (memref<4xf32>) {
    %a = memref.alloc() : memref<4xf32>
    linalg.add ins(%v, %v : memref<4xf32>, memref<4xf32>) outs(%a : memref<4xf32>)
    scf.yield %a : memref<4xf32>
  }
  linalg.copy ins(%r : memref<4xf32>) outs(%out : memref<4xf32>)
  return
}

// -----

// A branch result of dynamic shape cannot get a buffer before the branch
// (its size is known only in the branch): still reported, never leaked.
func.func @branch_result_dynamic(%x: f32, %c: i1, %n: index, %in: memref<?xf32>, %out: memref<?xf32>) {
  %r = scf.if %c -> (memref<?xf32>) {
    // expected-error @below {{'memref.alloc' op escapes its block; gacc-deallocate-buffers cannot place its deallocation}}
    %a = memref.alloc(%n) : memref<?xf32>
    linalg.fill ins(%x : f32) outs(%a : memref<?xf32>)
    scf.yield %a : memref<?xf32>
  } else {
    scf.yield %in : memref<?xf32>
  }
  linalg.copy ins(%r : memref<?xf32>) outs(%out : memref<?xf32>)
  return
}

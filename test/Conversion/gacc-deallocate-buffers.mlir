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

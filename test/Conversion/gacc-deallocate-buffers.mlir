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

// RUN: gacc-opt %s --split-input-file --gacc-gpu-prepare | FileCheck %s

// Buffers become device allocations, deallocations gpu.dealloc and copies
// gpu.memcpy (target first); no memref.alloc/dealloc/copy is left.

// CHECK-LABEL: func.func @buffers
// CHECK-SAME:    (%[[IN:.*]]: memref<4xf32>, %[[OUT:.*]]: memref<4xf32>, %[[N:.*]]: index)
// CHECK:         %[[BUF:.*]] = gpu.alloc () : memref<4xf32>
// CHECK:         %[[DYN:.*]] = gpu.alloc (%[[N]]) : memref<?xf32>
// CHECK:         gpu.memcpy  %[[BUF]], %[[IN]] : memref<4xf32>, memref<4xf32>
// CHECK:         gpu.memcpy  %[[OUT]], %[[BUF]] : memref<4xf32>, memref<4xf32>
// CHECK:         gpu.dealloc  %[[DYN]] : memref<?xf32>
// CHECK:         gpu.dealloc  %[[BUF]] : memref<4xf32>
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK-NOT:     memref.dealloc
func.func @buffers(%in: memref<4xf32>, %out: memref<4xf32>, %n: index) {
  %buf = memref.alloc() : memref<4xf32>
  %dyn = memref.alloc(%n) : memref<?xf32>
  memref.copy %in, %buf : memref<4xf32> to memref<4xf32>
  memref.copy %buf, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %dyn : memref<?xf32>
  memref.dealloc %buf : memref<4xf32>
  return
}

// -----

// The collective of the CPU runtime becomes the CUDA runtime's (same
// signature), declaration and calls alike.

// CHECK-LABEL: func.func private @gaccrt_cuda_all_reduce(i64, i64, i32, i32, i64)
// CHECK-NOT:   @gaccrt_all_reduce
// CHECK-LABEL: func.func @reduce
// CHECK:         call @gaccrt_cuda_all_reduce(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i32, i32, i64) -> ()
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func @reduce(%p: i64, %n: i64, %d: i32, %k: i32, %g: i64) {
  call @gaccrt_all_reduce(%p, %n, %d, %k, %g) : (i64, i64, i32, i32, i64) -> ()
  return
}

// -----

// The start and wait of an overlapped all-reduce (gacc-overlap-all-reduce)
// become the CUDA runtime's, declarations and calls alike.

// CHECK-DAG:   func.func private @gaccrt_cuda_all_reduce_start(i64, i64, i32, i32, i64) -> i64
// CHECK-DAG:   func.func private @gaccrt_cuda_all_reduce_wait(i64, i64)
// CHECK-NOT:   @gaccrt_all_reduce
// CHECK-LABEL: func.func @overlapped
// CHECK:         %[[H:.*]] = call @gaccrt_cuda_all_reduce_start(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i32, i32, i64) -> i64
// CHECK:         call @gaccrt_cuda_all_reduce_wait(%[[H]], %{{.*}}) : (i64, i64) -> ()
// CHECK-NOT:   @gaccrt_all_reduce
func.func private @gaccrt_all_reduce_start(i64, i64, i32, i32, i64) -> i64
func.func private @gaccrt_all_reduce_wait(i64, i64)
func.func @overlapped(%p: i64, %n: i64, %d: i32, %k: i32, %g: i64) {
  %h = call @gaccrt_all_reduce_start(%p, %n, %d, %k, %g) : (i64, i64, i32, i32, i64) -> i64
  call @gaccrt_all_reduce_wait(%h, %p) : (i64, i64) -> ()
  return
}

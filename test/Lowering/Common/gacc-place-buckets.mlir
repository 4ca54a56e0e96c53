// RUN: gacc-opt %s --gacc-place-buckets | FileCheck %s

// Accumulators packed into a bucket by copies are allocated in the bucket:
// views of its bytes with their own types; the copies and a copy of a slice
// onto itself go away.

// CHECK-LABEL: func.func @pack
// CHECK:         %[[BYTES:.*]] = memref.alloc() {alignment = 64 : i64} : memref<40xi8>
// CHECK:         %[[BUCKET:.*]] = memref.view %[[BYTES]][%{{.*}}][] : memref<40xi8> to memref<10xf32>
// CHECK:         %[[C16:.*]] = arith.constant 16 : index
// CHECK:         %[[ACC:.*]] = memref.view %[[BYTES]][%[[C16]]][] : memref<40xi8> to memref<6xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         %[[ACC2:.*]] = memref.expand_shape %[[ACC]]
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[ACC2]] : memref<2x3xf32>)
// CHECK-NOT:     memref.copy
// CHECK:         call @reduce(%[[BUCKET]])
func.func private @reduce(memref<10xf32>)
func.func @pack(%first: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %bucket = memref.alloc() {alignment = 64 : i64} : memref<10xf32>
  %in_place = memref.subview %bucket[0] [4] [1] : memref<10xf32> to memref<4xf32, strided<[1]>>
  linalg.fill ins(%zero : f32) outs(%in_place : memref<4xf32, strided<[1]>>)
  %acc = memref.alloc() : memref<6xf32>
  %acc2d = memref.expand_shape %acc [[0, 1]] output_shape [2, 3] : memref<6xf32> into memref<2x3xf32>
  linalg.fill ins(%zero : f32) outs(%acc2d : memref<2x3xf32>)
  %s0 = memref.subview %bucket[0] [4] [1] : memref<10xf32> to memref<4xf32, strided<[1]>>
  memref.copy %in_place, %s0 : memref<4xf32, strided<[1]>> to memref<4xf32, strided<[1]>>
  %s1 = memref.subview %bucket[4] [6] [1] : memref<10xf32> to memref<6xf32, strided<[1], offset: 4>>
  memref.copy %acc, %s1 : memref<6xf32> to memref<6xf32, strided<[1], offset: 4>>
  call @reduce(%bucket) : (memref<10xf32>) -> ()
  return
}

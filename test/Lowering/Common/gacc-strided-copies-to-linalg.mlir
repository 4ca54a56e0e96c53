// RUN: gacc-opt %s --gacc-strided-copies-to-linalg | FileCheck %s

// A copy into a strided subview (a bufferized insert_slice) becomes
// linalg.copy; a copy between identity layouts stays memref.copy (memcpy).

// CHECK-LABEL: func.func @copies
// CHECK-SAME:    (%[[SRC:.*]]: memref<2x3xf32>, %[[DST:.*]]: memref<2x5xf32>, %[[OTHER:.*]]: memref<2x3xf32>)
// CHECK:         %[[VIEW:.*]] = memref.subview %[[DST]][0, 1] [2, 3] [1, 1]
// CHECK:         linalg.copy ins(%[[SRC]] : memref<2x3xf32>) outs(%[[VIEW]] : memref<2x3xf32, strided<[5, 1], offset: 1>>)
// CHECK-NOT:     memref.copy %[[SRC]], %[[VIEW]]
// CHECK:         memref.copy %[[SRC]], %[[OTHER]] : memref<2x3xf32> to memref<2x3xf32>
func.func @copies(%src: memref<2x3xf32>, %dst: memref<2x5xf32>, %other: memref<2x3xf32>) {
  %view = memref.subview %dst[0, 1] [2, 3] [1, 1] : memref<2x5xf32> to memref<2x3xf32, strided<[5, 1], offset: 1>>
  memref.copy %src, %view : memref<2x3xf32> to memref<2x3xf32, strided<[5, 1], offset: 1>>
  memref.copy %src, %other : memref<2x3xf32> to memref<2x3xf32>
  return
}

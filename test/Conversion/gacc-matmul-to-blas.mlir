// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas | FileCheck %s

// A matmul after a zero fill of its output initializes it (beta = 0, the
// fill goes away); one without accumulates (beta = 1); an operand copied by a
// private transpose is read through the transpose flag.

// CHECK-LABEL: func.func @first_and_accumulate
// CHECK-NOT:     linalg.fill
// CHECK:         %[[C:.*]] = memref.cast %arg2
// CHECK:         %[[TA:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[TB:.*]] = arith.constant 0 : i32
// CHECK-NEXT:    %[[ALPHA:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%[[TA]], %[[TB]], %[[ALPHA]], %[[BETA]], %{{.*}}, %{{.*}}, %[[C]])
// CHECK:         arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %[[BETA1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[BETA1]],
// CHECK-NOT:     linalg.matmul
func.func @first_and_accumulate(%a: memref<4x3xf32>, %b: memref<3x2xf32>, %c: memref<4x2xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c : memref<4x2xf32>)
  return
}

// -----

// CHECK-LABEL: func.func @transposed
// CHECK-NOT:     linalg.transpose
// CHECK-NOT:     memref.alloc
// CHECK:         %[[A:.*]] = memref.cast %arg0 : memref<3x4xf32>
// CHECK:         %[[TA:.*]] = arith.constant 1 : i32
// CHECK:         call @gaccrt_sgemm(%[[TA]], %{{.*}}, %{{.*}}, %{{.*}}, %[[A]],
func.func @transposed(%at: memref<3x4xf32>, %b: memref<3x2xf32>, %c: memref<4x2xf32>) {
  %a = memref.alloc() : memref<4x3xf32>
  linalg.transpose ins(%at : memref<3x4xf32>) outs(%a : memref<4x3xf32>) permutation = [1, 0]
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c : memref<4x2xf32>)
  return
}

// -----

// Not f32: left alone.
// CHECK-LABEL: func.func @f64
// CHECK:         linalg.matmul
// CHECK-NOT:     gaccrt_sgemm
func.func @f64(%a: memref<4x3xf64>, %b: memref<3x2xf64>, %c: memref<4x2xf64>) {
  linalg.matmul ins(%a, %b : memref<4x3xf64>, memref<3x2xf64>) outs(%c : memref<4x2xf64>)
  return
}

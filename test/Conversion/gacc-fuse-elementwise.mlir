// RUN: gacc-opt %s --split-input-file --gacc-fuse-elementwise | FileCheck %s

#id = affine_map<(d0) -> (d0)>

// A single-use elementwise producer is fused into its consumer.
// CHECK-LABEL: func.func @single_use
// CHECK:         linalg.generic
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @single_use(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%m, %a : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %q = arith.addf %x, %y : f32
    linalg.yield %q : f32
  } -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A producer with two uses stays: fusing it would compute it twice.
// CHECK-LABEL: func.func @two_uses
// CHECK:         %[[M:.*]] = linalg.generic
// CHECK:           arith.mulf
// CHECK:         %[[S:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[M]],
// CHECK:           arith.addf
// CHECK:         return %[[S]], %[[M]]
func.func @two_uses(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%m, %a : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %q = arith.addf %x, %y : f32
    linalg.yield %q : f32
  } -> tensor<8xf32>
  return %s, %m : tensor<8xf32>, tensor<8xf32>
}

// -----

// The reshape feeding a GEMM is not propagated into a generic contraction:
// the matmul stays for BLAS / cuBLAS.
// CHECK-LABEL: func.func @gemm_stays
// CHECK:         tensor.collapse_shape
// CHECK:         linalg.matmul
// CHECK-NOT:     linalg.generic
func.func @gemm_stays(%a: tensor<2x3x5xf32>, %b: tensor<5x4xf32>, %c: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a2 = tensor.collapse_shape %a [[0, 1], [2]] : tensor<2x3x5xf32> into tensor<6x5xf32>
  %r = linalg.matmul ins(%a2, %b : tensor<6x5xf32>, tensor<5x4xf32>) outs(%c : tensor<6x4xf32>) -> tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

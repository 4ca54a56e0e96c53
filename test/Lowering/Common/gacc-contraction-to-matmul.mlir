// RUN: gacc-opt %s --split-input-file --gacc-contraction-to-matmul | FileCheck %s

// A weight gradient written as a generic that contracts over samples and
// tokens: the two reduction dims are collapsed into one, the left operand is
// transposed, and a linalg.matmul accumulates into the same init.

// CHECK-LABEL: func.func @over_tokens
// CHECK-SAME:    (%[[H:.*]]: tensor<2x3x4xf32>, %[[G:.*]]: tensor<2x3x5xf32>, %[[ACC:.*]]: tensor<4x5xf32>)
// CHECK:         %[[HC:.*]] = tensor.collapse_shape %[[H]] {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK:         %[[GC:.*]] = tensor.collapse_shape %[[G]] {{\[\[}}0, 1], [2]] : tensor<2x3x5xf32> into tensor<6x5xf32>
// CHECK:         %[[HT:.*]] = linalg.transpose ins(%[[HC]] : tensor<6x4xf32>)
// CHECK:         %[[R:.*]] = linalg.matmul {gacc.partial} ins(%[[HT]], %[[GC]] : tensor<4x6xf32>, tensor<6x5xf32>) outs(%[[ACC]] : tensor<4x5xf32>)
// CHECK:         return %[[R]]
func.func @over_tokens(%h: tensor<2x3x4xf32>, %g: tensor<2x3x5xf32>, %acc: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>,
                                        affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                                        affine_map<(d0, d1, d2, d3) -> (d2, d3)>],
                       iterator_types = ["reduction", "reduction", "parallel", "parallel"]}
      ins(%h, %g : tensor<2x3x4xf32>, tensor<2x3x5xf32>) outs(%acc : tensor<4x5xf32>) attrs = {gacc.partial} {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %o, %m : f32
      linalg.yield %s : f32
  } -> tensor<4x5xf32>
  return %r : tensor<4x5xf32>
}

// -----

// Not a plain multiply-add: left alone.
// CHECK-LABEL: func.func @not_a_contraction
// CHECK:         linalg.generic
// CHECK-NOT:     linalg.matmul
func.func @not_a_contraction(%x: tensor<4x3xf32>, %y: tensor<4x2xf32>, %acc: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>,
                                        affine_map<(d0, d1, d2) -> (d0, d2)>,
                                        affine_map<(d0, d1, d2) -> (d1, d2)>],
                       iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %y : tensor<4x3xf32>, tensor<4x2xf32>) outs(%acc : tensor<3x2xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %e = math.exp %m : f32
      %s = arith.addf %o, %e : f32
      linalg.yield %s : f32
  } -> tensor<3x2xf32>
  return %r : tensor<3x2xf32>
}

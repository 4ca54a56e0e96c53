// RUN: gacc-opt %s --gacc-test-build-step-for-batch-size=size=2 | FileCheck %s
// RUN: gacc-check %s --micro-batches=2 --runtime-batch-size --run-batch-size=2 | FileCheck %s --check-prefix=TAIL

// The step rebuilt for 2 of its 4 samples (gacc-check's tail and eager
// references): per-sample values take 2 samples, slices of per-sample values
// slice 2 samples, and slices of values without samples (here the
// insert_slices that tosa.concat lowers to, of reductions over the samples)
// keep their sizes. (They were given a sample count at index -1 of their
// sizes: invalid IR.)

// CHECK-LABEL: func.func @step_2
// CHECK-SAME:    %[[X:.*]]: tensor<2x3x2x3xf32> {gacc.batch = 0 : i64}
// CHECK:         tensor.extract_slice %[[X]][0, 0, 0, 1] [2, 3, 2, 2] [1, 1, 1, 1] : tensor<2x3x2x3xf32> to tensor<2x3x2x2xf32>
// CHECK:         linalg.reduce {{.*}} ins(%{{.*}} : tensor<2x3x2x2xf32>)
// CHECK:         tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 0] [1, 3, 2, 2] [1, 1, 1, 1] : tensor<1x3x2x2xf32> into tensor<2x3x2x2xf32>
// CHECK:         tensor.insert_slice %{{.*}} into %{{.*}}[1, 0, 0, 0] [1, 3, 2, 2] [1, 1, 1, 1] : tensor<1x3x2x2xf32> into tensor<2x3x2x2xf32>
// CHECK:         tensor.extract_slice %{{.*}}[1, 0, 0, 0] [1, 3, 2, 2] [1, 1, 1, 1] : tensor<2x3x2x2xf32> to tensor<1x3x2x2xf32>
// TAIL: PASS: every compiled result is within tolerance
func.func @step(%x: tensor<4x3x2x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<1x3x2x2xf32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %xs = tensor.extract_slice %x[0, 0, 0, 1] [4, 3, 2, 2] [1, 1, 1, 1] : tensor<4x3x2x3xf32> to tensor<4x3x2x2xf32>
  %e2 = tensor.empty() : tensor<3x2x2xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<3x2x2xf32>) -> tensor<3x2x2xf32>
  %s = linalg.reduce ins(%xs : tensor<4x3x2x2xf32>) outs(%f2 : tensor<3x2x2xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %row = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [1, 3, 2, 2] : tensor<3x2x2xf32> into tensor<1x3x2x2xf32>
  %e22 = tensor.empty() : tensor<2x3x2x2xf32>
  %i0 = tensor.insert_slice %row into %e22[0, 0, 0, 0] [1, 3, 2, 2] [1, 1, 1, 1] : tensor<1x3x2x2xf32> into tensor<2x3x2x2xf32>
  %i1 = tensor.insert_slice %row into %i0[1, 0, 0, 0] [1, 3, 2, 2] [1, 1, 1, 1] : tensor<1x3x2x2xf32> into tensor<2x3x2x2xf32>
  %back = tensor.extract_slice %i1[1, 0, 0, 0] [1, 3, 2, 2] [1, 1, 1, 1] : tensor<2x3x2x2xf32> to tensor<1x3x2x2xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.reduce ins(%i1 : tensor<2x3x2x2xf32>) outs(%f0 : tensor<f32>) dimensions = [0, 1, 2, 3]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %l, %back : tensor<f32>, tensor<1x3x2x2xf32>
}

// RUN: gacc-opt %s --gacc-micro-batch="micro-batch-sizes=3,1 allow-micro-batch-statistics" 2>&1 | FileCheck %s

// A parameter-dependent mean (sum * 1/B) that flows back into per-sample
// work, accepted with allow-micro-batch-statistics: each region reduces its
// own samples and scales the sum by B/b (4/3 and 4/1), so that the graph's
// 1/B yields the micro-batch's own mean (PyTorch's per-micro-batch
// semantics). The loss keeps the global 1/B.

// CHECK: warning: batch statistic depends on parameters; it is computed per micro-batch
// CHECK-LABEL: func.func @statistic
// CHECK:         gacc.micro_batch 0 offset 0 size 3
// CHECK:           %[[S0:.*]] = linalg.reduce {{.*}} ins(%{{.*}} : tensor<3xf32>)
// CHECK:           %[[K0:.*]] = arith.constant dense<1.33333337> : tensor<f32>
// CHECK:           %[[M0:.*]] = arith.mulf %[[S0]], %[[K0]] : tensor<f32>
// CHECK:           %[[MEAN0:.*]] = arith.mulf %[[M0]], %{{.*}} : tensor<f32>
// CHECK:           linalg.broadcast ins(%[[MEAN0]]
// CHECK:         gacc.micro_batch 1 offset 3 size 1
// CHECK:           %[[S1:.*]] = linalg.reduce {{.*}} ins(%{{.*}} : tensor<1xf32>)
// CHECK:           %[[K1:.*]] = arith.constant dense<4.000000e+00> : tensor<f32>
// CHECK:           arith.mulf %[[S1]], %[[K1]] : tensor<f32>
func.func @statistic(%w: tensor<f32> {gacc.param}, %x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  %wb = linalg.broadcast ins(%w : tensor<f32>) outs(%e4 : tensor<4xf32>) dimensions = [0]
  %z = arith.mulf %x, %wb : tensor<4xf32>
  %sum = linalg.reduce ins(%z : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %mean = arith.mulf %sum, %inv_b : tensor<f32>
  %mb = linalg.broadcast ins(%mean : tensor<f32>) outs(%e4 : tensor<4xf32>) dimensions = [0]
  %centered = arith.subf %z, %mb : tensor<4xf32>
  %sq = arith.mulf %centered, %centered : tensor<4xf32>
  %s2 = linalg.reduce ins(%sq : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %loss = arith.mulf %s2, %inv_b : tensor<f32>
  return %loss : tensor<f32>
}

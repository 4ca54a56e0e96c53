// RUN: gacc-opt %s --gacc-micro-batch="micro-batches=2" | FileCheck %s

// The nll_loss gather: inside region 1 the captured per-sample tensor holds
// only the region's two samples, so it is read with the region-local
// `linalg.index 0`; the full-batch invariant table is read at the global
// position (index + 2).

// CHECK-LABEL: func.func @gather
// CHECK:         gacc.micro_batch 0 offset 0 size 2
// CHECK:         gacc.micro_batch 1 offset 2 size 2
// CHECK:           %[[LOGP:.*]] = linalg.generic
// CHECK:           } -> tensor<2x5xf32>
// CHECK:           linalg.generic
// CHECK:             %[[I:.*]] = linalg.index 0 : index
// CHECK:             %[[C2:.*]] = arith.constant 2 : index
// CHECK:             %[[G:.*]] = arith.addi %[[I]], %[[C2]] : index
// CHECK:             tensor.extract %[[LOGP]][%[[I]], %{{.*}}] : tensor<2x5xf32>
// CHECK:             tensor.extract %{{.*}}[%[[G]]] : tensor<4xf32>
func.func @gather(%logits: tensor<4x5xf32> {gacc.batch = 0 : i64},
                  %labels: tensor<4xi64> {gacc.batch = 0 : i64},
                  %w: tensor<5xf32> {gacc.param})
    -> (tensor<f32> {gacc.loss}) {
  %table = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %e45 = tensor.empty() : tensor<4x5xf32>
  %logp = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%logits, %w : tensor<4x5xf32>, tensor<5xf32>) outs(%e45 : tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.addf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<4x5xf32>
  %e = tensor.empty() : tensor<4xf32>
  %nll = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%labels : tensor<4xi64>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %0 = arith.index_cast %in : i64 to index
    %1 = linalg.index 0 : index
    %2 = tensor.extract %logp[%1, %0] : tensor<4x5xf32>
    %3 = tensor.extract %table[%1] : tensor<4xf32>
    %4 = arith.mulf %2, %3 : f32
    linalg.yield %4 : f32
  } -> tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%nll : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

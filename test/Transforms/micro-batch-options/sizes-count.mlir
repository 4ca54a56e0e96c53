// RUN: gacc-opt %s --gacc-micro-batch="micro-batches=3 micro-batch-sizes=3,1" --verify-diagnostics
// expected-error @below {{micro-batches=3 disagrees with the 2 entries of micro-batch-sizes}}
func.func @step(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

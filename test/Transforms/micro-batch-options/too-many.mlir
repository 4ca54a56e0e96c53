// RUN: gacc-opt %s --gacc-micro-batch="micro-batches=5" --verify-diagnostics
// expected-error @below {{expected micro-batches between 1 and the batch size 4, got 5}}
func.func @step(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

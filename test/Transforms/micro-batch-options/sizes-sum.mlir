// RUN: gacc-opt %s --gacc-micro-batch="micro-batch-sizes=2,1" --verify-diagnostics
// expected-error @below {{micro-batch-sizes sum to 3 but the batch has 4 samples}}
func.func @step(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

// RUN: gacc-opt %s --gacc-micro-batch="micro-batch-sizes=4,0" --verify-diagnostics
// expected-error @below {{expected positive micro-batch-sizes, got 0}}
func.func @step(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c : tensor<f32>
}

// RUN: gacc-opt %s --gacc-prepare-step="batch-size=8" --verify-diagnostics

// expected-error @below {{batch-size=8 disagrees with the 4 samples of batch argument #0}}
func.func @static(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%x : tensor<4xf32>) outs(%f0 : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

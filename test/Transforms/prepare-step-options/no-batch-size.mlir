// RUN: gacc-opt %s --gacc-prepare-step --verify-diagnostics

// expected-error @below {{batch argument #0 has a dynamic sample dimension ('tensor<?x3xf32>'); pass batch-size=N to specialize the step to N samples}}
func.func @dynamic(%x: tensor<?x3xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%x : tensor<?x3xf32>) outs(%f0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

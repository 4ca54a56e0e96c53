// RUN: gacc-opt %s --gacc-verify-step --verify-diagnostics

// gacc-verify-step on its own (without gacc-prepare-step, which inlines):
// a call on the batch path names the pass that would inline it.

func.func @step(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-error @below {{'func.call' op calls '@sum' on the batch-dependent path; run gacc-prepare-step (the first pass of gacc-pipeline), which inlines the functions a training step calls}}
  %s = func.call @sum(%x) : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

func.func private @sum(%x: tensor<4xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

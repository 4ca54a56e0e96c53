// RUN: gacc-opt %s --gacc-verify-step --verify-diagnostics

// gacc-verify-step on its own (without gacc-prepare-step, which makes
// scalar results rank-0 tensors) refuses a scalar loss, naming the pass.

// expected-error @below {{expected the gacc.loss result #0 to be a rank-0 tensor, got 'f32' (gacc-prepare-step, the first pass of gacc-pipeline, makes a scalar loss a rank-0 tensor)}}
func.func @step(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (f32 {gacc.loss}) {
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
  %l = tensor.extract %s[] : tensor<f32>
  return %l : f32
}

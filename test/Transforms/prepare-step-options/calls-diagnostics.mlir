// RUN: not gacc-opt %s --gacc-prepare-step --gacc-verify-step 2>&1 | FileCheck %s

// An op the analysis refuses inside a helper: after inlining it carries a
// call-site location, so the error names the op in the helper and a note
// the call in the step. (-verify-diagnostics does not match an error at a
// call-site location, hence FileCheck.)

func.func @step(%w: tensor<f32> {gacc.param},
                %x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %e0 = tensor.empty() : tensor<f32>
  %zero = arith.constant 0.0 : f32
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // CHECK-DAG: calls-diagnostics.mlir:[[# @LINE + 1]]:8: note: called from
  %s = func.call @shifted_sum(%x, %z0) : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}

// Reads sample 0 at every sample: mixes samples.
func.func private @shifted_sum(%x: tensor<4xf32>, %init: tensor<f32>)
    -> tensor<f32> {
  %c0 = arith.constant 0 : index
  // CHECK-DAG: calls-diagnostics.mlir:[[# @LINE + 1]]:8: error: 'linalg.generic' op reads the per-sample tensor captured from above
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%init : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    // CHECK-DAG: calls-diagnostics.mlir:[[# @LINE + 1]]:14: note: the read
    %first = tensor.extract %x[%c0] : tensor<4xf32>
    %p = arith.mulf %v, %first : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

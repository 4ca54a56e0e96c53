// RUN: gacc-opt %s --gacc-test-print-batch-analysis --verify-diagnostics
// RUN: gacc-opt %s --gacc-test-print-batch-analysis="allow-micro-batch-statistics" 2>&1 | FileCheck %s --check-prefix=ALLOW

// A mean that depends on a parameter and flows back into per-sample work
// (BatchNorm-style) is rejected; with allow-micro-batch-statistics it is a
// micro-batch statistic.
func.func @statistic(%w: tensor<f32> {gacc.param}, %x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  %wb = linalg.broadcast ins(%w : tensor<f32>) outs(%e4 : tensor<4xf32>) dimensions = [0]
  %z = arith.mulf %x, %wb : tensor<4xf32>
  // ALLOW: warning: batch statistic depends on parameters; it is computed per micro-batch
  // ALLOW: note: the statistic flows into this per-sample op
  // ALLOW: remark: micro-batch statistic
  // expected-error @below {{'linalg.reduce' op computes a batch statistic that depends on parameters and flows back into per-sample work}}
  %sum = linalg.reduce ins(%z : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %mb = linalg.broadcast ins(%sum : tensor<f32>) outs(%e4 : tensor<4xf32>) dimensions = [0]
  // expected-note @below {{the statistic flows into this per-sample op}}
  %centered = arith.subf %z, %mb : tensor<4xf32>
  // ALLOW: remark: partial (over loop 0)
  %loss = linalg.reduce ins(%centered : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %loss : tensor<f32>
}

// RUN: gacc-opt %s --split-input-file --gacc-test-print-batch-analysis --verify-diagnostics

// Invariant, per-sample, partial and epilogue values of a linear layer step:
// the transposed weight is invariant, the activations are per-sample, the
// weight gradient contracts over samples (partial), the normalized loss and
// the SGD update are epilogue.
func.func @classes(%w: tensor<3x2xf32> {gacc.param}, %x: tensor<4x3xf32> {gacc.batch = 0 : i64},
                   %lr: tensor<f32> {gacc.state})
    -> (tensor<f32> {gacc.loss}, tensor<3x2xf32> {gacc.param_out = 0 : i64}) {
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{invariant}}
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  // expected-remark @below {{invariant}}
  %e42 = tensor.empty() : tensor<4x2xf32>
  // expected-remark @below {{invariant}}
  %f42 = linalg.fill ins(%zero : f32) outs(%e42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  // expected-remark @below {{per-sample dim 0}}
  %h = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  // expected-remark @below {{invariant}}
  %e = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{partial (over loop 0)}}
  %s = linalg.reduce ins(%h : tensor<4x2xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  // expected-remark @below {{epilogue}}
  %loss = arith.mulf %s, %inv_b : tensor<f32>
  // expected-remark @below {{invariant}}
  %e34 = tensor.empty() : tensor<3x4xf32>
  // expected-remark @below {{per-sample dim 1}}
  %xt = linalg.transpose ins(%x : tensor<4x3xf32>) outs(%e34 : tensor<3x4xf32>) permutation = [1, 0]
  // expected-remark @below {{invariant}}
  %e32 = tensor.empty() : tensor<3x2xf32>
  // expected-remark @below {{invariant}}
  %f32 = linalg.fill ins(%zero : f32) outs(%e32 : tensor<3x2xf32>) -> tensor<3x2xf32>
  // expected-remark @below {{partial (over loop 2)}}
  %gw = linalg.matmul ins(%xt, %h : tensor<3x4xf32>, tensor<4x2xf32>) outs(%f32 : tensor<3x2xf32>) -> tensor<3x2xf32>
  // expected-remark @below {{invariant}}
  %lrb = linalg.broadcast ins(%lr : tensor<f32>) outs(%e32 : tensor<3x2xf32>) dimensions = [0, 1]
  // expected-remark @below {{epilogue}}
  %step = arith.mulf %gw, %lrb : tensor<3x2xf32>
  // expected-remark @below {{epilogue}}
  %w_out = arith.subf %w, %step : tensor<3x2xf32>
  return %loss, %w_out : tensor<f32>, tensor<3x2xf32>
}

// -----

// The sample dimension through reshapes: [B, T] collapsed to [B*T] carries
// T elements per sample, and expands back.
func.func @reshapes(%x: tensor<4x3xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  // expected-remark @below {{per-sample dim 0 x3}}
  %flat = tensor.collapse_shape %x [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  // expected-remark @below {{per-sample dim 0 x3}}
  %sq = arith.mulf %flat, %flat : tensor<12xf32>
  // expected-remark @below {{per-sample dim 0}}
  %back = tensor.expand_shape %sq [[0, 1]] output_shape [4, 3] : tensor<12xf32> into tensor<4x3xf32>
  // expected-remark @below {{per-sample dim 1}}
  %t = tensor.expand_shape %back [[0, 1], [2]] output_shape [1, 4, 3] : tensor<4x3xf32> into tensor<1x4x3xf32>
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{invariant}}
  %e = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{partial (over loop 1)}}
  %s = linalg.reduce ins(%t : tensor<1x4x3xf32>) outs(%f : tensor<f32>) dimensions = [0, 1, 2]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// A token count over a batch input flows back into per-sample work: it is a
// prologue statistic, and so is its reciprocal.
func.func @prologue(%w: tensor<f32> {gacc.param}, %m: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}) {
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{invariant}}
  %e = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{prologue statistic}}
  %count = linalg.reduce ins(%m : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  // expected-remark @below {{invariant}}
  %one = arith.constant dense<1.0> : tensor<f32>
  // expected-remark @below {{prologue statistic}}
  %inv = arith.divf %one, %count : tensor<f32>
  // expected-remark @below {{invariant}}
  %e4 = tensor.empty() : tensor<4xf32>
  // expected-remark @below {{prologue statistic}}
  %invb = linalg.broadcast ins(%inv : tensor<f32>) outs(%e4 : tensor<4xf32>) dimensions = [0]
  // expected-remark @below {{per-sample dim 0}}
  %seed = arith.mulf %m, %invb : tensor<4xf32>
  // expected-remark @below {{partial (over loop 0)}}
  %g = linalg.reduce ins(%seed : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  // expected-remark @below {{epilogue}}
  %gw = arith.mulf %g, %w : tensor<f32>
  return %count, %gw : tensor<f32>, tensor<f32>
}


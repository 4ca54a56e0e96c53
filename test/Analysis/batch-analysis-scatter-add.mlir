// RUN: gacc-opt %s --split-input-file --gacc-test-print-batch-analysis --verify-diagnostics

// gacc.scatter_add (an embedding's gradient) with the samples on the same
// position dimension of indices and updates, into an invariant init: a
// partial, summed over the samples like a linalg reduction.
func.func @partial(%table: tensor<7x5xf32> {gacc.param},
                   %ids: tensor<4x3xi64> {gacc.batch = 0 : i64},
                   %g: tensor<4x3x5xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<7x5xf32> {gacc.grad = 0 : i64}) {
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{invariant}}
  %e = tensor.empty() : tensor<7x5xf32>
  // expected-remark @below {{invariant}}
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<7x5xf32>) -> tensor<7x5xf32>
  // expected-remark @below {{partial (over loop 0)}}
  %s = gacc.scatter_add ins(%g, %ids : tensor<4x3x5xf32>, tensor<4x3xi64>) outs(%z : tensor<7x5xf32>) -> tensor<7x5xf32>
  // expected-remark @below {{invariant}}
  %e0 = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{epilogue}}
  %l = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%s, %table : tensor<7x5xf32>, tensor<7x5xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  // expected-remark @below {{invariant}}
  %q = arith.constant dense<0.25> : tensor<f32>
  // expected-remark @below {{epilogue}}
  %loss = arith.mulf %l, %q : tensor<f32>
  // expected-remark @below {{invariant}}
  %q2 = arith.constant dense<0.25> : tensor<7x5xf32>
  // expected-remark @below {{epilogue}}
  %grad = arith.mulf %s, %q2 : tensor<7x5xf32>
  return %loss, %grad : tensor<f32>, tensor<7x5xf32>
}

// -----

// Samples collapsed with the tokens ([B * T] ids, x3 per sample) on both
// operands, and i32 ids: still a partial. The init is the parameter itself
// (invariant).
func.func @collapsed(%table: tensor<7x5xf32> {gacc.param},
                     %ids: tensor<4x3xi32> {gacc.batch = 0 : i64},
                     %g: tensor<4x3x5xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<7x5xf32> {gacc.metric}) {
  // expected-remark @below {{per-sample dim 0 x3}}
  %flat = tensor.collapse_shape %ids [[0, 1]] : tensor<4x3xi32> into tensor<12xi32>
  // expected-remark @below {{per-sample dim 0 x3}}
  %rows = tensor.collapse_shape %g [[0, 1], [2]] : tensor<4x3x5xf32> into tensor<12x5xf32>
  // expected-remark @below {{partial (over loop 0)}}
  %s = gacc.scatter_add ins(%rows, %flat : tensor<12x5xf32>, tensor<12xi32>) outs(%table : tensor<7x5xf32>) -> tensor<7x5xf32>
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{invariant}}
  %e0 = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{epilogue}}
  %l = linalg.reduce ins(%s : tensor<7x5xf32>) outs(%z0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %acc, %in : f32
      linalg.yield %r : f32
    }
  return %l, %s : tensor<f32>, tensor<7x5xf32>
}

// -----

// Indices, updates and init that do not depend on the batch: invariant.
func.func @invariant(%table: tensor<7x5xf32> {gacc.param},
                     %ids: tensor<3xi64> {gacc.state},
                     %x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<7x5xf32> {gacc.metric}) {
  // expected-remark @below {{invariant}}
  %rows = tensor.extract_slice %table[0, 0] [3, 5] [1, 1] : tensor<7x5xf32> to tensor<3x5xf32>
  // expected-remark @below {{invariant}}
  %s = gacc.scatter_add ins(%rows, %ids : tensor<3x5xf32>, tensor<3xi64>) outs(%table : tensor<7x5xf32>) -> tensor<7x5xf32>
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{invariant}}
  %e0 = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{partial (over loop 0)}}
  %l = linalg.reduce ins(%x : tensor<4xf32>) outs(%z0 : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %r = arith.addf %acc, %in : f32
      linalg.yield %r : f32
    }
  return %l, %s : tensor<f32>, tensor<7x5xf32>
}

// -----

// A per-sample init: the sum over the samples would land in the samples.
func.func @per_sample_init(%ids: tensor<4xi64> {gacc.batch = 0 : i64},
                           %g: tensor<4x5xf32> {gacc.batch = 0 : i64},
                           %acc: tensor<4x5xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4x5xf32> {gacc.metric}) {
  // expected-error @below {{'gacc.scatter_add' op accumulates into an init that is per-sample; the accumulator of a sum over the samples must not depend on the batch}}
  %s = gacc.scatter_add ins(%g, %ids : tensor<4x5xf32>, tensor<4xi64>) outs(%acc : tensor<4x5xf32>) -> tensor<4x5xf32>
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c, %s : tensor<f32>, tensor<4x5xf32>
}

// -----

// A second scatter-add into the first one's partial: its init depends on
// the batch.
func.func @partial_init(%ids: tensor<4xi64> {gacc.batch = 0 : i64},
                        %g: tensor<4x5xf32> {gacc.batch = 0 : i64},
                        %acc: tensor<7x5xf32> {gacc.param})
    -> (tensor<f32> {gacc.loss}, tensor<7x5xf32> {gacc.metric}) {
  %s0 = gacc.scatter_add ins(%g, %ids : tensor<4x5xf32>, tensor<4xi64>) outs(%acc : tensor<7x5xf32>) -> tensor<7x5xf32>
  // expected-error @below {{'gacc.scatter_add' op accumulates into an init that is partial; the accumulator of a sum over the samples must not depend on the batch}}
  %s = gacc.scatter_add ins(%g, %ids : tensor<4x5xf32>, tensor<4xi64>) outs(%s0 : tensor<7x5xf32>) -> tensor<7x5xf32>
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c, %s : tensor<f32>, tensor<7x5xf32>
}

// -----

// Per-sample ids scattering rows that do not depend on the batch.
func.func @indices_only(%table: tensor<7x5xf32> {gacc.param},
                        %ids: tensor<4xi64> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<7x5xf32> {gacc.metric}) {
  %rows = tensor.extract_slice %table[0, 0] [4, 5] [1, 1] : tensor<7x5xf32> to tensor<4x5xf32>
  // expected-error @below {{'gacc.scatter_add' op has the sample dimension only in its indices (the updates are invariant); a micro-batch holds only its own samples, so indices and updates must both carry them}}
  %s = gacc.scatter_add ins(%rows, %ids : tensor<4x5xf32>, tensor<4xi64>) outs(%table : tensor<7x5xf32>) -> tensor<7x5xf32>
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c, %s : tensor<f32>, tensor<7x5xf32>
}

// -----

// Per-sample updates at ids that do not depend on the batch.
func.func @updates_only(%table: tensor<7x5xf32> {gacc.param},
                        %ids: tensor<4xi64> {gacc.state},
                        %g: tensor<4x5xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<7x5xf32> {gacc.metric}) {
  // expected-error @below {{'gacc.scatter_add' op has the sample dimension only in its updates (the indices are invariant)}}
  %s = gacc.scatter_add ins(%g, %ids : tensor<4x5xf32>, tensor<4xi64>) outs(%table : tensor<7x5xf32>) -> tensor<7x5xf32>
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c, %s : tensor<f32>, tensor<7x5xf32>
}

// -----

// The samples of the updates inside the row (dimension 1 of updates with
// one position dimension): not a sum over the samples.
func.func @samples_in_row(%ids: tensor<3xi64> {gacc.batch = 0 : i64},
                          %g: tensor<3x3xf32> {gacc.batch = 1 : i64},
                          %acc: tensor<7x3xf32> {gacc.param})
    -> (tensor<f32> {gacc.loss}, tensor<7x3xf32> {gacc.metric}) {
  // expected-error @below {{'gacc.scatter_add' op has the sample dimension of its updates at dimension 1, inside the row (the positions are dimensions 0 to 0); only a sum over the samples splits}}
  %s = gacc.scatter_add ins(%g, %ids : tensor<3x3xf32>, tensor<3xi64>) outs(%acc : tensor<7x3xf32>) -> tensor<7x3xf32>
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c, %s : tensor<f32>, tensor<7x3xf32>
}

// -----

// The samples on different position dimensions of indices and updates.
func.func @different_dims(%ids: tensor<4x4xi64> {gacc.batch = 0 : i64},
                          %g: tensor<4x4x5xf32> {gacc.batch = 1 : i64},
                          %acc: tensor<7x5xf32> {gacc.param})
    -> (tensor<f32> {gacc.loss}, tensor<7x5xf32> {gacc.metric}) {
  // expected-error @below {{'gacc.scatter_add' op has the samples of its indices at dimension 0 but those of its updates at dimension 1; they must be the same position dimension}}
  %s = gacc.scatter_add ins(%g, %ids : tensor<4x4x5xf32>, tensor<4x4xi64>) outs(%acc : tensor<7x5xf32>) -> tensor<7x5xf32>
  %c = arith.constant dense<0.0> : tensor<f32>
  return %c, %s : tensor<f32>, tensor<7x5xf32>
}

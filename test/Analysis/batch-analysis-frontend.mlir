// RUN: gacc-opt %s --split-input-file --gacc-test-print-batch-analysis --verify-diagnostics

// The nll_loss gather of torch-mlir: a per-sample generic over the labels
// reads the captured per-sample log-probabilities at [linalg.index 0, label].
func.func @captured_gather(%logp: tensor<4x5xf32> {gacc.batch = 0 : i64},
                           %labels: tensor<4xi64> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-remark @below {{invariant}}
  %e = tensor.empty() : tensor<4xf32>
  // expected-remark @below {{per-sample dim 0}}
  %nll = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%labels : tensor<4xi64>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: i64, %out: f32):
    %0 = arith.index_cast %in : i64 to index
    %1 = linalg.index 0 : index
    %2 = tensor.extract %logp[%1, %0] : tensor<4x5xf32>
    linalg.yield %2 : f32
  } -> tensor<4xf32>
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{invariant}}
  %e0 = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{partial (over loop 0)}}
  %s = linalg.reduce ins(%nll : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// The only per-sample value of the generic is captured: the sample loop is
// the loop that indexes it, and the result is per-sample.
func.func @captured_only(%x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-remark @below {{invariant}}
  %e = tensor.empty() : tensor<4xf32>
  // expected-remark @below {{per-sample dim 0}}
  %first = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e : tensor<4xf32>) {
  ^bb0(%out: f32):
    %c1 = arith.constant 1 : index
    %i = linalg.index 0 : index
    %v = tensor.extract %x[%i, %c1] : tensor<4x3xf32>
    linalg.yield %v : f32
  } -> tensor<4xf32>
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{invariant}}
  %e0 = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{partial (over loop 0)}}
  %s = linalg.reduce ins(%first : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// Reading another sample of a captured per-sample tensor (a shifted index)
// cannot be split.
func.func @captured_shifted(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{reads the per-sample tensor captured from above (samples of batch argument #0) other than with tensor.extract indexed by the sample loop along its sample dimension 0}}
  %next = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %i = linalg.index 0 : index
    %j = arith.addi %i, %c1 : index
    %k = arith.remui %j, %c4 : index
    // expected-note @below {{the read}}
    %v = tensor.extract %x[%k] : tensor<4xf32>
    %d = arith.subf %v, %in : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%next : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// A constant sample index reads one sample from every iteration.
func.func @captured_constant(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{reads the per-sample tensor captured from above}}
  %first = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c0 = arith.constant 0 : index
    // expected-note @below {{the read}}
    %v = tensor.extract %x[%c0] : tensor<4xf32>
    %d = arith.subf %in, %v : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%first : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// The captured tensor is read with a loop other than the op's sample loop.
func.func @captured_other_loop(%x: tensor<4x4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %e = tensor.empty() : tensor<4x4xf32>
  // expected-error @below {{reads the per-sample tensor captured from above with loop 1, which does not run over the samples of the op (its sample loop is 0)}}
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    // expected-note @below {{the read}}
    %v = tensor.extract %x[%j, %i] : tensor<4x4xf32>
    linalg.yield %v : f32
  } -> tensor<4x4xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%t : tensor<4x4xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// tensor.pad of the feature dimensions, concat along features and
// insert_slice/extract_slice that keep every sample stay per-sample.
func.func @data_movement(%x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{per-sample dim 0}}
  %p = tensor.pad %x low[0, 1] high[0, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x3xf32> to tensor<4x6xf32>
  // expected-remark @below {{invariant}}
  %c = arith.constant dense<2.0> : tensor<4x2xf32>
  // expected-remark @below {{per-sample dim 0}}
  %cat = tensor.concat dim(1) %p, %c : (tensor<4x6xf32>, tensor<4x2xf32>) -> tensor<4x8xf32>
  // expected-remark @below {{invariant}}
  %e = tensor.empty() : tensor<4x10xf32>
  // expected-remark @below {{invariant}}
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x10xf32>) -> tensor<4x10xf32>
  // expected-remark @below {{per-sample dim 0}}
  %ins = tensor.insert_slice %cat into %z[0, 1] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x10xf32>
  // expected-remark @below {{per-sample dim 0}}
  %ext = tensor.extract_slice %ins[0, 2] [4, 5] [1, 1] : tensor<4x10xf32> to tensor<4x5xf32>
  // expected-remark @below {{invariant}}
  %e0 = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{partial (over loop 0)}}
  %s = linalg.reduce ins(%ext : tensor<4x5xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// tosa-to-tensor pads by constant index values: a zero amount on the
// sample dimension keeps the samples apart as a static 0 does.
func.func @pad_constant_values(%x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{invariant}}
  %c0 = arith.constant 0 : index
  // expected-remark @below {{invariant}}
  %c1 = arith.constant 1 : index
  // expected-remark @below {{per-sample dim 0}}
  %p = tensor.pad %x low[%c0, %c0] high[%c0, %c1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x3xf32> to tensor<4x4xf32>
  // expected-remark @below {{invariant}}
  %e0 = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{partial (over loop 0)}}
  %s = linalg.reduce ins(%p : tensor<4x4xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

func.func @pad_samples_constant_value(%x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @below {{pads the sample dimension 0; only padding of the other dimensions keeps the samples apart}}
  %p = tensor.pad %x low[%c0, %c0] high[%c1, %c0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x3xf32> to tensor<5x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%p : tensor<5x3xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

func.func @pad_samples(%x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  // expected-error @below {{pads the sample dimension 0; only padding of the other dimensions keeps the samples apart}}
  %p = tensor.pad %x low[1, 0] high[0, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x3xf32> to tensor<5x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%p : tensor<5x3xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

func.func @concat_samples(%x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  // expected-error @below {{concatenates along the sample dimension 0}}
  %cat = tensor.concat dim(0) %x, %x : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%cat : tensor<8x3xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

func.func @insert_part(%x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %part = tensor.extract_slice %z[0, 0] [2, 3] [1, 1] : tensor<4x3xf32> to tensor<2x3xf32>
  // expected-error @below {{inserts into part of the sample dimension 0; only slices that keep every sample are supported}}
  %ins = tensor.insert_slice %part into %x[1, 0] [2, 3] [1, 1] : tensor<2x3xf32> into tensor<4x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%ins : tensor<4x3xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// A batch of one sample broadcast the way torch-mlir does for size-1
// dimensions: the map reads the sample with the constant 0.
func.func @batch_one(%x: tensor<1x3xf32> {gacc.batch = 0 : i64}, %w: tensor<3xf32> {gacc.param})
    -> (tensor<f32> {gacc.loss}) {
  // expected-remark @below {{invariant}}
  %e = tensor.empty() : tensor<1x3xf32>
  // expected-remark @below {{per-sample dim 0}}
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %w : tensor<1x3xf32>, tensor<3xf32>) outs(%e : tensor<1x3xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.mulf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<1x3xf32>
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{invariant}}
  %e0 = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{partial (over loop 0)}}
  %s = linalg.reduce ins(%y : tensor<1x3xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// A step that went through gacc-pipeline already.
func.func @twice(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  // expected-error @below {{step 'twice' is already micro-batched; run gacc-pipeline (or gacc-micro-batch) once, on the original step}}
  %r = gacc.micro_batch 0 offset 0 size 4 -> (tensor<f32>) {
    %zero = arith.constant 0.0 : f32
    %e0 = tensor.empty() : tensor<f32>
    %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
    %s = linalg.reduce ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
      (%in: f32, %acc: f32) {
        %0 = arith.addf %acc, %in : f32
        linalg.yield %0 : f32
      }
    gacc.yield %s : tensor<f32>
  }
  return %r : tensor<f32>
}

// -----

// An invariant table read at a shifted sample position through the map:
// inside a region the loop counts local samples, so the read cannot be split.
func.func @shifted_map(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %table = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0]> : tensor<5xf32>
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{indexes dimension 0 of operand #1 with 'd0 + 1', which involves the sample loop d0; the sample loop may index one dimension of each operand, as a plain loop index}}
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0 + 1)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x, %table : tensor<4xf32>, tensor<5xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %0 = arith.mulf %a, %b : f32
    linalg.yield %0 : f32
  } -> tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%y : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// A per-sample [B, B] tensor read on its diagonal: the second dimension is
// not the sample dimension, but a region would index it locally.
func.func @diagonal(%x: tensor<4x4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{indexes dimension 1 of operand #0 with 'd0', which involves the sample loop d0}}
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0, d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<4x4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %out: f32):
    linalg.yield %a : f32
  } -> tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%y : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// The running value used beyond the combiner is a recurrence over the
// samples (out + out * x), not a sum of per-sample contributions.
func.func @recurrence(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %one = arith.constant 1.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%one : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-error @below {{reduces over the sample dimension with a combiner that does not split over micro-batches}}
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.mulf %out, %in : f32
    %1 = arith.addf %out, %0 : f32
    linalg.yield %1 : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// nll_loss on a batch of one after canonicalization: the index of the unit
// sample loop is the constant 0.
func.func @batch_one_gather(%logp: tensor<1x5xf32> {gacc.batch = 0 : i64},
                            %labels: tensor<1xi64> {gacc.batch = 0 : i64})
    -> (tensor<1xf32> {gacc.metric}, tensor<f32> {gacc.loss}) {
  // expected-remark @below {{invariant}}
  %c0 = arith.constant 0 : index
  // expected-remark @below {{invariant}}
  %e = tensor.empty() : tensor<1xf32>
  // expected-remark @below {{per-sample dim 0}}
  %nll = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%labels : tensor<1xi64>) outs(%e : tensor<1xf32>) {
  ^bb0(%in: i64, %out: f32):
    %0 = arith.index_cast %in : i64 to index
    %1 = tensor.extract %logp[%c0, %0] : tensor<1x5xf32>
    linalg.yield %1 : f32
  } -> tensor<1xf32>
  // expected-remark @below {{per-sample dim 0}}
  %only = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%e : tensor<1xf32>) {
  ^bb0(%out: f32):
    %1 = tensor.extract %logp[%c0, %c0] : tensor<1x5xf32>
    linalg.yield %1 : f32
  } -> tensor<1xf32>
  // expected-remark @below {{invariant}}
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{invariant}}
  %e0 = tensor.empty() : tensor<f32>
  // expected-remark @below {{invariant}}
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-remark @below {{partial (over loop 0)}}
  %s = linalg.reduce ins(%nll : tensor<1xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %only, %s : tensor<1xf32>, tensor<f32>
}

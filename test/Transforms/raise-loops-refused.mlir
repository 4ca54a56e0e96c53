// RUN: gacc-opt %s --split-input-file --gacc-prepare-step --gacc-verify-step --verify-diagnostics

// Loops that mix samples are refused at the loop (issue 48): a loop that
// gacc-prepare-step does not raise, with the reason, and raised loops that
// the batch analysis refuses as it refuses the linalg op they write out.

// A prefix over the samples reads the element of the previous iteration:
// not a linalg op, not raised.
// expected-note @below {{the loop reads this per-sample value}}
func.func @prefix(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %init = arith.constant dense<0.0> : tensor<4xf32>
  // expected-error @below {{'scf.for' op is a loop on the per-sample path that gacc cannot split into micro-batches}}
  // expected-note @below {{not this one: carried tensor #0 is used by 'tensor.extract' other than a tensor.extract at the indices it is written at (the element of another iteration)}}
  %p = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %init)
      -> (tensor<4xf32>) {
    %im1 = arith.subi %i, %c1 : index
    %j = arith.maxsi %im1, %c0 : index
    %prev = tensor.extract %t[%j] : tensor<4xf32>
    %v = tensor.extract %x[%i] : tensor<4xf32>
    %s = arith.addf %prev, %v : f32
    %n = tensor.insert %s into %t[%i] : tensor<4xf32>
    scf.yield %n : tensor<4xf32>
  }
  %l = tensor.extract %p[%c0] : tensor<4xf32>
  %r = tensor.from_elements %l : tensor<f32>
  return %r : tensor<f32>
}

// -----

// A sum over the samples that reads the next sample.
func.func @next_sample(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (f32 {gacc.loss}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @below {{reads the per-sample tensor captured from above (samples of batch argument #0) other than with tensor.extract indexed by the sample loop along its sample dimension 0; a micro-batch holds only its own samples, so the read cannot be split}}
  %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = tensor.extract %x[%i] : tensor<4xf32>
    %ip1 = arith.addi %i, %c1 : index
    %j = arith.minsi %ip1, %c3 : index
    // expected-note @below {{the read}}
    %w = tensor.extract %x[%j] : tensor<4xf32>
    %d = arith.subf %w, %v : f32
    %a = arith.addf %acc, %d : f32
    scf.yield %a : f32
  }
  return %s : f32
}

// -----

// An exponential moving average over the samples is a recurrence, not a
// sum of per-sample terms.
func.func @recurrence(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (f32 {gacc.loss}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  // expected-error @below {{reduces over the sample dimension with a combiner that does not split over micro-batches}}
  %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = tensor.extract %x[%i] : tensor<4xf32>
    %h = arith.mulf %acc, %half : f32
    %a = arith.addf %h, %v : f32
    scf.yield %a : f32
  }
  return %s : f32
}

// -----

// A loop over the first two of the four samples.
func.func @some_samples(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (f32 {gacc.loss}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  // expected-error @below {{reads the per-sample tensor captured from above with loop 0, which does not run over the samples of the op}}
  %s = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %zero) -> (f32) {
    // expected-note @below {{the read}}
    %v = tensor.extract %x[%i] : tensor<4xf32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }
  return %s : f32
}

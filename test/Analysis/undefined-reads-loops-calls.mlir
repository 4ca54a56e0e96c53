// RUN: gacc-opt %s --split-input-file --gacc-verify-step --verify-diagnostics

// Reads of a tensor.empty's contents that reach the op through an scf.for
// iter_arg or a call's argument (issue 49): the error is at the reading op,
// with a note at the tensor.empty (and at the call). Writing the tensor in
// the loop or in the callee first is fine.

func.func @loop_reads_empty_init(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  // expected-note @below {{the tensor.empty, whose contents are undefined until written}}
  %e = tensor.empty() : tensor<f32>
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %e) -> (tensor<f32>) {
    // expected-error @below {{'linalg.generic' op reads undefined contents: its init #0 is a tensor.empty and its body reads the value}}
    %s = linalg.generic {
        indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
        iterator_types = ["reduction"]}
        ins(%x : tensor<4xf32>) outs(%acc : tensor<f32>) {
    ^bb0(%a: f32, %o: f32):
      %t = arith.addf %a, %o : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    scf.yield %s : tensor<f32>
  }
  return %r : tensor<f32>
}

// -----

// Two loops deep, read by an arith op on tensors.

func.func @nested_loops(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  // expected-note @below {{the tensor.empty}}
  %e = tensor.empty() : tensor<f32>
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%a = %e) -> (tensor<f32>) {
    %q = scf.for %j = %c0 to %c2 step %c1 iter_args(%b = %a) -> (tensor<f32>) {
      // expected-error @below {{'arith.addf' op reads undefined contents: its operand #0 is a tensor.empty}}
      %n = arith.addf %b, %b : tensor<f32>
      scf.yield %n : tensor<f32>
    }
    scf.yield %q : tensor<f32>
  }
  return %r : tensor<f32>
}

// -----

// Filled before the loop: defined.

func.func @loop_filled_init(%x: tensor<4xf32> {gacc.batch = 0 : i64},
    %p: tensor<4xf32> {gacc.param})
    -> (tensor<f32> {gacc.loss}) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %z) -> (tensor<f32>) {
    %s = linalg.generic {
        indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
        iterator_types = ["reduction"]}
        ins(%p : tensor<4xf32>) outs(%acc : tensor<f32>) {
    ^bb0(%a: f32, %o: f32):
      %t = arith.addf %a, %o : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    scf.yield %s : tensor<f32>
  }
  %loss = arith.mulf %r, %r : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The iter_arg is written (filled) inside the loop before it is read.

func.func @loop_writes_first(%x: tensor<4xf32> {gacc.batch = 0 : i64},
    %p: tensor<4xf32> {gacc.param})
    -> (tensor<f32> {gacc.loss}) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %e) -> (tensor<f32>) {
    %z = linalg.fill ins(%zero : f32) outs(%acc : tensor<f32>) -> tensor<f32>
    %s = linalg.generic {
        indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
        iterator_types = ["reduction"]}
        ins(%p : tensor<4xf32>) outs(%z : tensor<f32>) {
    ^bb0(%a: f32, %o: f32):
      %t = arith.addf %a, %o : f32
      linalg.yield %t : f32
    } -> tensor<f32>
    scf.yield %s : tensor<f32>
  }
  %loss = arith.mulf %r, %r : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A helper that reduces into the tensor it is given.

func.func private @sum_into(%x: tensor<4xf32>, %out: tensor<f32>) -> tensor<f32> {
  // expected-error @below {{'linalg.generic' op reads undefined contents: its init #0 is a tensor.empty and its body reads the value}}
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%out : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

func.func @call_reads_empty(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-note @below {{the tensor.empty}}
  %e = tensor.empty() : tensor<f32>
  // expected-note @below {{passed to @sum_into here}}
  %s = func.call @sum_into(%x, %e) : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Two calls deep, through a view; the first helper only passes it on.

func.func private @inner(%v: tensor<f32>) -> tensor<f32> {
  // expected-error @below {{'math.exp' op reads undefined contents: its operand #0 is a tensor.empty}}
  %y = math.exp %v : tensor<f32>
  return %y : tensor<f32>
}

func.func private @outer(%t: tensor<1xf32>) -> tensor<f32> {
  %v = tensor.collapse_shape %t [] : tensor<1xf32> into tensor<f32>
  // expected-note @below {{passed to @inner here}}
  %y = func.call @inner(%v) : (tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

func.func @two_calls(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-note @below {{the tensor.empty}}
  %e = tensor.empty() : tensor<1xf32>
  %y = func.call @outer(%e) : (tensor<1xf32>) -> tensor<f32>
  return %y : tensor<f32>
}

// -----

// A helper that writes the tensor it is given (an outs its body does not
// read), or returns it unchanged, reads nothing.

func.func private @fill(%out: tensor<f32>) -> tensor<f32> {
  %one = arith.constant 1.0 : f32
  %f = linalg.fill ins(%one : f32) outs(%out : tensor<f32>) -> tensor<f32>
  return %f : tensor<f32>
}

func.func private @identity(%out: tensor<f32>) -> tensor<f32> {
  return %out : tensor<f32>
}

func.func @call_writes(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %e = tensor.empty() : tensor<f32>
  %i = func.call @identity(%e) : (tensor<f32>) -> tensor<f32>
  %f = func.call @fill(%i) : (tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.addf %a, %o : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A call's result is what the callee returns: passed through a helper and
// read after the call.

func.func private @pass_through(%t: tensor<4xf32>) -> tensor<4xf32> {
  %c = tensor.cast %t : tensor<4xf32> to tensor<4xf32>
  return %c : tensor<4xf32>
}

func.func @read_after_pass_through(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-note @below {{the tensor.empty}}
  %e = tensor.empty() : tensor<4xf32>
  %p = func.call @pass_through(%e) : (tensor<4xf32>) -> tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // expected-error @below {{'linalg.generic' op reads undefined contents: its input #0 is a tensor.empty and its body reads the value}}
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%p, %x : tensor<4xf32>, tensor<4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %m, %o : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

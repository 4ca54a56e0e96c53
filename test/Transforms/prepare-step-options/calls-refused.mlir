// RUN: gacc-opt %s --split-input-file --gacc-prepare-step --verify-diagnostics

// A call of an external declaration: nothing to inline.

// expected-note @below {{declared here}}
func.func private @external(tensor<4xf32>) -> tensor<f32>

func.func @step(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-error @below {{'func.call' op calls the external function '@external', which has no body to inline; a training step calls only functions defined in its module}}
  %l = func.call @external(%x) : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A recursive call, reached through @outer: the error is at the call that
// closes the cycle, with the chain of calls that reached it.

func.func @step(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-note @below {{called from '@step' here}}
  %l = func.call @outer(%x) : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func private @outer(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-note @below {{called from '@outer' here}}
  %l = func.call @inner(%x) : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func private @inner(%x: tensor<4xf32>) -> tensor<f32> {
  // expected-error @below {{'func.call' op calls '@outer' recursively; a recursive call cannot be inlined into the training step}}
  %l = func.call @outer(%x) : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The step calling itself.

func.func @step(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-error @below {{'func.call' op calls '@step' recursively; a recursive call cannot be inlined into the training step}}
  %l = func.call @step(%x) : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// A callee with several blocks.

func.func @step(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-error @below {{'func.call' op calls '@branchy', whose body has 2 blocks; only single-block functions can be inlined into the training step}}
  %l = func.call @branchy(%x) : (tensor<4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

func.func private @branchy(%x: tensor<4xf32>) -> tensor<f32> {
  %e = tensor.empty() : tensor<f32>
  cf.br ^bb1
^bb1:
  return %e : tensor<f32>
}

// RUN: gacc-opt %s --gacc-lower-scatter-add --verify-diagnostics -o /dev/null

// gacc-lower-scatter-add runs after bufferization: a scatter-add on tensors
// is an error, not a crash.
func.func @tensors(%u: tensor<4x5xf32>, %ids: tensor<4xi64>, %acc: tensor<7x5xf32>) -> tensor<7x5xf32> {
  // expected-error @below {{'gacc.scatter_add' op expected a scatter-add on buffers (run after bufferization)}}
  %r = gacc.scatter_add ins(%u, %ids : tensor<4x5xf32>, tensor<4xi64>) outs(%acc : tensor<7x5xf32>) -> tensor<7x5xf32>
  return %r : tensor<7x5xf32>
}


// RUN: gacc-opt %s --split-input-file --gacc-unshare-empty-tensors | FileCheck %s

// Each use of a shared empty gets its own, created right before the user.

// CHECK-LABEL: func.func @shared
// CHECK-SAME:    (%[[A:.*]]: tensor<4x4xf32>, %[[B:.*]]: tensor<4x4xf32>)
// CHECK:         %[[E0:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK:         %[[T0:.*]] = linalg.transpose ins(%[[A]] : tensor<4x4xf32>) outs(%[[E0]] : tensor<4x4xf32>)
// CHECK:         %[[E1:.*]] = tensor.empty() : tensor<4x4xf32>
// CHECK:         %[[T1:.*]] = linalg.transpose ins(%[[B]] : tensor<4x4xf32>) outs(%[[E1]] : tensor<4x4xf32>)
// CHECK:         return %[[T0]], %[[T1]]
func.func @shared(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>) {
  %e = tensor.empty() : tensor<4x4xf32>
  %t0 = linalg.transpose ins(%a : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) permutation = [1, 0]
  %t1 = linalg.transpose ins(%b : tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) permutation = [1, 0]
  return %t0, %t1 : tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Dynamic sizes: the clone inside the loop reuses the size operand, which
// dominates the original empty and hence every use.

// CHECK-LABEL: func.func @dynamic_in_loop
// CHECK-SAME:    (%[[N:.*]]: index,
// CHECK:         %[[E0:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<?xf32>)
// CHECK:         scf.for
// CHECK:           %[[E1:.*]] = tensor.empty(%[[N]]) : tensor<?xf32>
// CHECK:           linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<?xf32>)
func.func @dynamic_in_loop(%n: index, %init: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty(%n) : tensor<?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %f) -> tensor<?xf32> {
    %g = linalg.fill ins(%one : f32) outs(%e : tensor<?xf32>) -> tensor<?xf32>
    scf.yield %g : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}

// -----

// A single use is left alone.

// CHECK-LABEL: func.func @single
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT:     tensor.empty
func.func @single(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %c = linalg.copy ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %c : tensor<4xf32>
}

// RUN: gacc-opt %s --split-input-file --gacc-strip-roles | FileCheck %s

// Role attributes go, on arguments and results.
// CHECK-LABEL: func.func @step
// CHECK-SAME:    (%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
// CHECK-NOT:     gacc.
func.func @step(%w: tensor<4xf32> {gacc.param}, %x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.grad = 0 : i64}) {
  %l = arith.constant dense<0.0> : tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}

// -----

// Other attributes stay.
// CHECK-LABEL: func.func @other
// CHECK-SAME:    (%arg0: tensor<4xf32> {llvm.noalias})
func.func @other(%w: tensor<4xf32> {gacc.param, llvm.noalias}) {
  return
}

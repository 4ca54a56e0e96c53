// RUN: gacc-opt %s --gacc-verify-step="entry=missing" --verify-diagnostics
// RUN: gacc-opt %s --gacc-micro-batch="entry=second micro-batches=2" | FileCheck %s

// expected-error @below {{no function named 'missing' (the entry option names the training step)}}
module {
  // CHECK-LABEL: func.func @first
  // CHECK-NOT:     gacc.micro_batch
  func.func @first(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
    %c = arith.constant dense<0.0> : tensor<f32>
    return %c : tensor<f32>
  }
  // CHECK-LABEL: func.func @second
  // CHECK-COUNT-2: gacc.micro_batch
  func.func @second(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
    %zero = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<f32>
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
    %s = linalg.reduce ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
      (%in: f32, %acc: f32) {
        %0 = arith.addf %acc, %in : f32
        linalg.yield %0 : f32
      }
    return %s : tensor<f32>
  }
}

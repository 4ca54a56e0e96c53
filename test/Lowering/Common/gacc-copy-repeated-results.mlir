// RUN: gacc-opt %s --split-input-file --gacc-copy-repeated-results | FileCheck %s
// Regression (issue 11): a step returning one value twice crashed in
// buffer-results-to-out-params; the whole lowering and a run of such a step.
// RUN: gacc-opt %S/../../Execution/Inputs/repeated_results.mlir --gacc-pipeline="micro-batches=2" --gacc-lower-to-cpu | FileCheck %s --check-prefix=LLVM
// RUN: gacc-opt %S/../../Execution/Inputs/repeated_results.mlir --gacc-pipeline="micro-batches=2" --gacc-lower-to-cuda="kernels-only" | FileCheck %s --check-prefix=CUDA
// RUN: gacc-run %S/../../Execution/Inputs/repeated_results.mlir --micro-batches=2 --print-results | FileCheck %s --check-prefix=RESULTS

// LLVM: llvm.func @train_step
// CUDA: func.func @train_step
// RESULTS: result 0 (loss): [[LOSS:.*]]
// RESULTS: result 2 (metric): [[LOSS]]
// RESULTS: result 3 (metric): [[LOSS]]

// The second and third return of %v are copies; the first is %v itself.

// CHECK-LABEL: func.func @twice
// CHECK-SAME:    (%[[V:.*]]: tensor<4xf32>)
// CHECK:         %[[E1:.*]] = tensor.empty() : tensor<4xf32>
// CHECK:         %[[C1:.*]] = linalg.copy ins(%[[V]] : tensor<4xf32>) outs(%[[E1]] : tensor<4xf32>)
// CHECK:         %[[E2:.*]] = tensor.empty() : tensor<4xf32>
// CHECK:         %[[C2:.*]] = linalg.copy ins(%[[V]] : tensor<4xf32>) outs(%[[E2]] : tensor<4xf32>)
// CHECK:         return %[[V]], %[[C1]], %[[C2]]
func.func @twice(%v: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  return %v, %v, %v : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Distinct results are left alone.

// CHECK-LABEL: func.func @distinct
// CHECK-NOT:     linalg.copy
// CHECK:         return
func.func @distinct(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  return %a, %b : tensor<4xf32>, tensor<4xf32>
}

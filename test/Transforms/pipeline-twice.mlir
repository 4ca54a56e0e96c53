// Running gacc-pipeline (or gacc-verify-step) on a step that is already
// micro-batched is an error at the first region, not the batch analysis's
// "ops with regions are not supported".
//
// RUN: gacc-opt %S/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=2" \
// RUN: | not gacc-opt --gacc-pipeline="micro-batches=2" 2>&1 | FileCheck %s
// RUN: gacc-opt %S/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=2" \
// RUN: | not gacc-opt --gacc-verify-step 2>&1 | FileCheck %s

// CHECK: error: 'gacc.micro_batch' op step 'linear' is already micro-batched; run gacc-pipeline (or gacc-micro-batch) once, on the original step
// CHECK-NOT: ops with regions are not supported

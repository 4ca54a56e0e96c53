// RUN: gacc-opt %s --gacc-inline-micro-batches | FileCheck %s
// RUN: gacc-opt %s --gacc-inline-micro-batches="trace-regions" | FileCheck %s --check-prefix=TRACE
// RUN: gacc-opt %s --gacc-strip-roles | FileCheck %s --check-prefix=STRIP

// CHECK-LABEL: func.func @step
// CHECK-NOT:     gacc.micro_batch
// CHECK:         %[[A:.*]] = arith.addf %arg0, %arg0
// CHECK:         %[[B:.*]] = arith.addf %[[A]], %arg0
// CHECK:         return %[[B]]

// TRACE:         %[[C0:.*]] = arith.constant 0 : i64
// TRACE-NEXT:    call @gaccrt_trace_region_begin(%[[C0]])
// TRACE-NEXT:    arith.addf
// TRACE-NEXT:    call @gaccrt_trace_region_end(%[[C0]])
// TRACE:         %[[C1:.*]] = arith.constant 1 : i64
// TRACE-NEXT:    call @gaccrt_trace_region_begin(%[[C1]])

// STRIP:       func.func @step(%arg0: tensor<f32>) -> tensor<f32> {
func.func @step(%x: tensor<f32> {gacc.param}) -> (tensor<f32> {gacc.loss}) {
  %0 = gacc.micro_batch 0 offset 0 size 2 -> (tensor<f32>) {
    %a = arith.addf %x, %x : tensor<f32>
    gacc.yield %a : tensor<f32>
  }
  %1 = gacc.micro_batch 1 offset 2 size 2 -> (tensor<f32>) {
    %b = arith.addf %0, %x : tensor<f32>
    gacc.yield %b : tensor<f32>
  }
  return %1 : tensor<f32>
}

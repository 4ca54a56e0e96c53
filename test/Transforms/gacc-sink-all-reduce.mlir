// RUN: gacc-opt %S/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=1" | FileCheck %s --check-prefix=ONE
// RUN: gacc-opt %S/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=4" | FileCheck %s --check-prefix=ONE
// RUN: gacc-opt %S/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=8" | FileCheck %s --check-prefix=ONE
// RUN: gacc-opt %S/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=4" | FileCheck %s --check-prefix=VIEW
// RUN: gacc-opt %S/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=4 bucket-bytes=24" | FileCheck %s --check-prefix=TWO
// RUN: gacc-opt %S/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=2 bucket-bytes=16" | FileCheck %s --check-prefix=TWO
// RUN: gacc-opt %s --gacc-pipeline="micro-batches=2" | FileCheck %s --check-prefix=KEEP
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=2" | FileCheck %s --check-prefix=LAYOUT
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=2 bucket-bytes=128" | FileCheck %s --check-prefix=ORDER
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=2 bucket-bytes=128 overlap-all-reduce=false" | FileCheck %s --check-prefix=PROGRAM

// Both gradients (6 + 2 floats = 32 bytes) share one bucket: one all-reduce
// after the final region, whatever the number of micro-batches.
// ONE-LABEL: func.func @linear
// ONE-NOT:     shard.all_reduce
// ONE:         gacc.micro_batch
// ONE-NOT:     shard.all_reduce
// ONE:         shard.all_reduce %{{.*}} on @dp grid_axes = [0] reduction = average {gacc.bucket = 0 : i64, gacc.overlap} : tensor<8xf32> -> tensor<8xf32>
// ONE-NOT:     shard.all_reduce
// ONE-NOT:     gacc.micro_batch
// ONE:         return

// The accumulators are views of the bucket from the first region on, and
// the reduced bucket is read back as views.
// VIEW-LABEL: func.func @linear
// VIEW:         %[[BUCKET:.*]] = tensor.empty() {gacc.bucket = 0 : i64} : tensor<8xf32>
// VIEW:         %[[SW:.*]] = tensor.extract_slice %[[BUCKET]][0] [6] [1] : tensor<8xf32> to tensor<6xf32>
// VIEW:         %[[VW:.*]] = tensor.expand_shape %[[SW]] {{\[\[}}0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
// VIEW:         %[[VB:.*]] = tensor.extract_slice %[[BUCKET]][6] [2] [1] : tensor<8xf32> to tensor<2xf32>
// VIEW:         gacc.micro_batch 0
// VIEW:           %[[FW:.*]] = linalg.fill ins(%{{.*}}) outs(%[[VW]] : tensor<3x2xf32>)
// VIEW:           linalg.matmul {gacc.partial} ins({{.*}}) outs(%[[FW]] : tensor<3x2xf32>)
// VIEW:           %[[FB:.*]] = linalg.fill ins(%{{.*}}) outs(%[[VB]] : tensor<2xf32>)
// VIEW:           linalg.generic {{.*}} outs(%[[FB]] : tensor<2xf32>)
// VIEW:         %[[LAST:.*]]:3 = gacc.micro_batch 3
// VIEW:         %[[FLAT:.*]] = tensor.collapse_shape %[[LAST]]#1 {{\[\[}}0, 1]] : tensor<3x2xf32> into tensor<6xf32>
// VIEW:         %[[P0:.*]] = tensor.insert_slice %[[FLAT]] into %[[BUCKET]][0] [6] [1]
// VIEW:         %[[P1:.*]] = tensor.insert_slice %[[LAST]]#2 into %[[P0]][6] [2] [1]
// VIEW:         %[[RED:.*]] = shard.all_reduce %[[P1]]
// VIEW:         %[[OW:.*]] = tensor.extract_slice %[[RED]][0] [6] [1]
// VIEW:         %[[GW:.*]] = tensor.expand_shape %[[OW]]
// VIEW:         %[[GB:.*]] = tensor.extract_slice %[[RED]][6] [2] [1]
// VIEW:         return %{{.*}}, %[[GW]], %[[GB]]

// With small buckets each gradient gets its own bucket and collective.
// TWO-LABEL: func.func @linear
// TWO:         tensor.empty() {gacc.bucket = 0 : i64} : tensor<6xf32>
// TWO:         tensor.empty() {gacc.bucket = 1 : i64} : tensor<2xf32>
// TWO-COUNT-2: shard.all_reduce
// TWO-NOT:     shard.all_reduce
// TWO:         return

// overlap-all-reduce (the default): buckets follow the order in which the
// final region finishes the accumulators. The MLP's backward finishes W2
// (24 floats) and b2 (3) first: they share bucket 0; W1 (32) and b1 (8)
// follow. Every bucket all-reduce is marked for the lowering.
// ORDER-LABEL: func.func @train_step
// ORDER:         tensor.empty() {gacc.bucket = 0 : i64} : tensor<27xf32>
// ORDER:         tensor.empty() {gacc.bucket = 1 : i64} : tensor<32xf32>
// ORDER:         tensor.empty() {gacc.bucket = 2 : i64} : tensor<8xf32>
// ORDER-COUNT-3: shard.all_reduce {{.*}} {gacc.bucket = {{[0-2]}} : i64, gacc.overlap}
// ORDER-NOT:     shard.all_reduce

// Inside a bucket, the members whose bytes are a multiple of 64 come first,
// so that each starts on a cache line of the (64-byte aligned) bucket: W1
// (32 floats) at 0, then in finishing order W2 (24), b2 (3) and b1 (8).
// LAYOUT-LABEL: func.func @train_step
// LAYOUT:         tensor.empty() {gacc.bucket = 0 : i64} : tensor<67xf32>
// LAYOUT:         tensor.insert_slice %{{.*}} into %{{.*}}[32] [24] [1]
// LAYOUT:         tensor.insert_slice %{{.*}} into %{{.*}}[56] [3] [1]
// LAYOUT:         tensor.insert_slice %{{.*}} into %{{.*}}[0] [32] [1]
// LAYOUT:         tensor.insert_slice %{{.*}} into %{{.*}}[59] [8] [1]
// LAYOUT:         shard.all_reduce %{{.*}} : tensor<67xf32> -> tensor<67xf32>

// overlap-all-reduce=false: buckets in program order (W1; b1 and W2; b2),
// no marks.
// PROGRAM-LABEL: func.func @train_step
// PROGRAM:         tensor.empty() {gacc.bucket = 0 : i64} : tensor<32xf32>
// PROGRAM:         tensor.empty() {gacc.bucket = 1 : i64} : tensor<32xf32>
// PROGRAM:         tensor.empty() {gacc.bucket = 2 : i64} : tensor<3xf32>
// PROGRAM-NOT:     gacc.overlap

// A collective on an epilogue value (not an accumulated partial) stays as it
// is and is not bucketed.
// KEEP-LABEL: func.func @loss_collective
// KEEP:         gacc.micro_batch 1
// KEEP:         %[[L:.*]] = arith.mulf
// KEEP:         shard.all_reduce %[[L]] on @dp grid_axes = [0] reduction = max : tensor<f32> -> tensor<f32>
// KEEP-NOT:     gacc.bucket
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @loss_collective(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %loss = arith.mulf %s, %inv_b : tensor<f32>
  %m = shard.all_reduce %loss on @dp grid_axes = [0] reduction = max : tensor<f32> -> tensor<f32>
  return %m : tensor<f32>
}

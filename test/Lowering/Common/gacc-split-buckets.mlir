// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=2" --gacc-split-buckets | FileCheck %s

// The bucket of the two gradients (6 + 2 elements) becomes one all-reduce per
// accumulator, marked with the bucket and the offset in it; the first region
// initializes tensors of its own instead of slices of a bucket tensor; nothing
// is packed.

// CHECK-LABEL: func.func @linear
// CHECK-NOT:     tensor.insert_slice
// CHECK:         gacc.micro_batch 0
// CHECK:         gacc.micro_batch 1
// CHECK-NOT:     tensor.insert_slice
// CHECK:         %[[W:.*]] = shard.all_reduce %{{.*}} on @dp grid_axes = [0] reduction = average {gacc.bucket = 0 : i64, gacc.bucket_offset = 0 : i64, gacc.overlap} : tensor<6xf32> -> tensor<6xf32>
// CHECK:         %[[B:.*]] = shard.all_reduce %{{.*}} on @dp grid_axes = [0] reduction = average {gacc.bucket = 0 : i64, gacc.bucket_offset = 6 : i64, gacc.overlap} : tensor<2xf32> -> tensor<2xf32>
// CHECK-NOT:     shard.all_reduce
// CHECK:         tensor.expand_shape %[[W]]
// CHECK:         return %{{.*}}, %{{.*}}, %[[B]]

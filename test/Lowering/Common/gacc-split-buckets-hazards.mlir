// RUN: gacc-opt %s --split-input-file --gacc-split-buckets | FileCheck %s

// Bucket chains whose inserts overlap (not what gacc-sink-all-reduce
// builds; found by a review) stay one all-reduce of the packed bucket.

// CHECK-LABEL: func.func @dup
// CHECK-COUNT-1: shard.all_reduce
// CHECK-NOT:     shard.all_reduce
shard.grid @dp(shape = 2)
func.func @dup(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() {gacc.bucket = 0 : i64} : tensor<4xf32>
  %p0 = tensor.insert_slice %a into %e[0] [4] [1] : tensor<4xf32> into tensor<4xf32>
  %p1 = tensor.insert_slice %b into %p0[0] [4] [1] : tensor<4xf32> into tensor<4xf32>
  %r = shard.all_reduce %p1 on @dp grid_axes = [0] reduction = sum {gacc.bucket = 0 : i64} : tensor<4xf32> -> tensor<4xf32>
  %x = tensor.extract_slice %r[0] [4] [1] : tensor<4xf32> to tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @partial
// CHECK-COUNT-1: shard.all_reduce
// CHECK-NOT:     shard.all_reduce
shard.grid @dp(shape = 2)
func.func @partial(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() {gacc.bucket = 0 : i64} : tensor<6xf32>
  %p0 = tensor.insert_slice %a into %e[0] [4] [1] : tensor<4xf32> into tensor<6xf32>
  %p1 = tensor.insert_slice %b into %p0[2] [4] [1] : tensor<4xf32> into tensor<6xf32>
  %r = shard.all_reduce %p1 on @dp grid_axes = [0] reduction = sum {gacc.bucket = 0 : i64} : tensor<6xf32> -> tensor<6xf32>
  %x = tensor.extract_slice %r[0] [4] [1] : tensor<6xf32> to tensor<4xf32>
  return %x : tensor<4xf32>
}

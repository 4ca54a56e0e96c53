// RUN: gacc-opt %s --split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --verify-diagnostics | FileCheck %s

// shard.all_reduce bufferizes in place on its operand's buffer, as one call
// of gaccrt_all_reduce(address, count, dtype, kind, bucket).

// CHECK-LABEL: func.func @bucket
// CHECK-SAME:    (%[[ARG:.*]]: memref<8xf32>)
// CHECK:         %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[ARG]]
// CHECK:         %[[A:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK:         %[[N:.*]] = arith.constant 8 : i64
// CHECK:         %[[T:.*]] = arith.constant 0 : i32
// CHECK:         %[[K:.*]] = arith.constant 1 : i32
// CHECK:         %[[B:.*]] = arith.constant 3 : i64
// CHECK:         call @gaccrt_all_reduce(%[[A]], %[[N]], %[[T]], %[[K]], %[[B]])
// CHECK:         return %[[ARG]]
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @bucket(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = shard.all_reduce %x on @dp grid_axes = [0] reduction = average {gacc.bucket = 3 : i64} : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A maximum over the ranks (a metric) is runtime kind 2.
// CHECK-LABEL: func.func @max
// CHECK:         %[[K:.*]] = arith.constant 2 : i32
// CHECK:         call @gaccrt_all_reduce(%{{.*}}, %{{.*}}, %{{.*}}, %[[K]], %{{.*}})
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @max(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = shard.all_reduce %x on @dp grid_axes = [0] reduction = max : tensor<8xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @bitwise(%x: tensor<8xi32>) -> tensor<8xi32> {
  // expected-error @below {{the reduction 'bitwise_or' does not lower to the gacc runtime (sum, average, max, min and product do)}}
  // expected-error @below {{failed to bufferize op}}
  %r = shard.all_reduce %x on @dp grid_axes = [0] reduction = bitwise_or : tensor<8xi32> -> tensor<8xi32>
  return %r : tensor<8xi32>
}

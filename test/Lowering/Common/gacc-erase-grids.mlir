// RUN: gacc-opt %s --split-input-file --gacc-erase-grids --verify-diagnostics | FileCheck %s

// CHECK-NOT: shard.grid
// CHECK-LABEL: func.func @no_collective
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @no_collective() {
  return
}

// -----

// The rank of the data-parallel grid (gacc-shard-optimizer-state's shard
// offsets) is the runtime's rank.
// CHECK-LABEL: func.func @rank
// CHECK:         %[[R:.*]] = call @gaccrt_rank() : () -> i32
// CHECK:         %[[I:.*]] = arith.index_cast %[[R]] : i32 to index
// CHECK:         return %[[I]]
shard.grid @dp(shape = 2) {sym_visibility = "private"}
func.func @rank() -> index {
  %r = shard.process_linear_index on @dp : index
  return %r : index
}

// -----

// expected-error @below {{'shard.grid' op is still used after bufferization; only shard.all_reduce, reduce_scatter, all_gather and process_linear_index lower to the gacc runtime}}
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @still_used(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.all_reduce %x on @dp grid_axes = [0] reduction = max : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// RUN: gacc-opt %s --split-input-file --gacc-erase-grids --verify-diagnostics | FileCheck %s

// CHECK-NOT: shard.grid
// CHECK-LABEL: func.func @no_collective
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @no_collective() {
  return
}

// -----

// expected-error @below {{'shard.grid' op is still used after bufferization; only shard.all_reduce lowers to the gacc runtime}}
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @still_used(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.all_reduce %x on @dp grid_axes = [0] reduction = max : tensor<4xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

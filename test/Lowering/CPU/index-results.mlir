// A step whose metric has `index` elements (a position computed by
// linalg.index) lowers to the CPU: gacc-place-buckets takes byte views only
// of int/float buffers (an index result assembled from the regions crashed
// it; found by a review).
// RUN: gacc-opt %s --gacc-pipeline="micro-batches=2" --gacc-lower-to-cpu | FileCheck %s
// CHECK: llvm.func @train_step(

shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%w: tensor<f32> {gacc.param},
    %x0: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xindex> {gacc.metric}) {
  %loss = arith.mulf %w, %w : tensor<f32>
  %e4 = tensor.empty() : tensor<4xindex>
  %m = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x0 : tensor<4xf32>) outs(%e4 : tensor<4xindex>) {
  ^bb0(%a0: f32, %o: index):
    %i = linalg.index 0 : index
    linalg.yield %i : index
  } -> tensor<4xindex>
  return %loss, %m : tensor<f32>, tensor<4xindex>
}

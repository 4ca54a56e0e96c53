shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%w: tensor<f32> {gacc.param},
    %x0: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xi64> {gacc.metric}) {
  %loss = arith.mulf %w, %w : tensor<f32>
  %e4 = tensor.empty() : tensor<4xi64>
  %m = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%x0 : tensor<4xf32>) outs(%e4 : tensor<4xi64>) {
  ^bb0(%a0: f32, %o: i64):
    %r = arith.fptoui %a0 : f32 to i64
    linalg.yield %r : i64
  } -> tensor<4xi64>
  return %loss, %m : tensor<f32>, tensor<4xi64>
}

shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%w: tensor<f32> {gacc.param},
    %x0: tensor<4xi32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xi32> {gacc.metric}) {
  %loss = arith.mulf %w, %w : tensor<f32>
  %e4 = tensor.empty() : tensor<4xi32>
  %m = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%x0 : tensor<4xi32>) outs(%e4 : tensor<4xi32>) {
  ^bb0(%a0: i32, %o: i32):
    %c = arith.constant -1 : i32
    %r = arith.divsi %a0, %c : i32
    linalg.yield %r : i32
  } -> tensor<4xi32>
  return %loss, %m : tensor<f32>, tensor<4xi32>
}

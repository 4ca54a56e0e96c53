shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%w: tensor<f32> {gacc.param},
    %x0: tensor<4xf32> {gacc.batch = 0 : i64},
    %x1: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.metric}) {
  %loss = arith.mulf %w, %w : tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  %m = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%x0, %x1 : tensor<4xf32>, tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %q = arith.minimumf %a0, %a1 : f32
    %one = arith.constant 1.0 : f32
    %r = arith.divf %one, %q : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %loss, %m : tensor<f32>, tensor<4xf32>
}

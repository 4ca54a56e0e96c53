shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%w: tensor<f32> {gacc.param},
                      %x: tensor<4x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.metric}) {
  %loss = arith.mulf %w, %w : tensor<f32>
  %nan = arith.constant 0x7FC00000 : f32
  %e = tensor.empty() : tensor<4xf32>
  %z = linalg.fill ins(%nan : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x2xf32>) outs(%z : tensor<4xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %a = arith.maxnumf %acc, %xv : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %loss, %s : tensor<f32>, tensor<4xf32>
}

shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%w: tensor<f32> {gacc.param},
                      %x: tensor<4x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xi1> {gacc.metric}) {
  %loss = arith.mulf %w, %w : tensor<f32>
  %f = arith.constant false
  %e = tensor.empty() : tensor<4xi1>
  %z = linalg.fill ins(%f : i1) outs(%e : tensor<4xi1>) -> tensor<4xi1>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x2xf32>) outs(%z : tensor<4xi1>) {
  ^bb0(%xv: f32, %acc: i1):
    %n = arith.cmpf uno, %xv, %xv : f32
    %a = arith.ori %acc, %n : i1
    linalg.yield %a : i1
  } -> tensor<4xi1>
  return %loss, %s : tensor<f32>, tensor<4xi1>
}

// A mutant of the reference linear regression (issue 49): the residual's
// generic yields its init, a tensor.empty, instead of w * x - y, so the
// loss reads undefined contents.
func.func @train_step(%w: tensor<f32> {gacc.param},
    %x: tensor<4xf32> {gacc.batch = 0 : i64},
    %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}) {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%w, %x, %y : tensor<f32>, tensor<4xf32>, tensor<4xf32>)
      outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    %d = arith.subf %p, %c : f32
    linalg.yield %o : f32
  } -> tensor<4xf32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> ()>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r, %x, %w : tensor<4xf32>, tensor<4xf32>, tensor<f32>)
      outs(%z : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %t = arith.addf %acc, %sq : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %quarter = arith.constant dense<0.25> : tensor<f32>
  %loss = arith.mulf %s, %quarter : tensor<f32>
  return %loss, %w : tensor<f32>, tensor<f32>
}

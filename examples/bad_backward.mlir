// DELIBERATELY WRONG INPUT GRAPH -- do not "fix".
// A copy of linear_regression.mlir whose hand-written backward forgets the
// factor 2 of d(r^2)/dr: it computes dr_i = r_i / B instead of 2 r_i / B, so the
// returned "gradient" is exactly half the true gradient of the loss.
// Used to test that the checker reports a wrong input graph (the result
// marked gacc.grad does not match autograd of the result marked gacc.loss).
//
// Arguments:
//   0  %w : tensor<f32>   {gacc.param}
//   1  %x : tensor<4xf32> {gacc.batch = 0}
//   2  %y : tensor<4xf32> {gacc.batch = 0}
// Results:
//   0  loss   : tensor<f32> {gacc.loss}      = mean((w x - y)^2)      (correct)
//   1  grad_w : tensor<f32> {gacc.grad = 0}  = mean((w x - y) x)      (WRONG: true is mean(2 (w x - y) x))
//
// Check case: w = 0, x = (1, 2, 3, 4), y = 2x: loss = 30, returned grad = -15
// (true gradient -30).

shard.grid @dp(shape = ?) {sym_visibility = "private"}

func.func @train_step(%w: tensor<f32> {gacc.param},
                      %x: tensor<4xf32> {gacc.batch = 0 : i64},
                      %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>

  // ---- forward: r = w * x - y (per sample)
  %e4 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%w, %x, %y : tensor<f32>, tensor<4xf32>, tensor<4xf32>)
      outs(%e4 : tensor<4xf32>) {
  ^bb0(%wv: f32, %xv: f32, %yv: f32, %o: f32):
    %p = arith.mulf %wv, %xv : f32
    %d = arith.subf %p, %yv : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>

  // ---- S = sum_i r_i^2 (reduction over the sample dim)
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = arith.mulf %s, %inv_b : tensor<f32>

  // ---- backward (WRONG): dr_i = r_i * (1/B)
  %dr = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>,
                       affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%r, %inv_b : tensor<4xf32>, tensor<f32>)
      outs(%e4 : tensor<4xf32>) {
  ^bb0(%rv: f32, %ds: f32, %o: f32):
    // BUG (deliberate): the factor 2 of d(r^2)/dr is missing.
    %d = arith.mulf %rv, %ds : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>

  // ---- gw = sum_i dr_i * x_i (reduction over the sample dim)
  %gw = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%dr, %x : tensor<4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%dv: f32, %xv: f32, %acc: f32):
    %p = arith.mulf %dv, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>

  // ---- data-parallel gradient sync
  %g = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average
         : tensor<f32> -> tensor<f32>
  return %loss, %g : tensor<f32>, tensor<f32>
}

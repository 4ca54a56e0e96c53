// The reference example with its all-reduce in a called function (a
// frontend's helper): gacc-check's multi-rank reference evaluates the call
// in lockstep across the ranks (test/Check/ranks.test); it took the
// all-reduce for the one-rank identity before (a false FAIL).

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

  // ---- backward: dr_i = 2 * r_i * (1/B)
  %dr = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>,
                       affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%r, %inv_b : tensor<4xf32>, tensor<f32>)
      outs(%e4 : tensor<4xf32>) {
  ^bb0(%rv: f32, %ds: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %t = arith.mulf %two, %rv : f32
    %d = arith.mulf %t, %ds : f32
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
  %g = func.call @sync(%gw) : (tensor<f32>) -> tensor<f32>
  return %loss, %g : tensor<f32>, tensor<f32>
}

func.func private @sync(%v: tensor<f32>) -> tensor<f32> {
  %g = shard.all_reduce %v on @dp grid_axes = [0] reduction = average
         : tensor<f32> -> tensor<f32>
  return %g : tensor<f32>
}

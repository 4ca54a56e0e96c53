// Steps whose accumulated gradients are used other than by one all-reduce
// straight into a gradient result (test/Check/loss-scale-uses.test): the
// reference example (w * x - y, B = 4) with weight decay, metrics and
// collectives added the ways hand-written data-parallel steps add them.

shard.grid @dp(shape = ?) {sym_visibility = "private"}

// The weight-decay gradient wd * w added to the accumulated one before
// the all-reduce: the accumulator is unscaled before the addition.
func.func @weight_decay(%w: tensor<f32> {gacc.param},
    %x: tensor<4xf32> {gacc.batch = 0 : i64},
    %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  %wd = arith.constant dense<0.1> : tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%w, %x, %y : tensor<f32>, tensor<4xf32>, tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%wv: f32, %xv: f32, %yv: f32, %o: f32):
    %p = arith.mulf %wv, %xv : f32
    %d = arith.subf %p, %yv : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = arith.mulf %s, %inv_b : tensor<f32>
  %dr = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%r, %inv_b : tensor<4xf32>, tensor<f32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%rv: f32, %ds: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %t = arith.mulf %two, %rv : f32
    %d = arith.mulf %t, %ds : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %gw = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%dr, %x : tensor<4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%dv: f32, %xv: f32, %acc: f32):
    %p = arith.mulf %dv, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %gwd = arith.mulf %w, %wd : tensor<f32>
  %gt = arith.addf %gw, %gwd : tensor<f32>
  %g = shard.all_reduce %gt on @dp grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
  %w2 = arith.mulf %w, %w : tensor<f32>
  %half_wd = arith.constant dense<0.05> : tensor<f32>
  %reg = arith.mulf %w2, %half_wd : tensor<f32>
  %total = arith.addf %loss, %reg : tensor<f32>
  return %total, %g : tensor<f32>, tensor<f32>
}

// The rank-local gradient (the all-reduce's input) returned as a metric.
func.func @local_metric(%w: tensor<f32> {gacc.param},
    %x: tensor<4xf32> {gacc.batch = 0 : i64},
    %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}, tensor<f32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  %wd = arith.constant dense<0.1> : tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%w, %x, %y : tensor<f32>, tensor<4xf32>, tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%wv: f32, %xv: f32, %yv: f32, %o: f32):
    %p = arith.mulf %wv, %xv : f32
    %d = arith.subf %p, %yv : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = arith.mulf %s, %inv_b : tensor<f32>
  %dr = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%r, %inv_b : tensor<4xf32>, tensor<f32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%rv: f32, %ds: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %t = arith.mulf %two, %rv : f32
    %d = arith.mulf %t, %ds : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %gw = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%dr, %x : tensor<4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%dv: f32, %xv: f32, %acc: f32):
    %p = arith.mulf %dv, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %g = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
  return %loss, %g, %gw : tensor<f32>, tensor<f32>, tensor<f32>
}

// A local gradient whose only collective is a max (a monitoring metric).
func.func @max_metric(%w: tensor<f32> {gacc.param},
    %x: tensor<4xf32> {gacc.batch = 0 : i64},
    %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}, tensor<f32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  %wd = arith.constant dense<0.1> : tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%w, %x, %y : tensor<f32>, tensor<4xf32>, tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%wv: f32, %xv: f32, %yv: f32, %o: f32):
    %p = arith.mulf %wv, %xv : f32
    %d = arith.subf %p, %yv : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = arith.mulf %s, %inv_b : tensor<f32>
  %dr = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%r, %inv_b : tensor<4xf32>, tensor<f32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%rv: f32, %ds: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %t = arith.mulf %two, %rv : f32
    %d = arith.mulf %t, %ds : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %gw = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%dr, %x : tensor<4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%dv: f32, %xv: f32, %acc: f32):
    %p = arith.mulf %dv, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %sq = arith.mulf %gw, %gw : tensor<f32>
  %mx = shard.all_reduce %sq on @dp grid_axes = [0] reduction = max : tensor<f32> -> tensor<f32>
  return %loss, %gw, %mx : tensor<f32>, tensor<f32>, tensor<f32>
}

// The weight-decay gradient as the init of the gradient reduction: the
// first region's init is scaled with the contributions.
func.func @decay_init(%w: tensor<f32> {gacc.param},
    %x: tensor<4xf32> {gacc.batch = 0 : i64},
    %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  %wd = arith.constant dense<0.1> : tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%w, %x, %y : tensor<f32>, tensor<4xf32>, tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%wv: f32, %xv: f32, %yv: f32, %o: f32):
    %p = arith.mulf %wv, %xv : f32
    %d = arith.subf %p, %yv : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = arith.mulf %s, %inv_b : tensor<f32>
  %dr = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%r, %inv_b : tensor<4xf32>, tensor<f32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%rv: f32, %ds: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %t = arith.mulf %two, %rv : f32
    %d = arith.mulf %t, %ds : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %wdw = arith.mulf %w, %wd : tensor<f32>
  %gw = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%dr, %x : tensor<4xf32>, tensor<4xf32>) outs(%wdw : tensor<f32>) {
  ^bb0(%dv: f32, %xv: f32, %acc: f32):
    %p = arith.mulf %dv, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %g = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
  %w2 = arith.mulf %w, %w : tensor<f32>
  %half_wd = arith.constant dense<0.05> : tensor<f32>
  %reg = arith.mulf %w2, %half_wd : tensor<f32>
  %total = arith.addf %loss, %reg : tensor<f32>
  return %total, %g : tensor<f32>, tensor<f32>
}

// A metric averaged over ranks with the gradient's bucket key: it shares
// the bucket but is never scaled.
func.func @bucket_metric(%w: tensor<f32> {gacc.param},
    %x: tensor<4xf32> {gacc.batch = 0 : i64},
    %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}, tensor<f32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  %wd = arith.constant dense<0.1> : tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%w, %x, %y : tensor<f32>, tensor<4xf32>, tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%wv: f32, %xv: f32, %yv: f32, %o: f32):
    %p = arith.mulf %wv, %xv : f32
    %d = arith.subf %p, %yv : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = arith.mulf %s, %inv_b : tensor<f32>
  %dr = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%r, %inv_b : tensor<4xf32>, tensor<f32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%rv: f32, %ds: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %t = arith.mulf %two, %rv : f32
    %d = arith.mulf %t, %ds : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %gw = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%dr, %x : tensor<4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%dv: f32, %xv: f32, %acc: f32):
    %p = arith.mulf %dv, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %g = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
  %ys = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%y : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%yv: f32, %acc: f32):
    %a = arith.addf %acc, %yv : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %ym = shard.all_reduce %ys on @dp grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
  return %loss, %g, %ym : tensor<f32>, tensor<f32>, tensor<f32>
}

// The loss averaged over ranks in the gradients' bucket, and the gradient
// also summed (was refused: "reaches both the loss and a gradient").
func.func @bucket_loss(%w: tensor<f32> {gacc.param},
    %x: tensor<4xf32> {gacc.batch = 0 : i64},
    %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}, tensor<f32> {gacc.metric}, tensor<f32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  %wd = arith.constant dense<0.1> : tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%w, %x, %y : tensor<f32>, tensor<4xf32>, tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%wv: f32, %xv: f32, %yv: f32, %o: f32):
    %p = arith.mulf %wv, %xv : f32
    %d = arith.subf %p, %yv : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = arith.mulf %s, %inv_b : tensor<f32>
  %dr = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%r, %inv_b : tensor<4xf32>, tensor<f32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%rv: f32, %ds: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %t = arith.mulf %two, %rv : f32
    %d = arith.mulf %t, %ds : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %gw = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%dr, %x : tensor<4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%dv: f32, %xv: f32, %acc: f32):
    %p = arith.mulf %dv, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %g = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
  %gs = shard.all_reduce %gw on @dp grid_axes = [0] reduction = sum : tensor<f32> -> tensor<f32>
  %ls = shard.all_reduce %loss on @dp grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
  return %loss, %g, %gs, %ls : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

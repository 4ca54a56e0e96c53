// RUN: gacc-opt %s --split-input-file --gacc-pipeline="micro-batches=2" | FileCheck %s
// An all-reduce of another all-reduce's result (found by a review: the
// inner one was bucketed and erased while the outer one still packed it, a
// crash). The inner one joins a bucket; the outer one stays where it was
// and reduces the inner one's view.

// A hierarchical all-reduce: within a node (axis 1), then across nodes.
// CHECK-LABEL: func.func @hierarchical
// CHECK:         gacc.micro_batch 1
// CHECK:         %[[RED:.*]] = shard.all_reduce %{{.*}} on @dp grid_axes = [1] reduction = average {gacc.bucket = 0 : i64
// CHECK:         %[[VIEW:.*]] = tensor.extract_slice %[[RED]][0] [1] [1]
// CHECK:         %[[G:.*]] = tensor.collapse_shape %[[VIEW]]
// CHECK:         %[[OUTER:.*]] = shard.all_reduce %[[G]] on @dp grid_axes = [0] reduction = average : tensor<f32> -> tensor<f32>
// CHECK:         return %{{.*}}, %[[OUTER]]

shard.grid @dp(shape = 2x?) {sym_visibility = "private"}
func.func @hierarchical(%w: tensor<f32> {gacc.param},
                      %x: tensor<4xf32> {gacc.batch = 0 : i64},
                      %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>

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

  %g0 = shard.all_reduce %gw on @dp grid_axes = [1] reduction = average
         : tensor<f32> -> tensor<f32>
  %g = shard.all_reduce %g0 on @dp grid_axes = [0] reduction = average
         : tensor<f32> -> tensor<f32>
  return %loss, %g : tensor<f32>, tensor<f32>
}

// -----

// The averaged gradient also summed over the same axis, as a metric.
// CHECK-LABEL: func.func @nested
// CHECK:         %[[RED:.*]] = shard.all_reduce %{{.*}} reduction = average {gacc.bucket = 0 : i64
// CHECK:         %[[VIEW:.*]] = tensor.extract_slice %[[RED]][0] [1] [1]
// CHECK:         %[[G:.*]] = tensor.collapse_shape %[[VIEW]]
// CHECK:         %[[SUM:.*]] = shard.all_reduce %[[G]] on @dp grid_axes = [0] : tensor<f32> -> tensor<f32>
// CHECK:         return %{{.*}}, %[[G]], %[[SUM]]

shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @nested(%w: tensor<f32> {gacc.param},
                      %x: tensor<4xf32> {gacc.batch = 0 : i64},
                      %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}, tensor<f32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>

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

  %g = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average
         : tensor<f32> -> tensor<f32>
  %gg = shard.all_reduce %g on @dp grid_axes = [0] reduction = sum
         : tensor<f32> -> tensor<f32>
  return %loss, %g, %gg : tensor<f32>, tensor<f32>, tensor<f32>
}

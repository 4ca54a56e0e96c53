// RUN: gacc-opt %s --split-input-file --gacc-pipeline="micro-batches=2 loss-scale=dynamic" | FileCheck %s --check-prefix=DYN
// RUN: gacc-opt %s --split-input-file --gacc-pipeline="micro-batches=2 loss-scale=static=1024" | FileCheck %s --check-prefix=STATIC
// RUN: gacc-opt %s --split-input-file --gacc-pipeline="micro-batches=2 loss-scale=dynamic loss-scale-growth-factor=4.0 loss-scale-backoff-factor=0.25 loss-scale-growth-interval=10" | FileCheck %s --check-prefix=KNOBS
// RUN: not gacc-opt %s --split-input-file --gacc-pipeline="loss-scale=bogus" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not gacc-opt %s --split-input-file --gacc-pipeline="loss-scale=static=abc" 2>&1 | FileCheck %s --check-prefix=BADS
// RUN: not gacc-opt %s --split-input-file --gacc-pipeline="loss-scale=dynamic loss-scale-backoff-factor=2.0" 2>&1 | FileCheck %s --check-prefix=BADK

// BAD: error: unknown loss-scale='bogus' (expected none, static, static=S or dynamic)
// BADS: error: expected a number in loss-scale=static=S, got 'abc'
// BADK: error: expected loss-scale-growth-factor > 1, loss-scale-backoff-factor in (0, 1) and loss-scale-growth-interval >= 1

// The reference example with SGD inside the step: w' = w - lr * g.
// dynamic: the scale and growth tracker are appended as state; each region
// scales its gradient contribution (the input of the contraction), the
// bucket is all-reduced scaled, the gradient is unscaled once after it (the
// all-reduce's result, read back from the bucket), one
// found-inf flag is reduced with max across ranks, the update keeps the old
// parameter on overflow and the scale is updated.

// DYN-LABEL: func.func @sgd
// DYN-SAME:    %[[W:[^:]*]]: tensor<f32> {gacc.param}
// DYN-SAME:    %[[LR:[^:]*]]: tensor<f32> {gacc.state}
// DYN-SAME:    %[[SCALE:[^:]*]]: tensor<f32> {gacc.state}, %[[TRACKER:[^:]*]]: tensor<i64> {gacc.state})
// DYN-SAME:    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}, tensor<f32> {gacc.param_out = 0 : i64}, tensor<f32> {gacc.state_out = 4 : i64}, tensor<i64> {gacc.state_out = 5 : i64})
// DYN:         %[[INV:.*]] = linalg.generic {{.*}} ins(%[[SCALE]] : tensor<f32>)
// DYN:           arith.divf
// DYN:         gacc.micro_batch 0
// DYN:           %[[SEED0:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[SCALE]] : tensor<2xf32>, tensor<f32>)
// DYN-NEXT:        ^bb0
// DYN-NEXT:          arith.mulf
// DYN:           linalg.generic {{.*}} ins(%[[SEED0]], %{{.*}} : tensor<2xf32>, tensor<2xf32>) {{.*}} attrs = {gacc.partial}
// DYN:         gacc.micro_batch 1
// DYN:           %[[SEED1:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[SCALE]] : tensor<2xf32>, tensor<f32>)
// DYN-NEXT:        ^bb0
// DYN-NEXT:          arith.mulf
// DYN:           linalg.generic {{.*}} ins(%[[SEED1]], %{{.*}} : tensor<2xf32>, tensor<2xf32>) {{.*}} attrs = {gacc.partial}
// The loss partial is not scaled.
// DYN-NOT:     %[[SCALE]]
// DYN:         %[[RED:.*]] = shard.all_reduce %{{.*}} reduction = average {gacc.bucket = 0 : i64, gacc.overlap}
// DYN:         %[[VIEW:.*]] = tensor.extract_slice %[[RED]][0] [1] [1]
// DYN:         %[[GR:.*]] = tensor.collapse_shape %[[VIEW]]
// DYN:         %[[G:.*]] = linalg.generic {{.*}} ins(%[[GR]], %[[INV]] : tensor<f32>, tensor<f32>)
// DYN:           arith.mulf
// DYN:         %[[FLAG:.*]] = linalg.generic {{.*}} iterator_types = []} ins(%[[G]] : tensor<f32>)
// DYN:           arith.cmpf uno
// DYN:           math.absf
// DYN:           arith.cmpf oeq
// DYN:         %[[FLAGR:.*]] = shard.all_reduce %[[FLAG]] on @dp grid_axes = [0] reduction = max : tensor<f32> -> tensor<f32>
// DYN:         %[[NEWW:.*]] = linalg.generic {{.*}} ins(%[[W]], %{{.*}}, %[[FLAGR]] : tensor<f32>, tensor<f32>, tensor<f32>)
// DYN:           arith.cmpf ogt
// DYN:           arith.select
// DYN:         %[[UPD:.*]]:2 = linalg.generic {{.*}} ins(%[[SCALE]], %[[TRACKER]], %[[FLAGR]] : tensor<f32>, tensor<i64>, tensor<f32>)
// DYN:           arith.constant 5.000000e-01 : f32
// DYN:           arith.constant 2000 : i64
// DYN:           arith.constant 2.000000e+00 : f32
// DYN:         return %{{.*}}, %{{.*}}, %[[NEWW]], %[[UPD]]#0, %[[UPD]]#1

// static=S: a constant scale, the same guard, no state added.
// STATIC-LABEL: func.func @sgd
// STATIC-SAME:    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}, tensor<f32> {gacc.param_out = 0 : i64})
// STATIC:         %[[S:.*]] = arith.constant dense<1.024000e+03> : tensor<f32>
// STATIC:         gacc.micro_batch 0
// STATIC:           linalg.generic {{.*}} ins(%{{.*}}, %[[S]] : tensor<2xf32>, tensor<f32>)
// STATIC:         shard.all_reduce %{{.*}} reduction = max
// STATIC:         arith.select
// STATIC:         return

// KNOBS-LABEL: func.func @sgd
// KNOBS:         arith.constant 2.500000e-01 : f32
// KNOBS:         arith.constant 10 : i64
// KNOBS:         arith.constant 4.000000e+00 : f32

shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @sgd(%w: tensor<f32> {gacc.param},
               %x: tensor<4xf32> {gacc.batch = 0 : i64},
               %y: tensor<4xf32> {gacc.batch = 0 : i64},
               %lr: tensor<f32> {gacc.state})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64},
        tensor<f32> {gacc.param_out = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%w, %x, %y : tensor<f32>, tensor<4xf32>, tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %d = arith.subf %m, %c : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %q = arith.mulf %a, %a : f32
    %t = arith.addf %o, %q : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %loss = arith.mulf %s, %inv_b : tensor<f32>
  %seed = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%r, %inv_b : tensor<4xf32>, tensor<f32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %two : f32
    %n = arith.mulf %m, %b : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  %gw = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%seed, %x : tensor<4xf32>, tensor<4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %o, %m : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %g = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average
         : tensor<f32> -> tensor<f32>
  %step = arith.mulf %lr, %g : tensor<f32>
  %w2 = arith.subf %w, %step : tensor<f32>
  return %loss, %g, %w2 : tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// A single-rank step (no collective): a plain sum of an input has that
// input scaled, the gradient is unscaled right
// after the final region and the flag needs no all-reduce.
// DYN-LABEL: func.func @local
// DYN-SAME:    %[[SC:[^:]*]]: tensor<f32> {gacc.state}
// DYN:         gacc.micro_batch 1
// DYN:           %[[X:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[SC]] : tensor<2xf32>, tensor<f32>)
// DYN:           linalg.generic {{.*}} ins(%[[X]] : tensor<2xf32>) {{.*}} attrs = {gacc.partial}
// DYN:         %[[G:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>)
// DYN:           arith.mulf
// DYN-NOT:     shard.all_reduce
// DYN:         return
func.func @local(%w: tensor<f32> {gacc.param},
                 %x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%w, %x : tensor<f32>, tensor<4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %o, %m : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %gw = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%b: f32, %o: f32):
    %t = arith.addf %o, %b : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %s, %gw : tensor<f32>, tensor<f32>
}

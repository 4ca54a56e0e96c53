// schedule-step.mlir with the schedule written with scf.while (the decay
// loop), scf.index_switch (the warm-up: t = 0 halves, t = 1 keeps, which
// is (t + 1) / 2 there) and scf.execute_region (test/Check/schedule.test):
//   k   = min(t, 4)
//   lr' = lr * 0.5^k * (t < 2 ? (t + 1) / 2 : 1)
//   w'  = w - lr' * g,  t' = t + 1
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @sgd(%w: tensor<f32> {gacc.param},
               %x: tensor<4xf32> {gacc.batch = 0 : i64},
               %y: tensor<4xf32> {gacc.batch = 0 : i64},
               %lr: tensor<f32> {gacc.state},
               %t: tensor<i64> {gacc.state})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.param_out = 0 : i64},
        tensor<i64> {gacc.state_out = 4 : i64}) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %half = arith.constant 0.5 : f32
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
    %u = arith.addf %o, %q : f32
    linalg.yield %u : f32
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
    %u = arith.addf %o, %m : f32
    linalg.yield %u : f32
  } -> tensor<f32>
  %g = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average
         : tensor<f32> -> tensor<f32>

  // The schedule, on the state only.
  %tv = tensor.extract %t[] : tensor<i64>
  %ti = arith.index_cast %tv : i64 to index
  %k = affine.min affine_map<(d0) -> (d0, 4)>(%ti)
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %lr0 = tensor.extract %lr[] : tensor<f32>
  %decayed:2 = scf.while (%v = %lr0, %j = %c0) : (f32, index) -> (f32, index) {
    %more = arith.cmpi slt, %j, %k : index
    scf.condition(%more) %v, %j : f32, index
  } do {
  ^bb0(%v2: f32, %j2: index):
    %n = arith.mulf %v2, %half : f32
    %j3 = arith.addi %j2, %c1 : index
    scf.yield %n, %j3 : f32, index
  }
  %sel = arith.index_cast %tv : i64 to index
  %lr1 = scf.index_switch %sel -> f32
  case 0 {
    %w0 = arith.mulf %decayed#0, %half : f32
    scf.yield %w0 : f32
  }
  case 1 {
    scf.yield %decayed#0 : f32
  }
  default {
    scf.yield %decayed#0 : f32
  }
  %lrt = scf.execute_region -> tensor<f32> {
    %e = tensor.from_elements %lr1 : tensor<f32>
    scf.yield %e : tensor<f32>
  }
  %step = arith.mulf %lrt, %g : tensor<f32>
  %w2 = arith.subf %w, %step : tensor<f32>
  %one = arith.constant dense<1> : tensor<i64>
  %tn = arith.addi %t, %one : tensor<i64>
  return %loss, %w2, %tn : tensor<f32>, tensor<f32>, tensor<i64>
}

// The reference example with SGD inside the step (w' = w - lr * g, lr a
// state argument), for the loss-scale checks (test/Check/loss-scale.test).
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

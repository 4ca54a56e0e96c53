// A step that divides by a batch input (a per-sample count n): q = x / n,
// loss = w * mean(q), its gradient mean(q), and q as a metric. An n of 0,
// or x = INT_MIN with n = -1, is undefined behaviour at the arith.divsi.
func.func @train_step(%w: tensor<f32> {gacc.param},
    %x: tensor<4xi32> {gacc.batch = 0 : i64},
    %n: tensor<4xi32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64},
        tensor<4xi32> {gacc.metric}) {
  %e = tensor.empty() : tensor<4xi32>
  %q = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%x, %n : tensor<4xi32>, tensor<4xi32>) outs(%e : tensor<4xi32>) {
  ^bb0(%a: i32, %b: i32, %o: i32):
    %r = arith.divsi %a, %b : i32
    linalg.yield %r : i32
  } -> tensor<4xi32>
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%q : tensor<4xi32>) outs(%z : tensor<f32>) {
  ^bb0(%a: i32, %acc: f32):
    %f = arith.sitofp %a : i32 to f32
    %t = arith.addf %acc, %f : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %quarter = arith.constant dense<0.25> : tensor<f32>
  %g = arith.mulf %s, %quarter : tensor<f32>
  %loss = arith.mulf %w, %g : tensor<f32>
  return %loss, %g, %q : tensor<f32>, tensor<f32>, tensor<4xi32>
}

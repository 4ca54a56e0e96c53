// Reads sample 0 of a per-sample tensor with a constant index from every
// sample's work: not splittable (a micro-batch other than the first does not
// hold sample 0), must be refused.
func.func @train_step(%w: tensor<3xf32> {gacc.param},
                      %x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<4x3xf32>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %w : tensor<4x3xf32>, tensor<3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %j = linalg.index 1 : index
    %first = tensor.extract %x[%c0, %j] : tensor<4x3xf32>
    %m = arith.mulf %a, %b : f32
    %r = arith.mulf %m, %first : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%y : tensor<4x3xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e3 = tensor.empty() : tensor<3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %dw = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<4x3xf32>) outs(%z3 : tensor<3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %j = linalg.index 1 : index
    %first = tensor.extract %x[%c0, %j] : tensor<4x3xf32>
    %m = arith.mulf %a, %first : f32
    %r = arith.addf %m, %o : f32
    linalg.yield %r : f32
  } -> tensor<3xf32>
  return %loss, %dw : tensor<f32>, tensor<3xf32>
}

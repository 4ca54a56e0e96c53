// aten.upsample_nearest2d (scale 2) as torch-mlir lowers it: a generic over
// the output whose payload gathers tensor.extract %x[n, c, h / 2, w / 2] from
// the captured per-sample input, then loss = sum(up * w) / B.
func.func @train_step(%w: tensor<4x4xf32> {gacc.param},
                      %x: tensor<4x2x2x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4x4xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %invb = arith.constant 0.25 : f32
  %c2 = arith.constant 2 : index
  %e = tensor.empty() : tensor<4x2x4x4xf32>
  %up = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%e : tensor<4x2x4x4xf32>) {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %h = arith.divui %i2, %c2 : index
    %w2 = arith.divui %i3, %c2 : index
    %v = tensor.extract %x[%i0, %i1, %h, %w2] : tensor<4x2x2x2xf32>
    linalg.yield %v : f32
  } -> tensor<4x2x4x4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> ()>], iterator_types = ["reduction", "reduction", "reduction", "reduction"]} ins(%up, %w : tensor<4x2x4x4xf32>, tensor<4x4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.mulf %m, %invb : f32
    %r = arith.addf %s, %o : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e44 = tensor.empty() : tensor<4x4xf32>
  %z44 = linalg.fill ins(%zero : f32) outs(%e44 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %dw = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>], iterator_types = ["reduction", "reduction", "parallel", "parallel"]} ins(%up : tensor<4x2x4x4xf32>) outs(%z44 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %invb : f32
    %r = arith.addf %s, %o : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  return %loss, %dw : tensor<f32>, tensor<4x4xf32>
}

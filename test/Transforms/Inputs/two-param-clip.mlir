// Two parameters with a global-norm clip over both gradients (PyTorch's
// clip_grad_norm_ over a model): norm^2 = sum(gw^2) + sum(gb^2), then SGD
// on the clipped gradients. B = 4. For gacc-shard-optimizer-state tests.
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @clip2(%w: tensor<2x3xf32> {gacc.param}, %b: tensor<3xf32> {gacc.param},
                 %x: tensor<4x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<2x3xf32> {gacc.param_out = 0 : i64},
        tensor<3xf32> {gacc.param_out = 1 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.reduce ins(%x : tensor<4x2xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %e23 = tensor.empty() : tensor<2x3xf32>
  %f23 = linalg.fill ins(%zero : f32) outs(%e23 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %gw = linalg.generic {indexing_maps = [affine_map<(n, i, j) -> (n, i)>, affine_map<(n, i, j) -> (i, j)>, affine_map<(n, i, j) -> (i, j)>],
                        iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %w : tensor<4x2xf32>, tensor<2x3xf32>) outs(%f23 : tensor<2x3xf32>) {
    ^bb0(%xv: f32, %wv: f32, %acc: f32):
      %p = arith.mulf %xv, %wv : f32
      %0 = arith.addf %acc, %p : f32
      linalg.yield %0 : f32
  } -> tensor<2x3xf32>
  %e3 = tensor.empty() : tensor<3xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %gb = linalg.generic {indexing_maps = [affine_map<(n, j) -> (n, 0)>, affine_map<(n, j) -> (j)>, affine_map<(n, j) -> (j)>],
                        iterator_types = ["reduction", "parallel"]}
      ins(%x, %b : tensor<4x2xf32>, tensor<3xf32>) outs(%f3 : tensor<3xf32>) {
    ^bb0(%xv: f32, %bv: f32, %acc: f32):
      %p = arith.mulf %xv, %bv : f32
      %0 = arith.addf %acc, %p : f32
      linalg.yield %0 : f32
  } -> tensor<3xf32>
  %gwa = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average : tensor<2x3xf32> -> tensor<2x3xf32>
  %gba = shard.all_reduce %gb on @dp grid_axes = [0] reduction = average : tensor<3xf32> -> tensor<3xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %sw = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
                        iterator_types = ["reduction", "reduction"]}
      ins(%gwa : tensor<2x3xf32>) outs(%f0 : tensor<f32>) {
    ^bb0(%g: f32, %acc: f32):
      %q = arith.mulf %g, %g : f32
      %0 = arith.addf %acc, %q : f32
      linalg.yield %0 : f32
  } -> tensor<f32>
  %sb = linalg.generic {indexing_maps = [affine_map<(j) -> (j)>, affine_map<(j) -> ()>],
                        iterator_types = ["reduction"]}
      ins(%gba : tensor<3xf32>) outs(%f0 : tensor<f32>) {
    ^bb0(%g: f32, %acc: f32):
      %q = arith.mulf %g, %g : f32
      %0 = arith.addf %acc, %q : f32
      linalg.yield %0 : f32
  } -> tensor<f32>
  %norm2 = arith.addf %sw, %sb : tensor<f32>
  %norm = math.sqrt %norm2 : tensor<f32>
  %eps = arith.constant dense<1.0e-6> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %den = arith.addf %norm, %eps : tensor<f32>
  %coef = arith.divf %one, %den : tensor<f32>
  %scale = arith.minimumf %coef, %one : tensor<f32>
  %wo = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>, affine_map<(i, j) -> (i, j)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%w, %gwa, %scale : tensor<2x3xf32>, tensor<2x3xf32>, tensor<f32>) outs(%e23 : tensor<2x3xf32>) {
    ^bb0(%wv: f32, %g: f32, %s: f32, %o: f32):
      %lr = arith.constant 0.1 : f32
      %a = arith.mulf %g, %s : f32
      %c = arith.mulf %a, %lr : f32
      %0 = arith.subf %wv, %c : f32
      linalg.yield %0 : f32
  } -> tensor<2x3xf32>
  %bo = linalg.generic {indexing_maps = [affine_map<(j) -> (j)>, affine_map<(j) -> (j)>, affine_map<(j) -> ()>, affine_map<(j) -> (j)>],
                        iterator_types = ["parallel"]}
      ins(%b, %gba, %scale : tensor<3xf32>, tensor<3xf32>, tensor<f32>) outs(%e3 : tensor<3xf32>) {
    ^bb0(%bv: f32, %g: f32, %s: f32, %o: f32):
      %lr = arith.constant 0.1 : f32
      %a = arith.mulf %g, %s : f32
      %c = arith.mulf %a, %lr : f32
      %0 = arith.subf %bv, %c : f32
      linalg.yield %0 : f32
  } -> tensor<3xf32>
  return %loss, %wo, %bo : tensor<f32>, tensor<2x3xf32>, tensor<3xf32>
}

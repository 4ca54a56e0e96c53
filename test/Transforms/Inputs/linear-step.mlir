// A linear layer step y = x W + b with squared loss: the weight gradient is a
// matmul contracting over samples, the bias gradient a linalg.generic sum,
// both averaged over data-parallel ranks. B = 8. Used by several tests.
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @linear(%w: tensor<3x2xf32> {gacc.param}, %b: tensor<2xf32> {gacc.param},
                  %x: tensor<8x3xf32> {gacc.batch = 0 : i64}, %y: tensor<8x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3x2xf32> {gacc.grad = 0 : i64}, tensor<2xf32> {gacc.grad = 1 : i64}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.125> : tensor<f32>
  %e82 = tensor.empty() : tensor<8x2xf32>
  %f82 = linalg.fill ins(%zero : f32) outs(%e82 : tensor<8x2xf32>) -> tensor<8x2xf32>
  %xw = linalg.matmul ins(%x, %w : tensor<8x3xf32>, tensor<3x2xf32>) outs(%f82 : tensor<8x2xf32>) -> tensor<8x2xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                                        affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%xw, %b, %y : tensor<8x2xf32>, tensor<2xf32>, tensor<8x2xf32>) outs(%e82 : tensor<8x2xf32>) {
    ^bb0(%a: f32, %bb: f32, %t: f32, %out: f32):
      %0 = arith.addf %a, %bb : f32
      %1 = arith.subf %0, %t : f32
      linalg.yield %1 : f32
  } -> tensor<8x2xf32>
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%r : tensor<8x2xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %sq = arith.mulf %in, %in : f32
      %0 = arith.addf %acc, %sq : f32
      linalg.yield %0 : f32
    }
  %loss = arith.mulf %s, %inv_b : tensor<f32>
  %dr = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<8x2xf32>) outs(%e82 : tensor<8x2xf32>) {
    ^bb0(%in: f32, %out: f32):
      %c = arith.constant 0.25 : f32
      %0 = arith.mulf %in, %c : f32
      linalg.yield %0 : f32
  } -> tensor<8x2xf32>
  %e38 = tensor.empty() : tensor<3x8xf32>
  %xt = linalg.transpose ins(%x : tensor<8x3xf32>) outs(%e38 : tensor<3x8xf32>) permutation = [1, 0]
  %e32 = tensor.empty() : tensor<3x2xf32>
  %f32 = linalg.fill ins(%zero : f32) outs(%e32 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %gw = linalg.matmul ins(%xt, %dr : tensor<3x8xf32>, tensor<8x2xf32>) outs(%f32 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %e2 = tensor.empty() : tensor<2xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  %gb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                        iterator_types = ["reduction", "parallel"]}
      ins(%dr : tensor<8x2xf32>) outs(%f2 : tensor<2xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
  } -> tensor<2xf32>
  %gw_avg = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average : tensor<3x2xf32> -> tensor<3x2xf32>
  %gb_avg = shard.all_reduce %gb on @dp grid_axes = [0] reduction = average : tensor<2xf32> -> tensor<2xf32>
  return %loss, %gw_avg, %gb_avg : tensor<f32>, tensor<3x2xf32>, tensor<2xf32>
}

// A step whose loss adds the largest squared error of the batch (a full
// max-reduction over samples and outputs) to the mean squared error. B = 8.
func.func @max_loss(%w: tensor<3x2xf32> {gacc.param}, %x: tensor<8x3xf32> {gacc.batch = 0 : i64},
                    %y: tensor<8x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3x2xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e82 = tensor.empty() : tensor<8x2xf32>
  %f82 = linalg.fill ins(%zero : f32) outs(%e82 : tensor<8x2xf32>) -> tensor<8x2xf32>
  %xw = linalg.matmul ins(%x, %w : tensor<8x3xf32>, tensor<3x2xf32>) outs(%f82 : tensor<8x2xf32>) -> tensor<8x2xf32>
  %r = linalg.sub ins(%xw, %y : tensor<8x2xf32>, tensor<8x2xf32>) outs(%e82 : tensor<8x2xf32>) -> tensor<8x2xf32>
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %m = linalg.reduce ins(%r : tensor<8x2xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %sq = arith.mulf %in, %in : f32
      %0 = arith.maximumf %acc, %sq : f32
      linalg.yield %0 : f32
    }
  %e38 = tensor.empty() : tensor<3x8xf32>
  %xt = linalg.transpose ins(%x : tensor<8x3xf32>) outs(%e38 : tensor<3x8xf32>) permutation = [1, 0]
  %e32 = tensor.empty() : tensor<3x2xf32>
  %f32 = linalg.fill ins(%zero : f32) outs(%e32 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %gw = linalg.matmul ins(%xt, %r : tensor<3x8xf32>, tensor<8x2xf32>) outs(%f32 : tensor<3x2xf32>) -> tensor<3x2xf32>
  return %m, %gw : tensor<f32>, tensor<3x2xf32>
}

// Tied weights: one parameter used twice (linear autoencoder whose decoder is
// the transposed encoder), one gradient step, B = 4.
//
// Arguments:
//   0  %E : tensor<3x3xf32> {gacc.param}
//   1  %x : tensor<4x3xf32> {gacc.batch = 0}
// Results:
//   0  loss : tensor<f32>     {gacc.loss}
//   1  dE   : tensor<3x3xf32> {gacc.grad = 0}   (data-parallel average)
//
// Forward:   h  = x E                       (encoder)
//            xr = h E^T                     (decoder, linalg.transpose of E)
//            r  = xr - x
//            loss = (1/B) sum_{i,j} r_ij^2  (1/B = 0.25)
// Backward:  dxr = 2 r / B
//            dE_dec = dxr^T h               (from xr = h E^T: dE[j,k] = sum_i dxr[i,j] h[i,k])
//            dh     = dxr E
//            dE_enc = x^T dh
//            dE = all_reduce(dE_dec + dE_enc, average)
//   Both contributions are reductions over samples (matmuls contracting over
//   the sample dim); their sum is an epilogue addition of two partials.

shard.grid @dp(shape = ?) {sym_visibility = "private"}

func.func @train_step(%E: tensor<3x3xf32> {gacc.param},
                      %x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3x3xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>

  // ================= forward =================
  %e43 = tensor.empty() : tensor<4x3xf32>
  %z43a = linalg.fill ins(%zero : f32) outs(%e43 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %h = linalg.matmul ins(%x, %E : tensor<4x3xf32>, tensor<3x3xf32>)
                     outs(%z43a : tensor<4x3xf32>) -> tensor<4x3xf32>
  %e33 = tensor.empty() : tensor<3x3xf32>
  %ET = linalg.transpose ins(%E : tensor<3x3xf32>) outs(%e33 : tensor<3x3xf32>) permutation = [1, 0]
  %z43b = linalg.fill ins(%zero : f32) outs(%e43 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %xr = linalg.matmul ins(%h, %ET : tensor<4x3xf32>, tensor<3x3xf32>)
                      outs(%z43b : tensor<4x3xf32>) -> tensor<4x3xf32>
  // r = xr - x
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%xr, %x : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x3xf32>
  // loss = (1/B) sum r^2
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%r : tensor<4x3xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = arith.mulf %s, %inv_b : tensor<f32>

  // ================= backward =================
  // dxr = 2 r / B
  %dxr = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%r, %inv_b : tensor<4x3xf32>, tensor<f32>) outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%rv: f32, %ib: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %t = arith.mulf %two, %rv : f32
    %d = arith.mulf %t, %ib : f32
    linalg.yield %d : f32
  } -> tensor<4x3xf32>
  // decoder use: dE_dec = dxr^T h
  %e34 = tensor.empty() : tensor<3x4xf32>
  %dxrT = linalg.transpose ins(%dxr : tensor<4x3xf32>) outs(%e34 : tensor<3x4xf32>) permutation = [1, 0]
  %z33a = linalg.fill ins(%zero : f32) outs(%e33 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %dEdec = linalg.matmul ins(%dxrT, %h : tensor<3x4xf32>, tensor<4x3xf32>)
                         outs(%z33a : tensor<3x3xf32>) -> tensor<3x3xf32>
  // dh = dxr E   (d(h E^T)/dh = E)
  %z43c = linalg.fill ins(%zero : f32) outs(%e43 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %dh = linalg.matmul ins(%dxr, %E : tensor<4x3xf32>, tensor<3x3xf32>)
                      outs(%z43c : tensor<4x3xf32>) -> tensor<4x3xf32>
  // encoder use: dE_enc = x^T dh
  %xT = linalg.transpose ins(%x : tensor<4x3xf32>) outs(%e34 : tensor<3x4xf32>) permutation = [1, 0]
  %z33b = linalg.fill ins(%zero : f32) outs(%e33 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %dEenc = linalg.matmul ins(%xT, %dh : tensor<3x4xf32>, tensor<4x3xf32>)
                         outs(%z33b : tensor<3x3xf32>) -> tensor<3x3xf32>
  // dE = dE_dec + dE_enc
  %dE = arith.addf %dEdec, %dEenc : tensor<3x3xf32>

  // ================= data-parallel sync =================
  %g = shard.all_reduce %dE on @dp grid_axes = [0] reduction = average
         : tensor<3x3xf32> -> tensor<3x3xf32>
  return %loss, %g : tensor<f32>, tensor<3x3xf32>
}

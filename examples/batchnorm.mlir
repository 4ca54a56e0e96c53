// BatchNorm-style batch statistic after a parameterized layer (mean
// subtraction over the batch), one gradient step, B = 4. EXPECTED TO BE
// REJECTED by gacc: mu is a partial (reduction over samples) that depends on
// the parameter W and flows back into per-sample work (zhat = z - mu), so
// micro-batching changes the result (unless allow-micro-batch-statistics).
//
// Arguments:
//   0  %W : tensor<3x3xf32> {gacc.param}
//   1  %x : tensor<4x3xf32> {gacc.batch = 0}   inputs
//   2  %y : tensor<4x3xf32> {gacc.batch = 0}   targets (make the mean term matter)
// Results:
//   0  loss : tensor<f32>     {gacc.loss}
//   1  dW   : tensor<3x3xf32> {gacc.grad = 0}
//
// Forward:   z = x W                             (per sample)
//            mu_j = (1/B) sum_i z_ij             (batch statistic, depends on W)
//            zhat = z - mu                       (batch statistic -> per-sample work)
//            r = zhat - y
//            loss = (1/B) sum_{i,j} r_ij^2       (1/B = 0.25)
// Backward:  dzhat = 2 r / B
//            dz_ij = dzhat_ij - (1/B) sum_i' dzhat_i'j   (mean-subtraction term)
//            dW = x^T dz                         (linalg.transpose + matmul)

func.func @train_step(%W: tensor<3x3xf32> {gacc.param},
                      %x: tensor<4x3xf32> {gacc.batch = 0 : i64},
                      %y: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3x3xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>

  // ================= forward =================
  %e43 = tensor.empty() : tensor<4x3xf32>
  %z43 = linalg.fill ins(%zero : f32) outs(%e43 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %z = linalg.matmul ins(%x, %W : tensor<4x3xf32>, tensor<3x3xf32>)
                     outs(%z43 : tensor<4x3xf32>) -> tensor<4x3xf32>

  // zsum_j = sum_i z_ij   (reduction over samples; depends on W)
  %e3 = tensor.empty() : tensor<3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %zsum = linalg.reduce ins(%z : tensor<4x3xf32>) outs(%z3 : tensor<3xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s = arith.addf %init, %in : f32
      linalg.yield %s : f32
    }
  // r = (z - zsum / B) - y
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%z, %zsum, %inv_b, %y : tensor<4x3xf32>, tensor<3xf32>, tensor<f32>, tensor<4x3xf32>)
      outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%zv: f32, %sv: f32, %ib: f32, %yv: f32, %o: f32):
    %mu = arith.mulf %sv, %ib : f32
    %zh = arith.subf %zv, %mu : f32
    %d = arith.subf %zh, %yv : f32
    linalg.yield %d : f32
  } -> tensor<4x3xf32>

  // loss = (1/B) sum_{i,j} r^2
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
  // dzhat = 2 r / B
  %dzhat = linalg.generic {
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
  // dsum_j = sum_i dzhat_ij   (reduction over samples)
  %z3b = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %dsum = linalg.reduce ins(%dzhat : tensor<4x3xf32>) outs(%z3b : tensor<3xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s2 = arith.addf %init, %in : f32
      linalg.yield %s2 : f32
    }
  // dz = dzhat - dsum / B
  %dz = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%dzhat, %dsum, %inv_b : tensor<4x3xf32>, tensor<3xf32>, tensor<f32>)
      outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%dv: f32, %sv: f32, %ib: f32, %o: f32):
    %m = arith.mulf %sv, %ib : f32
    %d = arith.subf %dv, %m : f32
    linalg.yield %d : f32
  } -> tensor<4x3xf32>
  // dW = x^T dz   (matmul contracting over samples)
  %e34 = tensor.empty() : tensor<3x4xf32>
  %xT = linalg.transpose ins(%x : tensor<4x3xf32>) outs(%e34 : tensor<3x4xf32>) permutation = [1, 0]
  %e33 = tensor.empty() : tensor<3x3xf32>
  %z33 = linalg.fill ins(%zero : f32) outs(%e33 : tensor<3x3xf32>) -> tensor<3x3xf32>
  %dW = linalg.matmul ins(%xT, %dz : tensor<3x4xf32>, tensor<4x3xf32>)
                      outs(%z33 : tensor<3x3xf32>) -> tensor<3x3xf32>

  return %loss, %dW : tensor<f32>, tensor<3x3xf32>
}

// A gradient that is zero in exact arithmetic: a scalar bias c added to every
// feature before a softmax over the features (softmax is shift-invariant).
//
//   v[i, d] = x[i, d] * w[d] + c
//   p[i, :] = softmax(v[i, :])   (exp(v - row max), row sum, divide)
//   loss    = (1/B) sum_i sum_d p[i, d] t[d]            (B = 4, D = 4, t fixed)
//   dp      = t / B
//   dv[i,d] = p[i, d] (dp[d] - sum_d' p[i, d'] dp[d'])
//   gw[d]   = sum_i dv[i, d] x[i, d]
//   gc      = sum_{i,d} dv[i, d]          (0 in exact arithmetic)
//
// gc is float64 rounding noise in the graph and in LibTorch autograd (which
// differentiates the max, the exp and the division instead), and the two
// noises differ. gacc-check must not call this backward wrong (zero-grad.test); the
// ZERO_GRAD_BAD variant adds 1e-3 per element to gc, which it must.

func.func @train_step(%w: tensor<4xf32> {gacc.param},
                      %c: tensor<f32> {gacc.param},
                      %x: tensor<4x4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.grad = 0 : i64},
        tensor<f32> {gacc.grad = 1 : i64}) {
  %zero = arith.constant 0.0 : f32
  %t = arith.constant dense<[1.0, -2.0, 0.5, 3.0]> : tensor<4xf32>
  %e44 = tensor.empty() : tensor<4x4xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %v = linalg.generic {
      indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (d)>,
                       affine_map<(i, d) -> ()>, affine_map<(i, d) -> (i, d)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %w, %c : tensor<4x4xf32>, tensor<4xf32>, tensor<f32>)
      outs(%e44 : tensor<4x4xf32>) {
  ^bb0(%xv: f32, %wv: f32, %cv: f32, %o: f32):
    %p = arith.mulf %xv, %wv : f32
    %r = arith.addf %p, %cv : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %m0 = linalg.fill ins(%ninf : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %vmax = linalg.generic {
      indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (i)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%v : tensor<4x4xf32>) outs(%m0 : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.maximumf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %ev = linalg.generic {
      indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (i)>,
                       affine_map<(i, d) -> (i, d)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%v, %vmax : tensor<4x4xf32>, tensor<4xf32>)
      outs(%e44 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %mx: f32, %o: f32):
    %d = arith.subf %a, %mx : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  } -> tensor<4x4xf32>
  %esum = linalg.generic {
      indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (i)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%ev : tensor<4x4xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %p = linalg.generic {
      indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (i)>,
                       affine_map<(i, d) -> (i, d)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%ev, %esum : tensor<4x4xf32>, tensor<4xf32>)
      outs(%e44 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %r = arith.divf %a, %s : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %pt = linalg.generic {
      indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (d)>,
                       affine_map<(i, d) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%p, %t : tensor<4x4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  %loss = arith.mulf %pt, %inv_b : tensor<f32>

  // backward: pdp[i] = sum_d p[i, d] dp[d], dv = p (dp - pdp)
  %pdp = linalg.generic {
      indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (d)>,
                       affine_map<(i, d) -> (i)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%p, %t : tensor<4x4xf32>, tensor<4xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %quarter = arith.constant 0.25 : f32
    %dp = arith.mulf %b, %quarter : f32
    %m = arith.mulf %a, %dp : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %dv = linalg.generic {
      indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> (d)>,
                       affine_map<(i, d) -> (i)>, affine_map<(i, d) -> (i, d)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%p, %t, %pdp : tensor<4x4xf32>, tensor<4xf32>, tensor<4xf32>)
      outs(%e44 : tensor<4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %s: f32, %o: f32):
    %quarter = arith.constant 0.25 : f32
    %dp = arith.mulf %b, %quarter : f32
    %d = arith.subf %dp, %s : f32
    %r = arith.mulf %a, %d : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %gw = linalg.generic {
      indexing_maps = [affine_map<(d, i) -> (i, d)>, affine_map<(d, i) -> (i, d)>,
                       affine_map<(d, i) -> (d)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%dv, %x : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %gc = linalg.generic {
      indexing_maps = [affine_map<(i, d) -> (i, d)>, affine_map<(i, d) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%dv : tensor<4x4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %bad = arith.constant 0.0 : f32 // ZERO_GRAD_BAD
    %a2 = arith.addf %a, %bad : f32
    %s = arith.addf %acc, %a2 : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %loss, %gw, %gc : tensor<f32>, tensor<4xf32>, tensor<f32>
}

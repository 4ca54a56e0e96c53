// Linear regression with data-parallel gradient sync, global-norm gradient
// clipping and an AdamW update inside the step (PyTorch torch.optim.AdamW and
// torch.nn.utils.clip_grad_norm_ semantics), B = 8 samples, 4 features.
//
// Arguments:
//   0  %W    : tensor<4xf32>   {gacc.param}
//   1  %x    : tensor<8x4xf32> {gacc.batch = 0}
//   2  %y    : tensor<8xf32>   {gacc.batch = 0}
//   3  %m    : tensor<4xf32>   {gacc.state}   Adam first moment
//   4  %v    : tensor<4xf32>   {gacc.state}   Adam second moment
//   5  %step : tensor<f32>     {gacc.state}   number of steps already taken (0 at start)
// Results:
//   0  loss     : tensor<f32>   {gacc.loss}
//   1  W_out    : tensor<4xf32> {gacc.param_out = 0}
//   2  m_out    : tensor<4xf32> {gacc.state_out = 3}
//   3  v_out    : tensor<4xf32> {gacc.state_out = 4}
//   4  step_out : tensor<f32>   {gacc.state_out = 5}
//
// Forward:   pred_i = sum_k x_ik W_k,  r = pred - y
//            loss = (1/B) sum_i r_i^2                 (1/B = 0.125)
// Backward:  dr_i = 2 r_i / B,  gl_k = sum_i dr_i x_ik   (reduction over samples)
//            g = all_reduce(gl, average)
// Clipping:  norm = sqrt(sum_k g_k^2)
//            scale = min(1, max_norm / (norm + 1e-6)),  max_norm = 1.0
//            gc = g * scale
// AdamW:     t = step + 1 (= step_out)
//            m' = b1 m + (1 - b1) gc,  v' = b2 v + (1 - b2) gc^2
//            bc1 = 1 - b1^t,  bc2 = 1 - b2^t          (math.powf)
//            W' = W (1 - lr wd) - (lr / bc1) m' / (sqrt(v') / sqrt(bc2) + eps)
//            lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01
// All of clipping and AdamW depends on the combined gradient only (epilogue).

shard.grid @dp(shape = ?) {sym_visibility = "private"}

func.func @train_step(%W: tensor<4xf32> {gacc.param},
                      %x: tensor<8x4xf32> {gacc.batch = 0 : i64},
                      %y: tensor<8xf32> {gacc.batch = 0 : i64},
                      %m: tensor<4xf32> {gacc.state},
                      %v: tensor<4xf32> {gacc.state},
                      %step: tensor<f32> {gacc.state})
    -> (tensor<f32> {gacc.loss},
        tensor<4xf32> {gacc.param_out = 0 : i64},
        tensor<4xf32> {gacc.state_out = 3 : i64},
        tensor<4xf32> {gacc.state_out = 4 : i64},
        tensor<f32> {gacc.state_out = 5 : i64}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.125> : tensor<f32>

  // ================= forward =================
  // pred_i = sum_k x_ik W_k   (per-sample reduction over features)
  %e8 = tensor.empty() : tensor<8xf32>
  %z8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %pred = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x, %W : tensor<8x4xf32>, tensor<4xf32>) outs(%z8 : tensor<8xf32>) {
  ^bb0(%xv: f32, %wv: f32, %acc: f32):
    %p = arith.mulf %xv, %wv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>
  %r = arith.subf %pred, %y : tensor<8xf32>
  // loss = (1/B) sum_i r_i^2
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r : tensor<8xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = arith.mulf %s, %inv_b : tensor<f32>

  // ================= backward =================
  // gl_k = sum_i (2 r_i / B) x_ik   (reduction over samples)
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %gl = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> ()>,
                       affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
      iterator_types = ["reduction", "parallel"]}
      ins(%r, %inv_b, %x : tensor<8xf32>, tensor<f32>, tensor<8x4xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%rv: f32, %ib: f32, %xv: f32, %acc: f32):
    %two = arith.constant 2.0 : f32
    %t = arith.mulf %two, %rv : f32
    %dr = arith.mulf %t, %ib : f32
    %p = arith.mulf %dr, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>

  // ================= data-parallel sync =================
  %g = shard.all_reduce %gl on @dp grid_axes = [0] reduction = average
         : tensor<4xf32> -> tensor<4xf32>

  // ================= global-norm clipping =================
  %z0n = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %sq = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%g : tensor<4xf32>) outs(%z0n : tensor<f32>) {
  ^bb0(%gv: f32, %acc: f32):
    %q = arith.mulf %gv, %gv : f32
    %a = arith.addf %acc, %q : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %norm = math.sqrt %sq : tensor<f32>
  %clip_eps = arith.constant dense<1.0e-6> : tensor<f32>
  %max_norm = arith.constant dense<1.0> : tensor<f32>
  %one_t = arith.constant dense<1.0> : tensor<f32>
  %den = arith.addf %norm, %clip_eps : tensor<f32>
  %coef = arith.divf %max_norm, %den : tensor<f32>
  %scale = arith.minimumf %coef, %one_t : tensor<f32>
  %gc = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%g, %scale : tensor<4xf32>, tensor<f32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%gv: f32, %sc: f32, %o: f32):
    %q = arith.mulf %gv, %sc : f32
    linalg.yield %q : f32
  } -> tensor<4xf32>

  // ================= AdamW =================
  %t = arith.addf %step, %one_t : tensor<f32>
  %beta1 = arith.constant dense<0.9> : tensor<f32>
  %beta2 = arith.constant dense<0.999> : tensor<f32>
  %b1t = math.powf %beta1, %t : tensor<f32>
  %b2t = math.powf %beta2, %t : tensor<f32>
  %bc1 = arith.subf %one_t, %b1t : tensor<f32>
  %bc2 = arith.subf %one_t, %b2t : tensor<f32>
  %lr_t = arith.constant dense<0.01> : tensor<f32>
  %step_size = arith.divf %lr_t, %bc1 : tensor<f32>
  %bc2_sqrt = math.sqrt %bc2 : tensor<f32>

  %m_out = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%m, %gc : tensor<4xf32>, tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%mv: f32, %gv: f32, %o: f32):
    %b1 = arith.constant 0.9 : f32
    %omb1 = arith.constant 0.1 : f32
    %a = arith.mulf %b1, %mv : f32
    %b = arith.mulf %omb1, %gv : f32
    %n = arith.addf %a, %b : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  %v_out = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%v, %gc : tensor<4xf32>, tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%vv: f32, %gv: f32, %o: f32):
    %b2 = arith.constant 0.999 : f32
    %omb2 = arith.constant 0.001 : f32
    %a = arith.mulf %b2, %vv : f32
    %g2 = arith.mulf %gv, %gv : f32
    %b = arith.mulf %omb2, %g2 : f32
    %n = arith.addf %a, %b : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  %W_out = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> ()>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%W, %m_out, %v_out, %step_size, %bc2_sqrt
          : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>)
      outs(%e4 : tensor<4xf32>) {
  ^bb0(%wv: f32, %mv: f32, %vv: f32, %ss: f32, %bs: f32, %o: f32):
    %decay = arith.constant 0.9999 : f32     // 1 - lr * wd = 1 - 0.01 * 0.01
    %eps = arith.constant 1.0e-8 : f32
    %wd = arith.mulf %wv, %decay : f32
    %sv = math.sqrt %vv : f32
    %dv = arith.divf %sv, %bs : f32
    %den2 = arith.addf %dv, %eps : f32
    %upd = arith.divf %mv, %den2 : f32
    %us = arith.mulf %ss, %upd : f32
    %n = arith.subf %wd, %us : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>

  return %loss, %W_out, %m_out, %v_out, %t
      : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>
}

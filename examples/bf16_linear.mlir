// Linear regression entirely in bf16 (no optimizer), one gradient step,
// B = 4 samples, 3 features. All arithmetic, including the reductions, is
// bf16 in the input graph; gacc's accumulate-type=f32 option is meant to keep
// the gradient accumulators in f32.
//
// Arguments:
//   0  %W : tensor<3xbf16>   {gacc.param}
//   1  %x : tensor<4x3xbf16> {gacc.batch = 0}
//   2  %y : tensor<4xbf16>   {gacc.batch = 0}
// Results:
//   0  loss : tensor<bf16>  {gacc.loss}
//   1  dW   : tensor<3xbf16> {gacc.grad = 0}   (data-parallel average)
//
// Forward:   pred_i = sum_k x_ik W_k,  r = pred - y
//            loss = (1/B) sum_i r_i^2                  (1/B = 0.25, exact in bf16)
// Backward:  dr_i = 2 r_i / B
//            dW_k = sum_i dr_i x_ik                    (reduction over samples)
//            dW = all_reduce(dW, average)
// Check case: W = 0, x = [[1,0,0],[0,1,0],[0,0,1],[1,1,1]], y = (1,2,3,4):
//   loss = (1+4+9+16)/4 = 7.5,  dW = -(2/4) * (1+4, 2+4, 3+4) = (-2.5, -3, -3.5)
//   (all exact in bf16).

shard.grid @dp(shape = ?) {sym_visibility = "private"}

func.func @train_step(%W: tensor<3xbf16> {gacc.param},
                      %x: tensor<4x3xbf16> {gacc.batch = 0 : i64},
                      %y: tensor<4xbf16> {gacc.batch = 0 : i64})
    -> (tensor<bf16> {gacc.loss}, tensor<3xbf16> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : bf16
  %inv_b = arith.constant dense<0.25> : tensor<bf16>

  // ================= forward =================
  %e4 = tensor.empty() : tensor<4xbf16>
  %z4 = linalg.fill ins(%zero : bf16) outs(%e4 : tensor<4xbf16>) -> tensor<4xbf16>
  %pred = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x, %W : tensor<4x3xbf16>, tensor<3xbf16>) outs(%z4 : tensor<4xbf16>) {
  ^bb0(%xv: bf16, %wv: bf16, %acc: bf16):
    %p = arith.mulf %xv, %wv : bf16
    %a = arith.addf %acc, %p : bf16
    linalg.yield %a : bf16
  } -> tensor<4xbf16>
  %r = arith.subf %pred, %y : tensor<4xbf16>
  %e0 = tensor.empty() : tensor<bf16>
  %z0 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<bf16>) -> tensor<bf16>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r : tensor<4xbf16>) outs(%z0 : tensor<bf16>) {
  ^bb0(%rv: bf16, %acc: bf16):
    %sq = arith.mulf %rv, %rv : bf16
    %a = arith.addf %acc, %sq : bf16
    linalg.yield %a : bf16
  } -> tensor<bf16>
  %loss = arith.mulf %s, %inv_b : tensor<bf16>

  // ================= backward =================
  %dr = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%r, %inv_b : tensor<4xbf16>, tensor<bf16>) outs(%e4 : tensor<4xbf16>) {
  ^bb0(%rv: bf16, %ib: bf16, %o: bf16):
    %two = arith.constant 2.0 : bf16
    %t = arith.mulf %two, %rv : bf16
    %d = arith.mulf %t, %ib : bf16
    linalg.yield %d : bf16
  } -> tensor<4xbf16>
  %e3 = tensor.empty() : tensor<3xbf16>
  %z3 = linalg.fill ins(%zero : bf16) outs(%e3 : tensor<3xbf16>) -> tensor<3xbf16>
  %dW = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d1)>],
      iterator_types = ["reduction", "parallel"]}
      ins(%dr, %x : tensor<4xbf16>, tensor<4x3xbf16>) outs(%z3 : tensor<3xbf16>) {
  ^bb0(%dv: bf16, %xv: bf16, %acc: bf16):
    %p = arith.mulf %dv, %xv : bf16
    %a = arith.addf %acc, %p : bf16
    linalg.yield %a : bf16
  } -> tensor<3xbf16>

  // ================= data-parallel sync =================
  %g = shard.all_reduce %dW on @dp grid_axes = [0] reduction = average
         : tensor<3xbf16> -> tensor<3xbf16>
  return %loss, %g : tensor<bf16>, tensor<3xbf16>
}

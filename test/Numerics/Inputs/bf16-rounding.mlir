// bf16 step where intermediate rounding matters: r_i = ((w*x_i + 64) - 64) - y_i
// in bf16 (the +64 / -64 loses the low bits of w*x_i). Separate generics
// (fused by the lowering) and a single body.
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%w: tensor<bf16> {gacc.param},
                      %x: tensor<8xbf16> {gacc.batch = 0 : i64},
                      %y: tensor<8xbf16> {gacc.batch = 0 : i64})
    -> (tensor<bf16> {gacc.loss}, tensor<bf16> {gacc.grad = 0 : i64}, tensor<8xbf16> {gacc.metric}) {
  %zero = arith.constant 0.0 : bf16
  %inv_b = arith.constant dense<0.125> : tensor<bf16>
  %e8 = tensor.empty() : tensor<8xbf16>
  %p = linalg.generic {
      indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%w, %x : tensor<bf16>, tensor<8xbf16>) outs(%e8 : tensor<8xbf16>) {
  ^bb0(%wv: bf16, %xv: bf16, %o: bf16):
    %m = arith.mulf %wv, %xv : bf16
    %big = arith.constant 64.0 : bf16
    %a = arith.addf %m, %big : bf16
    linalg.yield %a : bf16
  } -> tensor<8xbf16>
  %q = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%p, %y : tensor<8xbf16>, tensor<8xbf16>) outs(%e8 : tensor<8xbf16>) {
  ^bb0(%pv: bf16, %yv: bf16, %o: bf16):
    %big = arith.constant 64.0 : bf16
    %s = arith.subf %pv, %big : bf16
    %r = arith.subf %s, %yv : bf16
    linalg.yield %r : bf16
  } -> tensor<8xbf16>
  %e0 = tensor.empty() : tensor<bf16>
  %z0 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<bf16>) -> tensor<bf16>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%q : tensor<8xbf16>) outs(%z0 : tensor<bf16>) {
  ^bb0(%rv: bf16, %acc: bf16):
    %sq = arith.mulf %rv, %rv : bf16
    %a = arith.addf %acc, %sq : bf16
    linalg.yield %a : bf16
  } -> tensor<bf16>
  %loss = arith.mulf %s, %inv_b : tensor<bf16>
  %dr = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%q, %inv_b : tensor<8xbf16>, tensor<bf16>) outs(%e8 : tensor<8xbf16>) {
  ^bb0(%rv: bf16, %ib: bf16, %o: bf16):
    %two = arith.constant 2.0 : bf16
    %t = arith.mulf %two, %rv : bf16
    %d = arith.mulf %t, %ib : bf16
    linalg.yield %d : bf16
  } -> tensor<8xbf16>
  %z1 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<bf16>) -> tensor<bf16>
  %gw = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%dr, %x : tensor<8xbf16>, tensor<8xbf16>) outs(%z1 : tensor<bf16>) {
  ^bb0(%dv: bf16, %xv: bf16, %acc: bf16):
    %pp = arith.mulf %dv, %xv : bf16
    %a = arith.addf %acc, %pp : bf16
    linalg.yield %a : bf16
  } -> tensor<bf16>
  %g = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average : tensor<bf16> -> tensor<bf16>
  return %loss, %g, %q : tensor<bf16>, tensor<bf16>, tensor<8xbf16>
}

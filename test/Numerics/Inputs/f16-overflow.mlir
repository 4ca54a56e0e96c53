// f16 step: r_i = ((w*x_i + 60000) - 60000) - y_i in f16; w*x_i + 60000 overflows
// to inf in f16 for w*x_i >= 16 (65520 rounds to inf), and rounds to a
// multiple of 32 otherwise.
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%w: tensor<f16> {gacc.param},
                      %x: tensor<8xf16> {gacc.batch = 0 : i64},
                      %y: tensor<8xf16> {gacc.batch = 0 : i64})
    -> (tensor<f16> {gacc.loss}, tensor<f16> {gacc.grad = 0 : i64}, tensor<8xf16> {gacc.metric}) {
  %zero = arith.constant 0.0 : f16
  %inv_b = arith.constant dense<0.125> : tensor<f16>
  %e8 = tensor.empty() : tensor<8xf16>
  %p = linalg.generic {
      indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%w, %x : tensor<f16>, tensor<8xf16>) outs(%e8 : tensor<8xf16>) {
  ^bb0(%wv: f16, %xv: f16, %o: f16):
    %m = arith.mulf %wv, %xv : f16
    %big = arith.constant 60000.0 : f16
    %a = arith.addf %m, %big : f16
    linalg.yield %a : f16
  } -> tensor<8xf16>
  %q = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%p, %y : tensor<8xf16>, tensor<8xf16>) outs(%e8 : tensor<8xf16>) {
  ^bb0(%pv: f16, %yv: f16, %o: f16):
    %big = arith.constant 60000.0 : f16
    %s = arith.subf %pv, %big : f16
    %r = arith.subf %s, %yv : f16
    linalg.yield %r : f16
  } -> tensor<8xf16>
  %e0 = tensor.empty() : tensor<f16>
  %z0 = linalg.fill ins(%zero : f16) outs(%e0 : tensor<f16>) -> tensor<f16>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%q : tensor<8xf16>) outs(%z0 : tensor<f16>) {
  ^bb0(%rv: f16, %acc: f16):
    %sq = arith.mulf %rv, %rv : f16
    %a = arith.addf %acc, %sq : f16
    linalg.yield %a : f16
  } -> tensor<f16>
  %loss = arith.mulf %s, %inv_b : tensor<f16>
  %dr = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%q, %inv_b : tensor<8xf16>, tensor<f16>) outs(%e8 : tensor<8xf16>) {
  ^bb0(%rv: f16, %ib: f16, %o: f16):
    %two = arith.constant 2.0 : f16
    %t = arith.mulf %two, %rv : f16
    %d = arith.mulf %t, %ib : f16
    linalg.yield %d : f16
  } -> tensor<8xf16>
  %z1 = linalg.fill ins(%zero : f16) outs(%e0 : tensor<f16>) -> tensor<f16>
  %gw = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%dr, %x : tensor<8xf16>, tensor<8xf16>) outs(%z1 : tensor<f16>) {
  ^bb0(%dv: f16, %xv: f16, %acc: f16):
    %pp = arith.mulf %dv, %xv : f16
    %a = arith.addf %acc, %pp : f16
    linalg.yield %a : f16
  } -> tensor<f16>
  %g = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average : tensor<f16> -> tensor<f16>
  return %loss, %g, %q : tensor<f16>, tensor<f16>, tensor<8xf16>
}

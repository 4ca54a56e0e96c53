// A linear model whose SGD update is a hand-written loop over the
// parameter's elements (scf.for with tensor.extract / tensor.insert), after
// the gradient's all-reduce. gacc-prepare-step raises the loop into the
// parallel linalg.generic it writes out; it reads only the accumulated
// gradient (a partial) and invariants, so it runs once, after the
// micro-batch regions, on the whole step's gradient.
//
// Arguments:
//   0  %w  : tensor<3xf32>   {gacc.param}
//   1  %x  : tensor<4x3xf32> {gacc.batch = 0}
//   2  %y  : tensor<4xf32>   {gacc.batch = 0}
//   3  %lr : f32             {gacc.state}
// Results:
//   0  loss : f32           {gacc.loss}       mean((x w - y)^2)
//   1  g    : tensor<3xf32> {gacc.grad = 0}   averaged over the ranks
//   2  w'   : tensor<3xf32> {gacc.param_out = 0}   w - lr g, element by element

shard.grid @dp(shape = ?) {sym_visibility = "private"}

func.func @train_step(%w: tensor<3xf32> {gacc.param},
                      %x: tensor<4x3xf32> {gacc.batch = 0 : i64},
                      %y: tensor<4xf32> {gacc.batch = 0 : i64},
                      %lr: f32 {gacc.state})
    -> (f32 {gacc.loss}, tensor<3xf32> {gacc.grad = 0 : i64},
        tensor<3xf32> {gacc.param_out = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %count = arith.constant 4.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index

  // ---- forward: r = x w - y
  %e4 = tensor.empty() : tensor<4xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %xw = linalg.matvec ins(%x, %w : tensor<4x3xf32>, tensor<3xf32>)
      outs(%f4 : tensor<4xf32>) -> tensor<4xf32>
  %r = arith.subf %xw, %y : tensor<4xf32>

  // ---- loss = sum_i r_i^2 / B
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %sum = tensor.extract %s[] : tensor<f32>
  %loss = arith.divf %sum, %count : f32

  // ---- backward: g_j = sum_i (2 r_i / B) x_ij
  %e3 = tensor.empty() : tensor<3xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %gs = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d1)>],
      iterator_types = ["reduction", "parallel"]}
      ins(%r, %x : tensor<4xf32>, tensor<4x3xf32>) outs(%f3 : tensor<3xf32>) {
  ^bb0(%rv: f32, %xv: f32, %acc: f32):
    %t = arith.mulf %two, %rv : f32
    %d = arith.divf %t, %count : f32
    %p = arith.mulf %d, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<3xf32>
  %g = shard.all_reduce %gs on @dp grid_axes = [0] reduction = average
      : tensor<3xf32> -> tensor<3xf32>

  // ---- SGD, one element at a time
  %w_out = scf.for %j = %c0 to %c3 step %c1 iter_args(%wt = %w)
      -> (tensor<3xf32>) {
    %gj = tensor.extract %g[%j] : tensor<3xf32>
    %wj = tensor.extract %wt[%j] : tensor<3xf32>
    %u = arith.mulf %lr, %gj : f32
    %nw = arith.subf %wj, %u : f32
    %ins = tensor.insert %nw into %wt[%j] : tensor<3xf32>
    scf.yield %ins : tensor<3xf32>
  }
  return %loss, %g, %w_out : f32, tensor<3xf32>, tensor<3xf32>
}

// The reference example (examples/linear_regression.mlir) written with
// scalars, as by hand: the parameter, the loss, the gradient and the
// updated parameter are f32, the learning rate an f64 state, the step
// counter an index state, and the sample count an i64 metric. gacc-prepare-
// step makes every scalar a rank-0 tensor (an index an i64 one); the
// runner reads and writes them as 0-d .npy arrays.
//
// Arguments:
//   0  %w    : f32              {gacc.param}
//   1  %x    : tensor<4xf32>    {gacc.batch = 0}
//   2  %y    : tensor<4xf32>    {gacc.batch = 0}
//   3  %lr   : f64              {gacc.state}     learning rate
//   4  %step : index            {gacc.state}     step counter
// Results:
//   0  loss  : f32 {gacc.loss}        mean((w x - y)^2)
//   1  g     : f32 {gacc.grad = 0}    averaged over the ranks
//   2  w'    : f32 {gacc.param_out = 0}   w - lr g
//   3  step' : index {gacc.state_out = 4} step + 1
//   4  n     : i64 {gacc.metric}      samples seen by this rank (B)

shard.grid @dp(shape = ?) {sym_visibility = "private"}

func.func @train_step(%w: f32 {gacc.param},
                      %x: tensor<4xf32> {gacc.batch = 0 : i64},
                      %y: tensor<4xf32> {gacc.batch = 0 : i64},
                      %lr: f64 {gacc.state},
                      %step: index {gacc.state})
    -> (f32 {gacc.loss}, f32 {gacc.grad = 0 : i64},
        f32 {gacc.param_out = 0 : i64}, index {gacc.state_out = 4 : i64},
        i64 {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %count = arith.constant 4.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index

  // ---- forward: r = w x - y (per sample; w captured as a scalar)
  %e4 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%x, %y : tensor<4xf32>, tensor<4xf32>)
      outs(%e4 : tensor<4xf32>) {
  ^bb0(%xv: f32, %yv: f32, %o: f32):
    %p = arith.mulf %w, %xv : f32
    %d = arith.subf %p, %yv : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>

  // ---- loss = (sum_i r_i^2) / B, a scalar
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %sum = tensor.extract %s[] : tensor<f32>
  %loss = arith.divf %sum, %count : f32

  // ---- backward: gw = sum_i (2 r_i / B) x_i
  %gw = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r, %x : tensor<4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %xv: f32, %acc: f32):
    %t = arith.mulf %two, %rv : f32
    %d = arith.divf %t, %count : f32
    %p = arith.mulf %d, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %sync = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average
      : tensor<f32> -> tensor<f32>
  %g = tensor.extract %sync[] : tensor<f32>

  // ---- SGD, the step counter and the sample count
  %lr32 = arith.truncf %lr : f64 to f32
  %u = arith.mulf %lr32, %g : f32
  %w_out = arith.subf %w, %u : f32
  %next = arith.addi %step, %c1 : index
  %n = tensor.dim %x, %c0 : tensor<4xf32>
  %n64 = arith.index_cast %n : index to i64
  return %loss, %g, %w_out, %next, %n64 : f32, f32, f32, index, i64
}

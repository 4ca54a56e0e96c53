// Least squares written by hand with the sample count as a scalar i64
// argument (gacc.sample_count) that the step divides by, for tail steps
// (runtime-batch-size): B = 4 samples, a mean over the run's samples.
func.func @train_step(%w: f32 {gacc.param},
                      %x: tensor<4xf32> {gacc.batch = 0 : i64},
                      %y: tensor<4xf32> {gacc.batch = 0 : i64},
                      %n: i64 {gacc.sample_count})
    -> (f32 {gacc.loss}, f32 {gacc.grad = 0 : i64}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %nf = arith.sitofp %n : i64 to f32
  // sum_i (w x_i - y_i)^2 and sum_i 2 (w x_i - y_i) x_i, over the samples.
  %s:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%l = %zero, %g = %zero)
      -> (f32, f32) {
    %xv = tensor.extract %x[%i] : tensor<4xf32>
    %yv = tensor.extract %y[%i] : tensor<4xf32>
    %p = arith.mulf %w, %xv : f32
    %r = arith.subf %p, %yv : f32
    %sq = arith.mulf %r, %r : f32
    %l2 = arith.addf %l, %sq : f32
    %t = arith.mulf %two, %r : f32
    %gx = arith.mulf %t, %xv : f32
    %g2 = arith.addf %g, %gx : f32
    scf.yield %l2, %g2 : f32, f32
  }
  %loss = arith.divf %s#0, %nf : f32
  %grad = arith.divf %s#1, %nf : f32
  return %loss, %grad : f32, f32
}

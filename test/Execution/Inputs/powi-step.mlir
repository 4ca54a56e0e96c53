// A least-squares step whose prediction is w * x^3 with math.fpowi: its
// lowering calls MLIR's linkonce_odr helper __mlir_math_fpowi_f32_i32.
#id = affine_map<(d0) -> (d0)>
#sc = affine_map<(d0) -> ()>
func.func @train_step(%w: tensor<f32> {gacc.param},
                      %x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %three = arith.constant 3 : i32
  %inv = arith.constant 0.25 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // loss = sum_i w x_i^3 / B, dloss/dw = sum_i x_i^3 / B
  %l, %g = linalg.generic {indexing_maps = [#id, #sc, #sc, #sc],
      iterator_types = ["reduction"]}
      ins(%x, %w : tensor<4xf32>, tensor<f32>) outs(%z, %z : tensor<f32>, tensor<f32>) {
  ^bb0(%xv: f32, %wv: f32, %la: f32, %ga: f32):
    %p = math.fpowi %xv, %three : f32, i32
    %q = arith.mulf %p, %inv : f32
    %t = arith.mulf %wv, %q : f32
    %l2 = arith.addf %la, %t : f32
    %g2 = arith.addf %ga, %q : f32
    linalg.yield %l2, %g2 : f32, f32
  } -> (tensor<f32>, tensor<f32>)
  return %l, %g : tensor<f32>, tensor<f32>
}

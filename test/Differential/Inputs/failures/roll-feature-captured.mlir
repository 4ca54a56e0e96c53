// Minimized from scripts/difftest/run.py --gather, generator of commit 7f3bbf8 (family roll-feature, seed
// 300001). A per-sample generic reads the captured per-sample tensor %z
// through tensor.extract %z[linalg.index 0, (linalg.index 1 + 1) mod 2] (a
// gather in a non-sample dimension; the sample index is the region's own).
// B = 2, 2 features.
//
//   z[i, d] = x[i, d] W[d];   y[i, d] = z[i, d] + 0.5 z[i, (d + 1) mod 2]
//   loss = sum(y) / 2;        dW[d] = sum_i 0.75 x[i, d]
//
// Expected: equal for every split. Found (main at beac4be): the loss is
// wrong at --micro-batches=2 (region 1 reads %z at the shifted sample index);
// the gradient (written without the gather) is right.

func.func @train_step(%W: tensor<2xf32> {gacc.param},
                      %x: tensor<2x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<2xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant dense<0.5> : tensor<f32>
  %e22 = tensor.empty() : tensor<2x2xf32>
  // z = x * W (per-sample, depends on the parameter)
  %z = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %W : tensor<2x2xf32>, tensor<2xf32>) outs(%e22 : tensor<2x2xf32>) {
  ^bb0(%xv: f32, %wv: f32, %o: f32):
    %p = arith.mulf %xv, %wv : f32
    linalg.yield %p : f32
  } -> tensor<2x2xf32>
  // the gather
  %y = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<2x2xf32>) outs(%e22 : tensor<2x2xf32>) {
  ^bb0(%zv: f32, %o: f32):
    %i = linalg.index 0 : index
    %d = linalg.index 1 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c0 = arith.constant 0 : index
    %si = arith.addi %i, %c0 : index
    %t = arith.addi %d, %c1 : index
    %sd = arith.remui %t, %c2 : index
    %v = tensor.extract %z[%si, %sd] : tensor<2x2xf32>
    %h = arith.constant 0.5 : f32
    %hv = arith.mulf %v, %h : f32
    %r = arith.addf %zv, %hv : f32
    linalg.yield %r : f32
  } -> tensor<2x2xf32>
  // loss = sum(y) / B
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%y : tensor<2x2xf32>) outs(%z0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %acc, %in : f32
      linalg.yield %a : f32
    }
  %loss = arith.mulf %s, %half : tensor<f32>
  // dW[d] = sum_i 0.75 / B * x[i, d]  (every z element reaches the loss 0.75 times)
  %e2 = tensor.empty() : tensor<2xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  %dW = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x2xf32>) outs(%z2 : tensor<2xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %c = arith.constant 0.75 : f32
    %p = arith.mulf %c, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<2xf32>
  return %loss, %dW : tensor<f32>, tensor<2xf32>
}

// Minimized from scripts/difftest/run.py --gather, generator of commit 38f4793 (seeds 200000-200028: every
// nll_loss gather at m >= 2 failed). torch-mlir's nll_loss_forward form: a
// per-sample generic over the labels reads the captured per-sample tensor %z
// with tensor.extract %z[linalg.index 0, label]. B = 2, 2 classes.
//
//   z[i, c]  = x[i, c] * W[c]                 (per-sample)
//   nll[i]   = -z[i, lab[i]]                  (gather of a captured per-sample tensor)
//   loss     = sum_i nll[i] / 2
//   dW[c]    = sum_i -(c == lab[i]) / 2 * x[i, c]
//
// Expected: loss and dW equal for every split. Found (main at beac4be):
// --micro-batches=2 gives a wrong loss (region 1 reads z at the shifted index
// 1 + 1 of its one-sample slice: out of bounds); the gradient (one-hot, no
// gather) is right.

func.func @train_step(%W: tensor<2xf32> {gacc.param},
                      %x: tensor<2x2xf32> {gacc.batch = 0 : i64},
                      %lab: tensor<2xi64> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<2xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant dense<0.5> : tensor<f32>
  %e22 = tensor.empty() : tensor<2x2xf32>
  %z = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %W : tensor<2x2xf32>, tensor<2xf32>) outs(%e22 : tensor<2x2xf32>) {
  ^bb0(%xv: f32, %wv: f32, %o: f32):
    %p = arith.mulf %xv, %wv : f32
    linalg.yield %p : f32
  } -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2xf32>
  %nll = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%lab : tensor<2xi64>) outs(%e2 : tensor<2xf32>) {
  ^bb0(%l: i64, %o: f32):
    %i = linalg.index 0 : index
    %t = arith.index_cast %l : i64 to index
    %v = tensor.extract %z[%i, %t] : tensor<2x2xf32>
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<2xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%nll : tensor<2xf32>) outs(%z0 : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %a = arith.addf %acc, %in : f32
      linalg.yield %a : f32
    }
  %loss = arith.mulf %s, %half : tensor<f32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  %dW = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1, d0)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%lab, %x : tensor<2xi64>, tensor<2x2xf32>) outs(%z2 : tensor<2xf32>) {
  ^bb0(%l: i64, %xv: f32, %acc: f32):
    %c = linalg.index 0 : index
    %ci = arith.index_cast %c : index to i64
    %eq = arith.cmpi eq, %ci, %l : i64
    %mh = arith.constant -0.5 : f32
    %g = arith.select %eq, %mh, %zero : f32
    %p = arith.mulf %g, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<2xf32>
  return %loss, %dW : tensor<f32>, tensor<2xf32>
}

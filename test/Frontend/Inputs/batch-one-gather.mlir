// A batch of one sample whose nll_loss-style gather reads a per-sample tensor
// captured from above at [linalg.index 0, label]: canonicalization (in
// gacc-prepare-step) folds linalg.index 0 of the unit sample loop to the
// constant 0, and the batch analysis then refuses the read, even at
// micro-batches=1. With B = 2 (sed s/1x3/2x3/; s/1xi64/2xi64/; s/1xf32/2xf32/) it is accepted.
func.func @train_step(%w: tensor<3xf32> {gacc.param},
                      %x: tensor<1x3xf32> {gacc.batch = 0 : i64},
                      %labels: tensor<1xi64> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x3xf32>
  %xw = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %w : tensor<1x3xf32>, tensor<3xf32>) outs(%e : tensor<1x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x3xf32>
  %e1 = tensor.empty() : tensor<1xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%labels : tensor<1xi64>) outs(%e1 : tensor<1xf32>) {
  ^bb0(%l: i64, %o: f32):
    %li = arith.index_cast %l : i64 to index
    %i = linalg.index 0 : index
    %v = tensor.extract %xw[%i, %li] : tensor<1x3xf32>
    linalg.yield %v : f32
  } -> tensor<1xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%g : tensor<1xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  %e3 = tensor.empty() : tensor<3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %dw = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x, %labels : tensor<1x3xf32>, tensor<1xi64>) outs(%z3 : tensor<3xf32>) {
  ^bb0(%a: f32, %l: i64, %o: f32):
    %li = arith.index_cast %l : i64 to index
    %j = linalg.index 1 : index
    %c = arith.cmpi eq, %li, %j : index
    %v = arith.select %c, %a, %zero : f32
    %s = arith.addf %v, %o : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  return %loss, %dw : tensor<f32>, tensor<3xf32>
}

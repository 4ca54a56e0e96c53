// A gather from an invariant tensor that has the batch size as its leading
// dimension (rows differ by sample index: inv[b, j] = w[j] + b), read at
// [linalg.index 0, label] in a per-sample generic.
func.func @train_step(%w: tensor<5xf32> {gacc.param},
                      %x: tensor<4xf32> {gacc.batch = 0 : i64},
                      %labels: tensor<4xi64> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<5xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %invb = arith.constant 0.25 : f32
  %e = tensor.empty() : tensor<4x5xf32>
  %inv = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%w : tensor<5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    %r = arith.addf %a, %f : f32
    linalg.yield %r : f32
  } -> tensor<4x5xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%labels, %x : tensor<4xi64>, tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%l: i64, %xv: f32, %o: f32):
    %li = arith.index_cast %l : i64 to index
    %i = linalg.index 0 : index
    %v = tensor.extract %inv[%i, %li] : tensor<4x5xf32>
    %m = arith.mulf %v, %xv : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%g : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %invb : f32
    %r = arith.addf %s, %o : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e5 = tensor.empty() : tensor<5xf32>
  %z5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<5xf32>) -> tensor<5xf32>
  %dw = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%labels, %x : tensor<4xi64>, tensor<4xf32>) outs(%z5 : tensor<5xf32>) {
  ^bb0(%l: i64, %xv: f32, %o: f32):
    %li = arith.index_cast %l : i64 to index
    %j = linalg.index 1 : index
    %c = arith.cmpi eq, %li, %j : index
    %s = arith.mulf %xv, %invb : f32
    %v = arith.select %c, %s, %zero : f32
    %r = arith.addf %v, %o : f32
    linalg.yield %r : f32
  } -> tensor<5xf32>
  return %loss, %dw : tensor<f32>, tensor<5xf32>
}

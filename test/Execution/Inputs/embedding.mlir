// An embedding lookup: row ids[i] of the table E (5 rows) gathered by a
// tensor.extract inside a linalg body, and a squared-error loss against y.
// Ids outside [0, 5) must be a runtime error, never an out-of-bounds read.
//
// Arguments: 0 E : tensor<5x3xf32> {gacc.param}, 1 ids : tensor<4xi64>
// {gacc.batch}, 2 y : tensor<4x3xf32> {gacc.batch}. Result: the loss.

func.func @embedding(%E: tensor<5x3xf32> {gacc.param},
                     %ids: tensor<4xi64> {gacc.batch = 0 : i64},
                     %y: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %emb = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %E[%row, %col] : tensor<5x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%emb, %y : tensor<4x3xf32>, tensor<4x3xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %d = arith.subf %a, %b : f32
    %sq = arith.mulf %d, %d : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %inv = arith.constant dense<0.25> : tensor<f32>
  %loss = arith.mulf %s, %inv : tensor<f32>
  return %loss : tensor<f32>
}

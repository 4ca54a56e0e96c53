// A step whose ids reach only a gacc.scatter_add (no gather reads them
// first): the gradient of sum(table * scatter_add(g at ids)) / 4 is
// scatter_add(g at ids) / 4. An id outside the 5 rows must be a runtime
// error naming the scatter-add, never an out-of-bounds write.
//
// Arguments: 0 table [5, 3] (param), 1 ids [4] i64 (batch), 2 g [4, 3]
// (batch). Results: the loss, the table's gradient.

func.func @scatter_step(%table: tensor<5x3xf32> {gacc.param},
                        %ids: tensor<4xi64> {gacc.batch = 0 : i64},
                        %g: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<5x3xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<5x3xf32>) -> tensor<5x3xf32>
  %s = gacc.scatter_add ins(%g, %ids : tensor<4x3xf32>, tensor<4xi64>) outs(%z : tensor<5x3xf32>) -> tensor<5x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %dot = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%s, %table : tensor<5x3xf32>, tensor<5x3xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %q = arith.constant dense<0.25> : tensor<f32>
  %loss = arith.mulf %dot, %q : tensor<f32>
  %q2 = arith.constant dense<0.25> : tensor<5x3xf32>
  %grad = arith.mulf %s, %q2 : tensor<5x3xf32>
  return %loss, %grad : tensor<f32>, tensor<5x3xf32>
}

// A bf16 embedding gradient (gacc.scatter_add on bf16 rows) for the CUDA
// translation test: without accumulate-type its kernel adds bf16 atomically
// (sm_90's atom.add.noftz.bf16), with accumulate-type=f32 in f32.
func.func @embed_bf16(%table: tensor<7x5xbf16> {gacc.param},
                      %ids: tensor<4xi64> {gacc.batch = 0 : i64},
                      %g: tensor<4x5xbf16> {gacc.batch = 0 : i64})
    -> (tensor<bf16> {gacc.loss}, tensor<7x5xbf16> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<4x5xbf16>
  %emb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<4xi64>) outs(%e : tensor<4x5xbf16>) {
  ^bb0(%id: i64, %o: bf16):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<7x5xbf16>
    linalg.yield %v : bf16
  } -> tensor<4x5xbf16>
  %e0 = tensor.empty() : tensor<bf16>
  %z0 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<bf16>) -> tensor<bf16>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%emb, %g : tensor<4x5xbf16>, tensor<4x5xbf16>) outs(%z0 : tensor<bf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<bf16>
  %q = arith.constant dense<0.25> : tensor<bf16>
  %loss = arith.mulf %s, %q : tensor<bf16>
  %q2 = arith.constant dense<0.25> : tensor<4x5xbf16>
  %dg = arith.mulf %g, %q2 : tensor<4x5xbf16>
  %ge = tensor.empty() : tensor<7x5xbf16>
  %gz = linalg.fill ins(%zero : bf16) outs(%ge : tensor<7x5xbf16>) -> tensor<7x5xbf16>
  %grad = gacc.scatter_add ins(%dg, %ids : tensor<4x5xbf16>, tensor<4xi64>) outs(%gz : tensor<7x5xbf16>) -> tensor<7x5xbf16>
  return %loss, %grad : tensor<bf16>, tensor<7x5xbf16>
}

// An embedding model with a GEMM head, large enough for the CPU lowering's
// weight-gradient pairing: tokens [64, 2] i64 (batch), table [500, 256]
// and W [256, 256] (params); h = e W over the 128 tokens, loss = mean(h^2)
// (summed per token, then over the tokens); the backward's weight gradient
// e^T dh (a GEMM into a 256 KiB accumulator, paired across two
// micro-batches by gacc-pair-accumulating-gemms) and the table's gradient
// by gacc.scatter_add of dh W^T, both in the loop over the regions.
// Generated; see test/Check/embedding-scatter-add.test.

func.func @embedding_gemm_step(%tokens: tensor<64x2xi64> {gacc.batch = 0 : i64},
               %table: tensor<500x256xf32> {gacc.param},
               %w: tensor<256x256xf32> {gacc.param})
    -> (tensor<f32> {gacc.loss}, tensor<500x256xf32> {gacc.grad = 1 : i64},
        tensor<256x256xf32> {gacc.grad = 2 : i64}) {
  %zero = arith.constant 0.0 : f32
  %flat = tensor.collapse_shape %tokens [[0, 1]] : tensor<64x2xi64> into tensor<128xi64>
  %e0 = tensor.empty() : tensor<128x256xf32>
  %emb = linalg.generic {indexing_maps = [affine_map<(n, d) -> (n)>, affine_map<(n, d) -> (n, d)>], iterator_types = ["parallel", "parallel"]}
      ins(%flat : tensor<128xi64>) outs(%e0 : tensor<128x256xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<500x256xf32>
    linalg.yield %v : f32
  } -> tensor<128x256xf32>
  %h0 = tensor.empty() : tensor<128x256xf32>
  %hz = linalg.fill ins(%zero : f32) outs(%h0 : tensor<128x256xf32>) -> tensor<128x256xf32>
  %h = linalg.matmul ins(%emb, %w : tensor<128x256xf32>, tensor<256x256xf32>) outs(%hz : tensor<128x256xf32>) -> tensor<128x256xf32>
  %sq = arith.mulf %h, %h : tensor<128x256xf32>
  %l0 = tensor.empty() : tensor<f32>
  %lz = linalg.fill ins(%zero : f32) outs(%l0 : tensor<f32>) -> tensor<f32>
  %r0 = tensor.empty() : tensor<128xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<128xf32>) -> tensor<128xf32>
  %rows = linalg.reduce ins(%sq : tensor<128x256xf32>) outs(%rz : tensor<128xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %acc, %in : f32
      linalg.yield %s : f32
    }
  %sum = linalg.reduce ins(%rows : tensor<128xf32>) outs(%lz : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %s = arith.addf %acc, %in : f32
      linalg.yield %s : f32
    }
  %inv = arith.constant dense<3.0517578125e-05> : tensor<f32>
  %loss = arith.mulf %sum, %inv : tensor<f32>
  %c = arith.constant dense<6.103515625e-05> : tensor<128x256xf32>
  %dh = arith.mulf %h, %c : tensor<128x256xf32>
  %et0 = tensor.empty() : tensor<256x128xf32>
  %et = linalg.transpose ins(%emb : tensor<128x256xf32>) outs(%et0 : tensor<256x128xf32>) permutation = [1, 0]
  %gw0 = tensor.empty() : tensor<256x256xf32>
  %gwz = linalg.fill ins(%zero : f32) outs(%gw0 : tensor<256x256xf32>) -> tensor<256x256xf32>
  %gw = linalg.matmul ins(%et, %dh : tensor<256x128xf32>, tensor<128x256xf32>) outs(%gwz : tensor<256x256xf32>) -> tensor<256x256xf32>
  %wt0 = tensor.empty() : tensor<256x256xf32>
  %wt = linalg.transpose ins(%w : tensor<256x256xf32>) outs(%wt0 : tensor<256x256xf32>) permutation = [1, 0]
  %de0 = tensor.empty() : tensor<128x256xf32>
  %dez = linalg.fill ins(%zero : f32) outs(%de0 : tensor<128x256xf32>) -> tensor<128x256xf32>
  %de = linalg.matmul ins(%dh, %wt : tensor<128x256xf32>, tensor<256x256xf32>) outs(%dez : tensor<128x256xf32>) -> tensor<128x256xf32>
  %gt0 = tensor.empty() : tensor<500x256xf32>
  %gtz = linalg.fill ins(%zero : f32) outs(%gt0 : tensor<500x256xf32>) -> tensor<500x256xf32>
  %gt = gacc.scatter_add ins(%de, %flat : tensor<128x256xf32>, tensor<128xi64>) outs(%gtz : tensor<500x256xf32>) -> tensor<500x256xf32>
  return %loss, %gt, %gw : tensor<f32>, tensor<500x256xf32>, tensor<256x256xf32>
}

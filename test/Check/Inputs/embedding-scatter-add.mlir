// A training step of a small embedding model whose backward adds the rows
// of the embedding's gradient with gacc.scatter_add (O(tokens x D), as the
// FX importer emits embedding_dense_backward), not a one-hot product over
// the vocabulary.
//
// Arguments: 0 tokens [B=4, T=3] i64 (batch), 1 table [V=7, D=5] (param),
// 2 head w [D=5] (param), 3 targets [4, 3] (batch).
// Forward: e[b,t,:] = table[tokens[b,t], :], y[b,t] = e[b,t,:] . w,
// loss = mean((y - targets)^2) over the 12 tokens.
// Backward: dy = 2 (y - targets) / 12, grad_w = sum dy e, de = dy w,
// grad_table = scatter_add(de at tokens). Both gradients are averaged
// across ranks.

shard.grid @dp(shape = ?) {sym_visibility = "private"}

func.func @embedding_step(%tokens: tensor<4x3xi64> {gacc.batch = 0 : i64},
                          %table: tensor<7x5xf32> {gacc.param},
                          %w: tensor<5xf32> {gacc.param},
                          %targets: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<7x5xf32> {gacc.grad = 1 : i64},
        tensor<5xf32> {gacc.grad = 2 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<4x3x5xf32>
  %emb = linalg.generic {
      indexing_maps = [affine_map<(b, t, d) -> (b, t)>, affine_map<(b, t, d) -> (b, t, d)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%tokens : tensor<4x3xi64>) outs(%e0 : tensor<4x3x5xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 2 : index
    %v = tensor.extract %table[%row, %col] : tensor<7x5xf32>
    linalg.yield %v : f32
  } -> tensor<4x3x5xf32>
  %y0 = tensor.empty() : tensor<4x3xf32>
  %yz = linalg.fill ins(%zero : f32) outs(%y0 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %y = linalg.generic {
      indexing_maps = [affine_map<(b, t, d) -> (b, t, d)>, affine_map<(b, t, d) -> (d)>,
                       affine_map<(b, t, d) -> (b, t)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%emb, %w : tensor<4x3x5xf32>, tensor<5xf32>) outs(%yz : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %d = arith.subf %y, %targets : tensor<4x3xf32>
  %sq = arith.mulf %d, %d : tensor<4x3xf32>
  %l0 = tensor.empty() : tensor<f32>
  %lz = linalg.fill ins(%zero : f32) outs(%l0 : tensor<f32>) -> tensor<f32>
  %sum = linalg.reduce ins(%sq : tensor<4x3xf32>) outs(%lz : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %acc, %in : f32
      linalg.yield %s : f32
    }
  %inv = arith.constant dense<0.0833333358> : tensor<f32>
  %loss = arith.mulf %sum, %inv : tensor<f32>

  // Backward.
  %c = arith.constant dense<0.166666672> : tensor<4x3xf32>
  %dy = arith.mulf %d, %c : tensor<4x3xf32>
  %gw0 = tensor.empty() : tensor<5xf32>
  %gwz = linalg.fill ins(%zero : f32) outs(%gw0 : tensor<5xf32>) -> tensor<5xf32>
  %gw = linalg.generic {
      indexing_maps = [affine_map<(b, t, d) -> (b, t)>, affine_map<(b, t, d) -> (b, t, d)>,
                       affine_map<(b, t, d) -> (d)>],
      iterator_types = ["reduction", "reduction", "parallel"]}
      ins(%dy, %emb : tensor<4x3xf32>, tensor<4x3x5xf32>) outs(%gwz : tensor<5xf32>) {
  ^bb0(%g: f32, %a: f32, %acc: f32):
    %p = arith.mulf %g, %a : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  %de0 = tensor.empty() : tensor<4x3x5xf32>
  %de = linalg.generic {
      indexing_maps = [affine_map<(b, t, d) -> (b, t)>, affine_map<(b, t, d) -> (d)>,
                       affine_map<(b, t, d) -> (b, t, d)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%dy, %w : tensor<4x3xf32>, tensor<5xf32>) outs(%de0 : tensor<4x3x5xf32>) {
  ^bb0(%g: f32, %b: f32, %o: f32):
    %p = arith.mulf %g, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x3x5xf32>
  %gt0 = tensor.empty() : tensor<7x5xf32>
  %gtz = linalg.fill ins(%zero : f32) outs(%gt0 : tensor<7x5xf32>) -> tensor<7x5xf32>
  %gt = gacc.scatter_add ins(%de, %tokens : tensor<4x3x5xf32>, tensor<4x3xi64>) outs(%gtz : tensor<7x5xf32>) -> tensor<7x5xf32>

  %gtr = shard.all_reduce %gt on @dp grid_axes = [0] reduction = average
           : tensor<7x5xf32> -> tensor<7x5xf32>
  %gwr = shard.all_reduce %gw on @dp grid_axes = [0] reduction = average
           : tensor<5xf32> -> tensor<5xf32>
  return %loss, %gtr, %gwr : tensor<f32>, tensor<7x5xf32>, tensor<5xf32>
}

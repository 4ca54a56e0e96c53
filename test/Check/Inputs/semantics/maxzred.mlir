shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%w: tensor<f32> {gacc.param},
                      %x: tensor<4x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.metric},
        tensor<2xf32> {gacc.metric}, tensor<2xf32> {gacc.metric}) {
  %loss = arith.mulf %w, %w : tensor<f32>
  %one = arith.constant 1.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %pinf = arith.constant 0x7F800000 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %lo4 = linalg.fill ins(%ninf : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  // Per sample: the maximum of its two values.
  %rowmax = linalg.reduce { arith.maximumf }
      ins(%x : tensor<4x2xf32>) outs(%lo4 : tensor<4xf32>) dimensions = [1]
  %inv = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%rowmax : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.divf %one, %v : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  // Over the samples: the minimum and the maximum of each column.
  %e2 = tensor.empty() : tensor<2xf32>
  %hi2 = linalg.fill ins(%pinf : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  %lo2 = linalg.fill ins(%ninf : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  %colmin = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
      iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<4x2xf32>) outs(%hi2 : tensor<2xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %a = arith.minimumf %acc, %xv : f32
    linalg.yield %a : f32
  } -> tensor<2xf32>
  %colmax = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
      iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<4x2xf32>) outs(%lo2 : tensor<2xf32>) {
  ^bb0(%xv: f32, %acc: f32):
    %a = arith.maximumf %acc, %xv : f32
    linalg.yield %a : f32
  } -> tensor<2xf32>
  %invmin = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%colmin : tensor<2xf32>) outs(%e2 : tensor<2xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.divf %one, %v : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %invmax = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%colmax : tensor<2xf32>) outs(%e2 : tensor<2xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.divf %one, %v : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  return %loss, %inv, %invmin, %invmax
      : tensor<f32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>
}

shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%w: tensor<f32> {gacc.param},
                      %x: tensor<4xi32> {gacc.batch = 0 : i64},
                      %y: tensor<4xi8> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.metric},
        tensor<4xf32> {gacc.metric}) {
  %loss = arith.mulf %w, %w : tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  // 10000 * ctpop(x) + 100 * ctlz(x) + cttz(x) on i32.
  %a = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%x : tensor<4xi32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%v: i32, %o: f32):
    %p = math.ctpop %v : i32
    %l = math.ctlz %v : i32
    %t = math.cttz %v : i32
    %c100 = arith.constant 100 : i32
    %c10000 = arith.constant 10000 : i32
    %p1 = arith.muli %p, %c10000 : i32
    %l1 = arith.muli %l, %c100 : i32
    %s0 = arith.addi %p1, %l1 : i32
    %s1 = arith.addi %s0, %t : i32
    %f = arith.sitofp %s1 : i32 to f32
    linalg.yield %f : f32
  } -> tensor<4xf32>
  // The same on i8.
  %b = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%y : tensor<4xi8>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%v: i8, %o: f32):
    %p = math.ctpop %v : i8
    %l = math.ctlz %v : i8
    %t = math.cttz %v : i8
    %pe = arith.extui %p : i8 to i32
    %le = arith.extui %l : i8 to i32
    %te = arith.extui %t : i8 to i32
    %c100 = arith.constant 100 : i32
    %c10000 = arith.constant 10000 : i32
    %p1 = arith.muli %pe, %c10000 : i32
    %l1 = arith.muli %le, %c100 : i32
    %s0 = arith.addi %p1, %l1 : i32
    %s1 = arith.addi %s0, %te : i32
    %f = arith.sitofp %s1 : i32 to f32
    linalg.yield %f : f32
  } -> tensor<4xf32>
  return %loss, %a, %b : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%w: tensor<f32> {gacc.param},
                      %x: tensor<4xi32> {gacc.batch = 0 : i64},
                      %y: tensor<4xi32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xi32> {gacc.metric},
        tensor<4xi32> {gacc.metric}, tensor<4xi32> {gacc.metric},
        tensor<4xi32> {gacc.metric}, tensor<4xi32> {gacc.metric},
        tensor<4xi32> {gacc.metric}) {
  %loss = arith.mulf %w, %w : tensor<f32>
  %e4 = tensor.empty() : tensor<4xi32>
  %r:6 = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%x, %y : tensor<4xi32>, tensor<4xi32>)
      outs(%e4, %e4, %e4, %e4, %e4, %e4 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  ^bb0(%a: i32, %b: i32, %o0: i32, %o1: i32, %o2: i32, %o3: i32, %o4: i32, %o5: i32):
    %ul, %uh = arith.mului_extended %a, %b : i32
    %sl, %sh = arith.mulsi_extended %a, %b : i32
    %sum, %carry = arith.addui_extended %a, %b : i32, i1
    %c = arith.extui %carry : i1 to i32
    // An index from the sample position and the data: (3 i + 5) mod 4 and
    // (|a| mod 7 + i) floordiv 2, through affine.apply/max in the body.
    %i = linalg.index 0 : index
    %m = affine.apply affine_map<(d0) -> ((d0 * 3 + 5) mod 4)>(%i)
    %abs = math.absi %a : i32
    %ai = arith.index_cast %abs : i32 to index
    %q = affine.max affine_map<(d0)[s0] -> ((s0 mod 7 + d0) floordiv 2, 1)>(%i)[%ai]
    %mq = arith.addi %m, %q : index
    %v = arith.index_cast %mq : index to i32
    linalg.yield %ul, %uh, %sh, %sum, %c, %v : i32, i32, i32, i32, i32, i32
  } -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>)
  return %loss, %r#0, %r#1, %r#2, %r#3, %r#4, %r#5
      : tensor<f32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}

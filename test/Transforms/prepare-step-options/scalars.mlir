// RUN: gacc-opt %s --split-input-file --gacc-prepare-step | FileCheck %s
// RUN: gacc-opt %s --split-input-file --gacc-pipeline="micro-batch-sizes=3,1" | FileCheck %s --check-prefix=SPLIT

// Scalar arguments and results (f32, f64, index, i64) become rank-0
// tensors: an argument is read with tensor.extract (an index through an
// i64 and index_cast), a result returned through tensor.from_elements.

// CHECK-LABEL: func.func @scalars
// CHECK-SAME:    (%[[W:.*]]: tensor<f32> {gacc.param}, %{{.*}}: tensor<4xf32> {gacc.batch = 0 : i64},
// CHECK-SAME:     %[[LR:.*]]: tensor<f64> {gacc.state}, %[[STEP:.*]]: tensor<i64> {gacc.state})
// CHECK-SAME:    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}, tensor<f32> {gacc.param_out = 0 : i64},
// CHECK-SAME:        tensor<i64> {gacc.state_out = 3 : i64}, tensor<i64> {gacc.metric})
// CHECK-DAG:     %[[WV:.*]] = tensor.extract %[[W]][] : tensor<f32>
// CHECK-DAG:     tensor.extract %[[LR]][] : tensor<f64>
// CHECK-DAG:     %[[S64:.*]] = tensor.extract %[[STEP]][] : tensor<i64>
// CHECK-DAG:     %[[SI:.*]] = arith.index_cast %[[S64]] : i64 to index
// CHECK:         %[[NEXT:.*]] = arith.addi %[[SI]], %{{.*}} : index
// CHECK:         %[[NEXT64:.*]] = arith.index_cast %[[NEXT]] : index to i64
// CHECK:         %[[NEXTBOX:.*]] = tensor.from_elements %[[NEXT64]] : tensor<i64>
// CHECK:         return %{{.*}}, %{{.*}}, %{{.*}}, %[[NEXTBOX]], %{{.*}} : tensor<f32>, tensor<f32>, tensor<f32>, tensor<i64>, tensor<i64>

// With micro-batch sizes 3 and 1 the loss (S / B, B = 4) and the gradient
// are computed once, after both regions, from the combined sums.
// SPLIT-LABEL: func.func @scalars
// SPLIT:         gacc.micro_batch 0 offset 0 size 3
// SPLIT:         gacc.micro_batch 1 offset 3 size 1
// SPLIT:         %[[S:.*]] = tensor.extract %{{.*}}[] : tensor<f32>
// SPLIT:         arith.divf %[[S]], %{{.*}} : f32
func.func @scalars(%w: f32 {gacc.param},
                   %x: tensor<4xf32> {gacc.batch = 0 : i64},
                   %lr: f64 {gacc.state},
                   %step: index {gacc.state})
    -> (f32 {gacc.loss}, f32 {gacc.grad = 0 : i64},
        f32 {gacc.param_out = 0 : i64}, index {gacc.state_out = 3 : i64},
        i64 {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %count = arith.constant 4.0 : f32
  %c1 = arith.constant 1 : index
  %e4 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%xv: f32, %o: f32):
    %p = arith.mulf %w, %xv : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %sum = tensor.extract %s[] : tensor<f32>
  %loss = arith.divf %sum, %count : f32
  %gs = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r, %x : tensor<4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %xv: f32, %acc: f32):
    %two = arith.constant 2.0 : f32
    %p = arith.mulf %rv, %xv : f32
    %p2 = arith.mulf %two, %p : f32
    %a = arith.addf %acc, %p2 : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %gsum = tensor.extract %gs[] : tensor<f32>
  %g = arith.divf %gsum, %count : f32
  %lr32 = arith.truncf %lr : f64 to f32
  %u = arith.mulf %lr32, %g : f32
  %w_out = arith.subf %w, %u : f32
  %next = arith.addi %step, %c1 : index
  %n = arith.constant 4 : i64
  return %loss, %g, %w_out, %next, %n : f32, f32, f32, index, i64
}


// -----

// A scalar parameter with a rank-0 tensor gradient (and an index state with
// an i64 update): the same types once boxed.

// CHECK-LABEL: func.func @mixed
// CHECK-SAME:    (%{{.*}}: tensor<f32> {gacc.param}, %{{.*}}: tensor<4xf32> {gacc.batch = 0 : i64}, %{{.*}}: tensor<i64> {gacc.state})
// CHECK-SAME:    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}, tensor<i64> {gacc.state_out = 2 : i64})
func.func @mixed(%w: f32 {gacc.param},
                 %x: tensor<4xf32> {gacc.batch = 0 : i64},
                 %step: index {gacc.state})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64},
        i64 {gacc.state_out = 2 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %p = arith.mulf %v, %w : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %g = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %next = arith.index_cast %step : index to i64
  return %s, %g, %next : tensor<f32>, tensor<f32>, i64
}

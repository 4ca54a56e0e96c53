// RUN: gacc-opt %s --split-input-file --gacc-guard-gathers | FileCheck %s

// A gather in a linalg.map body is guarded like one in a linalg.generic
// (only generics were: an id out of range read outside the table, silently
// or with a crash; found by a review).
// CHECK-LABEL: func.func @map_lookup
// CHECK:         linalg.map
// CHECK:           %[[ROW:.*]] = arith.index_cast
// CHECK:           %[[BOUND:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<5x3xf32>
// CHECK:           scf.if
// CHECK:             func.call @gaccrt_index_error
// CHECK:           %[[SAFE:.*]] = arith.select %{{.*}}, %[[ROW]], %{{.*}} : index
// CHECK:           tensor.extract %{{.*}}[%[[SAFE]], %{{.*}}] : tensor<5x3xf32>
func.func @map_lookup(%E: tensor<5x3xf32>, %ids: tensor<4x3xi64>) -> tensor<4x3xf32> {
  %e = tensor.empty() : tensor<4x3xf32>
  %emb = linalg.map ins(%ids : tensor<4x3xi64>) outs(%e : tensor<4x3xf32>)
    (%id: i64, %init: f32) {
      %row = arith.index_cast %id : i64 to index
      %col = linalg.index 1 : index
      %v = tensor.extract %E[%row, %col] : tensor<5x3xf32>
      linalg.yield %v : f32
    }
  return %emb : tensor<4x3xf32>
}

// -----

// A constant the id is compared with to pick a weight, while the gathered
// value is used either way, is not a sentinel whose reads are discarded
// (like nll_loss's ignore_index): an id equal to it is reported when out of
// range (id 7 of a 5-row table read row 4 silently).
// CHECK-LABEL: func.func @weight_pick
// CHECK:         linalg.generic
// CHECK:           scf.if
// CHECK-NOT:       arith.constant 7 : index
// CHECK:           tensor.extract
func.func @weight_pick(%E: tensor<5x3xf32>, %ids: tensor<4xi64>) -> tensor<4x3xf32> {
  %e = tensor.empty() : tensor<4x3xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%id: i64, %o: f32):
    %c7 = arith.constant 7 : i64
    %one = arith.constant 1.0 : f32
    %two = arith.constant 2.0 : f32
    %is7 = arith.cmpi eq, %id, %c7 : i64
    %w = arith.select %is7, %two, %one : f32
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %E[%row, %col] : tensor<5x3xf32>
    %p = arith.mulf %v, %w : f32
    linalg.yield %p : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

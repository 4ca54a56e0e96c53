// RUN: gacc-opt %s --split-input-file --gacc-prepare-step="batch-size=4 runtime-batch-size=true" | FileCheck %s

// A mean over a dynamic [N, T] batch as TorchToLinalg emits it: numel =
// tensor.dim * T converted to a float divides the sum. With
// runtime-batch-size the count on the path into sitofp is dim * B' / B (B'
// from the new gacc.sample_count argument); the shape uses of the same
// tensor.dim fold to 4 as before.

// CHECK-LABEL: func.func @mean(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<4x3xf32> {gacc.batch = 0 : i64}
// CHECK-SAME:    %[[N:[a-z0-9]+]]: tensor<i64> {gacc.sample_count})
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[COUNT:.*]] = tensor.extract %[[N]][] : tensor<i64>
// CHECK:         %[[BP:.*]] = arith.index_cast %[[COUNT]] : i64 to index
// CHECK:         %[[SCALED:.*]] = arith.muli %[[BP]], %[[C4]] : index
// CHECK:         %[[COUNT2:.*]] = arith.divui %[[SCALED]], %[[C4]] : index
// CHECK:         %[[NUMEL:.*]] = arith.muli %[[COUNT2]], %{{.*}} : index
// CHECK:         %[[I64:.*]] = arith.index_cast %[[NUMEL]] : index to i64
// CHECK:         arith.sitofp %[[I64]] : i64 to f32
// CHECK:         linalg.generic {{.*}} ins(%[[X]] : tensor<4x3xf32>) outs(%{{.*}} : tensor<4x3xf32>)
func.func @mean(%x: tensor<?x3xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}, tensor<?x3xf32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %n = tensor.dim %x, %c0 : tensor<?x3xf32>
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %sum = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%x : tensor<?x3xf32>) outs(%z : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %numel = arith.muli %n, %c3 : index
  %numel_i = arith.index_cast %numel : index to i64
  %numel_f = arith.sitofp %numel_i : i64 to f32
  %mean = linalg.generic {
      indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>],
      iterator_types = []}
      ins(%sum : tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%s: f32, %o: f32):
    %d = arith.divf %s, %numel_f : f32
    linalg.yield %d : f32
  } -> tensor<f32>
  %ex = tensor.empty(%n) : tensor<?x3xf32>
  %sq = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x3xf32>) outs(%ex : tensor<?x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %v : f32
    linalg.yield %m : f32
  } -> tensor<?x3xf32>
  return %mean, %sq : tensor<f32>, tensor<?x3xf32>
}

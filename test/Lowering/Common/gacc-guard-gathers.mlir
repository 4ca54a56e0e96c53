// RUN: gacc-opt %s --split-input-file --gacc-guard-gathers | FileCheck %s
// RUN: gacc-opt %s --split-input-file --gacc-guard-gathers="report=false" | FileCheck %s --check-prefix=CLAMP

// An index read from an input (an embedding id) is checked against the
// table's dimension: out of range calls gaccrt_index_error(index, bound,
// site) and reads a clamped index. The loop index (the column) is left alone.

// CHECK: module attributes {gacc.gather_sites = ["{{.*}}gacc-guard-gathers.mlir:{{[0-9]+}}:{{[0-9]+}} (table: argument #0, indices from argument #1)"]}
// CHECK: func.func private @gaccrt_index_error(i64, i64, i64)
// CHECK-LABEL: func.func @lookup
// CHECK:         linalg.generic
// CHECK:         ^bb0(%[[ID:.*]]: i64, %{{.*}}: f32):
// CHECK:           %[[ROW:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK:           %[[COL:.*]] = linalg.index 1 : index
// CHECK:           %[[C0:.*]] = arith.constant 0 : index
// CHECK:           %[[DIM:.*]] = tensor.dim %{{.*}}, %[[C0]]
// CHECK:           %[[GE:.*]] = arith.cmpi sge, %[[ROW]], %[[C0]]
// CHECK:           %[[LT:.*]] = arith.cmpi slt, %[[ROW]], %[[DIM]]
// CHECK:           %[[OK:.*]] = arith.andi %[[GE]], %[[LT]]
// CHECK:           scf.if
// CHECK:             func.call @gaccrt_index_error(%{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i64) -> ()
// CHECK:           %[[MIN:.*]] = arith.minsi %[[ROW]]
// CHECK:           %[[CLAMPED:.*]] = arith.maxsi %[[MIN]], %[[C0]]
// CHECK:           %[[IDX:.*]] = arith.select %[[OK]], %[[ROW]], %[[CLAMPED]]
// CHECK:           tensor.extract %{{.*}}[%[[IDX]], %[[COL]]] : tensor<5x3xf32>

// CLAMP-NOT: gacc.gather_sites
// CLAMP-NOT: gaccrt_index_error
// CLAMP-LABEL: func.func @lookup
// CLAMP:         arith.select
// CLAMP:         tensor.extract

func.func @lookup(%E: tensor<5x3xf32>, %ids: tensor<4xi64>) -> tensor<4x3xf32> {
  %e = tensor.empty() : tensor<4x3xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%ids : tensor<4xi64>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %E[%row, %col] : tensor<5x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// Indices computed from loop indices only are not guarded.

// CHECK-LABEL: func.func @transpose_read
// CHECK-NOT:     scf.if
// CHECK-NOT:     arith.select
// CHECK:         tensor.extract
func.func @transpose_read(%A: tensor<3x4xf32>) -> tensor<4x3xf32> {
  %e = tensor.empty() : tensor<4x3xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      outs(%e : tensor<4x3xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %v = tensor.extract %A[%j, %i] : tensor<3x4xf32>
    linalg.yield %v : f32
  } -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}

// -----

// torch-mlir's nll_loss reads logp[i, target] for every target and discards
// the value with a select when target == ignore_index: the sentinel -100 is
// clamped but not reported.

// CHECK-LABEL: func.func @nll_ignore_index
// CHECK:         ^bb0(%[[T:.*]]: i64, %{{.*}}: f32):
// CHECK:           %[[ROW:.*]] = arith.index_cast %[[T]] : i64 to index
// CHECK:           %[[OUT:.*]] = arith.xori
// CHECK:           %[[SENTINEL:.*]] = arith.constant -100 : index
// CHECK:           %[[IS:.*]] = arith.cmpi eq, %[[ROW]], %[[SENTINEL]] : index
// CHECK:           %[[NOT:.*]] = arith.xori %[[IS]]
// CHECK:           %[[REPORT:.*]] = arith.andi %[[OUT]], %[[NOT]] : i1
// CHECK:           scf.if %[[REPORT]]
// CHECK:             func.call @gaccrt_index_error
func.func @nll_ignore_index(%logp: tensor<4x5xf32>, %labels: tensor<4xi64>) -> tensor<4xf32> {
  %ignore = arith.constant -100 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%labels : tensor<4xi64>) outs(%e : tensor<4xf32>) {
  ^bb0(%t: i64, %o: f32):
    %row = arith.index_cast %t : i64 to index
    %skip = arith.cmpi eq, %row, %ignore : index
    %i = linalg.index 0 : index
    %v = tensor.extract %logp[%i, %row] : tensor<4x5xf32>
    %n = arith.negf %v : f32
    %s = arith.select %skip, %zero, %n : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

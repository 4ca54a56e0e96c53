// RUN: gacc-opt %s --split-input-file --gacc-lower-scatter-add | FileCheck %s
// RUN: gacc-opt %s --split-input-file --gacc-lower-scatter-add="atomic=1" | FileCheck %s --check-prefix=ATOMIC
// RUN: gacc-opt %S/../../Check/Inputs/embedding-scatter-add.mlir --gacc-pipeline="micro-batches=4" --gacc-lower-to-cpu=bufferize-only | FileCheck %s --check-prefix=STEP
// RUN: gacc-opt %S/../../Check/Inputs/embedding-scatter-add.mlir --gacc-pipeline="micro-batches=4" --gacc-lower-to-cpu | FileCheck %s --check-prefix=LLVM

// gacc.scatter_add on buffers: on the CPU, a serial loop nest over the
// positions (one row may be named twice: no race) with the contiguous row
// innermost, in place on the accumulator; an index outside the rows skips
// its row and, at a site gacc-guard-gathers numbered, calls
// gaccrt_index_error(index, rows, site). With `atomic` (CUDA kernels): one
// parallel loop over (row element, position) with atomic adds, no call.

// CHECK-LABEL: func.func @serial
// CHECK-SAME:    (%[[U:.*]]: memref<2x3x5xf32>, %[[IDS:.*]]: memref<2x3xi64>, %[[ACC:.*]]: memref<7x5xf32>)
// CHECK-DAG:     %[[C7:.*]] = arith.constant 7 : index
// CHECK:         scf.for %[[P0:.*]] = %{{.*}} to %{{.*}} step
// CHECK:           scf.for %[[P1:.*]] = %{{.*}} to %{{.*}} step
// CHECK:             %[[ID:.*]] = memref.load %[[IDS]][%[[P0]], %[[P1]]] : memref<2x3xi64>
// CHECK:             %[[ROW:.*]] = arith.index_cast %[[ID]] : i64 to index
// CHECK:             %[[GE:.*]] = arith.cmpi sge, %[[ROW]]
// CHECK:             %[[LT:.*]] = arith.cmpi slt, %[[ROW]], %[[C7]]
// CHECK:             %[[IN:.*]] = arith.andi %[[GE]], %[[LT]]
// CHECK:             scf.if %[[IN]] {
// CHECK:               scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK:                 %[[X:.*]] = memref.load %[[U]][%[[P0]], %[[P1]], %[[J]]]
// CHECK:                 %[[OLD:.*]] = memref.load %[[ACC]][%[[ROW]], %[[J]]]
// CHECK:                 %[[NEW:.*]] = arith.addf %[[OLD]], %[[X]] : f32
// CHECK:                 memref.store %[[NEW]], %[[ACC]][%[[ROW]], %[[J]]]
// CHECK:             } else {
// CHECK:               %[[I64:.*]] = arith.index_cast %[[ROW]] : index to i64
// CHECK:               func.call @gaccrt_index_error(%[[I64]], %{{.*}}, %{{.*}}) : (i64, i64, i64) -> ()
// CHECK-NOT:     gacc.scatter_add

// ATOMIC-LABEL: func.func @serial
// ATOMIC:         scf.parallel (%[[J:.*]], %[[P:.*]]) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}})
// ATOMIC:           %[[P1:.*]] = arith.remui %[[P]], %{{.*}} : index
// ATOMIC:           %[[P0:.*]] = arith.divui %[[P]], %{{.*}} : index
// ATOMIC:           %[[ID:.*]] = memref.load %{{.*}}[%[[P0]], %[[P1]]] : memref<2x3xi64>
// ATOMIC:           %[[ROW:.*]] = arith.index_cast %[[ID]] : i64 to index
// ATOMIC:           scf.if
// ATOMIC:             %[[X:.*]] = memref.load %{{.*}}[%[[P0]], %[[P1]], %[[J]]] : memref<2x3x5xf32>
// ATOMIC:             memref.atomic_rmw addf %[[X]], %{{.*}}[%[[ROW]], %[[J]]] : (f32, memref<7x5xf32>) -> f32
// ATOMIC-NOT:     gaccrt_index_error
func.func @serial(%u: memref<2x3x5xf32>, %ids: memref<2x3xi64>, %acc: memref<7x5xf32>) {
  gacc.scatter_add ins(%u, %ids : memref<2x3x5xf32>, memref<2x3xi64>) outs(%acc : memref<7x5xf32>) {gacc.index_site = 3 : i64}
  return
}

// -----

// Rank-1 rows, i32 ids, a dynamic number of rows, no site: out-of-range
// rows are skipped silently.
// CHECK-LABEL: func.func @rank1
// CHECK:         %[[ROWS:.*]] = memref.dim %{{.*}}, %{{.*}} : memref<?xf64>
// CHECK:         scf.for %[[P:.*]] =
// CHECK:           %[[ID:.*]] = memref.load %{{.*}}[%[[P]]] : memref<4xi32>
// CHECK:           %[[ROW:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK:           arith.cmpi slt, %[[ROW]], %[[ROWS]]
// CHECK:           scf.if
// CHECK:             arith.addf %{{.*}} : f64
// CHECK-NOT:       else
// CHECK-NOT:       gaccrt_index_error

// ATOMIC-LABEL: func.func @rank1
// ATOMIC:         memref.atomic_rmw addf %{{.*}}, %{{.*}}[%{{.*}}] : (f64, memref<?xf64>) -> f64
func.func @rank1(%u: memref<4xf64>, %ids: memref<4xi32>, %acc: memref<?xf64>) {
  gacc.scatter_add ins(%u, %ids : memref<4xf64>, memref<4xi32>) outs(%acc : memref<?xf64>)
  return
}

// The embedding step at four micro-batches, bufferized for the CPU: the
// gather and the scatter-add are sites 0 and 1; the table's gradient lives
// in the bucket (after the head's 5 floats), is zero filled once before the
// loop over the regions and accumulated in place in each iteration.
// STEP:       module attributes {gacc.gather_sites = ["{{.*}}embedding-scatter-add.mlir:31:10 (table: argument #1, indices from argument #0)", "scatter_add at {{.*}}embedding-scatter-add.mlir:85:9 (indices from argument #0)"]}
// STEP-LABEL: func.func @embedding_step
// STEP:         %[[BUCKET:.*]] = memref.alloc() {{.*}} : memref<160xi8>
// STEP:         %[[VIEW:.*]] = memref.view %[[BUCKET]][%{{.*}}][] : memref<160xi8> to memref<35xf32>
// STEP:         %[[GRAD:.*]] = memref.expand_shape %[[VIEW]] {{\[\[}}0, 1]] output_shape [7, 5]
// STEP:         linalg.fill ins(%{{.*}} : f32) outs(%[[GRAD]] : memref<7x5xf32>)
// STEP:         scf.for
// STEP:           scf.for
// STEP:             scf.if
// STEP:               scf.for
// STEP:                 memref.load %[[GRAD]]
// STEP:                 memref.store %{{.*}}, %[[GRAD]]
// STEP:             } else {
// STEP:               func.call @gaccrt_index_error(%{{.*}}, %{{.*}}, %c1_i64)
// STEP-NOT:     gacc.scatter_add
// LLVM-LABEL: llvm.func @embedding_step
// LLVM:         llvm.call @gaccrt_index_error
// LLVM-NOT:     gacc.scatter_add

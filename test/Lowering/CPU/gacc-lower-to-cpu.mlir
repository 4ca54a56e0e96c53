// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=2 overlap-all-reduce=false" --gacc-lower-to-cpu="bufferize-only" | FileCheck %s
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=4 overlap-all-reduce=false" --gacc-lower-to-cpu | FileCheck %s --check-prefix=LLVM

// The bufferized step (linear-step.mlir, B = 8, m = 2): the two gradient
// accumulators are views of one bucket allocation for the whole step; in
// the loop over the two regions (one body for both) the weight gradient
// GEMM writes its view in the first iteration (beta = 0, no zero fill
// before the loop) and accumulates into it in the second (beta = 1); the
// bias gradient, zero filled before the loop, accumulates in place;
// nothing is copied between
// accumulators and the bucket; the bucket is reduced once, in place, after
// the final region (the per-accumulator collectives of gacc-split-buckets
// merged back into one).

// CHECK-LABEL: func.func @linear
// CHECK-SAME:    (%{{.*}}: memref<3x2xf32>, %{{.*}}: memref<2xf32>, %[[X:.*]]: memref<8x3xf32>, %{{.*}}: memref<8x2xf32>, %{{.*}}: memref<f32>, %{{.*}}: memref<3x2xf32>, %{{.*}}: memref<2xf32>)
// CHECK:         %[[BYTES:.*]] = memref.alloc() {alignment = 64 : i64} : memref<32xi8>
// CHECK:         %[[BUCKET:.*]] = memref.view %[[BYTES]][%{{.*}}][] : memref<32xi8> to memref<8xf32>
// CHECK:         %[[SW:.*]] = memref.view %[[BYTES]][%{{.*}}][] : memref<32xi8> to memref<6xf32>
// CHECK:         %[[GB:.*]] = memref.view %[[BYTES]][%{{.*}}][] : memref<32xi8> to memref<2xf32>
// CHECK-NOT:     memref.copy
// CHECK:         %[[GW:.*]] = memref.expand_shape %[[SW]] {{\[\[}}0, 1]] output_shape [3, 2]
// CHECK-NEXT:    linalg.fill ins(%{{.*}} : f32) outs(%[[GB]] : memref<2xf32>)
// CHECK-NEXT:    scf.for %[[I:.*]] = %[[LB:.*]] to
// CHECK:           call @gaccrt_trace_region_begin
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[I]], %[[LB]]
// CHECK:           %[[BETA:.*]] = arith.select %[[FIRST]], %{{.*}}, %{{.*}} : f32
// CHECK:           %[[C1:.*]] = memref.cast %[[GW]]
// CHECK:           call @gaccrt_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %[[BETA]], %{{.*}}, %{{.*}}, %[[C1]])
// CHECK-NOT:       linalg.fill
// CHECK:           linalg.generic {{.*}} outs(%[[GB]] : memref<2xf32>)
// CHECK:           call @gaccrt_trace_region_end
// CHECK-NOT:     memref.copy
// CHECK:         %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[BUCKET]]
// CHECK:         %[[A64:.*]] = arith.index_cast %[[ADDR]]
// CHECK:         call @gaccrt_all_reduce(%[[A64]], %c8_i64, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i32, i32, i64) -> ()
// CHECK-NOT:     call @gaccrt_all_reduce
// CHECK-NOT:     memref.copy %{{.*}}, %[[BUCKET]]
// CHECK:         return

// Fully lowered: LLVM dialect, runtime calls (one loop for the four regions:
// one region marker in the code), one all-reduce for four regions,
// every buffer in the step's arena (gacc-plan-arena: a global, its bytes
// accounted on entry and return; no malloc or free).
// LLVM:         llvm.mlir.global private @linear_arena() {{.*}}alignment = 64 : i64{{.*}} : !llvm.array<[[BYTES:[0-9]+]] x i8>
// LLVM-LABEL: llvm.func @linear
// LLVM-NOT:     _mlir_memref_to_llvm
// LLVM-DAG:     %[[N:.*]] = llvm.mlir.constant([[BYTES]] : i64) : i64
// LLVM-DAG:     %[[M:.*]] = llvm.mlir.constant(-[[BYTES]] : i64) : i64
// LLVM:         llvm.call @gaccrt_account_arena(%[[N]])
// LLVM-COUNT-1: llvm.call @gaccrt_trace_region_begin
// LLVM-NOT:     llvm.call @gaccrt_trace_region_begin
// LLVM:         llvm.call @gaccrt_all_reduce
// LLVM-NOT:     llvm.call @gaccrt_all_reduce
// LLVM:         llvm.call @gaccrt_account_arena(%[[M]])
// LLVM-NOT:     _mlir_memref_to_llvm
// LLVM:         llvm.return

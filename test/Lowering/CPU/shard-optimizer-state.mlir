// The CPU lowering of gacc-shard-optimizer-state's collectives: per bucket
// one gaccrt_reduce_scatter (its chunk: count per rank, f32 = 0, average =
// 1, the bucket) and one gaccrt_all_gather into new buffers, the rank from
// gaccrt_rank, and no gaccrt_all_reduce of a gradient (the MLP has no
// reduction over a whole gradient, so none at all).
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=2 bucket-bytes=128 overlap-all-reduce=false" | gacc-opt --gacc-lower-to-cpu="bufferize-only" | FileCheck %s
// Overlapped (the default): see OVERLAP below.
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=2 bucket-bytes=128" | gacc-opt --gacc-lower-to-cpu="bufferize-only" | FileCheck %s --check-prefix=OVERLAP
// With clipping, the global norm's one-float all-reduce is the only one.
// RUN: gacc-opt %examples/adamw_clip.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=3 overlap-all-reduce=false" | gacc-opt --gacc-lower-to-cpu="bufferize-only" | FileCheck %s --check-prefix=CLIP
// Down to the LLVM dialect.
// RUN: gacc-opt %examples/adamw_clip.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=2" | gacc-opt --gacc-lower-to-cpu | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @train_step
// CHECK:         call @gaccrt_rank() : () -> i32
// CHECK-NOT:     call @gaccrt_all_reduce
// CHECK:         call @gaccrt_reduce_scatter(%{{.*}}, %{{.*}}, %c16_i64, %c0_i32, %c1_i32, %c0_i64)
// CHECK-NOT:     call @gaccrt_all_reduce
// CHECK:         call @gaccrt_reduce_scatter(%{{.*}}, %{{.*}}, %c16_i64, %c0_i32, %c1_i32, %c1_i64)
// CHECK-NOT:     call @gaccrt_all_reduce
// CHECK:         call @gaccrt_reduce_scatter(%{{.*}}, %{{.*}}, %c2_i64, %c0_i32, %c1_i32, %c2_i64)
// CHECK-NOT:     call @gaccrt_all_reduce
// CHECK:         call @gaccrt_all_gather(%{{.*}}, %{{.*}}, %c16_i64, %c0_i32, %c0_i64)
// CHECK:         call @gaccrt_all_gather(%{{.*}}, %{{.*}}, %c16_i64, %c0_i32, %c1_i64)
// CHECK:         call @gaccrt_all_gather(%{{.*}}, %{{.*}}, %c2_i64, %c0_i32, %c2_i64)
// CHECK-NOT:     call @gaccrt_all_reduce
// CHECK:         return

// CLIP-LABEL: func.func @train_step
// CLIP-COUNT-1: call @gaccrt_reduce_scatter(%{{.*}}, %{{.*}}, %c2_i64, %c0_i32, %c1_i32, %c0_i64)
// CLIP:         call @gaccrt_all_reduce(%{{.*}}, %c1_i64, %c0_i32, %c0_i32, %c-1_i64)
// CLIP-NOT:     call @gaccrt_all_reduce
// CLIP-COUNT-1: call @gaccrt_all_gather(%{{.*}}, %{{.*}}, %c2_i64, %c0_i32, %c0_i64)
// CLIP-NOT:     call @gaccrt_all_reduce
// CLIP:         return

// LLVM-DAG: llvm.func @gaccrt_reduce_scatter_start(i64, i64, i64, i32, i32, i64) -> i64
// LLVM-DAG: llvm.func @gaccrt_reduce_scatter_wait(i64, i64, i64)
// LLVM-DAG: llvm.func @gaccrt_all_gather_start(i64, i64, i64, i32, i64) -> i64
// LLVM-DAG: llvm.func @gaccrt_all_gather_wait(i64, i64, i64)

// Overlapped: each bucket's reduce-scatter starts in the loop's last
// iteration (the final region) right after the bucket's last accumulation.
// Bucket 0 (W2 and b2, 24 + 3 floats, 12 + 2 per rank) is packed there into
// its rank-major layout (2 x 14; b2 padded to 4 first), while the first
// layer's backward (two GEMMs) still runs; W1's and b1's buckets (one
// member each, 32 and 8 floats) are reduced from their accumulators in
// place. The waits come where the epilogue first reads a bucket's shard;
// each all-gather starts when its bucket's updated shards are final and is
// waited for where they are unpacked, after the last one started.
// OVERLAP-LABEL: func.func @train_step
// OVERLAP-COUNT-3: memref.alloca() : memref<i64>
// OVERLAP:         scf.for %[[IV:.*]] = %{{.*}} to %[[UB:[^ ]*]] step %[[STEP:[^ ]*]] {
// OVERLAP-NOT:       gaccrt_reduce_scatter
// OVERLAP:           linalg.reduce { arith.addf } ins(%{{.*}} : memref<4x3xf32>) outs(%[[B2:.*]] : memref<3xf32>)
// OVERLAP-NEXT:      %[[NEXT:.*]] = arith.addi %[[IV]], %[[STEP]] : index
// OVERLAP-NEXT:      %[[LAST:.*]] = arith.cmpi sge, %[[NEXT]], %[[UB]] : index
// OVERLAP-NEXT:      scf.if %[[LAST]] {
// OVERLAP-NEXT:        %[[W2:.*]] = memref.expand_shape %{{.*}} {{\[\[}}0, 1]] output_shape [2, 12] : memref<24xf32> into memref<2x12xf32>
// OVERLAP-NEXT:        %[[W2DST:.*]] = memref.subview %[[LAYOUT:.*]][0, 0] [2, 12] [1, 1]
// OVERLAP-NEXT:        memref.copy %[[W2]], %[[W2DST]]
// OVERLAP-NEXT:        linalg.map outs(%[[PAD:.*]] : memref<4xf32>)
// OVERLAP:             memref.copy %[[B2]], %{{.*}} : memref<3xf32> to memref<3xf32, strided<[1]>>
// OVERLAP:             memref.copy %{{.*}}, %{{.*}} : memref<2x2xf32> to memref<2x2xf32, strided<[14, 1], offset: 12>>
// OVERLAP-NEXT:        %[[FLAT:.*]] = memref.collapse_shape %[[LAYOUT]]
// OVERLAP:             func.call @gaccrt_reduce_scatter_start(%{{.*}}, %{{.*}}, %c14_i64, %c0_i32, %c1_i32, %c0_i64)
// OVERLAP-NEXT:        memref.store
// OVERLAP-NEXT:      }
// OVERLAP-COUNT-2:   call @gaccrt_sgemm
// OVERLAP:           scf.if
// OVERLAP:             func.call @gaccrt_reduce_scatter_start(%{{.*}}, %{{.*}}, %c16_i64, %c0_i32, %c1_i32, %c1_i64)
// OVERLAP:           linalg.reduce
// OVERLAP:           scf.if
// OVERLAP:             func.call @gaccrt_reduce_scatter_start(%{{.*}}, %{{.*}}, %c4_i64, %c0_i32, %c1_i32, %c2_i64)
// OVERLAP:           call @gaccrt_trace_region_end
// OVERLAP-NEXT:    }
// OVERLAP-NOT:     call @gaccrt_sgemm
// OVERLAP:         call @gaccrt_reduce_scatter_wait
// OVERLAP:         linalg.generic
// OVERLAP:         call @gaccrt_all_gather_start(%{{.*}}, %{{.*}}, %c16_i64, %c0_i32, %c1_i64)
// OVERLAP:         call @gaccrt_reduce_scatter_wait
// OVERLAP:         linalg.generic
// OVERLAP:         call @gaccrt_all_gather_start(%{{.*}}, %{{.*}}, %c4_i64, %c0_i32, %c2_i64)
// OVERLAP:         call @gaccrt_reduce_scatter_wait
// OVERLAP:         call @gaccrt_all_gather_start(%{{.*}}, %{{.*}}, %c14_i64, %c0_i32, %c0_i64)
// OVERLAP:         call @gaccrt_all_gather_wait
// OVERLAP:         call @gaccrt_all_gather_wait
// OVERLAP:         call @gaccrt_all_gather_wait
// OVERLAP-NOT:     call @gaccrt_{{all_reduce|reduce_scatter\(|all_gather\(}}
// OVERLAP:         return

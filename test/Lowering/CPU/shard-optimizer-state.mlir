// The CPU lowering of gacc-shard-optimizer-state's collectives: per bucket
// one gaccrt_reduce_scatter (its chunk: count per rank, f32 = 0, average =
// 1, the bucket) and one gaccrt_all_gather into new buffers, the rank from
// gaccrt_rank, and no gaccrt_all_reduce of a gradient (the MLP has no
// reduction over a whole gradient, so none at all).
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=2 bucket-bytes=128" | gacc-opt --gacc-lower-to-cpu="bufferize-only" | FileCheck %s
// With clipping, the global norm's one-float all-reduce is the only one.
// RUN: gacc-opt %examples/adamw_clip.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=3" | gacc-opt --gacc-lower-to-cpu="bufferize-only" | FileCheck %s --check-prefix=CLIP
// Down to the LLVM dialect.
// RUN: gacc-opt %examples/adamw_clip.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=2" | gacc-opt --gacc-lower-to-cpu | FileCheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @train_step
// CHECK:         call @gaccrt_rank() : () -> i32
// CHECK-NOT:     call @gaccrt_all_reduce
// CHECK:         call @gaccrt_reduce_scatter(%{{.*}}, %{{.*}}, %c16_i64, %c0_i32, %c1_i32, %c1_i64)
// CHECK-NOT:     call @gaccrt_all_reduce
// CHECK:         call @gaccrt_reduce_scatter(%{{.*}}, %{{.*}}, %c4_i64, %c0_i32, %c1_i32, %c2_i64)
// CHECK-NOT:     call @gaccrt_all_reduce
// CHECK:         call @gaccrt_reduce_scatter(%{{.*}}, %{{.*}}, %c14_i64, %c0_i32, %c1_i32, %c0_i64)
// CHECK-NOT:     call @gaccrt_all_reduce
// CHECK:         call @gaccrt_all_gather(%{{.*}}, %{{.*}}, %c16_i64, %c0_i32, %c1_i64)
// CHECK:         call @gaccrt_all_gather(%{{.*}}, %{{.*}}, %c4_i64, %c0_i32, %c2_i64)
// CHECK:         call @gaccrt_all_gather(%{{.*}}, %{{.*}}, %c14_i64, %c0_i32, %c0_i64)
// CHECK-NOT:     call @gaccrt_all_reduce
// CHECK:         return

// CLIP-LABEL: func.func @train_step
// CLIP-COUNT-1: call @gaccrt_reduce_scatter(%{{.*}}, %{{.*}}, %c2_i64, %c0_i32, %c1_i32, %c0_i64)
// CLIP:         call @gaccrt_all_reduce(%{{.*}}, %c1_i64, %c0_i32, %c0_i32, %c-1_i64)
// CLIP-NOT:     call @gaccrt_all_reduce
// CLIP-COUNT-1: call @gaccrt_all_gather(%{{.*}}, %{{.*}}, %c2_i64, %c0_i32, %c0_i64)
// CLIP-NOT:     call @gaccrt_all_reduce
// CLIP:         return

// LLVM-DAG: llvm.func @gaccrt_reduce_scatter(i64, i64, i64, i32, i32, i64)
// LLVM-DAG: llvm.func @gaccrt_all_gather(i64, i64, i64, i32, i64)

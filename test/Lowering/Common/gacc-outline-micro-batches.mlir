// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batch-sizes=2,2,2,1,1 overlap-all-reduce=false" --gacc-outline-micro-batches | FileCheck %s
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batch-sizes=2,2,2,1,1 overlap-all-reduce=false" --gacc-outline-micro-batches="min-regions=4" | FileCheck %s --check-prefix=MIN4
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=8 overlap-all-reduce=false" --gacc-outline-micro-batches="trace-regions" | FileCheck %s --check-prefix=M8
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=8" --gacc-outline-micro-batches | FileCheck %s --check-prefix=FINAL
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=8 overlap-all-reduce=false" --gacc-lower-to-cpu | FileCheck %s --check-prefix=LLVM
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=8" --gacc-lower-to-cpu | FileCheck %s --check-prefix=LLVM-OVERLAP
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batch-sizes=2,1,2,1,2" --gacc-outline-micro-batches | FileCheck %s --check-prefix=INTERLEAVED
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batch-sizes=2,1,1,2,2" --gacc-outline-micro-batches | FileCheck %s --check-prefix=LOOP-BETWEEN
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batch-sizes=2,1,2,1,2" --gacc-outline-micro-batches="functions=false" | FileCheck %s --check-prefix=NO-FUNCTIONS

// One body per micro-batch size (linear-step.mlir, B = 8, sizes 2,2,2,1,1):
// the identity fills that start the accumulators in region 0 move before it,
// so that regions 0-2 (size 2) and regions 3-4 (the tail, size 1) each
// become one scf.for whose body is the region's, with the sample offset
// computed from the induction variable and the accumulators as iteration
// arguments, starting from those fills.

// CHECK-LABEL: func.func @linear
// CHECK-NOT:     gacc.micro_batch
// CHECK:         %[[F0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<f32>)
// CHECK:         %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x2xf32>)
// CHECK:         %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2xf32>)
// CHECK:         %[[C0:.*]] = arith.constant 0 : index
// CHECK:         %[[C3:.*]] = arith.constant 3 : index
// CHECK:         %[[L1:.*]]:3 = scf.for %[[K:.*]] = %[[C0]] to %[[C3]] step %{{.*}} iter_args(%{{.*}} = %[[F0]], %{{.*}} = %[[F1]], %{{.*}} = %[[F2]])
// CHECK:           %[[S:.*]] = arith.muli %[[K]], %{{.*}} : index
// CHECK:           %[[OFF:.*]] = arith.addi %[[S]], %{{.*}} : index
// CHECK:           tensor.extract_slice %{{.*}}[%[[OFF]], 0] [2, 3] [1, 1] : tensor<8x3xf32> to tensor<2x3xf32>
// CHECK:           scf.yield
// CHECK-NOT:     gacc.micro_batch
// CHECK:         %[[L2:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[L1]]#0, %{{.*}} = %[[L1]]#1, %{{.*}} = %[[L1]]#2)
// CHECK:           tensor.extract_slice %{{.*}}[%{{.*}}, 0] [1, 3] [1, 1] : tensor<8x3xf32> to tensor<1x3xf32>
// CHECK:           scf.yield
// CHECK-NOT:     gacc.micro_batch
// CHECK-NOT:     scf.for
// CHECK:         shard.all_reduce %{{.*}}
// CHECK:         return

// With min-regions=4 the size-2 form (three regions) stays inline and its
// first region keeps its fills; the tail (two regions) stays too.
// MIN4-LABEL: func.func @linear
// MIN4:         gacc.micro_batch 0 offset 0 size 2
// MIN4:           linalg.fill
// MIN4-NOT:     scf.for

// m = 8: one loop of 8 iterations, each marked with its region index.
// M8-LABEL: func.func @linear
// M8-NOT:     gacc.micro_batch
// M8:         %[[C8:.*]] = arith.constant 8 : index
// M8:         scf.for %[[K:.*]] = %{{.*}} to %[[C8]]
// M8:           %[[I:.*]] = arith.index_cast %[[K]] : index to i64
// M8:           %[[IDX:.*]] = arith.addi %[[I]], %{{.*}} : i64
// M8:           call @gaccrt_trace_region_begin(%[[IDX]])
// M8:           tensor.extract_slice %{{.*}}[%{{.*}}, 0] [1, 3] [1, 1] : tensor<8x3xf32> to tensor<1x3xf32>
// M8:           call @gaccrt_trace_region_end(%[[IDX]])
// M8-NEXT:      scf.yield
// M8-NOT:     gacc.micro_batch

// Lowered: the step's two GEMMs (forward, weight gradient) appear once each
// in the code, in the loop body (the weight gradient accumulating with
// beta = 1 into the zero-filled accumulator), not eight times; one
// all-reduce. The final region joins the loop also when the bucket
// all-reduce overlaps with it (the default): the loop covers regions 0-7.
// FINAL-LABEL: func.func @linear
// FINAL-NOT:     gacc.micro_batch
// FINAL:         %[[C8:.*]] = arith.constant 8 : index
// FINAL:         %[[L:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %[[C8]]
// FINAL-NOT:     gacc.micro_batch

// LLVM-LABEL: llvm.func @linear
// LLVM-COUNT-2: llvm.call @gaccrt_sgemm
// LLVM-NOT:     llvm.call @gaccrt_sgemm
// LLVM:         llvm.call @gaccrt_all_reduce
// LLVM-NOT:     llvm.call @gaccrt_all_reduce

// With the overlapped all-reduce (the default) the code has one body too:
// the start is in the loop, the wait after it.
// LLVM-OVERLAP-LABEL: llvm.func @linear
// LLVM-OVERLAP-COUNT-2: llvm.call @gaccrt_sgemm
// LLVM-OVERLAP-NOT:     llvm.call @gaccrt_sgemm
// LLVM-OVERLAP:         llvm.call @gaccrt_all_reduce_start
// LLVM-OVERLAP-NOT:     llvm.call @gaccrt_sgemm
// LLVM-OVERLAP:         llvm.call @gaccrt_all_reduce_wait
// LLVM-OVERLAP-NOT:     llvm.call @gaccrt_all_reduce

// Sizes 2,1,2,1,2: the regions of one size do not follow each other, so
// each size shares a function called once per region. With the bucket
// all-reduce overlapping the final region (the default), the final region
// stays inline: after a call the all-reduce could only start once the whole
// region is done.
// INTERLEAVED-LABEL: func.func @linear
// INTERLEAVED:         gacc.micro_batch 0 offset 0 size 2
// INTERLEAVED-NEXT:      arith.constant 0 : index
// INTERLEAVED-NEXT:      func.call @linear_micro_batch_2(
// INTERLEAVED:         gacc.micro_batch 1 offset 2 size 1
// INTERLEAVED:           func.call @linear_micro_batch_1(
// INTERLEAVED:         gacc.micro_batch 2 offset 3 size 2
// INTERLEAVED:           func.call @linear_micro_batch_2(
// INTERLEAVED:         gacc.micro_batch 3 offset 5 size 1
// INTERLEAVED:           func.call @linear_micro_batch_1(
// INTERLEAVED:         gacc.micro_batch 4 offset 6 size 2
// INTERLEAVED-NEXT:      tensor.extract_slice %{{.*}}[6, 0] [2, 3] [1, 1]
// INTERLEAVED-NOT:       func.call @linear_micro_batch
// INTERLEAVED:       func.func private @linear_micro_batch_2(

// With functions=false (the CUDA lowering), regions that do not follow each
// other stay inline.
// NO-FUNCTIONS-LABEL: func.func @linear
// NO-FUNCTIONS-COUNT-5: gacc.micro_batch
// NO-FUNCTIONS-NOT:     func.call
// NO-FUNCTIONS-NOT:     func.func private

// Sizes 2,1,1,2,2: the size-1 regions 1-2 become a loop (built first, the
// last form first), and the size-2 region after it, outlined with the other
// size-2 regions, calls its function with the loop's results, not with the
// erased region 2's (this crashed in the pass's result verification).
// LOOP-BETWEEN-LABEL: func.func @linear
// LOOP-BETWEEN:         %[[R0:.*]]:3 = gacc.micro_batch 0 offset 0 size 2
// LOOP-BETWEEN-NEXT:      arith.constant 0 : index
// LOOP-BETWEEN-NEXT:      func.call @linear_micro_batch_2(
// LOOP-BETWEEN:         %[[LOOP:.*]]:3 = scf.for {{.*}} iter_args({{.*}} = %[[R0]]#0, {{.*}} = %[[R0]]#1, {{.*}} = %[[R0]]#2)
// LOOP-BETWEEN:         gacc.micro_batch 3 offset 4 size 2
// LOOP-BETWEEN-NEXT:      arith.constant 4 : index
// LOOP-BETWEEN-NEXT:      func.call @linear_micro_batch_2({{.*}}, %[[LOOP]]#0, %[[LOOP]]#1, %[[LOOP]]#2)
// LOOP-BETWEEN:         gacc.micro_batch 4 offset 6 size 2
// LOOP-BETWEEN:       func.func private @linear_micro_batch_2(

// RUN: gacc-opt %s --gacc-overlap-all-reduce --split-input-file | FileCheck %s
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=4 bucket-bytes=128" --gacc-lower-to-cpu="bufferize-only" | FileCheck %s --check-prefix=MLP
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=4 bucket-bytes=128 overlap-all-reduce=false" --gacc-lower-to-cpu="bufferize-only" | FileCheck %s --check-prefix=OFF

// The MLP step (examples/mlp.mlir, m = 4, three buckets: W2 and b2, W1, b1).
// All four regions are one loop (gacc-outline-micro-batches); the buckets
// start in its last iteration, guarded by `iv + step >= ub`, with the
// handles passed out through stack slots. The final region's backward
// finishes W2's and b2's gradients first: bucket 0 starts right after W2's
// weight-gradient GEMM, while the two GEMMs of the first layer's backward
// still run; W1's and b1's buckets start when their gradients are final,
// at the end of the iteration. The SGD epilogue then waits for each bucket
// where it first reads it (W1 first, as the graph updates W1 first).
// MLP-LABEL: func.func @train_step
// MLP-NEXT:    %[[S0:.*]] = memref.alloca() : memref<i64>
// MLP-NEXT:    %[[S2:.*]] = memref.alloca() : memref<i64>
// MLP-NEXT:    %[[S1:.*]] = memref.alloca() : memref<i64>
// MLP:         scf.for %[[IV:.*]] = %{{.*}} to %[[UB:[^ ]*]] step %[[STEP:[^ ]*]] {
// MLP:           call @gaccrt_trace_region_begin
// MLP-NOT:       gaccrt_all_reduce
// MLP:           %[[NEXT0:.*]] = arith.addi %[[IV]], %[[STEP]] : index
// MLP-NEXT:      %[[LAST0:.*]] = arith.cmpi sge, %[[NEXT0]], %[[UB]] : index
// MLP-NEXT:      scf.if %[[LAST0]] {
// MLP:             %[[H0:.*]] = func.call @gaccrt_all_reduce_start(%{{.*}}, %c27_i64, %{{.*}}, %{{.*}}, %c0_i64) : (i64, i64, i32, i32, i64) -> i64
// MLP-NEXT:        memref.store %[[H0]], %[[S0]][] : memref<i64>
// MLP-NEXT:      }
// MLP-COUNT-2:   call @gaccrt_sgemm
// MLP-NOT:       gaccrt_all_reduce
// MLP:           scf.if
// MLP:             %[[H1:.*]] = func.call @gaccrt_all_reduce_start(%{{.*}}, %c32_i64, %{{.*}}, %{{.*}}, %c1_i64)
// MLP-NEXT:        memref.store %[[H1]], %[[S1]][] : memref<i64>
// MLP:           scf.if
// MLP:             %[[H2:.*]] = func.call @gaccrt_all_reduce_start(%{{.*}}, %c8_i64, %{{.*}}, %{{.*}}, %c2_i64)
// MLP-NEXT:        memref.store %[[H2]], %[[S2]][] : memref<i64>
// MLP-NEXT:      }
// MLP-NEXT:      call @gaccrt_trace_region_end
// MLP-NEXT:    }
// MLP-NOT:     call @gaccrt_sgemm
// MLP:         %[[W1:.*]] = memref.load %[[S1]][] : memref<i64>
// MLP:         call @gaccrt_all_reduce_wait(%[[W1]], %{{.*}}) : (i64, i64) -> ()
// MLP:         %[[W2:.*]] = memref.load %[[S2]][] : memref<i64>
// MLP:         call @gaccrt_all_reduce_wait(%[[W2]], %{{.*}}) : (i64, i64) -> ()
// MLP:         %[[W0:.*]] = memref.load %[[S0]][] : memref<i64>
// MLP:         call @gaccrt_all_reduce_wait(%[[W0]], %{{.*}}) : (i64, i64) -> ()
// MLP-NOT:     gaccrt_all_reduce
// MLP:         return

// overlap-all-reduce=false: every region after the first in the loop, one
// blocking all-reduce per bucket after it.
// OFF-LABEL: func.func @train_step
// OFF:         scf.for
// OFF:         call @gaccrt_trace_region_end
// OFF-NOT:     gacc.micro_batch
// OFF-COUNT-3: call @gaccrt_all_reduce(
// OFF-NOT:     gaccrt_all_reduce
// OFF:         return

// A bucket all-reduce marked gacc.overlap starts right after the last write
// of its bucket (through a view) and is waited for right before the first
// read; the unrelated work in between overlaps with it.

// CHECK-LABEL: func.func @overlap
// CHECK:         %[[BYTES:.*]] = memref.alloc() : memref<24xi8>
// CHECK:         %[[BUCKET:.*]] = memref.view %[[BYTES]]
// CHECK:         %[[ACC:.*]] = memref.view %[[BYTES]]
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[ACC]] : memref<4xf32>)
// CHECK-NOT:     linalg
// CHECK:         %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[BUCKET]]
// CHECK-NEXT:    %[[A:.*]] = arith.index_cast %[[P]] : index to i64
// CHECK-NEXT:    %[[H:.*]] = call @gaccrt_all_reduce_start(%[[A]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i32, i32, i64) -> i64
// CHECK-NEXT:    linalg.fill ins(%{{.*}} : f32) outs(%[[OTHER:.*]] : memref<8xf32>)
// CHECK-NEXT:    call @work(%[[OTHER]])
// CHECK-NEXT:    %[[P2:.*]] = memref.extract_aligned_pointer_as_index %[[BUCKET]]
// CHECK-NEXT:    %[[A2:.*]] = arith.index_cast %[[P2]] : index to i64
// CHECK-NEXT:    call @gaccrt_all_reduce_wait(%[[H]], %[[A2]]) : (i64, i64) -> ()
// CHECK-NEXT:    memref.copy %[[ACC]], %{{.*}}
// CHECK-NOT:     call @gaccrt_all_reduce(
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func private @work(memref<8xf32>)
func.func @overlap(%out: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %bytes = memref.alloc() : memref<24xi8>
  %c0 = arith.constant 0 : index
  %bucket = memref.view %bytes[%c0][] : memref<24xi8> to memref<6xf32>
  %c8 = arith.constant 8 : index
  %acc = memref.view %bytes[%c8][] : memref<24xi8> to memref<4xf32>
  %other = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<4xf32>)
  linalg.fill ins(%zero : f32) outs(%other : memref<8xf32>)
  call @work(%other) : (memref<8xf32>) -> ()
  %p = memref.extract_aligned_pointer_as_index %bucket : memref<6xf32> -> index
  %a = arith.index_cast %p : index to i64
  %n = arith.constant 6 : i64
  %dtype = arith.constant 0 : i32
  %kind = arith.constant 1 : i32
  %id = arith.constant 0 : i64
  call @gaccrt_all_reduce(%a, %n, %dtype, %kind, %id) {gacc.overlap} : (i64, i64, i32, i32, i64) -> ()
  memref.copy %acc, %out : memref<4xf32> to memref<4xf32>
  memref.dealloc %other : memref<8xf32>
  memref.dealloc %bytes : memref<24xi8>
  return
}

// -----

// Nothing reads the bucket after the all-reduce: the wait is the last thing
// before the return. A bucket all-reduce without gacc.overlap stays blocking.

// CHECK-LABEL: func.func @no_reader
// CHECK:         linalg.fill
// CHECK-NOT:     memref.extract_aligned_pointer_as_index
// CHECK-NOT:     call
// CHECK:         memref.extract_aligned_pointer_as_index %{{.*}} : memref<4xf32>
// CHECK-NEXT:    arith.index_cast
// CHECK-NEXT:    %[[H:.*]] = call @gaccrt_all_reduce_start
// CHECK:         call @gaccrt_all_reduce(
// CHECK:         call @gaccrt_all_reduce_wait(%[[H]],
// CHECK-NEXT:    return
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func @no_reader(%b2: memref<2xf32>) {
  %zero = arith.constant 0.0 : f32
  %b1 = memref.alloc() : memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%b1 : memref<4xf32>)
  %n = arith.constant 4 : i64
  %dtype = arith.constant 0 : i32
  %kind = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  %p = memref.extract_aligned_pointer_as_index %b1 : memref<4xf32> -> index
  %a = arith.index_cast %p : index to i64
  %p2 = memref.extract_aligned_pointer_as_index %b2 : memref<2xf32> -> index
  %a2 = arith.index_cast %p2 : index to i64
  %n2 = arith.constant 2 : i64
  %id2 = arith.constant 1 : i64
  call @gaccrt_all_reduce(%a2, %n2, %dtype, %kind, %id2) : (i64, i64, i32, i32, i64) -> ()
  call @gaccrt_all_reduce(%a, %n, %dtype, %kind, %id) {gacc.overlap} : (i64, i64, i32, i32, i64) -> ()
  return
}

// -----

// An op that reads the bucket before the all-reduce (a local gradient norm)
// keeps the start after it.

// CHECK-LABEL: func.func @read_before
// CHECK:         call @norm(%[[B:.*]]) :
// CHECK-NOT:     call
// CHECK:         memref.extract_aligned_pointer_as_index %[[B]]
// CHECK-NEXT:    arith.index_cast
// CHECK-NEXT:    call @gaccrt_all_reduce_start
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func private @norm(memref<4xf32>)
func.func @read_before(%b: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%b : memref<4xf32>)
  call @norm(%b) : (memref<4xf32>) -> ()
  %n = arith.constant 4 : i64
  %dtype = arith.constant 0 : i32
  %kind = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  %p = memref.extract_aligned_pointer_as_index %b : memref<4xf32> -> index
  %a = arith.index_cast %p : index to i64
  call @gaccrt_all_reduce(%a, %n, %dtype, %kind, %id) {gacc.overlap} : (i64, i64, i32, i32, i64) -> ()
  return
}

// -----

// The last write of the bucket is a loop (the regions of one size, the final
// region among them): the all-reduce starts in the loop's last iteration,
// right after the body's last access of the bucket, and the handle leaves
// the loop through a stack slot.

// CHECK-LABEL: func.func @in_loop
// CHECK-NEXT:    %[[SLOT:.*]] = memref.alloca() : memref<i64>
// CHECK:         scf.for %[[IV:.*]] = %[[LB:.*]] to %[[UB:.*]] step %[[STEP:[^ ]*]] {
// CHECK-NEXT:      linalg.fill ins(%{{.*}} : f32) outs(%[[BUCKET:.*]] : memref<4xf32>)
// CHECK-NEXT:      %[[NEXT:.*]] = arith.addi %[[IV]], %[[STEP]] : index
// CHECK-NEXT:      %[[LAST:.*]] = arith.cmpi sge, %[[NEXT]], %[[UB]] : index
// CHECK-NEXT:      scf.if %[[LAST]] {
// CHECK-NEXT:        memref.extract_aligned_pointer_as_index %[[BUCKET]]
// CHECK-NEXT:        arith.index_cast
// CHECK-NEXT:        %[[H:.*]] = func.call @gaccrt_all_reduce_start(
// CHECK-NEXT:        memref.store %[[H]], %[[SLOT]][] : memref<i64>
// CHECK-NEXT:      }
// CHECK-NEXT:      func.call @work(%{{.*}})
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[H2:.*]] = memref.load %[[SLOT]][] : memref<i64>
// CHECK-NEXT:    memref.extract_aligned_pointer_as_index %[[BUCKET]]
// CHECK-NEXT:    %[[A:.*]] = arith.index_cast
// CHECK-NEXT:    call @gaccrt_all_reduce_wait(%[[H2]], %[[A]])
// CHECK-NEXT:    return
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func private @work(memref<8xf32>)
func.func @in_loop(%bucket: memref<4xf32>, %other: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 4 : i64
  %dtype = arith.constant 0 : i32
  %kind = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  scf.for %i = %c0 to %c3 step %c1 {
    linalg.fill ins(%zero : f32) outs(%bucket : memref<4xf32>)
    func.call @work(%other) : (memref<8xf32>) -> ()
  }
  %p = memref.extract_aligned_pointer_as_index %bucket : memref<4xf32> -> index
  %a = arith.index_cast %p : index to i64
  call @gaccrt_all_reduce(%a, %n, %dtype, %kind, %id) {gacc.overlap} : (i64, i64, i32, i32, i64) -> ()
  return
}

// -----

// A loop whose trip count is not a constant may not run at all: the
// all-reduce starts after it.

// CHECK-LABEL: func.func @dynamic_loop
// CHECK-NOT:     memref.alloca
// CHECK:         scf.for
// CHECK-NOT:       gaccrt_all_reduce
// CHECK:         }
// CHECK-NEXT:    memref.extract_aligned_pointer_as_index
// CHECK-NEXT:    arith.index_cast
// CHECK-NEXT:    %[[H:.*]] = call @gaccrt_all_reduce_start(
// CHECK:         call @gaccrt_all_reduce_wait(%[[H]],
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func @dynamic_loop(%bucket: memref<4xf32>, %ub: index) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 4 : i64
  %dtype = arith.constant 0 : i32
  %kind = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  scf.for %i = %c0 to %ub step %c1 {
    linalg.fill ins(%zero : f32) outs(%bucket : memref<4xf32>)
  }
  %p = memref.extract_aligned_pointer_as_index %bucket : memref<4xf32> -> index
  %a = arith.index_cast %p : index to i64
  call @gaccrt_all_reduce(%a, %n, %dtype, %kind, %id) {gacc.overlap} : (i64, i64, i32, i32, i64) -> ()
  return
}

// -----

// A loop that carries a memref (here the bucket itself) may write the bucket
// through its block argument: the all-reduce starts after the loop.

// CHECK-LABEL: func.func @carried_memref
// CHECK-NOT:     memref.alloca
// CHECK:         scf.for
// CHECK-NOT:       gaccrt_all_reduce
// CHECK:         }
// CHECK-NEXT:    memref.extract_aligned_pointer_as_index
// CHECK-NEXT:    arith.index_cast
// CHECK-NEXT:    %[[H:.*]] = call @gaccrt_all_reduce_start(
// CHECK:         call @gaccrt_all_reduce_wait(%[[H]],
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func @carried_memref(%bucket: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 4 : i64
  %dtype = arith.constant 0 : i32
  %kind = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%b = %bucket) -> (memref<4xf32>) {
    linalg.fill ins(%zero : f32) outs(%b : memref<4xf32>)
    scf.yield %b : memref<4xf32>
  }
  %p = memref.extract_aligned_pointer_as_index %bucket : memref<4xf32> -> index
  %a = arith.index_cast %p : index to i64
  call @gaccrt_all_reduce(%a, %n, %dtype, %kind, %id) {gacc.overlap} : (i64, i64, i32, i32, i64) -> ()
  return
}

// -----

// A sharded bucket (gacc-shard-optimizer-state): its accumulator is packed
// into a fresh rank-major layout after the loop, then reduce-scattered into
// a fresh buffer. The layout, the receive buffer and the packing copy move
// with the start into the loop's last iteration, right after the last write
// of the accumulator; unrelated work in the body runs after it. The wait
// comes before the first read of the received shard.

// CHECK-LABEL: func.func @scatter_packed
// CHECK:         %[[SLOT:.*]] = memref.alloca() : memref<i64>
// CHECK:         %[[RECV:.*]] = memref.alloc() : memref<3xf32>
// CHECK-NEXT:    %[[LAYOUT:.*]] = memref.alloc() : memref<2x3xf32>
// CHECK-NEXT:    scf.for
// CHECK-NEXT:      linalg.fill ins(%{{.*}} : f32) outs(%[[ACC:.*]] : memref<4xf32>)
// CHECK:           scf.if
// CHECK-NEXT:        %[[DST:.*]] = memref.subview %[[LAYOUT]][0, 0] [2, 2] [1, 1]
// CHECK-NEXT:        %[[SRC:.*]] = memref.expand_shape %[[ACC]]
// CHECK-NEXT:        memref.copy %[[SRC]], %[[DST]]
// CHECK-NEXT:        %[[FLAT:.*]] = memref.collapse_shape %[[LAYOUT]]
// CHECK-NEXT:        memref.extract_aligned_pointer_as_index %[[FLAT]]
// CHECK-NEXT:        arith.index_cast
// CHECK-NEXT:        memref.extract_aligned_pointer_as_index %[[RECV]]
// CHECK-NEXT:        arith.index_cast
// CHECK-NEXT:        %[[H:.*]] = func.call @gaccrt_reduce_scatter_start(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i64, i32, i32, i64) -> i64
// CHECK-NEXT:        memref.store %[[H]], %[[SLOT]][]
// CHECK-NEXT:      }
// CHECK-NEXT:      func.call @work
// CHECK-NEXT:    }
// CHECK-NOT:     memref.copy %{{.*}}, %{{.*}} : memref<2x2xf32>
// CHECK:         %[[W:.*]] = memref.load %[[SLOT]][]
// CHECK:         call @gaccrt_reduce_scatter_wait(%[[W]], %{{.*}}, %{{.*}}) : (i64, i64, i64) -> ()
// CHECK-NEXT:    memref.copy %[[RECV]], %{{.*}}
// CHECK-NOT:     call @gaccrt_reduce_scatter(
func.func private @gaccrt_reduce_scatter(i64, i64, i64, i32, i32, i64)
func.func private @work(memref<8xf32>)
func.func @scatter_packed(%acc: memref<4xf32>, %other: memref<8xf32>, %out: memref<3xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant 3 : i64
  %dtype = arith.constant 0 : i32
  %kind = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  scf.for %i = %c0 to %c2 step %c1 {
    linalg.fill ins(%zero : f32) outs(%acc : memref<4xf32>)
    func.call @work(%other) : (memref<8xf32>) -> ()
  }
  %layout = memref.alloc() : memref<2x3xf32>
  %dst = memref.subview %layout[0, 0] [2, 2] [1, 1] : memref<2x3xf32> to memref<2x2xf32, strided<[3, 1]>>
  %src = memref.expand_shape %acc [[0, 1]] output_shape [2, 2] : memref<4xf32> into memref<2x2xf32>
  memref.copy %src, %dst : memref<2x2xf32> to memref<2x2xf32, strided<[3, 1]>>
  %flat = memref.collapse_shape %layout [[0, 1]] : memref<2x3xf32> into memref<6xf32>
  %p = memref.extract_aligned_pointer_as_index %flat : memref<6xf32> -> index
  %a = arith.index_cast %p : index to i64
  %recv = memref.alloc() : memref<3xf32>
  %rp = memref.extract_aligned_pointer_as_index %recv : memref<3xf32> -> index
  %ra = arith.index_cast %rp : index to i64
  call @gaccrt_reduce_scatter(%a, %ra, %n, %dtype, %kind, %id) {gacc.overlap} : (i64, i64, i64, i32, i32, i64) -> ()
  memref.copy %recv, %out : memref<3xf32> to memref<3xf32>
  return
}

// -----

// The packing copy reads the accumulator before an op writes it again: the
// copy may not move down past that write, so it stays, and the
// reduce-scatter starts right after it, before the write.

// CHECK-LABEL: func.func @scatter_pack_then_write
// CHECK:         memref.copy %[[ACC:.*]], %[[LAYOUT:.*]] : memref<4xf32> to memref<4xf32>
// CHECK:         %[[H:.*]] = call @gaccrt_reduce_scatter_start(
// CHECK-NEXT:    linalg.fill ins(%{{.*}} : f32) outs(%[[ACC]] : memref<4xf32>)
// CHECK:         call @gaccrt_reduce_scatter_wait(%[[H]],
// CHECK-NEXT:    memref.copy
// CHECK-NOT:     call @gaccrt_reduce_scatter(
func.func private @gaccrt_reduce_scatter(i64, i64, i64, i32, i32, i64)
func.func @scatter_pack_then_write(%acc: memref<4xf32>, %out: memref<2xf32>) {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 2 : i64
  %dtype = arith.constant 0 : i32
  %kind = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  %layout = memref.alloc() : memref<4xf32>
  memref.copy %acc, %layout : memref<4xf32> to memref<4xf32>
  linalg.fill ins(%zero : f32) outs(%acc : memref<4xf32>)
  %p = memref.extract_aligned_pointer_as_index %layout : memref<4xf32> -> index
  %a = arith.index_cast %p : index to i64
  %recv = memref.alloc() : memref<2xf32>
  %rp = memref.extract_aligned_pointer_as_index %recv : memref<2xf32> -> index
  %ra = arith.index_cast %rp : index to i64
  call @gaccrt_reduce_scatter(%a, %ra, %n, %dtype, %kind, %id) {gacc.overlap} : (i64, i64, i64, i32, i32, i64) -> ()
  memref.copy %recv, %out : memref<2xf32> to memref<2xf32>
  return
}

// -----

// An all-gather whose send buffer is written by an op that also writes a
// buffer that stays (an optimizer update writing the parameter shard and the
// state): nothing moves; it starts right after that op and is waited for
// where its result is read.

// CHECK-LABEL: func.func @gather_after_update
// CHECK:         linalg.generic
// CHECK:         %[[H:.*]] = call @gaccrt_all_gather_start(
// CHECK-NEXT:    call @work
// CHECK-NEXT:    memref.extract_aligned_pointer_as_index
// CHECK-NEXT:    arith.index_cast
// CHECK-NEXT:    memref.extract_aligned_pointer_as_index
// CHECK-NEXT:    arith.index_cast
// CHECK-NEXT:    call @gaccrt_all_gather_wait(%[[H]], %{{.*}}, %{{.*}}) : (i64, i64, i64) -> ()
// CHECK-NEXT:    memref.copy
func.func private @gaccrt_all_gather(i64, i64, i64, i32, i64)
func.func private @work(memref<8xf32>)
func.func @gather_after_update(%state: memref<2xf32>, %other: memref<8xf32>, %out: memref<4xf32>) {
  %n = arith.constant 2 : i64
  %dtype = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  %shard = memref.alloc() : memref<2xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%shard, %state : memref<2xf32>, memref<2xf32>) {
  ^bb0(%s: f32, %m: f32):
    %two = arith.addf %m, %m : f32
    linalg.yield %two, %two : f32, f32
  }
  %p = memref.extract_aligned_pointer_as_index %shard : memref<2xf32> -> index
  %a = arith.index_cast %p : index to i64
  %all = memref.alloc() : memref<4xf32>
  %rp = memref.extract_aligned_pointer_as_index %all : memref<4xf32> -> index
  %ra = arith.index_cast %rp : index to i64
  call @gaccrt_all_gather(%a, %ra, %n, %dtype, %id) {gacc.overlap} : (i64, i64, i64, i32, i64) -> ()
  func.call @work(%other) : (memref<8xf32>) -> ()
  memref.copy %all, %out : memref<4xf32> to memref<4xf32>
  return
}

// The accumulators of the first cases take 16 KiB: min-accumulator-bytes=0
// lets them pair (the default, 64 KiB, keeps pairs off accumulators that
// stay in L1).
// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas --gacc-pair-accumulating-gemms=min-accumulator-bytes=0 | FileCheck %s
// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas --gacc-pair-accumulating-gemms="concurrent-copies=0 min-accumulator-bytes=0" | FileCheck %s --check-prefix=OFF
// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas --gacc-pair-accumulating-gemms=any-size=1 | FileCheck %s --check-prefix=ANY
// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas --gacc-pair-accumulating-gemms=lockstep-copies=0 | FileCheck %s --check-prefix=LOCKOFF
// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas --gacc-pair-accumulating-gemms=paired-copies=0 | FileCheck %s --check-prefix=PAIREDOFF

// Four micro-batches, two per iteration side by side: each copy's forward
// GEMM (into its own %h) runs in its case; the first copy's accumulation
// into %acc runs in case 0, so the second copy's (which also writes %acc)
// stays after both, as does the pair (it reads the first copy's %h). Both
// copies' %h are used after the cases: allocated before them. The second
// copy's trace region ends in its case, and one of the same index runs
// around what stays.

// CHECK-LABEL: func.func @copies
// CHECK:         scf.for %[[IV:.*]] = {{.*}} {
// CHECK:           %[[H1:.*]] = memref.alloc() : memref<8x64xf32>
// CHECK:           %[[IV2:.*]] = arith.addi %[[IV]]
// CHECK:           %[[H2:.*]] = memref.alloc() : memref<8x64xf32>
// CHECK:           scf.parallel (%[[COPY:.*]]) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK:             scf.index_switch %[[COPY]] {gacc.concurrent_copies}
// CHECK:             case 0 {
// CHECK:               %[[OUT1:.*]] = memref.cast %[[H1]]
// CHECK:               call @gaccrt_sgemm({{.*}}, %[[OUT1]])
// CHECK:               linalg.reduce {{.*}} ins(%[[H1]] : memref<8x64xf32>) outs(%arg3
// CHECK:               scf.yield
// CHECK:             }
// CHECK:             case 1 {
// CHECK:               %[[OUT2:.*]] = memref.cast %[[H2]]
// CHECK:               call @gaccrt_sgemm({{.*}}, %[[OUT2]])
// CHECK-NOT:           linalg.reduce
// CHECK-NOT:           gaccrt_sgemm_pair
// CHECK:               call @gaccrt_trace_region_end(%[[INDEX2:.*]]) :
// CHECK-NEXT:          scf.yield
// CHECK:             }
// CHECK:           } {gacc.concurrent_copies}
// CHECK-NEXT:      call @gaccrt_trace_region_begin(%[[INDEX2]])
// CHECK-NEXT:      call @gaccrt_sgemm_pair(
// CHECK-NEXT:      linalg.reduce {{.*}} ins(%[[H2]] : memref<8x64xf32>) outs(%arg3
// CHECK-NEXT:      call @gaccrt_trace_region_end(%[[INDEX2]])
// CHECK-NEXT:    }

// OFF-LABEL: func.func @copies
// OFF-NOT:     scf.parallel
// OFF:         call @gaccrt_sgemm_pair(
// OFF-NOT:     scf.parallel
func.func private @gaccrt_trace_region_begin(i64)
func.func private @gaccrt_trace_region_end(i64)
func.func @copies(%x: memref<32x64xf32>, %w: memref<64x64xf32>, %c: memref<64x64xf32>, %acc: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    %index = arith.index_cast %i : index to i64
    func.call @gaccrt_trace_region_begin(%index) : (i64) -> ()
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %h = memref.alloc() : memref<8x64xf32>
    linalg.fill ins(%zero : f32) outs(%h : memref<8x64xf32>)
    linalg.matmul ins(%xs, %w : memref<8x64xf32, strided<[64, 1], offset: ?>>, memref<64x64xf32>) outs(%h : memref<8x64xf32>)
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %h : memref<64x8xf32>, memref<8x64xf32>) outs(%c : memref<64x64xf32>)
    linalg.reduce { arith.addf } ins(%h : memref<8x64xf32>) outs(%acc : memref<64xf32>) dimensions = [0]
    func.call @gaccrt_trace_region_end(%index) : (i64) -> ()
  }
  return
}

// -----

// The copies stay in turn: the first copy calls a function whose effects
// are unknown (@unknown), no GEMM of the second copy would move (the pair
// is all it has: @pair_only), or the second copy's buffers would hold more
// than half the paired accumulator's bytes while both copies run
// (@memory: 2 KiB of %h and 8 KiB of %t against 16 KiB).

// CHECK-LABEL: func.func @unknown
// CHECK-NOT:     scf.parallel
// CHECK:         call @gaccrt_sgemm_pair(
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func private @log(memref<8x64xf32>)
func.func @unknown(%x: memref<32x64xf32>, %w: memref<64x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %h = memref.alloc() : memref<8x64xf32>
    linalg.fill ins(%zero : f32) outs(%h : memref<8x64xf32>)
    linalg.matmul ins(%xs, %w : memref<8x64xf32, strided<[64, 1], offset: ?>>, memref<64x64xf32>) outs(%h : memref<8x64xf32>)
    func.call @log(%h) : (memref<8x64xf32>) -> ()
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %h : memref<64x8xf32>, memref<8x64xf32>) outs(%c : memref<64x64xf32>)
  }
  return
}

// CHECK-LABEL: func.func @pair_only
// CHECK-NOT:     scf.parallel
// CHECK:         call @gaccrt_sgemm_pair(
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @pair_only(%x: memref<32x64xf32>, %dy: memref<32x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %ds = memref.subview %dy[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %ds : memref<64x8xf32>, memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%c : memref<64x64xf32>)
  }
  return
}

// With any-size (for tests on small graphs) the memory rule is off and
// @memory's copies run side by side; @unknown and @pair_only stay in turn.
// ANY-LABEL: func.func @unknown
// ANY-NOT:     scf.parallel
// ANY-LABEL: func.func @pair_only
// ANY-NOT:     scf.parallel
// ANY-LABEL: func.func @memory
// ANY:         scf.parallel
// ANY-NEXT:      scf.index_switch %{{.*}} {gacc.concurrent_copies}
// ANY:         call @gaccrt_sgemm_pair(

// CHECK-LABEL: func.func @memory
// CHECK-NOT:     scf.parallel
// CHECK:         call @gaccrt_sgemm_pair(
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @memory(%x: memref<32x64xf32>, %w: memref<64x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %h = memref.alloc() : memref<8x64xf32>
    linalg.fill ins(%zero : f32) outs(%h : memref<8x64xf32>)
    linalg.matmul ins(%xs, %w : memref<8x64xf32, strided<[64, 1], offset: ?>>, memref<64x64xf32>) outs(%h : memref<8x64xf32>)
    %t = memref.alloc() : memref<32x64xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<32x64xf32>)
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %h : memref<64x8xf32>, memref<8x64xf32>) outs(%c : memref<64x64xf32>)
  }
  return
}

// At half the paired accumulator's bytes they run side by side
// (@memory_half: 2 KiB of %h and 4 KiB of %t against 16 KiB).

// CHECK-LABEL: func.func @memory_half
// CHECK:         scf.parallel
// CHECK-NEXT:      scf.index_switch %{{.*}} {gacc.concurrent_copies}
// CHECK:         call @gaccrt_sgemm_pair(
func.func @memory_half(%x: memref<32x64xf32>, %w: memref<64x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %h = memref.alloc() : memref<8x64xf32>
    linalg.fill ins(%zero : f32) outs(%h : memref<8x64xf32>)
    linalg.matmul ins(%xs, %w : memref<8x64xf32, strided<[64, 1], offset: ?>>, memref<64x64xf32>) outs(%h : memref<8x64xf32>)
    %t = memref.alloc() : memref<16x64xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<16x64xf32>)
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %h : memref<64x8xf32>, memref<8x64xf32>) outs(%c : memref<64x64xf32>)
  }
  return
}

// A scratch buffer allocated before the loop, written and read by every
// copy through its views (@shared_scratch): the second copy's use of it
// conflicts with the first copy's, so it stays, and so does the GEMM that
// reads it; nothing of a GEMM moves.

// CHECK-LABEL: func.func @shared_scratch
// CHECK-NOT:     scf.parallel
// CHECK:         call @gaccrt_sgemm_pair(
// CHECK-NOT:     scf.parallel
// CHECK:         return
func.func @shared_scratch(%x: memref<32x64xf32>, %w: memref<64x64xf32>, %c: memref<64x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %scratch = memref.alloc() : memref<16x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<64x64xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 64] [1, 1] : memref<32x64xf32> to memref<8x64xf32, strided<[64, 1], offset: ?>>
    %top = memref.subview %scratch[0, 0] [8, 64] [1, 1] : memref<16x64xf32> to memref<8x64xf32, strided<[64, 1]>>
    linalg.copy ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%top : memref<8x64xf32, strided<[64, 1]>>)
    %h = memref.alloc() : memref<8x64xf32>
    linalg.fill ins(%zero : f32) outs(%h : memref<8x64xf32>)
    linalg.matmul ins(%top, %w : memref<8x64xf32, strided<[64, 1]>>, memref<64x64xf32>) outs(%h : memref<8x64xf32>)
    %xt = memref.alloc() : memref<64x8xf32>
    linalg.transpose ins(%xs : memref<8x64xf32, strided<[64, 1], offset: ?>>) outs(%xt : memref<64x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %h : memref<64x8xf32>, memref<8x64xf32>) outs(%c : memref<64x64xf32>)
  }
  memref.dealloc %scratch : memref<16x64xf32>
  return
}

// -----

// A weight of 256 KiB (a quarter of a core's L2 and more): the copies also
// get a lockstep form for when they run in turn (gaccrt_copies_concurrent
// says so at run time): the two cases' ops interleaved up to each GEMM, the
// forward GEMMs of both copies, which read the same %w, one
// gaccrt_sgemm_rows_pair (one pass over %w), and the first copy's trace
// region ending after the second's. Not with lockstep-copies=0 (LOCKOFF).

// CHECK-LABEL: func.func @lockstep
// CHECK:         scf.for
// CHECK:           %[[ANSWER:.*]] = func.call @gaccrt_copies_concurrent(%{{.*}}) : (i64) -> i32
// CHECK:           %[[CONCURRENT:.*]] = arith.cmpi ne, %[[ANSWER]]
// CHECK:           scf.if %[[CONCURRENT]] {
// CHECK-NEXT:        scf.parallel
// CHECK:             } {gacc.concurrent_copies}
// CHECK-NEXT:      } else {
// CHECK:             func.call @gaccrt_trace_region_begin(%[[FIRST:[^)]*]])
// CHECK:             func.call @gaccrt_trace_region_begin(%[[SECOND:[^)]*]])
// CHECK-NOT:         call @gaccrt_sgemm(
// CHECK:             func.call @gaccrt_sgemm_rows_pair(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[W:.*]], %{{.*}}, %{{.*}}, %{{.*}}) :
// CHECK:             linalg.reduce
// CHECK:             func.call @gaccrt_trace_region_end(%[[SECOND]])
// CHECK-NEXT:        func.call @gaccrt_trace_region_end(%[[FIRST]])
// CHECK-NEXT:      }
// CHECK:           call @gaccrt_sgemm_pair(

// LOCKOFF-LABEL: func.func @lockstep
// LOCKOFF-NOT:     gaccrt_copies_concurrent
// LOCKOFF-NOT:     gaccrt_sgemm_rows_pair
// LOCKOFF:         scf.parallel
// LOCKOFF:         call @gaccrt_sgemm_pair(
func.func private @gaccrt_trace_region_begin(i64)
func.func private @gaccrt_trace_region_end(i64)
func.func @lockstep(%x: memref<16x256xf32>, %w: memref<256x256xf32>, %c: memref<256x256xf32>, %acc: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<256x256xf32>)
  scf.for %i = %c0 to %c2 step %c1 {
    %index = arith.index_cast %i : index to i64
    func.call @gaccrt_trace_region_begin(%index) : (i64) -> ()
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 256] [1, 1] : memref<16x256xf32> to memref<8x256xf32, strided<[256, 1], offset: ?>>
    %h = memref.alloc() : memref<8x256xf32>
    linalg.fill ins(%zero : f32) outs(%h : memref<8x256xf32>)
    linalg.matmul ins(%xs, %w : memref<8x256xf32, strided<[256, 1], offset: ?>>, memref<256x256xf32>) outs(%h : memref<8x256xf32>)
    %xt = memref.alloc() : memref<256x8xf32>
    linalg.transpose ins(%xs : memref<8x256xf32, strided<[256, 1], offset: ?>>) outs(%xt : memref<256x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %h : memref<256x8xf32>, memref<8x256xf32>) outs(%c : memref<256x256xf32>)
    linalg.reduce { arith.addf } ins(%h : memref<8x256xf32>) outs(%acc : memref<256xf32>) dimensions = [0]
    func.call @gaccrt_trace_region_end(%index) : (i64) -> ()
  }
  return
}

// -----

// Four micro-batches or more (the loop of pairs runs twice or more), with
// the lockstep form: two copies of two micro-batches each (paired-copies),
// which replace the loop whether the copies run side by side or in turn
// (no query of gaccrt_copies_concurrent: the cases run in turn inside
// gaccrt_parallel_copies where they cannot run side by side). The loop is
// unrolled once more (step 4); each case runs its two micro-batches in
// lockstep (their GEMMs of %w one gaccrt_sgemm_rows_pair), the trace
// regions nest per case, and the two halves' pairs into %c are one
// gaccrt_sgemm_quad after the cases (one pass over %c for four
// micro-batches). Not with paired-copies=0 (prefix PAIREDOFF; the lockstep
// form of @lockstep).

// CHECK-LABEL: func.func @paired_copies
// CHECK-NOT:     gaccrt_copies_concurrent
// CHECK-NOT:     scf.if
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %[[FOUR:[^ ]*]] {
// CHECK:           scf.parallel
// CHECK-NEXT:        scf.index_switch %{{.*}} {gacc.concurrent_copies}
// CHECK-NEXT:        case 0 {
// CHECK:               func.call @gaccrt_trace_region_begin(%[[A:[^)]*]])
// CHECK:               func.call @gaccrt_trace_region_begin(%[[B:[^)]*]])
// CHECK-NOT:           call @gaccrt_sgemm(
// CHECK:               func.call @gaccrt_sgemm_rows_pair(
// CHECK:               func.call @gaccrt_trace_region_end(%[[B]])
// CHECK-NEXT:          func.call @gaccrt_trace_region_end(%[[A]])
// CHECK:             case 1 {
// CHECK:               func.call @gaccrt_trace_region_begin(%[[C:[^)]*]])
// CHECK:               func.call @gaccrt_trace_region_begin(%[[D:[^)]*]])
// CHECK-NOT:           call @gaccrt_sgemm(
// CHECK:               func.call @gaccrt_sgemm_rows_pair(
// CHECK:               func.call @gaccrt_trace_region_end(%[[D]])
// CHECK-NEXT:          func.call @gaccrt_trace_region_end(%[[C]])
// CHECK:           } {gacc.concurrent_copies}
// CHECK-NEXT:      func.call @gaccrt_trace_region_begin(%[[C]])
// CHECK-NEXT:      func.call @gaccrt_trace_region_begin(%[[D]])
// CHECK-NOT:       call @gaccrt_sgemm_pair(
// CHECK:           call @gaccrt_sgemm_quad(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ACC:.*]]) :
// CHECK-NOT:       call @gaccrt_sgemm_pair(
// CHECK:           func.call @gaccrt_trace_region_end(%[[D]])
// CHECK-NEXT:      func.call @gaccrt_trace_region_end(%[[C]])
// CHECK-NEXT:    }
// CHECK-NOT:     gaccrt_copies_concurrent
// CHECK-NOT:     gaccrt_sgemm_pair
// CHECK:         return

// PAIREDOFF-LABEL: func.func @paired_copies
// PAIREDOFF-NOT:     gaccrt_sgemm_quad
// PAIREDOFF:         func.call @gaccrt_copies_concurrent
// PAIREDOFF:         func.call @gaccrt_sgemm_rows_pair(
// PAIREDOFF:         call @gaccrt_sgemm_pair(
// PAIREDOFF-NOT:     gaccrt_sgemm_quad

func.func private @gaccrt_trace_region_begin(i64)
func.func private @gaccrt_trace_region_end(i64)
func.func @paired_copies(%x: memref<32x256xf32>, %w: memref<256x256xf32>, %c: memref<256x256xf32>, %acc: memref<256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<256x256xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    %index = arith.index_cast %i : index to i64
    func.call @gaccrt_trace_region_begin(%index) : (i64) -> ()
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 256] [1, 1] : memref<32x256xf32> to memref<8x256xf32, strided<[256, 1], offset: ?>>
    %h = memref.alloc() : memref<8x256xf32>
    linalg.fill ins(%zero : f32) outs(%h : memref<8x256xf32>)
    linalg.matmul ins(%xs, %w : memref<8x256xf32, strided<[256, 1], offset: ?>>, memref<256x256xf32>) outs(%h : memref<8x256xf32>)
    %xt = memref.alloc() : memref<256x8xf32>
    linalg.transpose ins(%xs : memref<8x256xf32, strided<[256, 1], offset: ?>>) outs(%xt : memref<256x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %h : memref<256x8xf32>, memref<8x256xf32>) outs(%c : memref<256x256xf32>)
    linalg.reduce { arith.addf } ins(%h : memref<8x256xf32>) outs(%acc : memref<256xf32>) dimensions = [0]
    func.call @gaccrt_trace_region_end(%index) : (i64) -> ()
  }
  return
}

// -----

// A copy that ends with a GEMM (no trace regions, nothing after the
// backward-data GEMM): its lockstep form still interleaves the two copies
// segment by segment, the last segment being that GEMM's (a random step
// found the lockstep pass reading an empty last segment).

// CHECK-LABEL: func.func @ends_with_gemm
// CHECK:         scf.if
// CHECK:         } else {
// CHECK:           func.call @gaccrt_sgemm_rows_pair(
// CHECK:           func.call @gaccrt_sgemm_rows_pair(
// CHECK:         }
// CHECK:         call @gaccrt_sgemm_pair(
func.func @ends_with_gemm(%x: memref<16x256xf32>, %w: memref<256x256xf32>, %c: memref<256x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<256x256xf32>)
  scf.for %i = %c0 to %c2 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 256] [1, 1] : memref<16x256xf32> to memref<8x256xf32, strided<[256, 1], offset: ?>>
    %h = memref.alloc() : memref<8x256xf32>
    linalg.fill ins(%zero : f32) outs(%h : memref<8x256xf32>)
    linalg.matmul ins(%xs, %w : memref<8x256xf32, strided<[256, 1], offset: ?>>, memref<256x256xf32>) outs(%h : memref<8x256xf32>)
    %xt = memref.alloc() : memref<256x8xf32>
    linalg.transpose ins(%xs : memref<8x256xf32, strided<[256, 1], offset: ?>>) outs(%xt : memref<256x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %h : memref<256x8xf32>, memref<8x256xf32>) outs(%c : memref<256x256xf32>)
    %g = memref.alloc() : memref<8x256xf32>
    linalg.fill ins(%zero : f32) outs(%g : memref<8x256xf32>)
    linalg.matmul ins(%h, %w : memref<8x256xf32>, memref<256x256xf32>) outs(%g : memref<8x256xf32>)
  }
  return
}

// -----

// Paired copies refused after the loop of pairs (three iterations, so the
// last after the unrolled loop) is unrolled again: two micro-batches' %t
// (96 KiB each, live from the start of a micro-batch to its end) would take
// more than half the accumulator's bytes while the halves run side by side
// (one, in the copies of one micro-batch, does not). The loop stays as it was, and nothing of the
// attempt is left: no quad, no pair-level iteration before or after it.

// CHECK-LABEL: func.func @paired_copies_refused
// CHECK-NOT:     gaccrt_sgemm_pair
// CHECK-NOT:     gaccrt_sgemm_quad
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK:           call @gaccrt_copies_concurrent
// CHECK:           func.call @gaccrt_sgemm_rows_pair(
// CHECK:           call @gaccrt_sgemm_pair(
// CHECK-NOT:       call @gaccrt_sgemm_pair(
// CHECK-NOT:       gaccrt_sgemm_quad
// CHECK:         return
func.func @paired_copies_refused(%x: memref<48x256xf32>, %w: memref<256x256xf32>, %c: memref<256x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<256x256xf32>)
  scf.for %i = %c0 to %c6 step %c1 {
    %off = arith.muli %i, %c8 : index
    %xs = memref.subview %x[%off, 0] [8, 256] [1, 1] : memref<48x256xf32> to memref<8x256xf32, strided<[256, 1], offset: ?>>
    %t = memref.alloc() : memref<96x256xf32>
    %h = memref.alloc() : memref<8x256xf32>
    linalg.fill ins(%zero : f32) outs(%h : memref<8x256xf32>)
    linalg.matmul ins(%xs, %w : memref<8x256xf32, strided<[256, 1], offset: ?>>, memref<256x256xf32>) outs(%h : memref<8x256xf32>)
    %xt = memref.alloc() : memref<256x8xf32>
    linalg.transpose ins(%xs : memref<8x256xf32, strided<[256, 1], offset: ?>>) outs(%xt : memref<256x8xf32>) permutation = [1, 0]
    linalg.matmul ins(%xt, %h : memref<256x8xf32>, memref<8x256xf32>) outs(%c : memref<256x256xf32>)
    linalg.fill ins(%zero : f32) outs(%t : memref<96x256xf32>)
  }
  return
}

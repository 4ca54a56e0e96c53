// RUN: gacc-opt %s --gacc-parallel-loops-to-runtime --split-input-file | FileCheck %s
// RUN: gacc-opt %s --gacc-parallel-loops-to-runtime=min-work=400000 --split-input-file | FileCheck %s --check-prefix=MIN

// With min-work above every loop's estimate (64 x 1280 operations for
// @relu_scale, 64 x 2561 for @row_sums), every loop stays.
// MIN-NOT: gaccrt_parallel_for

// An elementwise loop nest becomes a call of gaccrt_parallel_for with its
// first dimension's trip count and the work of one of its iterations. The
// memrefs and the scalar it uses travel in a struct in the function's stack
// slot (in the entry block, as large as its largest struct: two 2-D
// descriptors of 56 bytes around an f32, 120 bytes); the constants are
// cloned into the outlined body, which runs iterations [lo, hi) of the
// first dimension and all of the second.

// CHECK-LABEL: func.func private @gaccrt_parallel_for
// CHECK-SAME:    ((!llvm.ptr, i64, i64) -> (), !llvm.ptr, i64, i64)
// CHECK-LABEL: func.func @relu_scale
// CHECK-SAME:    (%[[IN:.*]]: memref<64x256xf32>, %[[OUT:.*]]: memref<64x256xf32>, %[[S:.*]]: f32)
// CHECK:         %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK:         %[[CTX:.*]] = llvm.alloca %[[ONE]] x !llvm.array<120 x i8> {alignment = 16 : i64}
// CHECK:         %[[DIN:.*]] = builtin.unrealized_conversion_cast %[[IN]] : memref<64x256xf32> to !llvm.struct
// CHECK:         %[[F0:.*]] = llvm.getelementptr %[[CTX]][0, 0]
// CHECK:         llvm.store %[[DIN]], %[[F0]]
// CHECK:         %[[F1:.*]] = llvm.getelementptr %[[CTX]][0, 1]
// CHECK:         llvm.store %[[S]], %[[F1]] : f32, !llvm.ptr
// CHECK:         %[[DOUT:.*]] = builtin.unrealized_conversion_cast %[[OUT]]
// CHECK:         llvm.store %[[DOUT]]
// CHECK:         %[[COUNT:.*]] = arith.constant 64 : index
// CHECK:         %[[WORK:.*]] = arith.constant 1280 : i64
// CHECK:         %[[FN:.*]] = constant @relu_scale_parallel : (!llvm.ptr, i64, i64) -> ()
// CHECK:         %[[COUNT64:.*]] = arith.index_cast %[[COUNT]] : index to i64
// CHECK:         call @gaccrt_parallel_for(%[[FN]], %[[CTX]], %[[COUNT64]], %[[WORK]])
// CHECK-NOT:     scf.parallel
// CHECK:         return

// CHECK-LABEL: func.func private @relu_scale_parallel
// CHECK-SAME:    (%[[ARG:.*]]: !llvm.ptr, %[[LO:.*]]: i64, %[[HI:.*]]: i64)
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG:     %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG:     %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG:     %[[C256:.*]] = arith.constant 256 : index
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[G0:.*]] = llvm.getelementptr %[[ARG]][0, 0]
// CHECK:         %[[L0:.*]] = llvm.load %[[G0]] invariant :
// CHECK:         %[[IN2:.*]] = builtin.unrealized_conversion_cast %[[L0]] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<64x256xf32>
// CHECK:         %[[G1:.*]] = llvm.getelementptr %[[ARG]][0, 1]
// CHECK:         %[[S2:.*]] = llvm.load %[[G1]] invariant : !llvm.ptr -> f32
// CHECK:         %[[OUT2:.*]] = builtin.unrealized_conversion_cast
// CHECK:         %[[LOI:.*]] = arith.index_cast %[[LO]] : i64 to index
// CHECK:         %[[LOS:.*]] = arith.muli %[[LOI]], %[[C1]]
// CHECK:         %[[FIRST:.*]] = arith.addi %[[C0]], %[[LOS]]
// CHECK:         %[[HII:.*]] = arith.index_cast %[[HI]] : i64 to index
// CHECK:         %[[HIS:.*]] = arith.muli %[[HII]], %[[C1]]
// CHECK:         %[[END:.*]] = arith.addi %[[C0]], %[[HIS]]
// CHECK:         %[[LAST:.*]] = arith.minsi %[[C64]], %[[END]]
// CHECK:         scf.parallel (%[[I:.*]], %[[J:.*]]) = (%[[FIRST]], %[[C0]]) to (%[[LAST]], %[[C256]]) step (%[[C1]], %[[C1]])
// CHECK:           %[[X:.*]] = memref.load %[[IN2]][%[[I]], %[[J]]]
// CHECK:           %[[R:.*]] = arith.maximumf %[[X]], %[[ZERO]]
// CHECK:           %[[Y:.*]] = arith.mulf %[[R]], %[[S2]]
// CHECK:           memref.store %[[Y]], %[[OUT2]][%[[I]], %[[J]]]
// CHECK:         return
func.func @relu_scale(%in: memref<64x256xf32>, %out: memref<64x256xf32>, %s: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c64, %c256) step (%c1, %c1) {
    %x = memref.load %in[%i, %j] : memref<64x256xf32>
    %r = arith.maximumf %x, %zero : f32
    %y = arith.mulf %r, %s : f32
    memref.store %y, %out[%i, %j] : memref<64x256xf32>
    scf.reduce
  }
  return
}

// -----

// A dynamic first dimension: its trip count is computed, and its upper
// bound travels as an i64. The inner reduction loop counts in the work of
// an iteration (its trip count times its body: 512 x 5, and the
// terminator).

// CHECK-LABEL: func.func @row_sums
// CHECK-SAME:    (%[[IN:.*]]: memref<?x512xf32>, %[[OUT:.*]]: memref<?xf32>)
// CHECK:         %[[CTX:.*]] = llvm.alloca
// CHECK:         %[[N:.*]] = memref.dim %[[IN]]
// CHECK:         %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK:         llvm.store %[[N64]], %{{.*}} : i64, !llvm.ptr
// CHECK:         %[[SPAN:.*]] = arith.subi %[[N]], %[[C0:.*]] : index
// CHECK:         %[[UP:.*]] = arith.addi %[[SPAN]], %[[C1:.*]] : index
// CHECK:         %[[DOWN:.*]] = arith.subi %[[UP]], %{{.*}} : index
// CHECK:         %[[COUNT:.*]] = arith.divsi %[[DOWN]], %[[C1]] : index
// CHECK:         %[[WORK:.*]] = arith.constant 2561 : i64
// CHECK:         %[[COUNT64:.*]] = arith.index_cast %[[COUNT]] : index to i64
// CHECK:         call @gaccrt_parallel_for(%{{.*}}, %[[CTX]], %[[COUNT64]], %[[WORK]])
// CHECK-LABEL: func.func private @row_sums_parallel
// CHECK:         %[[UB:.*]] = llvm.load %{{.*}} invariant : !llvm.ptr -> i64
// CHECK:         %[[UBI:.*]] = arith.index_cast %[[UB]] : i64 to index
// CHECK:         arith.minsi %[[UBI]], %{{.*}} : index
// CHECK:         scf.parallel
// CHECK:           scf.for
func.func @row_sums(%in: memref<?x512xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %n = memref.dim %in, %c0 : memref<?x512xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %j = %c0 to %c512 step %c1 {
      %x = memref.load %in[%i, %j] : memref<?x512xf32>
      %acc = memref.load %out[%i] : memref<?xf32>
      %sum = arith.addf %acc, %x : f32
      memref.store %sum, %out[%i] : memref<?xf32>
    }
    scf.reduce
  }
  return
}

// -----

// What stays on the calling thread: a loop whose body calls a function (a
// gather's index check), one below the minimum work, one with a store that
// the first dimension does not index (its slices would write the same
// elements), a loop nested in
// another scf.parallel (only the outer one is outlined), and a reduction's
// inner parallel dimension whose single execution is small.

// CHECK-LABEL: func.func @stays
// CHECK:         scf.parallel
// CHECK:           call @check
// CHECK:         scf.parallel
// CHECK:           memref.store
// CHECK:         scf.parallel
// CHECK:           memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<128xf32>
// CHECK:         scf.for
// CHECK:           scf.parallel
// CHECK:         call @gaccrt_parallel_for
// CHECK-NOT:     scf.parallel
// CHECK:         return
// CHECK-LABEL: func.func private @stays_parallel
// CHECK:         scf.parallel
// CHECK:           scf.parallel
func.func private @check(index)
func.func @stays(%a: memref<128x128xf32>, %b: memref<128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c128) step (%c1, %c1) {
    func.call @check(%i) : (index) -> ()
    memref.store %zero, %a[%i, %j] : memref<128x128xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
    memref.store %zero, %a[%i, %j] : memref<128x128xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c128) step (%c1, %c1) {
    memref.store %zero, %b[%j] : memref<128xf32>
    scf.reduce
  }
  scf.for %i = %c0 to %c128 step %c1 {
    scf.parallel (%j) = (%c0) to (%c128) step (%c1) {
      %x = memref.load %a[%i, %j] : memref<128x128xf32>
      %acc = memref.load %b[%j] : memref<128xf32>
      %sum = arith.addf %acc, %x : f32
      memref.store %sum, %b[%j] : memref<128xf32>
      scf.reduce
    }
  }
  scf.parallel (%i) = (%c0) to (%c128) step (%c1) {
    scf.parallel (%j) = (%c0) to (%c128) step (%c1) {
      memref.store %zero, %a[%i, %j] : memref<128x128xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// Concurrent copies (gacc-pair-accumulating-gemms) become one
// gaccrt_parallel_copies call of an outlined body that runs the copies of
// its slice in an scf.for; the loops inside them are outermost there and
// become gaccrt_parallel_for calls of their own, whose contexts live in the
// copies' body (one per thread that runs it). Calls stay in the body.

// CHECK-LABEL: func.func @copies(
// CHECK:         %[[SLOT:.*]] = llvm.alloca
// CHECK:         %[[BODY:.*]] = constant @copies_parallel{{.*}} : (!llvm.ptr, i64, i64) -> ()
// CHECK:         %[[TWO:.*]] = arith.index_cast %c2{{.*}} : index to i64
// CHECK:         call @gaccrt_parallel_copies(%[[BODY]], %[[SLOT]], %[[TWO]])
// CHECK-NOT:     scf.parallel
// CHECK:         return
// CHECK:       func.func private @copies_parallel{{.*}}(%[[CTX:.*]]: !llvm.ptr, %[[LO:.*]]: i64, %[[HI:.*]]: i64)
// CHECK:         %[[INNER:.*]] = llvm.alloca
// CHECK:         scf.for %[[COPY:.*]] =
// CHECK:           scf.index_switch %[[COPY]]
// CHECK:           case 0 {
// CHECK:             call @gaccrt_trace_region_begin(
// CHECK:             call @gaccrt_parallel_for(%{{.*}}, %[[INNER]], %{{.*}}, %c256_i64)
// CHECK:           case 1 {
// CHECK:             call @gaccrt_parallel_for(%{{.*}}, %[[INNER]], %{{.*}}, %c256_i64)
// CHECK:         return
func.func private @gaccrt_trace_region_begin(i64)
func.func @copies(%a: memref<128x128xf32>, %b: memref<128x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %i0 = arith.constant 0 : i64
  scf.parallel (%copy) = (%c0) to (%c2) step (%c1) {
    scf.index_switch %copy {gacc.concurrent_copies}
    case 0 {
      func.call @gaccrt_trace_region_begin(%i0) : (i64) -> ()
      scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c128) step (%c1, %c1) {
        memref.store %zero, %a[%i, %j] : memref<128x128xf32>
        scf.reduce
      }
      scf.yield
    }
    case 1 {
      scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c128) step (%c1, %c1) {
        memref.store %zero, %b[%i, %j] : memref<128x128xf32>
        scf.reduce
      }
      scf.yield
    }
    default {
    }
    scf.reduce
  } {gacc.concurrent_copies}
  return
}

// -----

// A loop in a region that runs elsewhere (a gpu.launch body) stays.

// CHECK-LABEL: func.func @in_launch
// CHECK:         gpu.launch
// CHECK:           scf.parallel
// CHECK-NOT:     gaccrt_parallel_for
func.func @in_launch(%a: memref<128x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    scf.parallel (%i, %j) = (%c0, %c0) to (%c128, %c128) step (%c1, %c1) {
      memref.store %zero, %a[%i, %j] : memref<128x128xf32>
      scf.reduce
    }
    gpu.terminator
  }
  return
}

// -----

// A GEMM and its epilogue (gacc-fuse-gemm-epilogues) become one call of
// gaccrt_sgemm_epilogue: the GEMM's operands, then the outlined loop over a
// rectangle [i0, i1) x [j0, j1) of C and its context (C and the bias). The
// loop is outlined whatever its work (no min-work) and not as a
// gaccrt_parallel_for.

// CHECK-LABEL: func.func private @gaccrt_sgemm_epilogue
// CHECK-SAME:    (!llvm.ptr, i64, i64, i64, i64) -> (), !llvm.ptr)
// CHECK-LABEL: func.func @epilogue
// CHECK-NOT:     execute_region
// CHECK:         %[[FN:.*]] = constant @epilogue_parallel : (!llvm.ptr, i64, i64, i64, i64) -> ()
// CHECK:         call @gaccrt_sgemm_epilogue(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[FN]], %{{.*}})
// CHECK-NOT:     gaccrt_parallel_for
// CHECK-NOT:     scf.parallel
// CHECK:         return
// CHECK-LABEL: func.func private @epilogue_parallel
// CHECK-SAME:    (%{{.*}}: !llvm.ptr, %[[I0:.*]]: i64, %[[I1:.*]]: i64, %[[J0:.*]]: i64, %[[J1:.*]]: i64)
// CHECK-DAG:     %[[LI:.*]] = arith.index_cast %[[I0]] : i64 to index
// CHECK-DAG:     %[[UI:.*]] = arith.index_cast %[[I1]] : i64 to index
// CHECK-DAG:     %[[LJ:.*]] = arith.index_cast %[[J0]] : i64 to index
// CHECK-DAG:     %[[UJ:.*]] = arith.index_cast %[[J1]] : i64 to index
// CHECK:         scf.parallel (%{{.*}}, %{{.*}}) = (%[[LI]], %[[LJ]]) to (%[[UI]], %[[UJ]])
func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func @epilogue(%a: memref<?x?xf32, strided<[?, ?], offset: ?>>, %b: memref<?x?xf32, strided<[?, ?], offset: ?>>, %c: memref<8x32xf32>, %bias: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %i0 = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %cc = memref.cast %c : memref<8x32xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  scf.execute_region {
    func.call @gaccrt_sgemm(%i0, %i0, %one, %zero, %a, %b, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
    scf.parallel (%i, %j) = (%c0, %c0) to (%c8, %c32) step (%c1, %c1) {
      %v = memref.load %c[%i, %j] : memref<8x32xf32>
      %w = memref.load %bias[%j] : memref<32xf32>
      %s = arith.addf %v, %w : f32
      memref.store %s, %c[%i, %j] : memref<8x32xf32>
      scf.reduce
    }
    scf.yield
  } {gacc.gemm_epilogue}
  return
}

// -----

// A unit whose loop does not start at zero (not what gacc-fuse-gemm-epilogues
// makes) is the call and the loop in turn, the loop outlined as any other.

// CHECK-LABEL: func.func @epilogue_unwrapped
// CHECK-NOT:     execute_region
// CHECK:         call @gaccrt_sgemm(
// CHECK:         call @gaccrt_parallel_for(
// CHECK-NOT:     gaccrt_sgemm_epilogue
func.func private @gaccrt_sgemm(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func @epilogue_unwrapped(%a: memref<?x?xf32, strided<[?, ?], offset: ?>>, %b: memref<?x?xf32, strided<[?, ?], offset: ?>>, %c: memref<256x256xf32>) {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %i0 = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %cc = memref.cast %c : memref<256x256xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  scf.execute_region {
    func.call @gaccrt_sgemm(%i0, %i0, %one, %zero, %a, %b, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
    scf.parallel (%i, %j) = (%c1, %c1) to (%c256, %c256) step (%c1, %c1) {
      %v = memref.load %c[%i, %j] : memref<256x256xf32>
      %s = arith.maximumf %v, %zero : f32
      memref.store %s, %c[%i, %j] : memref<256x256xf32>
      scf.reduce
    }
    scf.yield
  } {gacc.gemm_epilogue}
  return
}

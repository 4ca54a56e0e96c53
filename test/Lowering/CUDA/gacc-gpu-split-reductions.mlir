// RUN: gacc-opt %s --split-input-file --gacc-gpu-split-reductions | FileCheck %s

// A full sum of 1024 elements: 128 chunks (8 elements each), chunk c
// reducing elements c, c + 128, ... in a register from its first element,
// then adding atomically. The chunk is the only parallel dimension.

// CHECK-LABEL: func.func @full_sum
// CHECK-SAME:    (%[[A:.*]]: memref<1024xf32>, %[[S:.*]]: memref<f32>)
// CHECK-DAG:     %[[N:.*]] = arith.constant 1024 : index
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK:         scf.parallel (%[[C:.*]]) = (%{{.*}}) to (%[[C128]]) step (%{{.*}}) {
// CHECK:           %[[OFF:.*]] = arith.muli %[[C]], %{{.*}}
// CHECK:           %[[FIRST:.*]] = arith.addi %{{.*}}, %[[OFF]]
// CHECK:           %[[STRIDE:.*]] = arith.muli %[[C128]], %{{.*}}
// CHECK:           %[[SECOND:.*]] = arith.addi %[[FIRST]], %[[STRIDE]]
// CHECK:           %[[X0:.*]] = memref.load %[[A]][%[[FIRST]]]
// CHECK:           %[[E0:.*]] = math.exp %[[X0]]
// CHECK:           %[[SUM:.*]] = scf.for %[[I:.*]] = %[[SECOND]] to %[[N]] step %[[STRIDE]] iter_args(%[[P:.*]] = %[[E0]]) -> (f32) {
// CHECK:             %[[X:.*]] = memref.load %[[A]][%[[I]]]
// CHECK:             %[[E:.*]] = math.exp %[[X]]
// CHECK:             %[[ADD:.*]] = arith.addf %[[P]], %[[E]]
// CHECK:             scf.yield %[[ADD]]
// CHECK:           memref.atomic_rmw addf %[[SUM]], %[[S]][] : (f32, memref<f32>) -> f32
// CHECK-NOT:     scf.for
// CHECK:         return
func.func @full_sum(%a: memref<1024xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  scf.for %i = %c0 to %c1024 step %c1 {
    %x = memref.load %a[%i] : memref<1024xf32>
    %e = math.exp %x : f32
    %acc = memref.load %s[] : memref<f32>
    %sum = arith.addf %acc, %e : f32
    memref.store %sum, %s[] : memref<f32>
  }
  return
}

// -----

// A full max of 8 elements still runs in two threads; the partial maxima
// combine exactly through an atomic maximumf (LLVM's atomicrmw fmaximum:
// NaN-propagating, -0 < +0, as arith.maximumf).

// CHECK-LABEL: func.func @full_max
// CHECK-SAME:    (%[[A:.*]]: memref<8xf32>, %[[S:.*]]: memref<f32>)
// CHECK-DAG:     %[[C2:.*]] = arith.constant 2 : index
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[C2]]) step
// CHECK:           %[[MAX:.*]] = scf.for
// CHECK:             arith.maximumf
// CHECK:           memref.atomic_rmw maximumf %[[MAX]], %[[S]][] : (f32, memref<f32>) -> f32
func.func @full_max(%a: memref<8xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xf32>
    %acc = memref.load %s[] : memref<f32>
    %max = arith.maximumf %acc, %x : f32
    memref.store %max, %s[] : memref<f32>
  }
  return
}

// -----

// A bias gradient over 10 columns and 256 rows (one thread per column
// looping over the rows): 32 chunks of rows, the column stays the first
// parallel dimension (threadIdx.x: neighbouring threads read neighbouring
// columns) and the chunk is the last.

// CHECK-LABEL: func.func @column_sum
// CHECK-SAME:    (%[[X:.*]]: memref<256x10xf32>, %[[G:.*]]: memref<10xf32>)
// CHECK-DAG:     %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG:     %[[C10:.*]] = arith.constant 10 : index
// CHECK:         scf.parallel (%[[J:[a-z0-9_]+]], %[[C:[a-z0-9_]+]]) = (%{{.*}}, %{{.*}}) to (%[[C10]], %[[C32]]) step
// CHECK:           %[[FIRST:.*]] = arith.addi
// CHECK:           memref.load %[[X]][%[[FIRST]], %[[J]]]
// CHECK:           %[[SUM:.*]] = scf.for %[[I:[a-z0-9_]+]] =
// CHECK:             memref.load %[[X]][%[[I]], %[[J]]]
// CHECK:           memref.atomic_rmw addf %[[SUM]], %[[G]][%[[J]]]
// CHECK-NOT:     scf.for
// CHECK:         return
func.func @column_sum(%x: memref<256x10xf32>, %g: memref<10xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %c256 = arith.constant 256 : index
  scf.parallel (%j) = (%c0) to (%c10) step (%c1) {
    scf.for %i = %c0 to %c256 step %c1 {
      %v = memref.load %x[%i, %j] : memref<256x10xf32>
      %acc = memref.load %g[%j] : memref<10xf32>
      %sum = arith.addf %acc, %v : f32
      memref.store %sum, %g[%j] : memref<10xf32>
    }
    scf.reduce
  }
  return
}

// -----

// Left as they are: a row reduction of 10 elements per row (too short to
// split), a reduction in 8192 threads already, a product of floats (its
// rounding depends on the order), a reduction with dynamic bounds, and a
// max of f16 values (no atomic for that type).

// CHECK-LABEL: func.func @kept
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK-NEXT:      scf.for
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK-NEXT:      scf.for
// CHECK:         scf.for
// CHECK:           arith.mulf
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK:         scf.for
// CHECK:           arith.maximumf {{.*}} : f16
// CHECK-NOT:     atomic
func.func @kept(%x: memref<64x10xf32>, %m: memref<64xf32>, %y: memref<8192x4xf32>, %t: memref<8192xf32>,
                %a: memref<?xf32>, %s: memref<f32>, %h: memref<64xf16>, %hs: memref<f16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c10 = arith.constant 10 : index
  %c64 = arith.constant 64 : index
  %c8192 = arith.constant 8192 : index
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    scf.for %j = %c0 to %c10 step %c1 {
      %v = memref.load %x[%i, %j] : memref<64x10xf32>
      %acc = memref.load %m[%i] : memref<64xf32>
      %max = arith.maximumf %acc, %v : f32
      memref.store %max, %m[%i] : memref<64xf32>
    }
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8192) step (%c1) {
    scf.for %j = %c0 to %c4 step %c1 {
      %v = memref.load %y[%i, %j] : memref<8192x4xf32>
      %acc = memref.load %t[%i] : memref<8192xf32>
      %sum = arith.addf %acc, %v : f32
      memref.store %sum, %t[%i] : memref<8192xf32>
    }
    scf.reduce
  }
  scf.for %i = %c0 to %c10 step %c1 {
    %v = memref.load %x[%i, %c0] : memref<64x10xf32>
    %acc = memref.load %s[] : memref<f32>
    %p = arith.mulf %acc, %v : f32
    memref.store %p, %s[] : memref<f32>
  }
  %n = memref.dim %a, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %a[%i] : memref<?xf32>
    %acc = memref.load %s[] : memref<f32>
    %sum = arith.addf %acc, %v : f32
    memref.store %sum, %s[] : memref<f32>
  }
  scf.for %i = %c0 to %c64 step %c1 {
    %v = memref.load %h[%i] : memref<64xf16>
    %acc = memref.load %hs[] : memref<f16>
    %max = arith.maximumf %acc, %v : f16
    memref.store %max, %hs[] : memref<f16>
  }
  return
}

// -----

// The same full sum in the loop over the micro-batches of one size (host
// control flow: it holds a cuBLAS call) is split there too; the loop stays.

// CHECK-LABEL: func.func @in_region_loop
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      call @gemm
// CHECK:           scf.parallel (%{{.*}}) = (%{{.*}}) to (%c128) step (%{{.*}}) {
// CHECK:             memref.atomic_rmw addf
// CHECK:         return
func.func private @gemm(memref<1024xf32>)
func.func @in_region_loop(%a: memref<1024xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  scf.for %r = %c0 to %c4 step %c1 {
    func.call @gemm(%a) : (memref<1024xf32>) -> ()
    scf.for %i = %c0 to %c1024 step %c1 {
      %x = memref.load %a[%i] : memref<1024xf32>
      %acc = memref.load %s[] : memref<f32>
      %sum = arith.addf %acc, %x : f32
      memref.store %sum, %s[] : memref<f32>
    }
  }
  return
}

// RUN: gacc-opt %s --split-input-file --gacc-gpu-serial-kernels --verify-diagnostics | FileCheck %s

// A run of host code that touches memory (a serial max-reduction loop and
// the scalar update after it) moves into one one-iteration scf.parallel;
// parallel loops and calls stay where they are, constants stay outside.

// CHECK-LABEL: func.func @serial
// CHECK:         scf.parallel
// CHECK:         call @host
// CHECK:         scf.parallel (%{{.*}}) = (%[[C0:.*]]) to (%[[C1:.*]]) step (%[[C1]])
// CHECK:           scf.for
// CHECK:             memref.load
// CHECK:             arith.maximumf
// CHECK:           memref.load
// CHECK:           arith.mulf
// CHECK:           memref.store
// CHECK:         return
func.func private @host()
func.func @serial(%a: memref<8xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %two, %a[%i] : memref<8xf32>
  }
  call @host() : () -> ()
  scf.for %i = %c0 to %c8 step %c1 {
    %x = memref.load %a[%i] : memref<8xf32>
    %acc = memref.load %s[] : memref<f32>
    %max = arith.maximumf %acc, %x : f32
    memref.store %max, %s[] : memref<f32>
  }
  %v = memref.load %s[] : memref<f32>
  %w = arith.mulf %v, %two : f32
  memref.store %w, %s[] : memref<f32>
  return
}

// -----

// A serial loop nest that only adds into one fixed location (a loss, a
// count) becomes a parallel loop adding atomically instead of a one-thread
// kernel; the initializing store before it stays a serial kernel.

// CHECK-LABEL: func.func @sum
// CHECK-SAME:    (%[[A:.*]]: memref<4x8xf32>, %[[S:.*]]: memref<f32>, %[[N:.*]]: memref<i64>, %[[L:.*]]: memref<4xi64>)
// CHECK:         scf.parallel
// CHECK:           memref.store %{{.*}}, %[[S]][]
// CHECK:         scf.parallel (%[[I:.*]], %[[J:.*]]) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}}) step (%{{.*}}, %{{.*}}) {
// CHECK-NEXT:      %[[X:.*]] = memref.load %[[A]][%[[I]], %[[J]]]
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[X]]
// CHECK-NEXT:      memref.atomic_rmw addf %[[E]], %[[S]][] : (f32, memref<f32>) -> f32
// CHECK:         scf.parallel (%[[K:.*]]) =
// CHECK:           memref.load %[[L]][%[[K]]]
// CHECK:           memref.atomic_rmw addi %{{.*}}, %[[N]][] : (i64, memref<i64>) -> i64
// CHECK-NOT:     scf.for
func.func @sum(%a: memref<4x8xf32>, %s: memref<f32>, %n: memref<i64>, %labels: memref<4xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %ignore = arith.constant -100 : i64
  memref.store %zero, %s[] : memref<f32>
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %j] : memref<4x8xf32>
      %e = math.exp %x : f32
      %acc = memref.load %s[] : memref<f32>
      %sum = arith.addf %acc, %e : f32
      memref.store %sum, %s[] : memref<f32>
    }
  }
  scf.for %k = %c0 to %c4 step %c1 {
    %label = memref.load %labels[%k] : memref<4xi64>
    %acc = memref.load %n[] : memref<i64>
    %ne = arith.cmpi ne, %label, %ignore : i64
    %one = arith.extui %ne : i1 to i64
    %sum = arith.addi %one, %acc : i64
    memref.store %sum, %n[] : memref<i64>
  }
  return
}

// -----

// Pure arithmetic with no memory access stays on the host.

// CHECK-LABEL: func.func @pure
// CHECK-NOT:     scf.parallel
// CHECK:         arith.addf
func.func @pure(%x: f32) -> f32 {
  %y = arith.addf %x, %x : f32
  return %y : f32
}

// -----

// A scalar read from device memory and used by later kernels (a count that
// divides a loss) is stored to a device scalar in its serial kernel and
// loaded inside the kernels that use it.

// CHECK-LABEL: func.func @spill
// CHECK-SAME:    (%[[COUNT:.*]]: memref<i32>, %[[OUT:.*]]: memref<8xf32>)
// CHECK:         %[[SPILL:.*]] = gpu.alloc  () : memref<f32>
// CHECK:         scf.parallel
// CHECK:           %[[C:.*]] = memref.load %[[COUNT]][]
// CHECK:           %[[F:.*]] = arith.sitofp %[[C]]
// CHECK:           memref.store %[[F]], %[[SPILL]][]
// CHECK:         scf.parallel (%[[I:.*]]) =
// CHECK:           %[[L:.*]] = memref.load %[[SPILL]][]
// CHECK:           memref.store %[[L]], %[[OUT]][%[[I]]]
// CHECK:         gpu.dealloc  %[[SPILL]]
// CHECK:         return
func.func @spill(%count: memref<i32>, %out: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c = memref.load %count[] : memref<i32>
  %f = arith.sitofp %c : i32 to f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %f, %out[%i] : memref<8xf32>
  }
  return
}

// -----

// The loop over the micro-batches of one size holds kernels and calls: it
// stays on the host and its body is host code of its own. A count read
// from device memory before the loop is stored to a device scalar there and
// loaded where the loop body uses it: in a kernel, and before a pure op
// that then joins the body's serial kernel. The stack slot of a started
// all-reduce's handle (the last iteration's scf.if) stays host code.

// CHECK-LABEL: func.func @region_loop
// CHECK-SAME:    (%[[COUNT:.*]]: memref<i32>, %[[A:.*]]: memref<8xf32>, %[[S:.*]]: memref<f32>)
// CHECK:         %[[SLOT:.*]] = memref.alloca() : memref<i64>
// CHECK:         %[[SPILL:.*]] = gpu.alloc  () : memref<f32>
// CHECK:         scf.parallel
// CHECK-NEXT:      memref.load %[[COUNT]][]
// CHECK-NEXT:      arith.sitofp
// CHECK-NEXT:      memref.store %{{.*}}, %[[SPILL]][]
// CHECK:         scf.for %[[IV:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:      call @gemm(%[[A]])
// CHECK:           scf.parallel
// CHECK-NEXT:        %[[F:.*]] = memref.load %[[SPILL]][]
// CHECK-NEXT:        %[[G:.*]] = arith.mulf %[[F]], %{{.*}}
// CHECK-NEXT:        %[[V:.*]] = memref.load %[[S]][]
// CHECK-NEXT:        %[[W:.*]] = arith.addf %[[V]], %[[G]]
// CHECK-NEXT:        memref.store %[[W]], %[[S]][]
// CHECK:           scf.parallel (%[[I:.*]]) =
// CHECK-NEXT:        %[[F2:.*]] = memref.load %[[SPILL]][]
// CHECK-NEXT:        memref.store %[[F2]], %[[A]][%[[I]]]
// CHECK:           %[[LAST:.*]] = arith.cmpi eq, %[[IV]]
// CHECK-NEXT:      scf.if %[[LAST]] {
// CHECK-NEXT:        %[[H:.*]] = func.call @start()
// CHECK-NEXT:        memref.store %[[H]], %[[SLOT]][]
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[H2:.*]] = memref.load %[[SLOT]][]
// CHECK-NEXT:    call @wait(%[[H2]])
// CHECK-NEXT:    gpu.dealloc  %[[SPILL]]
// CHECK-NEXT:    return
func.func private @gemm(memref<8xf32>)
func.func private @start() -> i64
func.func private @wait(i64)
func.func @region_loop(%count: memref<i32>, %a: memref<8xf32>, %s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %half = arith.constant 0.5 : f32
  %slot = memref.alloca() : memref<i64>
  %c = memref.load %count[] : memref<i32>
  %f = arith.sitofp %c : i32 to f32
  scf.for %iv = %c0 to %c4 step %c1 {
    func.call @gemm(%a) : (memref<8xf32>) -> ()
    %g = arith.mulf %f, %half : f32
    %v = memref.load %s[] : memref<f32>
    %w = arith.addf %v, %g : f32
    memref.store %w, %s[] : memref<f32>
    scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
      memref.store %f, %a[%i] : memref<8xf32>
    }
    %last = arith.cmpi eq, %iv, %c3 : index
    scf.if %last {
      %h = func.call @start() : () -> i64
      memref.store %h, %slot[] : memref<i64>
    }
  }
  %h2 = memref.load %slot[] : memref<i64>
  call @wait(%h2) : (i64) -> ()
  return
}

// -----

// A device scalar that a host op in the loop's body needs (here a call's
// operand) cannot move.

func.func private @host(f32)
func.func @region_loop_escapes(%s: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @below {{computes a value used outside its serial kernel; cannot move it to the GPU}}
  %v = memref.load %s[] : memref<f32>
  scf.for %iv = %c0 to %c4 step %c1 {
    // expected-note @below {{used here}}
    func.call @host(%v) : (f32) -> ()
  }
  return
}

// -----

// A value computed from device memory and used by the host cannot move.

func.func @escapes(%s: memref<f32>) -> f32 {
  // expected-error @below {{computes a value used outside its serial kernel; cannot move it to the GPU}}
  %v = memref.load %s[] : memref<f32>
  // expected-note @below {{used here}}
  return %v : f32
}

// -----

// A schedule on a device scalar (a step counter): the scalar scf.if and
// the affine ops of its condition and branch are compute ops and join the
// serial kernel of the load; its result, stored after a call on the host,
// is spilled to a device scalar and loaded in the store's kernel.
// CHECK-LABEL: func.func @schedule
// CHECK:         %[[SPILL:.*]] = gpu.alloc () : memref<f32>
// CHECK:         scf.parallel
// CHECK:           memref.load %{{.*}}[] : memref<i64>
// CHECK:           affine.min
// CHECK:           %[[LR:.*]] = scf.if
// CHECK:             affine.apply
// CHECK:           memref.store %[[LR]], %[[SPILL]][]
// CHECK:         call @host
// CHECK:         scf.parallel
// CHECK:           %[[V:.*]] = memref.load %[[SPILL]][]
// CHECK:           memref.store %[[V]], %{{.*}}[] : memref<f32>
// CHECK:         gpu.dealloc %[[SPILL]]
func.func private @host()
func.func @schedule(%t: memref<i64>, %out: memref<f32>) {
  %c2 = arith.constant 2 : i64
  %half = arith.constant 0.5 : f32
  %tv = memref.load %t[] : memref<i64>
  %ti = arith.index_cast %tv : i64 to index
  %k = affine.min affine_map<(d0) -> (d0, 4)>(%ti)
  %warm = arith.cmpi slt, %tv, %c2 : i64
  %lr = scf.if %warm -> (f32) {
    %t1 = affine.apply affine_map<(d0) -> (d0 + 1)>(%k)
    %t1i = arith.index_cast %t1 : index to i64
    %t1f = arith.sitofp %t1i : i64 to f32
    scf.yield %t1f : f32
  } else {
    scf.yield %half : f32
  }
  call @host() : () -> ()
  memref.store %lr, %out[] : memref<f32>
  return
}

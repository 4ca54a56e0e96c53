// RUN: gacc-opt %s --split-input-file --gacc-plan-arena | FileCheck %s

// Buffers whose lifetimes do not overlap share bytes; overlapping ones do
// not. Offsets and slots are 64-byte aligned: %a (64 B) and %b (40 B -> 64)
// live at once, %c (256 B) starts after both are freed and reuses offset 0.
// CHECK:       memref.global "private" @lifetimes_arena : memref<256xi8> = uninitialized {alignment = 64 : i64}
// CHECK-LABEL: func.func @lifetimes
// CHECK:         %[[ARENA:.*]] = memref.get_global @lifetimes_arena : memref<256xi8>
// CHECK:         call @gaccrt_account_arena(%c256_i64)
// CHECK:         %[[A:.*]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<256xi8> to memref<16xf32>
// CHECK:         %[[B:.*]] = memref.view %[[ARENA]][%c64{{.*}}][] : memref<256xi8> to memref<10xf32>
// CHECK:         %[[C:.*]] = memref.view %[[ARENA]][%c0{{.*}}][] : memref<256xi8> to memref<64xf32>
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.dealloc
// CHECK:         call @gaccrt_account_arena(%c-256_i64)
// CHECK-NEXT:    return
func.func @lifetimes(%x: f32) {
  %a = memref.alloc() : memref<16xf32>
  %b = memref.alloc() : memref<10xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<16xf32>)
  linalg.fill ins(%x : f32) outs(%b : memref<10xf32>)
  memref.dealloc %a : memref<16xf32>
  memref.dealloc %b : memref<10xf32>
  %c = memref.alloc() : memref<64xf32>
  linalg.fill ins(%x : f32) outs(%c : memref<64xf32>)
  memref.dealloc %c : memref<64xf32>
  return
}

// -----

// A loop takes one slot for its body's plan, reused by every iteration,
// placed around the buffer live across the loop. A returned buffer, a
// dynamic one and one in a parallel body keep their allocations.
// CHECK:       memref.global "private" @loop_arena : memref<192xi8>
// CHECK-LABEL: func.func @loop
// CHECK:         %[[ARENA:.*]] = memref.get_global @loop_arena
// CHECK:         memref.view %[[ARENA]][%c0{{.*}}][] : memref<192xi8> to memref<16xf32>
// CHECK:         %[[OUT:.*]] = memref.alloc() : memref<4xf32>
// CHECK:         %[[DYN:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK:         scf.for
// CHECK:           memref.view %[[ARENA]][%c64{{.*}}][] : memref<192xi8> to memref<8xf32>
// CHECK:           memref.view %[[ARENA]][%c128{{.*}}][] : memref<192xi8> to memref<8xf32>
// CHECK:         scf.parallel
// CHECK:           memref.alloc() : memref<2xf32>
// CHECK:           memref.dealloc
// CHECK:         memref.dealloc %[[DYN]]
// CHECK:         return %[[OUT]]
func.func @loop(%x: f32, %n: index) -> memref<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %live = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%live : memref<16xf32>)
  %out = memref.alloc() : memref<4xf32>
  %dyn = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %c4 step %c1 {
    %t = memref.alloc() : memref<8xf32>
    %u = memref.alloc() : memref<8xf32>
    linalg.fill ins(%x : f32) outs(%t : memref<8xf32>)
    linalg.copy ins(%t : memref<8xf32>) outs(%u : memref<8xf32>)
    memref.dealloc %t : memref<8xf32>
    memref.dealloc %u : memref<8xf32>
  }
  scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
    %p = memref.alloc() : memref<2xf32>
    linalg.fill ins(%x : f32) outs(%p : memref<2xf32>)
    memref.dealloc %p : memref<2xf32>
  }
  linalg.copy ins(%live : memref<16xf32>) outs(%live : memref<16xf32>)
  memref.dealloc %live : memref<16xf32>
  memref.dealloc %dyn : memref<?xf32>
  linalg.fill ins(%x : f32) outs(%out : memref<4xf32>)
  return %out : memref<4xf32>
}

// -----

// The two cases of concurrent copies (gacc-pair-accumulating-gemms) run at
// the same time: one after the other in the slot of their loop (64 and 128
// bytes), each planned on its own (case 1's two buffers share its bytes).
// The cases of an ordinary switch run one at a time and share theirs.
// CHECK:       memref.global "private" @copies_arena : memref<192xi8>
// CHECK-LABEL: func.func @copies
// CHECK:         %[[ARENA:.*]] = memref.get_global @copies_arena
// CHECK:         scf.parallel
// CHECK:           scf.index_switch
// CHECK:           case 0 {
// CHECK:             memref.view %[[ARENA]][%c0{{.*}}][] : memref<192xi8> to memref<16xf32>
// CHECK:           case 1 {
// CHECK:             memref.view %[[ARENA]][%c64{{.*}}][] : memref<192xi8> to memref<32xf32>
// CHECK:             memref.view %[[ARENA]][%c64{{.*}}][] : memref<192xi8> to memref<8xf32>
// CHECK:         } {gacc.concurrent_copies}
// CHECK:         scf.index_switch
// CHECK:         case 0 {
// CHECK:           memref.view %[[ARENA]][%c0{{.*}}][] : memref<192xi8> to memref<16xf32>
// CHECK:         case 1 {
// CHECK:           memref.view %[[ARENA]][%c0{{.*}}][] : memref<192xi8> to memref<32xf32>
func.func @copies(%x: f32, %k: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.parallel (%copy) = (%c0) to (%c2) step (%c1) {
    scf.index_switch %copy {gacc.concurrent_copies}
    case 0 {
      %a = memref.alloc() : memref<16xf32>
      linalg.fill ins(%x : f32) outs(%a : memref<16xf32>)
      memref.dealloc %a : memref<16xf32>
      scf.yield
    }
    case 1 {
      %b = memref.alloc() : memref<32xf32>
      linalg.fill ins(%x : f32) outs(%b : memref<32xf32>)
      memref.dealloc %b : memref<32xf32>
      %c = memref.alloc() : memref<8xf32>
      linalg.fill ins(%x : f32) outs(%c : memref<8xf32>)
      memref.dealloc %c : memref<8xf32>
      scf.yield
    }
    default {
    }
    scf.reduce
  } {gacc.concurrent_copies}
  scf.index_switch %k
  case 0 {
    %a = memref.alloc() : memref<16xf32>
    linalg.fill ins(%x : f32) outs(%a : memref<16xf32>)
    memref.dealloc %a : memref<16xf32>
    scf.yield
  }
  case 1 {
    %b = memref.alloc() : memref<32xf32>
    linalg.fill ins(%x : f32) outs(%b : memref<32xf32>)
    memref.dealloc %b : memref<32xf32>
    scf.yield
  }
  default {
  }
  return
}

// -----

// Nothing to plan: no arena.
// CHECK-NOT:   memref.global
// CHECK-LABEL: func.func @nothing
// CHECK-NOT:     gaccrt_account_arena
func.func @nothing(%m: memref<4xf32>) {
  return
}

// -----

// What the arena leaves to malloc: elements whose storage is not their
// width (i24 takes 4 bytes, f80 16), a buffer too large to plan, buffers
// of regions that may run at the same time as themselves or as what follows
// (an async region, a parallel loop, the body of copies that is more than
// their cases: each iteration would get the same bytes), and the buffers
// of functions that may run twice at once (called in a parallel loop, or
// recursive). The f32 buffer is planned.
// CHECK:       func.func private @gaccrt_account_arena(i64)
// CHECK:       memref.global "private" @kept_arena : memref<64xi8>
// CHECK-LABEL: func.func @kept
// CHECK:         memref.alloc() : memref<64xi24>
// CHECK:         memref.alloc() : memref<16xf80>
// CHECK:         memref.alloc() : memref<4611686018427387904xf32>
// CHECK:         memref.view %{{.*}}[%c0{{.*}}][] : memref<64xi8> to memref<16xf32>
// CHECK:         async.execute
// CHECK-NEXT:      memref.alloc() : memref<16xf32>
// CHECK:         scf.parallel
// CHECK-NEXT:      memref.alloc() : memref<16xf32>
// CHECK:         scf.parallel
// CHECK-NEXT:      memref.alloc() : memref<16xf32>
// CHECK:           case 0 {
// CHECK-NEXT:        memref.alloc() : memref<16xf32>
// CHECK-NOT:     memref.global "private" @helper_arena
// CHECK-LABEL: func.func private @helper
// CHECK:         memref.alloc() : memref<16xf32>
// CHECK-NOT:     memref.global "private" @recursive_arena
// CHECK-LABEL: func.func @recursive
// CHECK:         memref.alloc() : memref<16xf32>
func.func @kept(%x: f32, %i24: i24, %f80: f80, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = memref.alloc() : memref<64xi24>
  linalg.fill ins(%i24 : i24) outs(%a : memref<64xi24>)
  memref.dealloc %a : memref<64xi24>
  %b = memref.alloc() : memref<16xf80>
  linalg.fill ins(%f80 : f80) outs(%b : memref<16xf80>)
  memref.dealloc %b : memref<16xf80>
  %huge = memref.alloc() : memref<4611686018427387904xf32>
  memref.dealloc %huge : memref<4611686018427387904xf32>
  %f = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%f : memref<16xf32>)
  memref.dealloc %f : memref<16xf32>
  %token = async.execute {
    %t = memref.alloc() : memref<16xf32>
    linalg.fill ins(%x : f32) outs(%t : memref<16xf32>)
    linalg.copy ins(%t : memref<16xf32>) outs(%out : memref<16xf32>)
    memref.dealloc %t : memref<16xf32>
    async.yield
  }
  async.await %token : !async.token
  scf.parallel (%i) = (%c0) to (%c2) step (%c1) {
    %t = memref.alloc() : memref<16xf32>
    func.call @helper(%x, %t) : (f32, memref<16xf32>) -> ()
    memref.dealloc %t : memref<16xf32>
    scf.reduce
  }
  scf.parallel (%copy) = (%c0) to (%c2) step (%c1) {
    %t = memref.alloc() : memref<16xf32>
    linalg.fill ins(%x : f32) outs(%t : memref<16xf32>)
    scf.index_switch %copy {gacc.concurrent_copies}
    case 0 {
      %u = memref.alloc() : memref<16xf32>
      linalg.copy ins(%t : memref<16xf32>) outs(%u : memref<16xf32>)
      memref.dealloc %u : memref<16xf32>
      scf.yield
    }
    default {
    }
    memref.dealloc %t : memref<16xf32>
    scf.reduce
  } {gacc.concurrent_copies}
  return
}

func.func private @helper(%x: f32, %out: memref<16xf32>) {
  %t = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%t : memref<16xf32>)
  linalg.copy ins(%t : memref<16xf32>) outs(%out : memref<16xf32>)
  memref.dealloc %t : memref<16xf32>
  return
}

func.func @recursive(%x: f32, %n: index, %out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.alloc() : memref<16xf32>
  linalg.fill ins(%x : f32) outs(%a : memref<16xf32>)
  %more = arith.cmpi sgt, %n, %c0 : index
  scf.if %more {
    %m = arith.subi %n, %c1 : index
    func.call @recursive(%x, %m, %out) : (f32, index, memref<16xf32>) -> ()
  }
  linalg.copy ins(%a : memref<16xf32>) outs(%out : memref<16xf32>)
  memref.dealloc %a : memref<16xf32>
  return
}

// -----

// The operands of GEMM pairs lie one after the other, in the pair's order
// (the runtime then runs each pair as one GEMM over the stacked matrix):
// gaccrt_sgemm_pair's A1, A2 (op(A) = A^T) and B1, B2, gaccrt_sgemm_rows_pair's
// A1, A2 and C1, C2, without padding between them (8x10xf32: 320 bytes),
// each chain one interval from its first allocation to its last
// deallocation. %x2 is allocated before %x1 and still follows it; %h1 and
// %h2 chain for both calls that read them. A pair with transposes that make
// its operands no stacked matrix (%p, %q) gets no chain: first fit as usual.
// CHECK:       memref.global "private" @pairs_arena : memref<2240xi8>
// CHECK-LABEL: func.func @pairs
// CHECK-DAG:     %[[X2:.*]] = memref.view %{{.*}}[%c320{{.*}}][] : memref<2240xi8> to memref<8x10xf32>
// CHECK-DAG:     %[[X1:.*]] = memref.view %{{.*}}[%c0{{.*}}][] : memref<2240xi8> to memref<8x10xf32>
// CHECK-DAG:     %[[H1:.*]] = memref.view %{{.*}}[%c640{{.*}}][] : memref<2240xi8> to memref<8x10xf32>
// CHECK-DAG:     %[[H2:.*]] = memref.view %{{.*}}[%c960{{.*}}][] : memref<2240xi8> to memref<8x10xf32>
// CHECK-DAG:     %[[G1:.*]] = memref.view %{{.*}}[%c1280{{.*}}][] : memref<2240xi8> to memref<8x10xf32>
// CHECK-DAG:     %[[G2:.*]] = memref.view %{{.*}}[%c1600{{.*}}][] : memref<2240xi8> to memref<8x10xf32>
// CHECK-DAG:     %[[P:.*]] = memref.view %{{.*}}[%c1920{{.*}}][] : memref<2240xi8> to memref<8x10xf32>
// CHECK:         call @gaccrt_sgemm_rows_pair
// CHECK:         call @gaccrt_sgemm_pair
// CHECK:         memref.view %{{.*}}[%c0{{.*}}][] : memref<2240xi8> to memref<10x10xf32>
func.func private @gaccrt_sgemm_pair(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func private @gaccrt_sgemm_rows_pair(i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>)
func.func @pairs(%x: f32, %w: memref<10x10xf32>, %c: memref<10x10xf32>) {
  %t = arith.constant 1 : i32
  %n = arith.constant 0 : i32
  %one = arith.constant 1.0 : f32
  %x2 = memref.alloc() : memref<8x10xf32>
  %x1 = memref.alloc() : memref<8x10xf32>
  %h1 = memref.alloc() : memref<8x10xf32>
  %h2 = memref.alloc() : memref<8x10xf32>
  %g1 = memref.alloc() : memref<8x10xf32>
  %g2 = memref.alloc() : memref<8x10xf32>
  %p = memref.alloc() : memref<8x10xf32>
  linalg.fill ins(%x : f32) outs(%x1 : memref<8x10xf32>)
  linalg.fill ins(%x : f32) outs(%x2 : memref<8x10xf32>)
  linalg.fill ins(%x : f32) outs(%g1 : memref<8x10xf32>)
  linalg.fill ins(%x : f32) outs(%g2 : memref<8x10xf32>)
  linalg.fill ins(%x : f32) outs(%p : memref<8x10xf32>)
  %cx1 = memref.cast %x1 : memref<8x10xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %cx2 = memref.cast %x2 : memref<8x10xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %ch1 = memref.cast %h1 : memref<8x10xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %ch2 = memref.cast %h2 : memref<8x10xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %cg1 = memref.cast %g1 : memref<8x10xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %cg2 = memref.cast %g2 : memref<8x10xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %cp = memref.cast %p : memref<8x10xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %cw = memref.cast %w : memref<10x10xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  %cc = memref.cast %c : memref<10x10xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
  func.call @gaccrt_sgemm_rows_pair(%n, %n, %one, %one, %cx1, %cw, %ch1, %cx2, %ch2) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  func.call @gaccrt_sgemm_pair(%t, %n, %one, %one, %ch1, %cg1, %ch2, %cg2, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  func.call @gaccrt_sgemm_pair(%n, %n, %one, %one, %cp, %cg1, %cp, %cg2, %cc) : (i32, i32, f32, f32, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) -> ()
  memref.dealloc %x1 : memref<8x10xf32>
  memref.dealloc %x2 : memref<8x10xf32>
  memref.dealloc %h1 : memref<8x10xf32>
  memref.dealloc %h2 : memref<8x10xf32>
  memref.dealloc %g1 : memref<8x10xf32>
  memref.dealloc %g2 : memref<8x10xf32>
  memref.dealloc %p : memref<8x10xf32>
  %q = memref.alloc() : memref<10x10xf32>
  linalg.fill ins(%x : f32) outs(%q : memref<10x10xf32>)
  memref.dealloc %q : memref<10x10xf32>
  return
}

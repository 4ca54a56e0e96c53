// RUN: gacc-opt %s --split-input-file --gacc-outline-copies | FileCheck %s

// The two cases of concurrent copies and their lockstep form, as
// gacc-plan-arena leaves them: each case's buffers views of the arena at
// its own offsets (constants that differ by the same bytes: the base's
// offsets plus one argument), the rows from the micro-batch's offset (the
// first case computes it from the loop's induction variable in the case,
// the second gets it from outside: an argument either way; the next
// micro-batch's, computed outside from the induction variable, the
// function computes itself), the first case's accumulation into %acc (the
// second's runs after both: an op that the second case lacks, under a
// flag). The lockstep else-branch runs both copies' work in turn and has
// two accumulations: the base, whose second accumulation neither case
// has. Constants that every block shares stay constants in the function.

// CHECK-LABEL: func.func @copies
// CHECK-SAME:      (%[[ARENA:.*]]: memref<1024xi8>, %[[X:.*]]: memref<16x4xf32>, %[[ACC:.*]]: memref<4xf32>)
// CHECK:         scf.for %[[IV:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:           %[[NEXT:.*]] = arith.addi %[[IV]], %{{.*}} : index
// CHECK:           scf.if %{{.*}} {
// CHECK:             scf.parallel
// CHECK:               scf.index_switch %{{.*}} {gacc.concurrent_copies}
// CHECK-NEXT:          case 0 {
// CHECK-NEXT:            %[[D0:.*]] = arith.constant 0 : index
// CHECK-NEXT:            %[[ROW:.*]] = arith.muli %[[IV]], %{{.*}} : index
// CHECK-NEXT:            %[[TRUE:.*]] = arith.constant true
// CHECK-NEXT:            %[[FALSE:.*]] = arith.constant false
// CHECK-NEXT:            func.call @copies_copy(%[[ARENA]], %[[D0]], %[[IV]], %[[X]], %[[ROW]], %[[ACC]], %[[TRUE]], %[[FALSE]])
// CHECK-NEXT:            scf.yield
// CHECK:               case 1 {
// CHECK-NEXT:            %[[D1:.*]] = arith.constant 256 : index
// CHECK-NEXT:            %[[F0:.*]] = arith.constant false
// CHECK-NEXT:            %[[F1:.*]] = arith.constant false
// CHECK-NEXT:            func.call @copies_copy(%[[ARENA]], %[[D1]], %[[IV]], %[[X]], %[[NEXT]], %[[ACC]], %[[F0]], %[[F1]])
// CHECK-NEXT:            scf.yield
// CHECK:             func.call @copies_acc(%[[ACC]], %{{.*}})
// CHECK-NEXT:      } else {
// CHECK-NEXT:        %[[D0:.*]] = arith.constant 0 : index
// CHECK-NEXT:        %[[ROW:.*]] = arith.muli %[[IV]], %{{.*}} : index
// CHECK-NEXT:        %[[F0:.*]] = arith.constant true
// CHECK-NEXT:        %[[F1:.*]] = arith.constant true
// CHECK-NEXT:        func.call @copies_copy(%[[ARENA]], %[[D0]], %[[IV]], %[[X]], %[[ROW]], %[[ACC]], %[[F0]], %[[F1]])
// CHECK-NEXT:      }
// CHECK:         func.func private @copies_copy(%[[A:.*]]: memref<1024xi8>, %[[D:.*]]: index, %[[I:.*]]: index, %[[XA:.*]]: memref<16x4xf32>, %[[R:.*]]: index, %[[ACCA:.*]]: memref<4xf32>, %[[G0:.*]]: i1, %[[G1:.*]]: i1)
// CHECK-SAME:        attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK-NEXT:      %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[N:.*]] = arith.addi %[[I]], %[[C1]] : index
// CHECK-NEXT:      %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[O0:.*]] = arith.addi %[[C0]], %[[D]] : index
// CHECK-NEXT:      %[[V:.*]] = memref.view %[[A]][%[[O0]]][] : memref<1024xi8> to memref<4xf32>
// CHECK-NEXT:      %[[S:.*]] = memref.subview %[[XA]][%[[R]], 0] [1, 4] [1, 1]
// CHECK-NEXT:      memref.copy %[[S]], %[[V]]
// CHECK-NEXT:      call @copies_work(%[[V]])
// CHECK-NEXT:      scf.if %[[G0]] {
// CHECK-NEXT:        func.call @copies_acc(%[[ACCA]], %[[V]])
// CHECK-NEXT:      }
// CHECK-NEXT:      %[[C128:.*]] = arith.constant 128 : index
// CHECK-NEXT:      %[[O1:.*]] = arith.addi %[[C128]], %[[D]] : index
// CHECK-NEXT:      %[[W:.*]] = memref.view %[[A]][%[[O1]]][] : memref<1024xi8> to memref<4xf32>
// CHECK-NEXT:      %[[T:.*]] = memref.subview %[[XA]][%[[N]], 0] [1, 4] [1, 1]
// CHECK-NEXT:      memref.copy %[[T]], %[[W]]
// CHECK-NEXT:      scf.if %[[G1]] {
// CHECK-NEXT:        func.call @copies_acc(%[[ACCA]], %[[W]])
// CHECK-NEXT:      }
// CHECK-NEXT:      return

func.func private @copies_work(memref<4xf32>)
func.func private @copies_acc(memref<4xf32>, memref<4xf32>)
func.func private @query() -> i1

func.func @copies(%arena: memref<1024xi8>, %x: memref<16x4xf32>,
                  %acc: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  scf.for %iv = %c0 to %c8 step %c2 {
    %next = arith.addi %iv, %c1 : index
    %side = func.call @query() : () -> i1
    scf.if %side {
      scf.parallel (%copy) = (%c0) to (%c2) step (%c1) {
        scf.index_switch %copy {gacc.concurrent_copies}
        case 0 {
          %o0 = arith.constant 0 : index
          %v = memref.view %arena[%o0][] : memref<1024xi8> to memref<4xf32>
          %r = arith.muli %iv, %c1 : index
          %s = memref.subview %x[%r, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<4xf32, strided<[1], offset: ?>>
          memref.copy %s, %v : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
          func.call @copies_work(%v) : (memref<4xf32>) -> ()
          func.call @copies_acc(%acc, %v) : (memref<4xf32>, memref<4xf32>) -> ()
          %o1 = arith.constant 128 : index
          %w = memref.view %arena[%o1][] : memref<1024xi8> to memref<4xf32>
          %t = memref.subview %x[%next, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<4xf32, strided<[1], offset: ?>>
          memref.copy %t, %w : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
          scf.yield
        }
        case 1 {
          %o0 = arith.constant 256 : index
          %v = memref.view %arena[%o0][] : memref<1024xi8> to memref<4xf32>
          %s = memref.subview %x[%next, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<4xf32, strided<[1], offset: ?>>
          memref.copy %s, %v : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
          func.call @copies_work(%v) : (memref<4xf32>) -> ()
          %o1 = arith.constant 384 : index
          %w = memref.view %arena[%o1][] : memref<1024xi8> to memref<4xf32>
          %t = memref.subview %x[%next, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<4xf32, strided<[1], offset: ?>>
          memref.copy %t, %w : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
          scf.yield
        }
        default {
        }
        scf.reduce
      } {gacc.concurrent_copies}
      %o2 = arith.constant 256 : index
      %v2 = memref.view %arena[%o2][] : memref<1024xi8> to memref<4xf32>
      func.call @copies_acc(%acc, %v2) : (memref<4xf32>, memref<4xf32>) -> ()
    } else {
      %o0 = arith.constant 0 : index
      %v = memref.view %arena[%o0][] : memref<1024xi8> to memref<4xf32>
      %r = arith.muli %iv, %c1 : index
      %s = memref.subview %x[%r, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<4xf32, strided<[1], offset: ?>>
      memref.copy %s, %v : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
      func.call @copies_work(%v) : (memref<4xf32>) -> ()
      func.call @copies_acc(%acc, %v) : (memref<4xf32>, memref<4xf32>) -> ()
      %o1 = arith.constant 128 : index
      %w = memref.view %arena[%o1][] : memref<1024xi8> to memref<4xf32>
      %t = memref.subview %x[%next, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<4xf32, strided<[1], offset: ?>>
      memref.copy %t, %w : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
      func.call @copies_acc(%acc, %w) : (memref<4xf32>, memref<4xf32>) -> ()
    }
  }
  return
}

// -----

// The second case calls another function: no block is a subsequence of the
// other's; both stay as they are.

// CHECK-LABEL: func.func @unlike
// CHECK:         case 0 {
// CHECK-NEXT:      func.call @unlike_a(%{{.*}})
// CHECK:         case 1 {
// CHECK-NEXT:      func.call @unlike_b(%{{.*}})
// CHECK-NOT:     func.func private @unlike_copy

func.func private @unlike_a(memref<4xf32>)
func.func private @unlike_b(memref<4xf32>)

func.func @unlike(%v: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.parallel (%copy) = (%c0) to (%c2) step (%c1) {
    scf.index_switch %copy {gacc.concurrent_copies}
    case 0 {
      func.call @unlike_a(%v) : (memref<4xf32>) -> ()
      scf.yield
    }
    case 1 {
      func.call @unlike_b(%v) : (memref<4xf32>) -> ()
      scf.yield
    }
    default {
    }
    scf.reduce
  } {gacc.concurrent_copies}
  return
}

// -----

// Ops with regions match region by region: the linalg.generic of each case
// (its body the same, its buffers the cases' own) is one op of the
// function; a generic with another body does not match it.

// CHECK-LABEL: func.func @regions
// CHECK:         case 0 {
// CHECK-NEXT:      func.call @regions_copy(%[[A:[^,]*]], %[[B:[^)]*]])
// CHECK:         case 1 {
// CHECK-NEXT:      func.call @regions_copy(%[[B]], %[[A]])
// CHECK:         case 2 {
// CHECK-NEXT:      linalg.generic
// CHECK:         func.func private @regions_copy(%[[X:.*]]: memref<4xf32>, %[[Y:.*]]: memref<4xf32>)
// CHECK-NEXT:      linalg.generic {{.*}} ins(%[[X]] : memref<4xf32>) outs(%[[Y]] : memref<4xf32>)
// CHECK:             arith.addf
// CHECK:           return

#id = affine_map<(d0) -> (d0)>
func.func @regions(%a: memref<4xf32>, %b: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  scf.parallel (%copy) = (%c0) to (%c3) step (%c1) {
    scf.index_switch %copy {gacc.concurrent_copies}
    case 0 {
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
      ^bb0(%in: f32, %out: f32):
        %s = arith.addf %in, %out : f32
        linalg.yield %s : f32
      }
      scf.yield
    }
    case 1 {
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {
      ^bb0(%in: f32, %out: f32):
        %s = arith.addf %in, %out : f32
        linalg.yield %s : f32
      }
      scf.yield
    }
    case 2 {
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%b : memref<4xf32>) outs(%a : memref<4xf32>) {
      ^bb0(%in: f32, %out: f32):
        %s = arith.mulf %in, %out : f32
        linalg.yield %s : f32
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

// What each case has from outside: views of the arena that the hoisting of
// gacc-pair-accumulating-gemms left before the cases, at offsets that
// differ by the same bytes as the cases' own buffers: the function
// computes them itself, from the base's offsets plus one argument. The
// second copies op has no %acc (defined in the scf.if around the first):
// the op that uses it, which its cases lack, gets poison there.

// CHECK-LABEL: func.func @views
// CHECK:         scf.if
// CHECK:           scf.index_switch
// CHECK-NEXT:      case 0 {
// CHECK-NEXT:        %[[D0:.*]] = arith.constant 0 : index
// CHECK-NEXT:        %[[T0:.*]] = arith.constant true
// CHECK-NEXT:        func.call @views_copy(%[[ARENA:.*]], %[[D0]], %[[ACC:.*]], %[[T0]])
// CHECK:           case 1 {
// CHECK-NEXT:        %[[D1:.*]] = arith.constant 64 : index
// CHECK-NEXT:        %[[F1:.*]] = arith.constant false
// CHECK-NEXT:        func.call @views_copy(%[[ARENA]], %[[D1]], %[[ACC]], %[[F1]])
// CHECK:         scf.index_switch
// CHECK-NEXT:    case 0 {
// CHECK-NEXT:      %[[D2:.*]] = arith.constant 128 : index
// CHECK-NEXT:      %[[P2:.*]] = ub.poison : memref<4xf32>
// CHECK-NEXT:      %[[F2:.*]] = arith.constant false
// CHECK-NEXT:      func.call @views_copy(%[[ARENA]], %[[D2]], %[[P2]], %[[F2]])
// CHECK:         case 1 {
// CHECK-NEXT:      %[[D3:.*]] = arith.constant 192 : index
// CHECK-NEXT:      %[[P3:.*]] = ub.poison : memref<4xf32>
// CHECK:           func.call @views_copy(%[[ARENA]], %[[D3]], %[[P3]], %{{.*}})
// CHECK:         func.func private @views_copy(%[[A:.*]]: memref<256xi8>, %[[D:.*]]: index, %[[ACCA:.*]]: memref<4xf32>, %[[F:.*]]: i1)
// CHECK-NEXT:      %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:      %[[OFF:.*]] = arith.addi %[[C0]], %[[D]] : index
// CHECK-NEXT:      %[[V:.*]] = memref.view %[[A]][%[[OFF]]][] : memref<256xi8> to memref<4xf32>
// CHECK-NEXT:      call @views_work(%[[V]])
// CHECK-NEXT:      scf.if %[[F]] {
// CHECK-NEXT:        func.call @views_acc(%[[ACCA]], %[[V]])

func.func private @views_work(memref<4xf32>)
func.func private @views_acc(memref<4xf32>, memref<4xf32>)

func.func @views(%arena: memref<256xi8>, %cond: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c192 = arith.constant 192 : index
  scf.if %cond {
    %acc = memref.alloc() : memref<4xf32>
    %v0 = memref.view %arena[%c0][] : memref<256xi8> to memref<4xf32>
    %v1 = memref.view %arena[%c64][] : memref<256xi8> to memref<4xf32>
    scf.parallel (%copy) = (%c0) to (%c2) step (%c1) {
      scf.index_switch %copy {gacc.concurrent_copies}
      case 0 {
        func.call @views_work(%v0) : (memref<4xf32>) -> ()
        func.call @views_acc(%acc, %v0) : (memref<4xf32>, memref<4xf32>) -> ()
        scf.yield
      }
      case 1 {
        func.call @views_work(%v1) : (memref<4xf32>) -> ()
        scf.yield
      }
      default {
      }
      scf.reduce
    } {gacc.concurrent_copies}
    func.call @views_acc(%acc, %v1) : (memref<4xf32>, memref<4xf32>) -> ()
    memref.dealloc %acc : memref<4xf32>
  }
  %v2 = memref.view %arena[%c128][] : memref<256xi8> to memref<4xf32>
  %v3 = memref.view %arena[%c192][] : memref<256xi8> to memref<4xf32>
  scf.parallel (%copy) = (%c0) to (%c2) step (%c1) {
    scf.index_switch %copy {gacc.concurrent_copies}
    case 0 {
      func.call @views_work(%v2) : (memref<4xf32>) -> ()
      scf.yield
    }
    case 1 {
      func.call @views_work(%v3) : (memref<4xf32>) -> ()
      scf.yield
    }
    default {
    }
    scf.reduce
  } {gacc.concurrent_copies}
  return
}

// -----

// Cases that yield a value (not what gacc-pair-accumulating-gemms builds):
// a call cannot stand for them; they stay as they are.

// CHECK-LABEL: func.func @yields
// CHECK:         case 0 {
// CHECK-NEXT:      %[[A:.*]] = arith.addi
// CHECK-NEXT:      func.call @yields_work(%[[A]])
// CHECK-NEXT:      scf.yield %[[A]]
// CHECK-NOT:     func.func private @yields_copy

func.func private @yields_work(index)

func.func @yields(%x: index, %y: index) -> index {
  %c0 = arith.constant 0 : index
  %r = scf.index_switch %c0 {gacc.concurrent_copies} -> index
  case 0 {
    %a = arith.addi %x, %x : index
    func.call @yields_work(%a) : (index) -> ()
    scf.yield %a : index
  }
  case 1 {
    %a = arith.addi %y, %y : index
    func.call @yields_work(%a) : (index) -> ()
    scf.yield %a : index
  }
  default {
    scf.yield %c0 : index
  }
  return %r : index
}

// -----

// A block that has the base's constant row where the other has a value
// (the row of the micro-batch from an argument): the function would have
// the base's constant for both. They stay.

// CHECK-LABEL: func.func @constant_row
// CHECK:         case 0 {
// CHECK-NEXT:      memref.subview %{{.*}}[%c0, 0]
// CHECK:         case 1 {
// CHECK-NEXT:      memref.subview %{{.*}}[%[[IV:.*]], 0]
// CHECK-NOT:     func.func private @constant_row_copy

func.func private @constant_row_work(memref<4xf32>)

func.func @constant_row(%x: memref<16x4xf32>, %iv: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.parallel (%copy) = (%c0) to (%c2) step (%c1) {
    scf.index_switch %copy {gacc.concurrent_copies}
    case 0 {
      %s = memref.subview %x[%c0, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<4xf32, strided<[1], offset: ?>>
      %v = memref.alloc() : memref<4xf32>
      memref.copy %s, %v : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
      func.call @constant_row_work(%v) : (memref<4xf32>) -> ()
      func.call @constant_row_work(%v) : (memref<4xf32>) -> ()
      scf.yield
    }
    case 1 {
      %s = memref.subview %x[%iv, 0] [1, 4] [1, 1] : memref<16x4xf32> to memref<4xf32, strided<[1], offset: ?>>
      %v = memref.alloc() : memref<4xf32>
      memref.copy %s, %v : memref<4xf32, strided<[1], offset: ?>> to memref<4xf32>
      func.call @constant_row_work(%v) : (memref<4xf32>) -> ()
      scf.yield
    }
    default {
    }
    scf.reduce
  } {gacc.concurrent_copies}
  return
}

// -----

// A division by a constant is a value op (speculatable: the divisor is not
// zero); in the function its divisor would be the base's 4 plus the
// difference, 0 for the second block, which lacks the op that uses the
// quotient but would divide anyway. They stay.

// CHECK-LABEL: func.func @division
// CHECK:         case 0 {
// CHECK:           arith.divui
// CHECK:         case 1 {
// CHECK-NEXT:      %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT:      func.call @division_count(%[[Z]])
// CHECK-NOT:     func.func private @division_copy

func.func private @division_use(index)
func.func private @division_count(index)

func.func @division(%x: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  scf.parallel (%copy) = (%c0) to (%c2) step (%c1) {
    scf.index_switch %copy {gacc.concurrent_copies}
    case 0 {
      %c4 = arith.constant 4 : index
      %q = arith.divui %x, %c4 : index
      func.call @division_use(%q) : (index) -> ()
      func.call @division_count(%c4) : (index) -> ()
      scf.yield
    }
    case 1 {
      %z = arith.constant 0 : index
      func.call @division_count(%z) : (index) -> ()
      scf.yield
    }
    default {
    }
    scf.reduce
  } {gacc.concurrent_copies}
  return
}

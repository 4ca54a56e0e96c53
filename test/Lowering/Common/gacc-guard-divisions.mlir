// RUN: gacc-opt %s --split-input-file --gacc-guard-divisions | FileCheck %s
// RUN: gacc-opt %s --split-input-file --gacc-guard-divisions="report=false" | FileCheck %s --check-prefix=SAFE

// A signed division by a value read from data: a zero divisor, or INT_MIN
// divided by -1, calls gaccrt_index_error(divisor, dividend, site) and
// divides by 1 instead. The site names the op and its location.

// CHECK: module attributes {gacc.gather_sites = ["division: arith.divsi at {{.*}}gacc-guard-divisions.mlir:[[@LINE+38]]:10"]}
// CHECK: func.func private @gaccrt_index_error(i64, i64, i64)
// CHECK-LABEL: func.func @divide
// CHECK:         ^bb0(%[[A:.*]]: i32, %[[B:.*]]: i32, %{{.*}}: i32):
// CHECK:           %[[C0:.*]] = arith.constant 0 : i32
// CHECK:           %[[ZERO:.*]] = arith.cmpi eq, %[[B]], %[[C0]] : i32
// CHECK:           %[[CM1:.*]] = arith.constant -1 : i32
// CHECK:           %[[M1:.*]] = arith.cmpi eq, %[[B]], %[[CM1]] : i32
// CHECK:           %[[CMIN:.*]] = arith.constant -2147483648 : i32
// CHECK:           %[[MIN:.*]] = arith.cmpi eq, %[[A]], %[[CMIN]] : i32
// CHECK:           %[[OVF:.*]] = arith.andi %[[M1]], %[[MIN]] : i1
// CHECK:           %[[BAD:.*]] = arith.ori %[[ZERO]], %[[OVF]] : i1
// CHECK:           scf.if %[[BAD]] {
// CHECK:             %[[SITE:.*]] = arith.constant 0 : i64
// CHECK:             %[[B64:.*]] = arith.extsi %[[B]] : i32 to i64
// CHECK:             %[[A64:.*]] = arith.extsi %[[A]] : i32 to i64
// CHECK:             func.call @gaccrt_index_error(%[[B64]], %[[A64]], %[[SITE]]) : (i64, i64, i64) -> ()
// CHECK:           }
// CHECK:           %[[C1:.*]] = arith.constant 1 : i32
// CHECK:           %[[DIVISOR:.*]] = arith.select %[[BAD]], %[[C1]], %[[B]] : i32
// CHECK:           arith.divsi %[[A]], %[[DIVISOR]] : i32

// SAFE-NOT: gacc.gather_sites
// SAFE-NOT: gaccrt_index_error
// SAFE-LABEL: func.func @divide
// SAFE:         %[[BAD:.*]] = arith.ori
// SAFE-NOT:     scf.if
// SAFE:         %[[DIVISOR:.*]] = arith.select %[[BAD]]
// SAFE:         arith.divsi %{{.*}}, %[[DIVISOR]] : i32

func.func @divide(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %e = tensor.empty() : tensor<4xi32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%a, %b : tensor<4xi32>, tensor<4xi32>) outs(%e : tensor<4xi32>) {
  ^bb0(%x: i32, %y: i32, %o: i32):
    %q = arith.divsi %x, %y : i32
    linalg.yield %q : i32
  } -> tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

// Unsigned divisions and remainders can only trap on zero; the report
// extends their operands without sign. Sites already listed by
// gacc-guard-gathers are kept, the new ones appended.

// CHECK: module attributes {gacc.gather_sites = ["gather at earlier.mlir:1:1", "division: arith.remui at {{.*}}", "division: arith.ceildivui at {{.*}}"]}
// CHECK-LABEL: func.func @unsigned
// CHECK-SAME:    (%[[A:.*]]: i8, %[[B:.*]]: i8)
// CHECK:         %[[ZERO:.*]] = arith.cmpi eq, %[[B]], %{{.*}} : i8
// CHECK-NOT:     arith.andi
// CHECK:         scf.if %[[ZERO]] {
// CHECK:           arith.constant 1 : i64
// CHECK:           arith.extui %[[B]] : i8 to i64
// CHECK:           arith.extui %[[A]] : i8 to i64
// CHECK:         arith.remui %[[A]], %{{.*}} : i8
// CHECK:         scf.if
// CHECK:           arith.constant 2 : i64
// CHECK:         arith.ceildivui
module attributes {gacc.gather_sites = ["gather at earlier.mlir:1:1"]} {
  func.func @unsigned(%a: i8, %b: i8) -> (i8, i8) {
    %r = arith.remui %a, %b : i8
    %c = arith.ceildivui %a, %b : i8
    return %r, %c : i8, i8
  }
}

// -----

// Index divisions are checked on 64 bits (index_cast for the report).

// CHECK-LABEL: func.func @index_floordiv
// CHECK:         arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK:         arith.constant -9223372036854775808 : index
// CHECK:         arith.index_cast %{{.*}} : index to i64
// CHECK:         arith.floordivsi
func.func @index_floordiv(%a: index, %b: index) -> index {
  %r = arith.floordivsi %a, %b : index
  return %r : index
}

// -----

// A constant divisor other than 0 and -1 cannot trap: no check. A constant
// -1 can only overflow, for a dividend that is not a constant other than
// INT_MIN; a constant 0 always traps and is reported.

// CHECK: module attributes {gacc.gather_sites = ["division: arith.divsi at {{[^"]*}}", "division: arith.divui at {{[^"]*}}"]}
// CHECK-LABEL: func.func @constants
// CHECK-SAME:    (%[[A:.*]]: i32)
// CHECK-DAG:     %[[SEVEN:.*]] = arith.constant 7 : i32
// CHECK-DAG:     %[[CM1:.*]] = arith.constant -1 : i32
// CHECK-DAG:     %[[C0:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[FIVE:.*]] = arith.constant 5 : i32
// CHECK:         arith.divsi %[[A]], %[[SEVEN]] : i32
// CHECK-NEXT:    arith.remui %[[A]], %[[SEVEN]] : i32
// CHECK-NEXT:    arith.constant -1 : i32
// CHECK-NEXT:    %[[M1:.*]] = arith.cmpi eq, %[[CM1]], %{{.*}} : i32
// CHECK-NEXT:    arith.constant -2147483648 : i32
// CHECK-NEXT:    %[[MIN:.*]] = arith.cmpi eq, %[[A]], %{{.*}} : i32
// CHECK-NEXT:    %[[OVF:.*]] = arith.andi %[[M1]], %[[MIN]] : i1
// CHECK-NEXT:    scf.if %[[OVF]]
// CHECK:         %[[DIVISOR:.*]] = arith.select %[[OVF]], %{{.*}}, %[[CM1]] : i32
// CHECK-NEXT:    arith.divsi %[[A]], %[[DIVISOR]] : i32
// CHECK-NEXT:    arith.divsi %[[FIVE]], %[[CM1]] : i32
// CHECK:         scf.if
// CHECK:         arith.divui %[[A]], %{{.*}} : i32
func.func @constants(%a: i32) -> (i32, i32, i32, i32, i32) {
  %c7 = arith.constant 7 : i32
  %cm1 = arith.constant -1 : i32
  %c0 = arith.constant 0 : i32
  %c5 = arith.constant 5 : i32
  %q1 = arith.divsi %a, %c7 : i32
  %q2 = arith.remui %a, %c7 : i32
  %q3 = arith.divsi %a, %cm1 : i32
  %q4 = arith.divsi %c5, %cm1 : i32
  %q5 = arith.divui %a, %c0 : i32
  return %q1, %q2, %q3, %q4, %q5 : i32, i32, i32, i32, i32
}

// -----

// Only safe divisions: nothing is declared or listed.

// CHECK-NOT: gacc.gather_sites
// CHECK-NOT: gaccrt_index_error
// CHECK-LABEL: func.func @safe
// CHECK-NEXT:    arith.constant 3 : i64
// CHECK-NEXT:    arith.divsi
// CHECK-NEXT:    arith.remui
func.func @safe(%a: i64) -> (i64, i64) {
  %c3 = arith.constant 3 : i64
  %q = arith.divsi %a, %c3 : i64
  %r = arith.remui %a, %c3 : i64
  return %q, %r : i64, i64
}

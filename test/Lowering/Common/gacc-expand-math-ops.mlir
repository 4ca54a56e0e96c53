// RUN: gacc-opt %s --gacc-expand-math-ops --split-input-file | FileCheck %s

// ceildivsi and floordivsi become a truncating division corrected by one
// when the remainder is non-zero and the signs agree (ceil) or differ
// (floor).
// CHECK-LABEL: func.func @divisions
// CHECK-SAME: (%[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK-NOT: ceildivsi
// CHECK-NOT: floordivsi
// CHECK: %[[Q:.*]] = arith.divsi %[[A]], %[[B]] : i32
// CHECK: %[[P:.*]] = arith.muli %[[Q]], %[[B]] : i32
// CHECK: %[[INEXACT:.*]] = arith.cmpi ne, %[[A]], %[[P]] : i32
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : i1
// CHECK: %[[UP:.*]] = arith.andi %[[INEXACT]], %[[SAME]] : i1
// CHECK: %[[Q1:.*]] = arith.addi %[[Q]], %{{.*}} : i32
// CHECK: %[[CEIL:.*]] = arith.select %[[UP]], %[[Q1]], %[[Q]] : i32
// CHECK: %[[Q2:.*]] = arith.divsi %[[A]], %[[B]] : i32
// CHECK: %[[DIFF:.*]] = arith.cmpi ne, %{{.*}}, %{{.*}} : i1
// CHECK: %[[DOWN:.*]] = arith.andi %{{.*}}, %[[DIFF]] : i1
// CHECK: %[[FLOOR:.*]] = arith.select %[[DOWN]], %{{.*}}, %[[Q2]] : i32
// CHECK: return %[[CEIL]], %[[FLOOR]]
func.func @divisions(%a: i32, %b: i32) -> (i32, i32) {
  %c = arith.ceildivsi %a, %b : i32
  %f = arith.floordivsi %a, %b : i32
  return %c, %f : i32, i32
}

// -----

// math.clampf is torch's clamp (minimumf of maximumf), isinf compares |x|
// with inf, isnormal checks smallest-normal <= |x| < inf; arith.maximumf
// stays (LLVM's llvm.maximum keeps signed zeros and NaN).
// CHECK-LABEL: func.func @math
// CHECK-SAME: (%[[X:.*]]: f32, %[[LO:.*]]: f32, %[[HI:.*]]: f32)
// CHECK-DAG: %[[SMALLEST:.*]] = arith.constant 1.17549435E-38 : f32
// CHECK-DAG: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: %[[MAX:.*]] = arith.maximumf %[[X]], %[[LO]] : f32
// CHECK: %[[CLAMP:.*]] = arith.minimumf %[[MAX]], %[[HI]] : f32
// CHECK: %[[ABS:.*]] = math.absf %[[X]] : f32
// CHECK: %[[ISINF:.*]] = arith.cmpf oeq, %[[ABS]], %[[INF]] : f32
// CHECK: %[[ABS2:.*]] = math.absf %[[X]] : f32
// CHECK: %[[GE:.*]] = arith.cmpf oge, %[[ABS2]], %[[SMALLEST]] : f32
// CHECK: %[[LT:.*]] = arith.cmpf olt, %[[ABS2]], %[[INF]] : f32
// CHECK: %[[NORMAL:.*]] = arith.andi %[[GE]], %[[LT]] : i1
// CHECK: %[[M:.*]] = arith.maximumf %[[X]], %[[LO]] : f32
// CHECK: return %[[CLAMP]], %[[ISINF]], %[[NORMAL]], %[[M]]
func.func @math(%x: f32, %lo: f32, %hi: f32) -> (f32, i1, i1, f32) {
  %c = math.clampf %x to [%lo, %hi] : f32
  %i = math.isinf %x : f32
  %n = math.isnormal %x : f32
  %m = arith.maximumf %x, %lo : f32
  return %c, %i, %n, %m : f32, i1, i1, f32
}

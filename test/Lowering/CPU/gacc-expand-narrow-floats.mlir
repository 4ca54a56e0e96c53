// RUN: gacc-opt %s --split-input-file --gacc-expand-narrow-floats | FileCheck %s

// bf16 <-> f32 casts become shifts and rounding on the bits (upstream's
// bf16 expansion); no arith.extf/truncf to or from bf16 is left.

// CHECK-LABEL: func.func @bf16_casts
// CHECK-NOT:     arith.extf
// CHECK-NOT:     arith.truncf
// CHECK:         arith.shli
// CHECK:         arith.shrui
// CHECK:         arith.bitcast %{{.*}} : i16 to bf16
// CHECK-NOT:     arith.extf
// CHECK-NOT:     arith.truncf
func.func @bf16_casts(%a: bf16, %b: f32) -> (f32, bf16) {
  %0 = arith.extf %a : bf16 to f32
  %1 = arith.truncf %b : f32 to bf16
  return %0, %1 : f32, bf16
}

// -----

// f16 <-> f32 casts become integer code; subnormal halves convert through
// uitofp (exact), subnormal results through the magic-number addition.

// CHECK-LABEL: func.func @f16_casts
// CHECK-NOT:     arith.extf {{.*}} f16
// CHECK:         arith.bitcast %{{.*}} : f16 to i16
// CHECK:         arith.uitofp
// CHECK:         arith.bitcast %{{.*}} : i32 to f32
// CHECK:         arith.bitcast %{{.*}} : f32 to i32
// CHECK:         arith.addf
// CHECK:         arith.trunci %{{.*}} : i32 to i16
// CHECK:         arith.bitcast %{{.*}} : i16 to f16
// CHECK-NOT:     arith.truncf {{.*}} f16
func.func @f16_casts(%a: f16, %b: f32) -> (f32, f16) {
  %0 = arith.extf %a : f16 to f32
  %1 = arith.truncf %b : f32 to f16
  return %0, %1 : f32, f16
}

// -----

// Casts between f64 and a narrow type go through f32; vectors are expanded
// element-wise with splat constants.

// CHECK-LABEL: func.func @wide_and_vector
// CHECK:         %[[T:.*]] = arith.truncf %{{.*}} : f64 to f32
// CHECK:         arith.bitcast %[[T]] : f32 to i32
// CHECK:         arith.bitcast %{{.*}} : vector<4xf16> to vector<4xi16>
// CHECK-NOT:     arith.extf {{.*}} f16
// CHECK:         arith.extf %{{.*}} : f32 to f64
// CHECK-NOT:     arith.truncf {{.*}} to bf16
func.func @wide_and_vector(%a: f64, %v: vector<4xf16>, %h: f16) -> (bf16, vector<4xf32>, f64) {
  %0 = arith.truncf %a : f64 to bf16
  %1 = arith.extf %v : vector<4xf16> to vector<4xf32>
  %2 = arith.extf %h : f16 to f64
  return %0, %1, %2 : bf16, vector<4xf32>, f64
}

// -----

// A narrow math.fma computes in f32.

// CHECK-LABEL: func.func @narrow_fma
// CHECK:         %[[R:.*]] = math.fma %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK:         arith.bitcast %[[R]] : f32 to i32
// CHECK-NOT:     math.fma {{.*}} : bf16
func.func @narrow_fma(%a: bf16, %b: bf16, %c: bf16) -> bf16 {
  %0 = math.fma %a, %b, %c : bf16
  return %0 : bf16
}

// RUN: gacc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: gacc-opt %s --split-input-file --verify-diagnostics --mlir-print-op-generic | gacc-opt --split-input-file | FileCheck %s

// gacc.scatter_add round-trips on tensors (indices of rank 2, i64) and on
// buffers (no result), with i32 and index indices.
// CHECK-LABEL: func.func @tensors
// CHECK: %[[R:.*]] = gacc.scatter_add ins(%{{.*}}, %{{.*}} : tensor<4x8x16xf32>, tensor<4x8xi64>) outs(%{{.*}} : tensor<100x16xf32>) -> tensor<100x16xf32>
// CHECK: return %[[R]]
func.func @tensors(%u: tensor<4x8x16xf32>, %i: tensor<4x8xi64>,
                   %init: tensor<100x16xf32>) -> tensor<100x16xf32> {
  %r = gacc.scatter_add ins(%u, %i : tensor<4x8x16xf32>, tensor<4x8xi64>) outs(%init : tensor<100x16xf32>) -> tensor<100x16xf32>
  return %r : tensor<100x16xf32>
}

// -----

// CHECK-LABEL: func.func @buffers
// CHECK: gacc.scatter_add ins(%{{.*}}, %{{.*}} : memref<6x3xbf16>, memref<6xi32>) outs(%{{.*}} : memref<7x3xbf16>)
// CHECK-NOT: ->
// CHECK: gacc.scatter_add ins(%{{.*}}, %{{.*}} : memref<6xf64>, memref<6xindex>) outs(%{{.*}} : memref<9xf64>)
func.func @buffers(%u: memref<6x3xbf16>, %i: memref<6xi32>, %acc: memref<7x3xbf16>,
                   %v: memref<6xf64>, %j: memref<6xindex>, %acc1: memref<9xf64>) {
  gacc.scatter_add ins(%u, %i : memref<6x3xbf16>, memref<6xi32>) outs(%acc : memref<7x3xbf16>)
  gacc.scatter_add ins(%v, %j : memref<6xf64>, memref<6xindex>) outs(%acc1 : memref<9xf64>)
  return
}

// -----

func.func @shape(%u: tensor<4x8x15xf32>, %i: tensor<4x8xi64>,
                 %init: tensor<100x16xf32>) -> tensor<100x16xf32> {
  // expected-error @below {{'gacc.scatter_add' op expected updates of shape 4x8x16 (the indices' shape, then the init's row), got 'tensor<4x8x15xf32>'}}
  %r = gacc.scatter_add ins(%u, %i : tensor<4x8x15xf32>, tensor<4x8xi64>) outs(%init : tensor<100x16xf32>) -> tensor<100x16xf32>
  return %r : tensor<100x16xf32>
}

// -----

func.func @rank(%u: tensor<4x16xf32>, %i: tensor<4x8xi64>,
                %init: tensor<100x16xf32>) -> tensor<100x16xf32> {
  // expected-error @below {{'gacc.scatter_add' op expected updates of shape 4x8x16}}
  %r = gacc.scatter_add ins(%u, %i : tensor<4x16xf32>, tensor<4x8xi64>) outs(%init : tensor<100x16xf32>) -> tensor<100x16xf32>
  return %r : tensor<100x16xf32>
}

// -----

func.func @element(%u: tensor<4x16xf16>, %i: tensor<4xi64>,
                   %init: tensor<100x16xf32>) -> tensor<100x16xf32> {
  // expected-error @below {{'gacc.scatter_add' op expected updates of the init's element type 'f32', got 'f16'}}
  %r = gacc.scatter_add ins(%u, %i : tensor<4x16xf16>, tensor<4xi64>) outs(%init : tensor<100x16xf32>) -> tensor<100x16xf32>
  return %r : tensor<100x16xf32>
}

// -----

func.func @integer_init(%u: tensor<4x16xi32>, %i: tensor<4xi64>,
                        %init: tensor<100x16xi32>) -> tensor<100x16xi32> {
  // expected-error @below {{'gacc.scatter_add' op expected an init of f32, f64, bf16 or f16, got 'i32'}}
  %r = gacc.scatter_add ins(%u, %i : tensor<4x16xi32>, tensor<4xi64>) outs(%init : tensor<100x16xi32>) -> tensor<100x16xi32>
  return %r : tensor<100x16xi32>
}

// -----

func.func @index_type(%u: tensor<4x16xf32>, %i: tensor<4xi16>,
                      %init: tensor<100x16xf32>) -> tensor<100x16xf32> {
  // expected-error @below {{'gacc.scatter_add' op expected indices of i64, i32 or index, got 'i16'}}
  %r = gacc.scatter_add ins(%u, %i : tensor<4x16xf32>, tensor<4xi16>) outs(%init : tensor<100x16xf32>) -> tensor<100x16xf32>
  return %r : tensor<100x16xf32>
}

// -----

func.func @rank0_indices(%u: tensor<16xf32>, %i: tensor<i64>,
                         %init: tensor<100x16xf32>) -> tensor<100x16xf32> {
  // expected-error @below {{'gacc.scatter_add' op expected indices of rank 1 or more (one position per element), got rank 0}}
  %r = gacc.scatter_add ins(%u, %i : tensor<16xf32>, tensor<i64>) outs(%init : tensor<100x16xf32>) -> tensor<100x16xf32>
  return %r : tensor<100x16xf32>
}

// -----

func.func @rank0_init(%u: tensor<4xf32>, %i: tensor<4xi64>,
                      %init: tensor<f32>) -> tensor<f32> {
  // expected-error @below {{'gacc.scatter_add' op expected an init of rank 1 or more (rows indexed by indices), got rank 0}}
  %r = gacc.scatter_add ins(%u, %i : tensor<4xf32>, tensor<4xi64>) outs(%init : tensor<f32>) -> tensor<f32>
  return %r : tensor<f32>
}

// -----

func.func @result(%u: tensor<4x16xf32>, %i: tensor<4xi64>,
                  %init: tensor<100x16xf32>) -> tensor<100x16xf64> {
  // expected-error @below {{'gacc.scatter_add' op expected one result of the init type 'tensor<100x16xf32>'}}
  %r = gacc.scatter_add ins(%u, %i : tensor<4x16xf32>, tensor<4xi64>) outs(%init : tensor<100x16xf32>) -> tensor<100x16xf64>
  return %r : tensor<100x16xf64>
}

// -----

func.func @mixed(%u: tensor<4x16xf32>, %i: tensor<4xi64>,
                 %init: memref<100x16xf32>) {
  // expected-error @below {{'gacc.scatter_add' op expected updates, indices and init to be all tensors or all buffers}}
  gacc.scatter_add ins(%u, %i : tensor<4x16xf32>, tensor<4xi64>) outs(%init : memref<100x16xf32>)
  return
}

// -----

func.func @buffer_result(%u: memref<4x16xf32>, %i: memref<4xi64>,
                         %init: memref<100x16xf32>) -> tensor<100x16xf32> {
  // expected-error @below {{'gacc.scatter_add' op expected no result on buffers (init is updated in place)}}
  %r = gacc.scatter_add ins(%u, %i : memref<4x16xf32>, memref<4xi64>) outs(%init : memref<100x16xf32>) -> tensor<100x16xf32>
  return %r : tensor<100x16xf32>
}

// RUN: gacc-opt %s --split-input-file --gacc-gpu-loop-order | FileCheck %s

// A bias gradient (a reduction over the batch, the outer dimension) gets its
// parallel dimension first: one thread per output element, looping over the
// batch, instead of a serial loop around a parallel one.

// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @bias_gradient
// CHECK:         linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction"]}
func.func @bias_gradient(%dz: memref<16x8xf32>, %db: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>],
                  iterator_types = ["reduction", "parallel"]}
      ins(%dz : memref<16x8xf32>) outs(%db : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %sum = arith.addf %in, %out : f32
    linalg.yield %sum : f32
  }
  return
}

// -----

// Elementwise ops get their innermost (contiguous) dimension first, the one
// tiled by 32 and mapped to threadIdx.x; named ops are generalized for it.

// CHECK-DAG: #[[T:.*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @elementwise
// CHECK:         linalg.generic {indexing_maps = [#[[T]], #[[T]]], iterator_types = ["parallel", "parallel"]}
// CHECK:           math.exp
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #[[T]]], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : f32)
// CHECK-NOT:     linalg.fill
func.func @elementwise(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<4x8xf32>) outs(%b : memref<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.exp %in : f32
    linalg.yield %e : f32
  }
  linalg.fill ins(%zero : f32) outs(%a : memref<4x8xf32>)
  return
}

// -----

// One-dimensional ops and ops already in order are left alone; tensors too.

// CHECK-LABEL: func.func @unchanged
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "reduction"]}
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<8xf32>)
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x2xf32>)
func.func @unchanged(%a: memref<8x16xf32>, %b: memref<8xf32>, %t: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<8x16xf32>) outs(%b : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %sum = arith.addf %in, %out : f32
    linalg.yield %sum : f32
  }
  linalg.fill ins(%zero : f32) outs(%b : memref<8xf32>)
  %f = linalg.fill ins(%zero : f32) outs(%t : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %f : tensor<2x2xf32>
}

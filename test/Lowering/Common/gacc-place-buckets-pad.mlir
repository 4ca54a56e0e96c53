// RUN: gacc-opt %s --gacc-lower-to-cpu="bufferize-only" | FileCheck %s

// A tensor computed before its destination is zero-filled, then inserted
// into it (a pad or concat as frontends write it): the computed values keep
// a buffer of their own until the copy into the filled destination (placed
// in the destination, the fill after them would overwrite them).
// CHECK-LABEL: func.func @pad_after
// CHECK:         %[[X:.*]] = memref.alloc() {{.*}} : memref<4xf32>
// CHECK:         linalg.generic {{.*}} outs(%[[X]] : memref<4xf32>)
// CHECK:         linalg.fill
// CHECK:         memref.copy %[[X]], %{{.*}} : memref<4xf32> to memref<4xf32, strided<[1]>>
#id = affine_map<(d0) -> (d0)>
func.func @pad_after(%in: tensor<4xf32>) -> tensor<8xf32> {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%in : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %one : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e8 = tensor.empty() : tensor<8xf32>
  %t = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %r = tensor.insert_slice %x into %t[0] [4] [1] : tensor<4xf32> into tensor<8xf32>
  return %r : tensor<8xf32>
}

// RUN: gacc-opt %s --gacc-micro-batch="micro-batch-sizes=3,1" | FileCheck %s

// tensor.pad, tensor.concat and tensor.insert_slice of per-sample data keep
// the sample dimension whole: each region pads, concatenates and inserts its
// own samples, and invariant operands with the batch shape are sliced.

// CHECK-LABEL: func.func @data_movement
// CHECK:         gacc.micro_batch 0 offset 0 size 3
// CHECK:           tensor.pad {{.*}} low[0, 1] high[0, 2]
// CHECK:           } : tensor<3x3xf32> to tensor<3x6xf32>
// CHECK:           %[[C:.*]] = arith.constant dense<2.000000e+00> : tensor<3x2xf32>
// CHECK:           tensor.concat dim(1) %{{.*}}, %[[C]] : (tensor<3x6xf32>, tensor<3x2xf32>) -> tensor<3x8xf32>
// CHECK:           tensor.insert_slice %{{.*}} into %{{.*}}[0, 1] [3, 8] [1, 1] : tensor<3x8xf32> into tensor<3x10xf32>
// CHECK:         gacc.micro_batch 1 offset 3 size 1
// CHECK:           } : tensor<1x3xf32> to tensor<1x6xf32>
// CHECK:           tensor.concat dim(1) {{.*}} -> tensor<1x8xf32>
// CHECK:           tensor.insert_slice %{{.*}} into %{{.*}}[0, 1] [1, 8] [1, 1] : tensor<1x8xf32> into tensor<1x10xf32>
func.func @data_movement(%x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1] high[0, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x3xf32> to tensor<4x6xf32>
  %c = arith.constant dense<2.0> : tensor<4x2xf32>
  %cat = tensor.concat dim(1) %p, %c : (tensor<4x6xf32>, tensor<4x2xf32>) -> tensor<4x8xf32>
  %e = tensor.empty() : tensor<4x10xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x10xf32>) -> tensor<4x10xf32>
  %ins = tensor.insert_slice %cat into %z[0, 1] [4, 8] [1, 1] : tensor<4x8xf32> into tensor<4x10xf32>
  %ext = tensor.extract_slice %ins[0, 2] [4, 5] [1, 1] : tensor<4x10xf32> to tensor<4x5xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%ext : tensor<4x5xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

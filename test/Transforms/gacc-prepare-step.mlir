// RUN: gacc-opt %s --split-input-file --gacc-prepare-step="batch-size=4" | FileCheck %s
// RUN: gacc-opt %s --split-input-file --gacc-prepare-step="batch-size=4" --gacc-micro-batch="micro-batches=2" | FileCheck %s --check-prefix=M2

// A dynamic sample dimension, as torch.export emits it: the batch argument
// is specialized to 4 samples, `tensor.dim` folds to 4 (also where the mean
// uses it as a value), the dynamic `tensor.empty` and the casts fold away and
// the dead op is dropped.

// CHECK-LABEL: func.func @dynamic
// CHECK-SAME:    %{{.*}}: tensor<4x3xf32> {gacc.batch = 0 : i64}
// CHECK-SAME:    attributes {gacc.dynamic_batch}
// CHECK:         %[[B:.*]] = arith.constant 4.000000e+00 : f32
// CHECK-NOT:     tensor.dim
// CHECK-NOT:     tensor.cast
// CHECK-NOT:     math.exp
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3x2xf32>) outs(%{{.*}} : tensor<4x2xf32>)
// CHECK-NOT:     math.exp
// CHECK:         arith.divf %{{.*}}, %[[B]] : f32
// M2: gacc.micro_batch 1 offset 2 size 2
// M2: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3x2xf32>)
func.func @dynamic(%x: tensor<?x3xf32> {gacc.batch = 0 : i64}, %w: tensor<3x2xf32> {gacc.param})
    -> (tensor<f32> {gacc.loss}) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %d = tensor.dim %x, %c0 : tensor<?x3xf32>
  %e = tensor.empty(%d) : tensor<?x2xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x2xf32>) -> tensor<?x2xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<?x3xf32>, tensor<3x2xf32>) outs(%f : tensor<?x2xf32>) -> tensor<?x2xf32>
  %dead = math.exp %mm : tensor<?x2xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%mm : tensor<?x2xf32>) outs(%f0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %di = arith.index_cast %d : index to i64
  %df = arith.sitofp %di : i64 to f32
  %loss = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []} ins(%s : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %in, %df : f32
    linalg.yield %0 : f32
  } -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A static batch of the same size is left as it is.
// CHECK-LABEL: func.func @static_ok
// CHECK-NOT:     gacc.dynamic_batch
// CHECK:         return
func.func @static_ok(%x: tensor<4xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%x : tensor<4xf32>) outs(%f0 : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// Ops upstream canonicalization does not refine: a tensor-level `arith.addf`
// (a residual add as TorchToLinalg leaves it) and `tensor.concat`
// (torch.cat) of values whose sample dimension became static run on the
// static types, so no dynamic `tensor.cast` is left for the batch analysis
// (which refuses dynamic shapes).

// CHECK-LABEL: func.func @elementwise_and_concat
// CHECK-SAME:    %[[X:.*]]: tensor<4x3xf32> {gacc.batch = 0 : i64}
// CHECK-SAME:    -> (tensor<f32> {gacc.loss}, tensor<4x6xf32> {gacc.metric})
// CHECK-NOT:     tensor<?
// CHECK:         %[[T:.*]] = linalg.generic
// CHECK:         } -> tensor<4x3xf32>
// CHECK:         %[[S:.*]] = arith.addf %[[X]], %[[T]] : tensor<4x3xf32>
// CHECK:         %[[C:.*]] = tensor.concat dim(1) %[[S]], %[[T]] : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x6xf32>
// CHECK-NOT:     tensor<?
// CHECK:         return %{{.*}}, %[[C]] : tensor<f32>, tensor<4x6xf32>
func.func @elementwise_and_concat(%x: tensor<?x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<?x6xf32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x3xf32>
  %e = tensor.empty(%n) : tensor<?x3xf32>
  %t = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x3xf32>) outs(%e : tensor<?x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.tanh %in : f32
    linalg.yield %0 : f32
  } -> tensor<?x3xf32>
  %s = arith.addf %x, %t : tensor<?x3xf32>
  %c = tensor.concat dim(1) %s, %t : (tensor<?x3xf32>, tensor<?x3xf32>) -> tensor<?x6xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %r = linalg.reduce ins(%c : tensor<?x6xf32>) outs(%f0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %r, %c : tensor<f32>, tensor<?x6xf32>
}

// -----

// tosa-to-tensor's pad by constant index values gets static amounts.

// CHECK-LABEL: func.func @pad_constant_values
// CHECK:         tensor.pad %{{.*}} low[0, 0] high[0, 1]
// CHECK:         } : tensor<4x3xf32> to tensor<4x4xf32>
// M2-LABEL:      func.func @pad_constant_values
// M2:            tensor.pad %{{.*}} low[0, 0] high[0, 1]
// M2:            } : tensor<2x3xf32> to tensor<2x4xf32>
func.func @pad_constant_values(%x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %p = tensor.pad %x low[%c0, %c0] high[%c0, %c1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<4x3xf32> to tensor<4x4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%p : tensor<4x4xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s : tensor<f32>
}

// -----

// tosa.matmul as tosa-to-linalg lowers it: linalg.batch_matmul on [1, M, K]
// views, the weight gradient through linalg.transpose [0, 2, 1]. With one
// batch these become linalg.matmul and a 2-D transpose, and the views fold.

// CHECK-LABEL: func.func @tosa_gemms
// CHECK-NOT:     linalg.batch_matmul
// CHECK-NOT:     tensor.expand_shape
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3x2xf32>) outs(%{{.*}} : tensor<4x2xf32>)
// CHECK:         %[[XT:.*]] = linalg.transpose ins(%{{.*}} : tensor<4x3xf32>) outs(%{{.*}} : tensor<3x4xf32>) permutation = [1, 0]
// CHECK:         linalg.matmul ins(%[[XT]], %{{.*}} : tensor<3x4xf32>, tensor<4x2xf32>) outs(%{{.*}} : tensor<3x2xf32>)
// CHECK-NOT:     linalg.batch_matmul
// M2-LABEL:      func.func @tosa_gemms
// M2:            linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<3x2xf32>) outs(%{{.*}} : tensor<2x2xf32>)
func.func @tosa_gemms(%w: tensor<3x2xf32> {gacc.param},
                      %x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3x2xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %x3 = tensor.expand_shape %x [[0, 1], [2]] output_shape [1, 4, 3] : tensor<4x3xf32> into tensor<1x4x3xf32>
  %w3 = tensor.expand_shape %w [[0, 1], [2]] output_shape [1, 3, 2] : tensor<3x2xf32> into tensor<1x3x2xf32>
  %e = tensor.empty() : tensor<1x4x2xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  %y3 = linalg.batch_matmul ins(%x3, %w3 : tensor<1x4x3xf32>, tensor<1x3x2xf32>) outs(%z : tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  %y = tensor.collapse_shape %y3 [[0, 1], [2]] : tensor<1x4x2xf32> into tensor<4x2xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.reduce ins(%y : tensor<4x2xf32>) outs(%f0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  // d loss / d w = x^T 1.
  %one = arith.constant 1.0 : f32
  %dy = linalg.fill ins(%one : f32) outs(%e : tensor<1x4x2xf32>) -> tensor<1x4x2xf32>
  %et = tensor.empty() : tensor<1x3x4xf32>
  %xt = linalg.transpose ins(%x3 : tensor<1x4x3xf32>) outs(%et : tensor<1x3x4xf32>) permutation = [0, 2, 1]
  %eg = tensor.empty() : tensor<1x3x2xf32>
  %zg = linalg.fill ins(%zero : f32) outs(%eg : tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  %g3 = linalg.batch_matmul ins(%xt, %dy : tensor<1x3x4xf32>, tensor<1x4x2xf32>) outs(%zg : tensor<1x3x2xf32>) -> tensor<1x3x2xf32>
  %g = tensor.collapse_shape %g3 [[0, 1], [2]] : tensor<1x3x2xf32> into tensor<3x2xf32>
  return %l, %g : tensor<f32>, tensor<3x2xf32>
}

// -----

// An unsigned integer batch_matmul of one batch keeps its form: the matmul
// would be built with the default signed cast (i8 200 read as -56; found by
// a review).
// CHECK-LABEL: func.func @unsigned_unit_batch
// CHECK:         linalg.batch_matmul {cast = #linalg.type_fn<cast_unsigned>}
// CHECK-NOT:     linalg.matmul
func.func @unsigned_unit_batch(%w: tensor<f32> {gacc.param},
                               %x: tensor<4xf32> {gacc.batch = 0 : i64},
                               %a: tensor<1x2x3xi8> {gacc.state},
                               %b: tensor<1x3x4xi8> {gacc.state})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64},
        tensor<1x2x4xi32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  // loss = w * sum(x), d loss / d w = sum(x).
  %sx = linalg.reduce ins(%x : tensor<4xf32>) outs(%f0 : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %l = arith.mulf %w, %sx : tensor<f32>
  %izero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<1x2x4xi32>
  %z = linalg.fill ins(%izero : i32) outs(%e : tensor<1x2x4xi32>) -> tensor<1x2x4xi32>
  %r = linalg.batch_matmul {cast = #linalg.type_fn<cast_unsigned>} ins(%a, %b : tensor<1x2x3xi8>, tensor<1x3x4xi8>) outs(%z : tensor<1x2x4xi32>) -> tensor<1x2x4xi32>
  return %l, %sx, %r : tensor<f32>, tensor<f32>, tensor<1x2x4xi32>
}

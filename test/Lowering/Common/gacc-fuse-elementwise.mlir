// RUN: gacc-opt %s --split-input-file --gacc-fuse-elementwise | FileCheck %s

#id = affine_map<(d0) -> (d0)>

// A single-use elementwise producer is fused into its consumer.
// CHECK-LABEL: func.func @single_use
// CHECK:         linalg.generic
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @single_use(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%m, %a : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %q = arith.addf %x, %y : f32
    linalg.yield %q : f32
  } -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A producer with another use after its consumer is fused too: the fused
// op yields the producer's result for that use (a bias add fused with its
// ReLU, the pre-activation kept for the backward pass), computed once.
// CHECK-LABEL: func.func @two_uses
// CHECK:         %[[F:.*]]:2 = linalg.generic
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<8xf32>, tensor<8xf32>)
// CHECK:           %[[P:.*]] = arith.mulf
// CHECK:           %[[Q:.*]] = arith.addf %[[P]]
// CHECK:           linalg.yield %[[P]], %[[Q]]
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[F]]#1, %[[F]]#0
func.func @two_uses(%a: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%m, %a : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %q = arith.addf %x, %y : f32
    linalg.yield %q : f32
  } -> tensor<8xf32>
  return %s, %m : tensor<8xf32>, tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A producer also read before its consumer stays: the fused op, at the
// consumer, could not feed that earlier use, and fusing anyway would compute
// the producer twice.
// CHECK-LABEL: func.func @use_before_consumer
// CHECK:         %[[M:.*]] = linalg.generic
// CHECK:           arith.mulf
// CHECK:         %[[C:.*]] = call @sink(%[[M]])
// CHECK:         %[[S:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[M]], %[[C]] :
// CHECK-NOT:       arith.mulf
// CHECK:           arith.addf
// CHECK:         return %[[S]]
func.func private @sink(tensor<8xf32>) -> tensor<8xf32>
func.func @use_before_consumer(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<8xf32>
  %c = func.call @sink(%m) : (tensor<8xf32>) -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%m, %c : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %q = arith.addf %x, %y : f32
    linalg.yield %q : f32
  } -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A chain: the producer's other use is a later op that itself becomes a
// consumer of the fused op; everything ends in one op, the product computed
// once.
// CHECK-LABEL: func.func @chain
// CHECK:         linalg.generic
// CHECK:           arith.mulf
// CHECK-NOT:       arith.mulf
// CHECK:           arith.negf
// CHECK-NOT:       arith.mulf
// CHECK:           arith.addf
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @chain(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<8xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%m : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%m, %n : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %q = arith.addf %x, %y : f32
    linalg.yield %q : f32
  } -> tensor<8xf32>
  return %s : tensor<8xf32>
}

// -----

// The reshape feeding a GEMM is not propagated into a generic contraction:
// the matmul stays for BLAS / cuBLAS.
// CHECK-LABEL: func.func @gemm_stays
// CHECK:         tensor.collapse_shape
// CHECK:         linalg.matmul
// CHECK-NOT:     linalg.generic
func.func @gemm_stays(%a: tensor<2x3x5xf32>, %b: tensor<5x4xf32>, %c: tensor<6x4xf32>) -> tensor<6x4xf32> {
  %a2 = tensor.collapse_shape %a [[0, 1], [2]] : tensor<2x3x5xf32> into tensor<6x5xf32>
  %r = linalg.matmul ins(%a2, %b : tensor<6x5xf32>, tensor<5x4xf32>) outs(%c : tensor<6x4xf32>) -> tensor<6x4xf32>
  return %r : tensor<6x4xf32>
}

// -----

// A producer with another use is not fused into a consumer that reads only
// part of it (a keepdim-like `(d0) -> (d0, 0)` map): the fused op would have
// written the producer's result for the later use through that map, leaving
// columns 1 and 2 unwritten (found by a review).
// CHECK-LABEL: func.func @partial_read
// CHECK:         %[[P:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<4x3xf32>)
// CHECK:         %[[C:.*]] = linalg.generic {{.*}} iterator_types = ["parallel"]} ins(%[[P]] : tensor<4x3xf32>)
// CHECK:         %[[D:.*]] = linalg.generic {{.*}} ins(%[[P]] : tensor<4x3xf32>)
// CHECK:         return %[[C]], %[[D]]
func.func @partial_read(%a: tensor<4x3xf32>, %b: tensor<4x3xf32>) -> (tensor<4xf32>, tensor<4x3xf32>) {
  %e = tensor.empty() : tensor<4x3xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %e4 = tensor.empty() : tensor<4xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0, 0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%p : tensor<4x3xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %x : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4x3xf32>
  %d = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<4x3xf32>) outs(%e2 : tensor<4x3xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.negf %x : f32
    linalg.yield %m : f32
  } -> tensor<4x3xf32>
  return %c, %d : tensor<4xf32>, tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A hand-written backward's ReLU mask on the pre-activation (z > 0) reads
// the ReLU's result instead (the same test for every z, +-0 and NaN
// included): z is then dead after its ReLU, and the bias add fused with the
// ReLU yields only the activation (the pre-activation is not kept).
// CHECK-LABEL: func.func @mask_reads_relu_result
// CHECK:         %[[A:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3xf32>)
// CHECK:           arith.addf
// CHECK:           %[[R:.*]] = arith.maximumf
// CHECK-NEXT:      linalg.yield %[[R]] : f32
// CHECK:         %[[S:.*]] = call @sink(%[[A]])
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %[[A]] : tensor<4x3xf32>, tensor<4x3xf32>)
// CHECK:           arith.cmpf ogt
func.func private @sink(tensor<4x3xf32>) -> tensor<4x3xf32>
func.func @mask_reads_relu_result(%x: tensor<4x3xf32>, %b: tensor<3xf32>, %g: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %e = tensor.empty() : tensor<4x3xf32>
  %z = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<4x3xf32>, tensor<3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %s = arith.addf %v, %w : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c0 = arith.constant 0.0 : f32
    %r = arith.maximumf %v, %c0 : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %s = call @sink(%a) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %dz = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %z : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%d: f32, %v: f32, %o: f32):
    %c0 = arith.constant 0.0 : f32
    %pos = arith.cmpf ogt, %v, %c0 : f32
    %r = arith.select %pos, %d, %c0 : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  return %s, %dz : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// torch-mlir's ReLU (select on `ugt`) and a threshold_backward-style mask
// on z (`z <= 0 ? 0 : g`, unordered: NaN gives 0 in both) with the zero on
// the left (`0 >= z`): the mask reads the ReLU's result.
// CHECK-LABEL: func.func @torch_relu_threshold_mask
// CHECK-SAME:    %[[Z:[^:]*]]: tensor<4x3xf32>
// CHECK:         %[[A:.*]] = linalg.generic {{.*}} ins(%[[Z]] : tensor<4x3xf32>)
// CHECK:           arith.cmpf ugt
// CHECK:         call @sink(%[[A]])
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %[[A]] : tensor<4x3xf32>, tensor<4x3xf32>)
// CHECK:           arith.cmpf uge
func.func private @sink(tensor<4x3xf32>) -> tensor<4x3xf32>
func.func @torch_relu_threshold_mask(%z: tensor<4x3xf32>, %g: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %p = arith.cmpf ugt, %v, %zero : f32
    %r = arith.select %p, %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %s = call @sink(%a) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %dz = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %z : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%d: f32, %v: f32, %o: f32):
    %le = arith.cmpf uge, %zero, %v : f32
    %r = arith.select %le, %zero, %d : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  return %s, %dz : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// `z >= 0` is not the same test on the ReLU's result (z = -1 fails it,
// its ReLU 0 passes): the mask keeps reading z.
// CHECK-LABEL: func.func @mask_oge_keeps_z
// CHECK-SAME:    %[[Z:[^:]*]]: tensor<4x3xf32>
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %[[Z]] :
// CHECK:           arith.cmpf oge
func.func private @sink(tensor<4x3xf32>) -> tensor<4x3xf32>
func.func @mask_oge_keeps_z(%z: tensor<4x3xf32>, %g: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %s = call @sink(%a) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %z : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%d: f32, %v: f32, %o: f32):
    %p = arith.cmpf oge, %v, %zero : f32
    %r = arith.select %p, %d, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  return %s, %m : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A mask body that also uses z's value (z * g) keeps reading z.
// CHECK-LABEL: func.func @mask_using_z_keeps_z
// CHECK-SAME:    %[[Z:[^:]*]]: tensor<4x3xf32>
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %[[Z]] :
// CHECK:           arith.mulf
func.func private @sink(tensor<4x3xf32>) -> tensor<4x3xf32>
func.func @mask_using_z_keeps_z(%z: tensor<4x3xf32>, %g: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %s = call @sink(%a) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %z : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%d: f32, %v: f32, %o: f32):
    %p = arith.cmpf ogt, %v, %zero : f32
    %t = arith.mulf %d, %v : f32
    %r = arith.select %p, %t, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  return %s, %m : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A leaky ReLU (max(z, 0.01)) is not a ReLU: the mask keeps reading z.
// CHECK-LABEL: func.func @leaky_relu_keeps_z
// CHECK-SAME:    %[[Z:[^:]*]]: tensor<4x3xf32>
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %[[Z]] :
// CHECK:           arith.cmpf ogt
func.func private @sink(tensor<4x3xf32>) -> tensor<4x3xf32>
func.func @leaky_relu_keeps_z(%z: tensor<4x3xf32>, %g: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %leak = arith.constant 0.01 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %leak : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %s = call @sink(%a) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %z : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%d: f32, %v: f32, %o: f32):
    %p = arith.cmpf ogt, %v, %zero : f32
    %r = arith.select %p, %d, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  return %s, %m : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A ReLU computed after the mask cannot feed it: the mask keeps reading z.
// CHECK-LABEL: func.func @relu_after_mask_keeps_z
// CHECK-SAME:    %[[Z:[^:]*]]: tensor<4x3xf32>
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %[[Z]] :
// CHECK:           arith.cmpf ogt
// CHECK:         linalg.generic {{.*}} ins(%[[Z]] :
func.func private @sink(tensor<4x3xf32>) -> tensor<4x3xf32>
func.func @relu_after_mask_keeps_z(%z: tensor<4x3xf32>, %g: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %z : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%d: f32, %v: f32, %o: f32):
    %p = arith.cmpf ogt, %v, %zero : f32
    %r = arith.select %p, %d, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %s = call @sink(%a) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  return %s, %m : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// `z > 0` tested unordered (`ugt`) passes NaN, while a maxnum ReLU turns
// NaN into 0, which fails it: the mask keeps reading z.
// CHECK-LABEL: func.func @maxnum_relu_ugt_mask_keeps_z
// CHECK-SAME:    %[[Z:[^:]*]]: tensor<4x3xf32>
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %[[Z]] :
// CHECK:           arith.cmpf ugt
func.func private @sink(tensor<4x3xf32>) -> tensor<4x3xf32>
func.func @maxnum_relu_ugt_mask_keeps_z(%z: tensor<4x3xf32>, %g: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maxnumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  %s = call @sink(%a) : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %z : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%d: f32, %v: f32, %o: f32):
    %p = arith.cmpf ugt, %v, %zero : f32
    %r = arith.select %p, %d, %zero : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>
  return %s, %m : tensor<4x3xf32>, tensor<4x3xf32>
}

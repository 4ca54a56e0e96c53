// RUN: gacc-opt %s --split-input-file --gacc-prepare-step | FileCheck %s
// RUN: gacc-opt %s --split-input-file --gacc-pipeline="micro-batches=2" | FileCheck %s --check-prefix=M2

// The loss and the gradient live in helpers, two levels deep (@loss_of
// calls @square; @residual is called by both helpers), called with batch and
// non-batch values: every call is inlined, the private helpers go, the
// public one stays.

// CHECK-LABEL: func.func @calls
// CHECK-SAME:    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64})
// CHECK-NOT:     func.call
// CHECK:         linalg.generic
// CHECK:         math.powf
// CHECK:         tensor.extract %{{.*}}[] : tensor<f32>
// CHECK:         %[[LOSS:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK:         %[[BOX:.*]] = tensor.from_elements %[[LOSS]] : tensor<f32>
// CHECK:         return %[[BOX]], %{{.*}} : tensor<f32>, tensor<f32>
// CHECK-NOT:     func.func private @loss_of
// CHECK-NOT:     func.func private @grad_of
// CHECK-NOT:     func.func private @square
// CHECK-LABEL: func.func @residual

// After the split the loss is computed once, after the regions, from the
// accumulated sum (S / B with the global B).
// M2-LABEL: func.func @calls
// M2-NOT:     func.call
// M2:         %[[R0:[0-9]+]]:2 = gacc.micro_batch 0 offset 0 size 2
// M2:         %[[R1:[0-9]+]]:2 = gacc.micro_batch 1 offset 2 size 2
// M2:           linalg.generic {{.*}} outs(%[[R0]]#{{[01]}} : tensor<f32>) attrs = {gacc.partial}
// M2:         %[[S:.*]] = tensor.extract %[[R1]]#{{[01]}}[] : tensor<f32>
// M2:         %[[LOSS:.*]] = arith.mulf %[[S]], %{{.*}} : f32
// M2:         tensor.from_elements %[[LOSS]] : tensor<f32>
func.func @calls(%w: tensor<f32> {gacc.param},
                 %x: tensor<4xf32> {gacc.batch = 0 : i64},
                 %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (f32 {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}) {
  %loss = func.call @loss_of(%w, %x, %y)
      : (tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> f32
  %g = func.call @grad_of(%w, %x, %y)
      : (tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  return %loss, %g : f32, tensor<f32>
}

// loss = (1/B) sum_i (w x_i - y_i)^2
func.func private @loss_of(%w: tensor<f32>, %x: tensor<4xf32>,
                           %y: tensor<4xf32>) -> f32 {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant 0.25 : f32
  %r = func.call @residual(%w, %x, %y)
      : (tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %sq = func.call @square(%r) : (tensor<4xf32>) -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%sq : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %sv = tensor.extract %s[] : tensor<f32>
  %loss = arith.mulf %sv, %inv_b : f32
  return %loss : f32
}

// dloss/dw = (1/B) sum_i 2 (w x_i - y_i) x_i
func.func private @grad_of(%w: tensor<f32>, %x: tensor<4xf32>,
                           %y: tensor<4xf32>) -> tensor<f32> {
  %zero = arith.constant 0.0 : f32
  %r = func.call @residual(%w, %x, %y)
      : (tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %g = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r, %x : tensor<4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %xv: f32, %acc: f32):
    %half = arith.constant 0.5 : f32
    %p = arith.mulf %rv, %xv : f32
    %q = arith.mulf %p, %half : f32
    %a = arith.addf %acc, %q : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %g : tensor<f32>
}

func.func private @square(%r: tensor<4xf32>) -> tensor<4xf32> {
  %two = arith.constant 2.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %sq = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%r : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %p = math.powf %v, %two : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  return %sq : tensor<4xf32>
}

// r = w x - y; public, so it stays in the module (its calls are inlined).
func.func @residual(%w: tensor<f32>, %x: tensor<4xf32>, %y: tensor<4xf32>)
    -> tensor<4xf32> {
  %e4 = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%w, %x, %y : tensor<f32>, tensor<4xf32>, tensor<4xf32>)
      outs(%e4 : tensor<4xf32>) {
  ^bb0(%wv: f32, %xv: f32, %yv: f32, %o: f32):
    %p = arith.mulf %wv, %xv : f32
    %d = arith.subf %p, %yv : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A scalar helper called inside a linalg body and on scalars after the
// reductions (one helper from two places): inlined in place.

// CHECK-LABEL: func.func @body_call
// CHECK-SAME:    (%[[W:.*]]: tensor<f32> {gacc.param}
// CHECK:         %[[WV:.*]] = tensor.extract %[[W]][] : tensor<f32>
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      arith.mulf %[[IN]], %[[WV]] : f32
// CHECK-NOT:     func.call
// CHECK:         return
// CHECK-NOT:   func.func private
func.func @body_call(%w: f32 {gacc.param}, %x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (f32 {gacc.loss}, f32 {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %p = func.call @scale(%v, %w) : (f32, f32) -> f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %g = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %sv = tensor.extract %s[] : tensor<f32>
  %gv = tensor.extract %g[] : tensor<f32>
  %l = func.call @quarter(%sv) : (f32) -> f32
  %gq = func.call @quarter(%gv) : (f32) -> f32
  return %l, %gq : f32, f32
}
func.func private @scale(%a: f32, %b: f32) -> f32 {
  %p = arith.mulf %a, %b : f32
  return %p : f32
}
func.func private @quarter(%a: f32) -> f32 {
  %c = arith.constant 0.25 : f32
  %p = arith.mulf %a, %c : f32
  return %p : f32
}

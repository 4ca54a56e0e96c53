// RUN: gacc-opt %s --split-input-file --gacc-pipeline="micro-batches=2" --gacc-lower-to-cuda="kernels-only" --verify-diagnostics | FileCheck %s
// Steps the CUDA lowering computed wrongly (found by a review of the CUDA
// passes; no GPU ran them, the IR shows it).

// A state update whose loop overwrites t with v + u[i], v read once before
// the loop (t + u[3]), was made one atomic add per iteration (t + sum u).
// Only the loss's chunked sum adds atomically.
// CHECK-LABEL: func.func @hoisted
// CHECK-COUNT-1: memref.atomic_rmw
// CHECK-NOT:     memref.atomic_rmw
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @hoisted(%w: tensor<f32> {gacc.param},
                      %x: tensor<4xf32> {gacc.batch = 0 : i64},
                      %u: tensor<4xf32> {gacc.state},
                      %t: tensor<f32> {gacc.state})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.state_out = 3 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x, %w : tensor<4xf32>, tensor<f32>) outs(%z0 : tensor<f32>) {
  ^bb0(%xv: f32, %wv: f32, %acc: f32):
    %p = arith.mulf %xv, %wv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  // state update: t_new = t + u[3] (each iteration overwrites with t + u[i])
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %v = tensor.extract %t[] : tensor<f32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %t) -> (tensor<f32>) {
    %ui = tensor.extract %u[%i] : tensor<4xf32>
    %sum = arith.addf %v, %ui : f32
    %n = tensor.insert %sum into %acc[] : tensor<f32>
    scf.yield %n : tensor<f32>
  }
  return %s, %r : tensor<f32>, tensor<f32>
}

// -----

// A recurrence t <- t + t * u[i] that reads the running t again through an
// expand_shape view was split into atomics (chunks read t while others add).
// CHECK-LABEL: func.func @through_view
// CHECK-COUNT-1: memref.atomic_rmw
// CHECK-NOT:     memref.atomic_rmw
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @through_view(%w: tensor<f32> {gacc.param},
                      %x: tensor<4xf32> {gacc.batch = 0 : i64},
                      %u: tensor<4xf32> {gacc.state},
                      %t: tensor<f32> {gacc.state})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.state_out = 3 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x, %w : tensor<4xf32>, tensor<f32>) outs(%z0 : tensor<f32>) {
  ^bb0(%xv: f32, %wv: f32, %acc: f32):
    %p = arith.mulf %xv, %wv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  // state update: t_new = t + u[3] (each iteration overwrites with t + u[i])
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %t) -> (tensor<f32>) {
    %e = tensor.expand_shape %acc [] output_shape [1] : tensor<f32> into tensor<1xf32>
    %a = tensor.extract %e[%c0] : tensor<1xf32>
    %b = tensor.extract %acc[] : tensor<f32>
    %ui = tensor.extract %u[%i] : tensor<4xf32>
    %au = arith.mulf %a, %ui : f32
    %sum = arith.addf %b, %au : f32
    %n = tensor.insert %sum into %acc[] : tensor<f32>
    scf.yield %n : tensor<f32>
  }
  return %s, %r : tensor<f32>, tensor<f32>
}

// -----

// A non-splat constant is copied to the device once per step: the kernels
// read the copy (they read the host global's address).
// CHECK-LABEL: func.func @constant
// CHECK:         %[[HOST:.*]] = memref.get_global @__constant_3xf32 : memref<3xf32>
// CHECK:         %[[DEV:.*]] = gpu.alloc  () : memref<3xf32>
// CHECK:         gpu.memcpy  %[[DEV]], %[[HOST]]
// CHECK-NOT:     gpu.launch_func {{.*}}%[[HOST]]
// CHECK:         gpu.launch_func {{.*}}%[[DEV]] : memref<3xf32>
// CHECK-NOT:     gpu.launch_func {{.*}}%[[HOST]]
// CHECK:         gpu.dealloc  %[[DEV]]
// CHECK:         return
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @constant(%w: tensor<3xf32> {gacc.param},
                      %x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%x, %w, %c : tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%xv: f32, %wv: f32, %cv: f32, %acc: f32):
    %p = arith.mulf %xv, %wv : f32
    %q = arith.mulf %p, %cv : f32
    %a = arith.addf %acc, %q : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %e3 = tensor.empty() : tensor<3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %g = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>],
      iterator_types = ["reduction", "parallel"]}
      ins(%x, %c : tensor<4x3xf32>, tensor<3xf32>) outs(%z3 : tensor<3xf32>) {
  ^bb0(%xv: f32, %cv: f32, %acc: f32):
    %q = arith.mulf %xv, %cv : f32
    %a = arith.addf %acc, %q : f32
    linalg.yield %a : f32
  } -> tensor<3xf32>
  %gr = shard.all_reduce %g on @dp grid_axes = [0] reduction = sum : tensor<3xf32> -> tensor<3xf32>
  return %s, %gr : tensor<f32>, tensor<3xf32>
}

// -----

// A "parallel" loop that indexes no output: threads would add into the same
// element unsynchronized.
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @mislabelled(%w: tensor<3xf32> {gacc.param},
                      %x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  // per-sample row sum, with the summed dimension d1 labelled "parallel"
  // expected-error @below {{has a 'parallel' loop 1 that does not index output #0}}
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %w : tensor<4x3xf32>, tensor<3xf32>) outs(%z4 : tensor<4xf32>) {
  ^bb0(%xv: f32, %wv: f32, %acc: f32):
    %p = arith.mulf %xv, %wv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %a = arith.addf %acc, %rv : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %s, %r : tensor<f32>, tensor<4xf32>
}

// Numerical regression test: the reference linear-regression step (DESIGN.md
// section 2 check case) compiled by the gacc pipeline for several micro-batch
// splits, lowered with upstream passes and run by mlir-runner. Single rank: the
// shard.all_reduce of examples/linear_regression.mlir is left out, so the
// gradient result is the local gradient gw.
//
// w = 0, x = (1, 2, 3, 4), y = 2x:  loss = mean((w x - y)^2) = 30,
// grad = mean(2 (w x - y) x) = -30 for every split (the eager "divide the loss
// by m" recipe with a 3 + 1 split would give -41.33).
// @main carries no gacc attributes, so the pipeline leaves it alone.
//
// RUN: gacc-opt %s --gacc-pipeline="micro-batches=1" --gacc-inline-micro-batches \
// RUN: | mlir-opt %upstream_lower_to_llvm \
// RUN: | %mlir_run_main \
// RUN: | FileCheck %s

// RUN: gacc-opt %s --gacc-pipeline="micro-batches=2" --gacc-inline-micro-batches \
// RUN: | mlir-opt %upstream_lower_to_llvm \
// RUN: | %mlir_run_main \
// RUN: | FileCheck %s

// RUN: gacc-opt %s --gacc-pipeline="micro-batches=4" --gacc-inline-micro-batches \
// RUN: | mlir-opt %upstream_lower_to_llvm \
// RUN: | %mlir_run_main \
// RUN: | FileCheck %s

// RUN: gacc-opt %s --gacc-pipeline="micro-batch-sizes=3,1" --gacc-inline-micro-batches \
// RUN: | mlir-opt %upstream_lower_to_llvm \
// RUN: | %mlir_run_main \
// RUN: | FileCheck %s

// The split really happens (3 + 1 samples), and @main is left alone:
// RUN: gacc-opt %s --gacc-pipeline="micro-batch-sizes=3,1" --gacc-inline-micro-batches \
// RUN: | FileCheck %s --check-prefix=SPLIT
// SPLIT-LABEL: func.func @train_step
// SPLIT:       tensor.extract_slice %arg1[0] [3] [1] : tensor<4xf32> to tensor<3xf32>
// SPLIT:       tensor.extract_slice %arg1[3] [1] [1] : tensor<4xf32> to tensor<1xf32>
// SPLIT-LABEL: func.func @main()
// SPLIT-NOT:   extract_slice
// SPLIT:       call @train_step

// CHECK:      Unranked Memref
// CHECK-SAME: rank = 0
// CHECK-NEXT: [30]
// CHECK:      Unranked Memref
// CHECK-SAME: rank = 0
// CHECK-NEXT: [-30]
// CHECK-NOT:  Unranked Memref

func.func @train_step(%w: tensor<f32> {gacc.param},
                      %x: tensor<4xf32> {gacc.batch = 0 : i64},
                      %y: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>

  // ---- forward: r = w * x - y (per sample)
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

  // ---- S = sum_i r_i^2 (reduction over the sample dim)
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%r : tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%rv: f32, %acc: f32):
    %sq = arith.mulf %rv, %rv : f32
    %a = arith.addf %acc, %sq : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = arith.mulf %s, %inv_b : tensor<f32>

  // ---- backward: dr_i = 2 * r_i * (1/B)
  %dr = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>,
                       affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%r, %inv_b : tensor<4xf32>, tensor<f32>)
      outs(%e4 : tensor<4xf32>) {
  ^bb0(%rv: f32, %ds: f32, %o: f32):
    %two = arith.constant 2.0 : f32
    %t = arith.mulf %two, %rv : f32
    %d = arith.mulf %t, %ds : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>

  // ---- gw = sum_i dr_i * x_i (reduction over the sample dim)
  %gw = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%dr, %x : tensor<4xf32>, tensor<4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%dv: f32, %xv: f32, %acc: f32):
    %p = arith.mulf %dv, %xv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>

  // ---- single rank: no data-parallel sync, the gradient is gw
  return %loss, %gw : tensor<f32>, tensor<f32>
}

func.func @main() {
  %w = arith.constant dense<0.0> : tensor<f32>
  %x = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %y = arith.constant dense<[2.0, 4.0, 6.0, 8.0]> : tensor<4xf32>
  %r:2 = call @train_step(%w, %x, %y)
      : (tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<f32>)
  %lb = bufferization.to_buffer %r#0 : tensor<f32> to memref<f32>
  %lu = memref.cast %lb : memref<f32> to memref<*xf32>
  call @printMemrefF32(%lu) : (memref<*xf32>) -> ()
  %gb = bufferization.to_buffer %r#1 : tensor<f32> to memref<f32>
  %gu = memref.cast %gb : memref<f32> to memref<*xf32>
  call @printMemrefF32(%gu) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

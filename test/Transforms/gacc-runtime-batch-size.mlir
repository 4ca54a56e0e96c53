// RUN: gacc-opt %s --split-input-file --gacc-runtime-batch-size --verify-diagnostics | FileCheck %s
// Per-micro-batch statistics (BatchNorm with allow-micro-batch-statistics)
// would be computed over padding too: refused, naming the statistic.
// RUN: not gacc-opt %examples/batchnorm.mlir --gacc-pipeline="micro-batches=2 allow-micro-batch-statistics runtime-batch-size=true" -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// STATS: batchnorm.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'linalg.reduce' op computes a per-micro-batch statistic; runtime-batch-size does not support allow-micro-batch-statistics

// A least-squares step written for B = 4: the loss is a mean (1/B in the
// reduction's body), the weight gradient a named matmul over the samples,
// and a metric the largest residual (a maximumf reduction).

// CHECK-LABEL: func.func @step(
// CHECK-SAME:    %[[N:[a-z0-9]+]]: tensor<i64> {gacc.sample_count})
// CHECK:         %[[COUNT:.*]] = tensor.extract %[[N]][] : tensor<i64>
// CHECK:         %[[NF:.*]] = arith.sitofp %[[COUNT]] : i64 to f32
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[INV:.*]] = arith.divf %[[ONE]], %[[NF]] : f32
// CHECK:         %[[LIMIT:.*]] = arith.index_cast %[[COUNT]] : i64 to index
// CHECK-NOT:     arith.constant 2.500000e-01
// The forward matmul is per-sample: untouched.
// CHECK:         %[[PRED:.*]] = linalg.matmul ins(%arg1, %arg0
// The loss: padded samples add 0.
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK:           %[[I:.*]] = linalg.index 0 : index
// CHECK:           %[[REAL:.*]] = arith.cmpi ult, %[[I]], %[[LIMIT]] : index
// CHECK:           %[[SCALED:.*]] = arith.mulf %{{.*}}, %[[INV]] : f32
// CHECK:           %[[MASKED:.*]] = arith.select %[[REAL]], %[[SCALED]], %{{.*}} : f32
// CHECK:           arith.addf %{{.*}}, %[[MASKED]] : f32
// The backward seed 2/B is written 2 * (1/B): the 1/B is the count.
// CHECK:         %[[DR:.*]] = linalg.generic
// CHECK:           arith.mulf %{{.*}}, %[[INV]] : f32
// Its padded samples zeroed for the weight gradient.
// CHECK:         %[[DRZ:.*]] = linalg.generic {{.*}} ins(%[[DR]] : tensor<4x2xf32>)
// CHECK:           linalg.index 0 : index
// The largest residual: padded samples add -inf.
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "reduction"]
// CHECK:           %[[I2:.*]] = linalg.index 0 : index
// CHECK:           %[[REAL2:.*]] = arith.cmpi ult, %[[I2]], %[[LIMIT]] : index
// CHECK:           %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:           %[[M2:.*]] = arith.select %[[REAL2]], %{{.*}}, %[[NINF]] : f32
// CHECK:           arith.maximumf %{{.*}}, %[[M2]] : f32
// The weight gradient keeps its matmul; both inputs lose their padding.
// CHECK:         %[[XT:.*]] = linalg.transpose
// CHECK:         %[[XTZ:.*]] = linalg.generic {{.*}} ins(%[[XT]] : tensor<3x4xf32>)
// CHECK:           linalg.index 1 : index
// CHECK:           arith.cmpi ult
// CHECK:           arith.select
// CHECK:         linalg.matmul ins(%[[XTZ]], %[[DRZ]] : tensor<3x4xf32>, tensor<4x2xf32>)
func.func @step(%w: tensor<3x2xf32> {gacc.param},
                %x: tensor<4x3xf32> {gacc.batch = 0 : i64},
                %y: tensor<4x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3x2xf32> {gacc.grad = 0 : i64},
        tensor<f32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  // expected-remark @below {{taken as the sample count 1/B, B = 4 (runtime-batch-size: B' at run time); a constant that only equals it must not be, see docs/TailSteps.md}}
  %inv = arith.constant 0.25 : f32
  %e42 = tensor.empty() : tensor<4x2xf32>
  %z42 = linalg.fill ins(%zero : f32) outs(%e42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %pred = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>)
                        outs(%z42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%pred, %y : tensor<4x2xf32>, tensor<4x2xf32>) outs(%e42 : tensor<4x2xf32>) {
  ^bb0(%p: f32, %t: f32, %o: f32):
    %d = arith.subf %p, %t : f32
    linalg.yield %d : f32
  } -> tensor<4x2xf32>
  %es = tensor.empty() : tensor<f32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%r : tensor<4x2xf32>) outs(%zs : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %s = arith.mulf %sq, %inv : f32
    %a = arith.addf %acc, %s : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %dr = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<4x2xf32>) outs(%e42 : tensor<4x2xf32>) {
  ^bb0(%v: f32, %o: f32):
    %t2 = arith.mulf %v, %two : f32
    %g = arith.mulf %t2, %inv : f32
    linalg.yield %g : f32
  } -> tensor<4x2xf32>
  %ms = linalg.fill ins(%ninf : f32) outs(%es : tensor<f32>) -> tensor<f32>
  %max = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%r : tensor<4x2xf32>) outs(%ms : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.maximumf %acc, %v : f32
    linalg.yield %m : f32
  } -> tensor<f32>
  %e34 = tensor.empty() : tensor<3x4xf32>
  %xt = linalg.transpose ins(%x : tensor<4x3xf32>) outs(%e34 : tensor<3x4xf32>)
                         permutation = [1, 0]
  %e32 = tensor.empty() : tensor<3x2xf32>
  %z32 = linalg.fill ins(%zero : f32) outs(%e32 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %gw = linalg.matmul ins(%xt, %dr : tensor<3x4xf32>, tensor<4x2xf32>)
                      outs(%z32 : tensor<3x2xf32>) -> tensor<3x2xf32>
  return %loss, %gw, %max : tensor<f32>, tensor<3x2xf32>, tensor<f32>
}

// -----

// A clamp bound equal to B (ReLU6 at B = 6) is not a sample count.

// CHECK-LABEL: func.func @relu6(
// CHECK:         %[[SIX:.*]] = arith.constant 6.000000e+00 : f32
// CHECK:         arith.minimumf %{{.*}}, %[[SIX]] : f32
func.func @relu6(%w: tensor<f32> {gacc.param},
                 %x: tensor<6xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  %es = tensor.empty() : tensor<f32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>,
                       affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x, %w : tensor<6xf32>, tensor<f32>) outs(%zs : tensor<f32>) {
  ^bb0(%v: f32, %wv: f32, %acc: f32):
    %p = arith.mulf %v, %wv : f32
    %c = arith.minimumf %p, %six : f32
    %a = arith.addf %acc, %c : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// expected-error @+1 {{runtime-batch-size needs a batch of at least 3 samples, got 2}}
func.func @tiny(%x: tensor<2xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %es = tensor.empty() : tensor<f32>
  %zs = linalg.fill ins(%zero : f32) outs(%es : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x : tensor<2xf32>) outs(%zs : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A step whose sample dimension was dynamic (gacc-prepare-step marks it
// gacc.dynamic_batch when it specializes the batch) reads its sample counts
// from tensor.dim, which gacc-prepare-step has rewritten; a float constant
// equal to 1/B is taken as written (no remark), as LibTorch evaluates the
// dynamic graph on B' samples. The reduction over samples is still masked.

// CHECK-LABEL: func.func @dynamic_literal
// CHECK-SAME:    %{{.*}}: tensor<i64> {gacc.sample_count}) -> (tensor<f32> {gacc.loss}) attributes {gacc.dynamic_batch}
// CHECK:         arith.constant 2.500000e-01 : f32
// CHECK:         arith.cmpi ult
// CHECK:         arith.select
func.func @dynamic_literal(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) attributes {gacc.dynamic_batch} {
  %zero = arith.constant 0.0 : f32
  %quarter = arith.constant 0.25 : f32
  %e = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%z : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %m = arith.mulf %a, %quarter : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// An embedding's gradient by gacc.scatter_add would add the rows of padded
// samples too (and their ids need not name a row): refused, at the op.
func.func @scatter_add(%ids: tensor<4xi64> {gacc.batch = 0 : i64},
                       %g: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<5x3xf32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<5x3xf32>) -> tensor<5x3xf32>
  // expected-error @below {{'gacc.scatter_add' op sums over the samples by scatter-add; runtime-batch-size does not support it}}
  %s = gacc.scatter_add ins(%g, %ids : tensor<4x3xf32>, tensor<4xi64>) outs(%z : tensor<5x3xf32>) -> tensor<5x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %l = linalg.reduce ins(%s : tensor<5x3xf32>) outs(%z0 : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %r = arith.addf %acc, %in : f32
      linalg.yield %r : f32
    }
  return %l, %s : tensor<f32>, tensor<5x3xf32>
}

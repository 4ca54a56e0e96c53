// RUN: gacc-opt %s --split-input-file --gacc-micro-batch="micro-batches=1" | FileCheck %s --check-prefix=M1
// RUN: gacc-opt %s --split-input-file --gacc-micro-batch="micro-batches=2" | FileCheck %s --check-prefix=M2
// RUN: gacc-opt %s --split-input-file --gacc-micro-batch="micro-batches=4" | FileCheck %s --check-prefix=M4
// RUN: gacc-opt %s --split-input-file --gacc-micro-batch="micro-batch-sizes=3,1" | FileCheck %s --check-prefix=S31
// RUN: gacc-opt %s --split-input-file --gacc-micro-batch="micro-batches=3" | FileCheck %s --check-prefix=M3

// A linear model y = x W with a mean squared loss and SGD in the step. The
// transpose of W is invariant (once, before the regions), the loss and SGD are
// epilogue (once, after the regions), the constant 1/B stays 1/B = 0.25 in
// every region whatever its size (loss ÷ m), and the two partials (loss sum
// and weight gradient) are combined after the regions.

// M1-LABEL: func.func @linear
// M1:         linalg.transpose
// M1-COUNT-1: gacc.micro_batch
// M1-NOT:     gacc.micro_batch
// M1-NOT:     gacc.combine
// M1:         return

// M2-LABEL: func.func @linear
// M2:         %[[WT:.*]] = linalg.transpose
// M2:         %[[R0:.*]]:2 = gacc.micro_batch 0 offset 0 size 2
// M2:           tensor.extract_slice %arg1[0, 0] [2, 3] [1, 1] : tensor<4x3xf32> to tensor<2x3xf32>
// M2:           linalg.matmul ins(%{{.*}}, %[[WT]] : tensor<2x3xf32>, tensor<3x2xf32>)
// M2:           arith.constant 2.500000e-01 : f32
// M2:           gacc.yield
// M2:         %[[R1:.*]]:2 = gacc.micro_batch 1 offset 2 size 2
// M2:           tensor.extract_slice %arg1[2, 0] [2, 3] [1, 1]
// M2:           arith.constant 2.500000e-01 : f32
// M2:           gacc.yield
// M2-NOT:     gacc.micro_batch
// M2:         %[[S:.*]] = arith.addf %[[R0]]#0, %[[R1]]#0 {gacc.combine} : tensor<f32>
// M2:         %[[G:.*]] = arith.addf %[[R0]]#1, %[[R1]]#1 {gacc.combine} : tensor<2x3xf32>
// M2:         %[[LOSS:.*]] = arith.mulf %[[S]], %{{.*}} : tensor<f32>
// M2:         %[[STEP:.*]] = arith.mulf %[[G]], %{{.*}} : tensor<2x3xf32>
// M2:         %[[WOUT:.*]] = arith.subf %arg0, %[[STEP]] : tensor<2x3xf32>
// M2:         return %[[LOSS]], %[[WOUT]]

// M4-LABEL: func.func @linear
// M4-COUNT-1: linalg.transpose
// M4-COUNT-4: gacc.micro_batch {{[0-3]}} offset {{[0-3]}} size 1
// M4-NOT:     gacc.micro_batch
// M4-COUNT-6: {gacc.combine}
// M4-NOT:     gacc.combine
// M4:         arith.subf %arg0
// M4-NOT:     arith.subf %arg0
// M4:         return

// S31-LABEL: func.func @linear
// S31:         gacc.micro_batch 0 offset 0 size 3
// S31:           tensor.extract_slice %arg1[0, 0] [3, 3] [1, 1] : tensor<4x3xf32> to tensor<3x3xf32>
// S31:           arith.constant 2.500000e-01 : f32
// S31:         gacc.micro_batch 1 offset 3 size 1
// S31:           tensor.extract_slice %arg1[3, 0] [1, 3] [1, 1] : tensor<4x3xf32> to tensor<1x3xf32>
// S31:           arith.constant 2.500000e-01 : f32
// S31-NOT:     gacc.micro_batch
// S31:         return

// B % m != 0: sizes differ by at most one.
// M3-LABEL: func.func @linear
// M3:         gacc.micro_batch 0 offset 0 size 2
// M3:         gacc.micro_batch 1 offset 2 size 1
// M3:         gacc.micro_batch 2 offset 3 size 1
// M3-NOT:     gacc.micro_batch
// M3:         return
func.func @linear(%w: tensor<2x3xf32> {gacc.param}, %x: tensor<4x3xf32> {gacc.batch = 0 : i64},
                  %y: tensor<4x2xf32> {gacc.batch = 0 : i64}, %lr: tensor<f32> {gacc.state})
    -> (tensor<f32> {gacc.loss}, tensor<2x3xf32> {gacc.param_out = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>
  %e32 = tensor.empty() : tensor<3x2xf32>
  %wt = linalg.transpose ins(%w : tensor<2x3xf32>) outs(%e32 : tensor<3x2xf32>) permutation = [1, 0]
  %e42 = tensor.empty() : tensor<4x2xf32>
  %f42 = linalg.fill ins(%zero : f32) outs(%e42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %p = linalg.matmul ins(%x, %wt : tensor<4x3xf32>, tensor<3x2xf32>) outs(%f42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %r = arith.subf %p, %y : tensor<4x2xf32>
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%r : tensor<4x2xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %sq = arith.mulf %in, %in : f32
      %0 = arith.addf %acc, %sq : f32
      linalg.yield %0 : f32
    }
  %loss = arith.mulf %s, %inv_b : tensor<f32>
  // dr = 2 r / B: the seed keeps the global 1/B.
  %dr = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<4x2xf32>) outs(%e42 : tensor<4x2xf32>) {
    ^bb0(%in: f32, %out: f32):
      %c = arith.constant 0.25 : f32
      %two = arith.constant 2.0 : f32
      %0 = arith.mulf %in, %two : f32
      %1 = arith.mulf %0, %c : f32
      linalg.yield %1 : f32
  } -> tensor<4x2xf32>
  %e24 = tensor.empty() : tensor<2x4xf32>
  %drt = linalg.transpose ins(%dr : tensor<4x2xf32>) outs(%e24 : tensor<2x4xf32>) permutation = [1, 0]
  %e23 = tensor.empty() : tensor<2x3xf32>
  %f23 = linalg.fill ins(%zero : f32) outs(%e23 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %g = linalg.matmul ins(%drt, %x : tensor<2x4xf32>, tensor<4x3xf32>) outs(%f23 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %lrb = linalg.broadcast ins(%lr : tensor<f32>) outs(%e23 : tensor<2x3xf32>) dimensions = [0, 1]
  %step = arith.mulf %g, %lrb : tensor<2x3xf32>
  %w_out = arith.subf %w, %step : tensor<2x3xf32>
  return %loss, %w_out : tensor<f32>, tensor<2x3xf32>
}

// -----

// A prologue statistic: the token count sum(mask) is computed once over the
// whole batch before the regions; its reciprocal seeds per-sample work.

// M2-LABEL: func.func @token_count
// M2:         %[[COUNT:.*]] = linalg.reduce {{.*}}ins(%arg1 : tensor<4xf32>)
// M2:         %[[INV:.*]] = arith.divf %{{.*}}, %[[COUNT]] : tensor<f32>
// M2:         %[[INVB:.*]] = linalg.broadcast ins(%[[INV]]
// M2:         gacc.micro_batch 0 offset 0 size 2
// M2:           %[[SLICE:.*]] = tensor.extract_slice %[[INVB]][0] [2] [1]
// M2:           arith.mulf %{{.*}}, %[[SLICE]] : tensor<2xf32>
// M2:         gacc.micro_batch 1 offset 2 size 2
// M2:           tensor.extract_slice %[[INVB]][2] [2] [1]
// M2:         return %[[COUNT]]
func.func @token_count(%w: tensor<f32> {gacc.param}, %m: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %count = linalg.reduce ins(%m : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %one = arith.constant dense<1.0> : tensor<f32>
  %inv = arith.divf %one, %count : tensor<f32>
  %e4 = tensor.empty() : tensor<4xf32>
  %invb = linalg.broadcast ins(%inv : tensor<f32>) outs(%e4 : tensor<4xf32>) dimensions = [0]
  %seed = arith.mulf %m, %invb : tensor<4xf32>
  %g = linalg.reduce ins(%seed : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %count, %g : tensor<f32>, tensor<f32>
}

// -----

// Position-dependent code sees global positions: linalg.index of the sample
// loop is offset by the region's first sample. A per-sample result is
// assembled from the regions' slices.

// M2-LABEL: func.func @positions
// M2:         gacc.micro_batch 0 offset 0 size 2
// M2-NOT:       arith.addi
// M2:           gacc.yield
// M2:         gacc.micro_batch 1 offset 2 size 2
// M2:           %[[I:.*]] = linalg.index 0 : index
// M2:           %[[C2:.*]] = arith.constant 2 : index
// M2:           arith.addi %[[I]], %[[C2]] : index
// M2:           gacc.yield
// M2:         %[[E:.*]] = tensor.empty() : tensor<4xf32>
// M2:         %[[P0:.*]] = tensor.insert_slice %{{.*}} into %[[E]][0] [2] [1]
// M2:         %[[P1:.*]] = tensor.insert_slice %{{.*}} into %[[P0]][2] [2] [1]
// M2:         return %{{.*}}, %[[P1]]
func.func @positions(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<4xf32>
  %pos = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                         iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e4 : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %i = linalg.index 0 : index
      %ii = arith.index_cast %i : index to i64
      %fi = arith.sitofp %ii : i64 to f32
      %0 = arith.mulf %in, %fi : f32
      linalg.yield %0 : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%pos : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  return %s, %pos : tensor<f32>, tensor<4xf32>
}

// -----

// The sample count used as a value (tensor.dim turned into a float) stays
// the global count B = 4 in every region.

// M2-LABEL: func.func @count_as_value
// M2:         %[[B:.*]] = arith.constant 4 : index
// M2:         %[[BI:.*]] = arith.index_cast %[[B]] : index to i64
// M2:         %[[BF:.*]] = arith.sitofp %[[BI]] : i64 to f32
// M2:         %[[N:.*]] = linalg.fill ins(%[[BF]]
// M2:         gacc.micro_batch 0
// M2:         gacc.micro_batch 1
// M2:         %[[S:.*]] = arith.addf {{.*}} {gacc.combine}
// M2:         arith.divf %[[S]], %[[N]]
func.func @count_as_value(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<4xf32>
  %ni = arith.index_cast %n : index to i64
  %nf = arith.sitofp %ni : i64 to f32
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.reduce ins(%x : tensor<4xf32>) outs(%f : tensor<f32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %nt = linalg.fill ins(%nf : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %mean = arith.divf %s, %nt : tensor<f32>
  return %mean : tensor<f32>
}

// RUN: gacc-opt %s --split-input-file --gacc-prepare-step | FileCheck %s

// gacc-prepare-step raises a perfect scf.for nest on the batch path into the
// linalg.generic it writes out (issue 48): the nest's loops in order, a
// carried tensor as an output indexed by the loops it is written at, a
// carried scalar as a rank-0 output, a loop that indexes no output as a
// reduction with a shape-only input.

// A sum over the samples with an f32 iter_arg (the hand-written -log p):
// one reduction loop, the labels and logits read at the sample index.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG: #[[SCALAR:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @sum_over_samples
// CHECK-NOT:     scf.for
// CHECK:         %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : tensor<f32>
// CHECK:         %[[SHAPE:.*]] = tensor.empty() : tensor<4xi8>
// CHECK:         %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[SCALAR]]], iterator_types = ["reduction"]}
// CHECK-SAME:        ins(%[[SHAPE]] : tensor<4xi8>) outs(%[[ZERO]] : tensor<f32>)
// CHECK:         ^bb0(%{{.*}}: i8, %[[ACC:.*]]: f32):
// CHECK:           %[[I:.*]] = linalg.index 0 : index
// CHECK:           %[[K:.*]] = tensor.extract %arg1[%[[I]]] : tensor<4xi64>
// CHECK:           %[[KI:.*]] = arith.index_cast %[[K]] : i64 to index
// CHECK:           %[[V:.*]] = tensor.extract %arg0[%[[KI]], %[[I]]] : tensor<3x4xf32>
// CHECK:           %[[A:.*]] = arith.addf %[[ACC]], %[[V]] : f32
// CHECK:           linalg.yield %[[A]] : f32
// CHECK:         tensor.extract %[[SUM]][] : tensor<f32>
func.func @sum_over_samples(%l: tensor<3x4xf32> {gacc.batch = 1 : i64},
                            %lab: tensor<4xi64> {gacc.batch = 0 : i64})
    -> (f32 {gacc.loss}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %s = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %k = tensor.extract %lab[%i] : tensor<4xi64>
    %ki = arith.index_cast %k : i64 to index
    %v = tensor.extract %l[%ki, %i] : tensor<3x4xf32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }
  return %s : f32
}

// -----

// LAGrad's running max: a loop over classes 1..2 around a loop over the
// samples that carries one element per sample (extract, cmpf + select,
// insert at the sample). The classes are a reduction (they index no
// output), the samples parallel; the class index is 1 + d0.
// CHECK-DAG: #[[CLASS:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[SAMPLE:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @running_max
// CHECK-NOT:     scf.for
// CHECK:         %[[SHAPE:.*]] = tensor.empty() : tensor<2xi8>
// CHECK:         linalg.generic {indexing_maps = [#[[CLASS]], #[[SAMPLE]]], iterator_types = ["reduction", "parallel"]}
// CHECK-SAME:        ins(%[[SHAPE]] : tensor<2xi8>) outs(%arg1 : tensor<4xf32>)
// CHECK:         ^bb0(%{{.*}}: i8, %[[OUT:.*]]: f32):
// CHECK:           %[[C:.*]] = linalg.index 0 : index
// CHECK:           %[[C1:.*]] = arith.addi %[[C]], %c1 : index
// CHECK:           %[[I:.*]] = linalg.index 1 : index
// CHECK:           %[[V:.*]] = tensor.extract %arg0[%[[C1]], %[[I]]] : tensor<3x4xf32>
// CHECK:           %[[GT:.*]] = arith.cmpf ogt, %[[V]], %[[OUT]] : f32
// CHECK:           %[[MX:.*]] = arith.select %[[GT]], %[[V]], %[[OUT]] : f32
// CHECK:           linalg.yield %[[MX]] : f32
func.func @running_max(%l: tensor<3x4xf32> {gacc.batch = 1 : i64},
                       %init: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %m = scf.for %c = %c1 to %c3 step %c1 iter_args(%run = %init)
      -> (tensor<4xf32>) {
    %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %run)
        -> (tensor<4xf32>) {
      %v = tensor.extract %l[%c, %i] : tensor<3x4xf32>
      %old = tensor.extract %t[%i] : tensor<4xf32>
      %gt = arith.cmpf ogt, %v, %old : f32
      %mx = arith.select %gt, %v, %old : f32
      %n = tensor.insert %mx into %t[%i] : tensor<4xf32>
      scf.yield %n : tensor<4xf32>
    }
    scf.yield %r : tensor<4xf32>
  }
  %z = arith.constant dense<0.0> : tensor<f32>
  return %z, %m : tensor<f32>, tensor<4xf32>
}

// -----

// A nest that writes every element of a [classes x samples] tensor, with an
// op between the loops (sunk into the payload) and an i32 loop: both loops
// parallel, no shape input.
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @elementwise_nest
// CHECK-NOT:     scf.for
// CHECK-NOT:     tensor.empty() : tensor<{{.*}}xi8>
// CHECK:         linalg.generic {indexing_maps = [#[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:        outs(%{{.*}} : tensor<3x4xf32>)
// CHECK:           %[[C:.*]] = linalg.index 0 : index
// CHECK:           %[[I:.*]] = linalg.index 1 : index
// CHECK:           %[[I32:.*]] = arith.index_cast %[[I]] : index to i32
// CHECK:           arith.index_cast %[[C]] : index to i64
// CHECK:           tensor.extract %arg0[%[[C]], %[[I]]] : tensor<3x4xf32>
// CHECK:           arith.extsi %[[I32]] : i32 to i64
// CHECK:           linalg.yield
func.func @elementwise_nest(%l: tensor<3x4xf32> {gacc.batch = 1 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %i0 = arith.constant 0 : i32
  %i1 = arith.constant 1 : i32
  %i4 = arith.constant 4 : i32
  %e = tensor.empty() : tensor<3x4xf32>
  %g = scf.for %c = %c0 to %c3 step %c1 iter_args(%gc = %e)
      -> (tensor<3x4xf32>) {
    %cf = arith.index_cast %c : index to i64
    %gi = scf.for %i = %i0 to %i4 step %i1 iter_args(%t = %gc)
        -> (tensor<3x4xf32>) : i32 {
      %ii = arith.index_cast %i : i32 to index
      %v = tensor.extract %l[%c, %ii] : tensor<3x4xf32>
      %i64 = arith.extsi %i : i32 to i64
      %p = arith.addi %cf, %i64 : i64
      %pf = arith.sitofp %p : i64 to f32
      %r = arith.mulf %v, %pf : f32
      %n = tensor.insert %r into %t[%c, %ii] : tensor<3x4xf32>
      scf.yield %n : tensor<3x4xf32>
    }
    scf.yield %gi : tensor<3x4xf32>
  }
  %z = arith.constant dense<0.0> : tensor<f32>
  return %z, %g : tensor<f32>, tensor<3x4xf32>
}

// -----

// Not raised: a loop that reads no batch value (it stays as written), and
// an optimizer loop whose trip count is a state value.
// CHECK-LABEL: func.func @not_raised
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK-NOT:     linalg.generic
func.func @not_raised(%x: tensor<4xf32> {gacc.batch = 0 : i64},
                      %n: index {gacc.state})
    -> (tensor<f32> {gacc.loss}, f32, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %k = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
    %a = arith.addf %acc, %one : f32
    scf.yield %a : f32
  }
  %v = tensor.extract %x[%c0] : tensor<4xf32>
  %w = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %v) -> (f32) {
    %a = arith.mulf %acc, %v : f32
    scf.yield %a : f32
  }
  %z = arith.constant dense<0.0> : tensor<f32>
  return %z, %k, %w : tensor<f32>, f32, f32
}

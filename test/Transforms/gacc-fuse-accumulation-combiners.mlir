// RUN: gacc-opt %s --split-input-file --gacc-micro-batch="micro-batches=2" | FileCheck %s --check-prefix=SPLIT
// RUN: gacc-opt %s --split-input-file --gacc-micro-batch="micro-batches=2" --gacc-fuse-accumulation="accumulate-type=f32" | FileCheck %s --check-prefix=WIDE
// RUN: gacc-check %s --entry=variadic --micro-batches=2 --accumulate-type=f32 | FileCheck %s --check-prefix=NUM
// RUN: gacc-check %s --entry=maxnum --micro-batch-sizes=3,1 --accumulate-type=f32 | FileCheck %s --check-prefix=NUM
// NUM: PASS: every compiled result is within tolerance

// A variadic linalg.reduce of two bf16 sums over the samples (two metrics)
// kept in f32: widening the first result generalizes the op, and the second
// result's chain reads the op again from the region (it kept the erased op:
// a crash; found by a review).
// WIDE-LABEL: func.func @variadic
// WIDE:         gacc.micro_batch 0
// WIDE:           %[[R0:.*]]:2 = linalg.generic {{.*}} outs(%{{.*}}, %{{.*}} : tensor<f32>, tensor<f32>) attrs = {gacc.partial}
// WIDE:           gacc.yield %{{.*}}, %{{.*}}, %[[R0]]#0, %[[R0]]#1 : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
// WIDE:         %[[R1:.*]]:4 = gacc.micro_batch 1
// WIDE-DAG:     arith.truncf %[[R1]]#2 : tensor<f32> to tensor<bf16>
// WIDE-DAG:     arith.truncf %[[R1]]#3 : tensor<f32> to tensor<bf16>
func.func @variadic(%w: tensor<bf16> {gacc.param},
                    %x: tensor<4xbf16> {gacc.batch = 0 : i64},
                    %y: tensor<4xbf16> {gacc.batch = 0 : i64})
    -> (tensor<bf16> {gacc.loss}, tensor<bf16> {gacc.grad = 0 : i64},
        tensor<bf16> {gacc.metric}, tensor<bf16> {gacc.metric}) {
  %zero = arith.constant 0.0 : bf16
  %e0 = tensor.empty() : tensor<bf16>
  %z0 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<bf16>) -> tensor<bf16>
  %e1 = tensor.empty() : tensor<bf16>
  %z1 = linalg.fill ins(%zero : bf16) outs(%e1 : tensor<bf16>) -> tensor<bf16>
  // loss = sum_i w * x_i, dloss/dw = sum_i x_i.
  %loss = linalg.generic {
      indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%w, %x : tensor<bf16>, tensor<4xbf16>) outs(%z0 : tensor<bf16>) {
  ^bb0(%wv: bf16, %xv: bf16, %acc: bf16):
    %p = arith.mulf %wv, %xv : bf16
    %a = arith.addf %acc, %p : bf16
    linalg.yield %a : bf16
  } -> tensor<bf16>
  %gw = linalg.reduce ins(%x : tensor<4xbf16>) outs(%z0 : tensor<bf16>) dimensions = [0]
    (%a: bf16, %o: bf16) {
      %t = arith.addf %o, %a : bf16
      linalg.yield %t : bf16
    }
  %sx, %sy = linalg.reduce ins(%x, %y : tensor<4xbf16>, tensor<4xbf16>)
                           outs(%z0, %z1 : tensor<bf16>, tensor<bf16>) dimensions = [0]
    (%a: bf16, %b: bf16, %oa: bf16, %ob: bf16) {
      %t1 = arith.addf %oa, %a : bf16
      %t2 = arith.addf %ob, %b : bf16
      linalg.yield %t1, %t2 : bf16, bf16
    }
  return %loss, %gw, %sx, %sy : tensor<bf16>, tensor<bf16>, tensor<bf16>, tensor<bf16>
}

// -----

// A largest-value metric written with arith.maxnumf (which ignores a NaN
// operand, unlike maximumf): the regions' partials are combined with
// maxnumf (they were combined with maximumf: a micro-batch of NaNs turned
// the result NaN), later regions start from NaN, maxnumf's identity, and
// accumulate-type=f32 widens it (it was refused).
// SPLIT-LABEL: func.func @maxnum
// SPLIT:         gacc.micro_batch 1
// SPLIT:           %[[NAN:.*]] = arith.constant 0x7FC0 : bf16
// SPLIT:           %[[INIT:.*]] = linalg.fill ins(%[[NAN]] : bf16)
// SPLIT:           linalg.reduce { arith.maxnumf } {{.*}} outs(%[[INIT]] : tensor<bf16>)
// SPLIT:         arith.maxnumf %{{.*}}, %{{.*}} {gacc.combine} : tensor<bf16>
// WIDE-LABEL: func.func @maxnum
// WIDE:         gacc.micro_batch 0
// WIDE:           linalg.generic {{.*}} outs(%{{.*}} : tensor<f32>) attrs = {gacc.partial}
// WIDE:             arith.maxnumf %{{.*}}, %{{.*}} : f32
// WIDE-NOT:     gacc.combine
// WIDE:         arith.truncf
func.func @maxnum(%w: tensor<bf16> {gacc.param},
                  %x: tensor<4xbf16> {gacc.batch = 0 : i64})
    -> (tensor<bf16> {gacc.loss}, tensor<bf16> {gacc.grad = 0 : i64},
        tensor<bf16> {gacc.metric}) {
  %zero = arith.constant 0.0 : bf16
  %ninf = arith.constant 0xFF80 : bf16
  %e0 = tensor.empty() : tensor<bf16>
  %z0 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<bf16>) -> tensor<bf16>
  %m0 = linalg.fill ins(%ninf : bf16) outs(%e0 : tensor<bf16>) -> tensor<bf16>
  %loss = linalg.generic {
      indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%w, %x : tensor<bf16>, tensor<4xbf16>) outs(%z0 : tensor<bf16>) {
  ^bb0(%wv: bf16, %xv: bf16, %acc: bf16):
    %p = arith.mulf %wv, %xv : bf16
    %a = arith.addf %acc, %p : bf16
    linalg.yield %a : bf16
  } -> tensor<bf16>
  %gw = linalg.reduce ins(%x : tensor<4xbf16>) outs(%z0 : tensor<bf16>) dimensions = [0]
    (%a: bf16, %o: bf16) {
      %t = arith.addf %o, %a : bf16
      linalg.yield %t : bf16
    }
  %mx = linalg.reduce ins(%x : tensor<4xbf16>) outs(%m0 : tensor<bf16>) dimensions = [0]
    (%a: bf16, %o: bf16) {
      %t = arith.maxnumf %o, %a : bf16
      linalg.yield %t : bf16
    }
  return %loss, %gw, %mx : tensor<bf16>, tensor<bf16>, tensor<bf16>
}

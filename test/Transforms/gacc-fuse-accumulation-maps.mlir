// RUN: gacc-opt %s --gacc-micro-batch="micro-batches=2" --gacc-fuse-accumulation="accumulate-type=f32" | FileCheck %s
// RUN: gacc-check %s --micro-batches=2 --accumulate-type=f32 | FileCheck %s --check-prefix=NUM

// A bf16 weight gradient dW = X^T G written as a linalg.matmul whose maps
// contract over the samples: widened to an f32 accumulator, the matmul
// keeps its maps (rebuilt with the defaults, it computed X G: the
// transpose of the gradient, silently, where the shapes allowed it;
// found by a review).
// CHECK-DAG:   #[[A:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG:   #[[B:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-LABEL: func.func @train_step
// CHECK:         linalg.matmul indexing_maps = [#[[A]], #[[B]], #{{.*}}] {gacc.partial} {{.*}} outs(%{{.*}} : tensor<2x2xf32>)
// CHECK:         linalg.matmul indexing_maps = [#[[A]], #[[B]], #{{.*}}] {gacc.partial} {{.*}} outs(%{{.*}} : tensor<2x2xf32>)
// NUM: PASS: every compiled result is within tolerance
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @train_step(%W: tensor<2x2xbf16> {gacc.param},
                      %x: tensor<4x2xbf16> {gacc.batch = 0 : i64},
                      %g: tensor<4x2xbf16> {gacc.batch = 0 : i64})
    -> (tensor<bf16> {gacc.loss}, tensor<2x2xbf16> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<2x2xbf16>
  %z = linalg.fill ins(%zero : bf16) outs(%e : tensor<2x2xbf16>) -> tensor<2x2xbf16>
  %d = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (k, m)>,
                                      affine_map<(m, n, k) -> (k, n)>,
                                      affine_map<(m, n, k) -> (m, n)>]
       ins(%x, %g : tensor<4x2xbf16>, tensor<4x2xbf16>) outs(%z : tensor<2x2xbf16>) -> tensor<2x2xbf16>
  %e0 = tensor.empty() : tensor<bf16>
  %z0 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<bf16>) -> tensor<bf16>
  %l = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
      iterator_types = ["reduction", "reduction"]} ins(%g : tensor<4x2xbf16>) outs(%z0 : tensor<bf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %s = arith.addf %o, %a : bf16
    linalg.yield %s : bf16
  } -> tensor<bf16>
  return %l, %d : tensor<bf16>, tensor<2x2xbf16>
}

// torch.cat of a per-sample tensor with a batch input: the CPU lowering turns
// the concat (like tensor.insert_slice and tensor.pad) into a memref.copy on a
// strided subview, i.e. a call to the runtime function memrefCopy, which the
// JIT of gacc-run / gacc-check does not provide: "JIT session error: Symbols
// not found: [ memrefCopy ]", at every micro-batch count (also m = 1).
func.func @train_step(%w: tensor<3xf32> {gacc.param}, %x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3xf32> {gacc.grad = 0 : i64}) {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %a = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x, %w : tensor<4x3xf32>, tensor<3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %m = arith.mulf %i, %j : f32
    linalg.yield %m : f32
  } -> tensor<4x3xf32>
  %c = tensor.concat dim(1) %a, %x : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x6xf32>
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%z : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%c : tensor<4x6xf32>) outs(%f0 : tensor<f32>) {
  ^bb0(%i: f32, %o: f32):
    %m = arith.addf %i, %o : f32
    linalg.yield %m : f32
  } -> tensor<f32>
  %e3 = tensor.empty() : tensor<3xf32>
  %f3 = linalg.fill ins(%z : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<4x3xf32>) outs(%f3 : tensor<3xf32>) {
  ^bb0(%i: f32, %o: f32):
    %m = arith.addf %i, %o : f32
    linalg.yield %m : f32
  } -> tensor<3xf32>
  return %s, %g : tensor<f32>, tensor<3xf32>
}

// bf16 and f16 arithmetic, comparisons, math functions and casts to and from
// f32 and f64 in one step (for the JIT-symbol test): loss =
// mean(exp(x * w) + max(x, 0) / 2) over bf16 and f16 copies of the batch.

func.func @narrow_math(%w: tensor<3xbf16> {gacc.param},
                       %x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%x, %w : tensor<4x3xf32>, tensor<3xbf16>) outs(%init : tensor<f32>) {
  ^bb0(%xv: f32, %wv: bf16, %acc: f32):
    %xb = arith.truncf %xv : f32 to bf16
    %p = arith.mulf %xb, %wv : bf16
    %ex = math.exp %p : bf16
    %xh = arith.truncf %xv : f32 to f16
    %z = arith.constant 0.0 : f16
    %two = arith.constant 2.0 : f16
    %r = arith.maximumf %xh, %z : f16
    %h = arith.divf %r, %two : f16
    %lt = arith.cmpf olt, %h, %z : f16
    %hs = arith.select %lt, %z, %h : f16
    %exd = arith.extf %ex : bf16 to f64
    %hd = arith.extf %hs : f16 to f64
    %sum = arith.addf %exd, %hd : f64
    %sb = arith.truncf %sum : f64 to bf16
    %sh = arith.truncf %sum : f64 to f16
    %sbf = arith.extf %sb : bf16 to f32
    %shf = arith.extf %sh : f16 to f32
    %avg = arith.addf %sbf, %shf : f32
    %a = arith.addf %acc, %avg : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %inv = arith.constant dense<0.0416666679> : tensor<f32>
  %loss = arith.mulf %s, %inv : tensor<f32>
  return %loss : tensor<f32>
}

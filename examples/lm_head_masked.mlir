// Linear LM head with a padding mask and token-count normalization, one
// gradient step (single rank: no collective). 4 sequences (sample dim 0) of
// 3 tokens, 4 hidden features, vocabulary of 5.
//
// Arguments:
//   0  %W       : tensor<4x5xf32>   {gacc.param}       output projection
//   1  %hidden  : tensor<4x3x4xf32> {gacc.batch = 0}   hidden states [seq, tok, feat]
//   2  %targets : tensor<4x3xi64>   {gacc.batch = 0}   target ids in [0, 5)
//   3  %mask    : tensor<4x3xf32>   {gacc.batch = 0}   1 = real token, 0 = padding
// Results:
//   0  loss   : tensor<f32>     {gacc.loss}
//   1  dW     : tensor<4x5xf32> {gacc.grad = 0}
//   2  ntok   : tensor<f32>     {gacc.metric}     token count sum(mask)
//
// Forward:   logits[b,t,:] = hidden[b,t,:] W      (collapse [b,t] -> 12 rows, matmul, expand)
//            mx = max_v logits,  lse = log sum_v exp(logits - mx)
//            nll[b,t] = -(logits[b,t,target] - mx - lse)   (one-hot via linalg.index)
//            ntok = sum_{b,t} mask                (prologue statistic: batch inputs only)
//            wsum = sum_{b,t} mask * nll          (partial)
//            loss = wsum / ntok                   (epilogue)
// Backward:  inv = 1 / ntok                       (flows back into per-sample work)
//            seed[b,t] = mask[b,t] * inv
//            dlogits[b,t,v] = (softmax[b,t,v] - onehot[b,t,v]) * seed[b,t]
//            dW[k,v] = sum_{b,t} hidden[b,t,k] * dlogits[b,t,v]
//                      (linalg.generic, reduction iterators over b and t)
//
// The graph normalizes by its own (this rank's) token count; micro-batching must
// keep ntok the whole local batch's count, not the micro-batch's.

func.func @train_step(%W: tensor<4x5xf32> {gacc.param},
                      %hidden: tensor<4x3x4xf32> {gacc.batch = 0 : i64},
                      %targets: tensor<4x3xi64> {gacc.batch = 0 : i64},
                      %mask: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4x5xf32> {gacc.grad = 0 : i64},
        tensor<f32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %one_t = arith.constant dense<1.0> : tensor<f32>

  // ================= forward =================
  // logits = hidden W: [4,3,4] -> [12,4] x [4,5] -> [12,5] -> [4,3,5]
  %h2 = tensor.collapse_shape %hidden [[0, 1], [2]] : tensor<4x3x4xf32> into tensor<12x4xf32>
  %e125 = tensor.empty() : tensor<12x5xf32>
  %z125 = linalg.fill ins(%zero : f32) outs(%e125 : tensor<12x5xf32>) -> tensor<12x5xf32>
  %l2 = linalg.matmul ins(%h2, %W : tensor<12x4xf32>, tensor<4x5xf32>)
                      outs(%z125 : tensor<12x5xf32>) -> tensor<12x5xf32>
  %logits = tensor.expand_shape %l2 [[0, 1], [2]] output_shape [4, 3, 5]
              : tensor<12x5xf32> into tensor<4x3x5xf32>

  // per-token max over the vocabulary
  %e43 = tensor.empty() : tensor<4x3xf32>
  %m43 = linalg.fill ins(%ninf : f32) outs(%e43 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %mx = linalg.reduce ins(%logits : tensor<4x3x5xf32>) outs(%m43 : tensor<4x3xf32>) dimensions = [2]
    (%in: f32, %init: f32) {
      %m = arith.maximumf %init, %in : f32
      linalg.yield %m : f32
    }
  // ex = exp(logits - mx)
  %e435 = tensor.empty() : tensor<4x3x5xf32>
  %ex = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>,
                       affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%logits, %mx : tensor<4x3x5xf32>, tensor<4x3xf32>) outs(%e435 : tensor<4x3x5xf32>) {
  ^bb0(%l: f32, %m: f32, %o: f32):
    %s = arith.subf %l, %m : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  } -> tensor<4x3x5xf32>
  %z43 = linalg.fill ins(%zero : f32) outs(%e43 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %sumex = linalg.reduce ins(%ex : tensor<4x3x5xf32>) outs(%z43 : tensor<4x3xf32>) dimensions = [2]
    (%in: f32, %init: f32) {
      %s = arith.addf %init, %in : f32
      linalg.yield %s : f32
    }

  // onehot[b,t,v] = (v == targets[b,t])
  %onehot = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%targets : tensor<4x3xi64>) outs(%e435 : tensor<4x3x5xf32>) {
  ^bb0(%tg: i64, %o: f32):
    %v = linalg.index 2 : index
    %vi = arith.index_cast %v : index to i64
    %eq = arith.cmpi eq, %vi, %tg : i64
    %one = arith.constant 1.0 : f32
    %c0 = arith.constant 0.0 : f32
    %r = arith.select %eq, %one, %c0 : f32
    linalg.yield %r : f32
  } -> tensor<4x3x5xf32>

  // nll[b,t] = -sum_v onehot * (logits - mx - log(sumex))   (per-token reduction over v)
  %z43n = linalg.fill ins(%zero : f32) outs(%e43 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %nll = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%logits, %mx, %sumex, %onehot
          : tensor<4x3x5xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3x5xf32>)
      outs(%z43n : tensor<4x3xf32>) {
  ^bb0(%l: f32, %m: f32, %se: f32, %oh: f32, %acc: f32):
    %s = arith.subf %l, %m : f32
    %lse = math.log %se : f32
    %lp = arith.subf %s, %lse : f32
    %t = arith.mulf %oh, %lp : f32
    %n = arith.negf %t : f32
    %a = arith.addf %acc, %n : f32
    linalg.yield %a : f32
  } -> tensor<4x3xf32>

  // ntok = sum_{b,t} mask   (prologue statistic)
  %e0 = tensor.empty() : tensor<f32>
  %z0a = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %ntok = linalg.reduce ins(%mask : tensor<4x3xf32>) outs(%z0a : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %init: f32) {
      %s = arith.addf %init, %in : f32
      linalg.yield %s : f32
    }
  // wsum = sum_{b,t} mask * nll   (partial)
  %z0b = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %wsum = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%mask, %nll : tensor<4x3xf32>, tensor<4x3xf32>) outs(%z0b : tensor<f32>) {
  ^bb0(%mk: f32, %n: f32, %acc: f32):
    %p = arith.mulf %mk, %n : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  %loss = arith.divf %wsum, %ntok : tensor<f32>

  // ================= backward =================
  %inv = arith.divf %one_t, %ntok : tensor<f32>
  // dlogits = (ex / sumex - onehot) * mask * inv
  %dlogits = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>,
                       affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>,
                       affine_map<(d0, d1, d2) -> ()>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ex, %sumex, %onehot, %mask, %inv
          : tensor<4x3x5xf32>, tensor<4x3xf32>, tensor<4x3x5xf32>, tensor<4x3xf32>, tensor<f32>)
      outs(%e435 : tensor<4x3x5xf32>) {
  ^bb0(%e: f32, %se: f32, %oh: f32, %mk: f32, %iv: f32, %o: f32):
    %p = arith.divf %e, %se : f32
    %d = arith.subf %p, %oh : f32
    %seed = arith.mulf %mk, %iv : f32
    %r = arith.mulf %d, %seed : f32
    linalg.yield %r : f32
  } -> tensor<4x3x5xf32>

  // dW[k,v] = sum_{b,t} hidden[b,t,k] * dlogits[b,t,v]   (reduction over samples and tokens)
  %e45 = tensor.empty() : tensor<4x5xf32>
  %z45 = linalg.fill ins(%zero : f32) outs(%e45 : tensor<4x5xf32>) -> tensor<4x5xf32>
  %dW = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d2, d3)>],
      iterator_types = ["reduction", "reduction", "parallel", "parallel"]}
      ins(%hidden, %dlogits : tensor<4x3x4xf32>, tensor<4x3x5xf32>) outs(%z45 : tensor<4x5xf32>) {
  ^bb0(%hv: f32, %dv: f32, %acc: f32):
    %p = arith.mulf %hv, %dv : f32
    %a = arith.addf %acc, %p : f32
    linalg.yield %a : f32
  } -> tensor<4x5xf32>

  return %loss, %dW, %ntok : tensor<f32>, tensor<4x5xf32>, tensor<f32>
}

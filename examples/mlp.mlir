// Two-layer MLP classifier, one SGD step, B = 8 samples, 4 features,
// 8 hidden units, 3 classes.
//
// Arguments:
//   0  %W1     : tensor<4x8xf32> {gacc.param}
//   1  %b1     : tensor<8xf32>   {gacc.param}
//   2  %W2     : tensor<8x3xf32> {gacc.param}
//   3  %b2     : tensor<3xf32>   {gacc.param}
//   4  %x      : tensor<8x4xf32> {gacc.batch = 0}   inputs
//   5  %labels : tensor<8xi64>   {gacc.batch = 0}   class ids in [0, 3)
//   6  %lr     : tensor<f32>     {gacc.state}       learning rate
// Results:
//   0  loss    : tensor<f32>     {gacc.loss}
//   1  W1_out  : tensor<4x8xf32> {gacc.param_out = 0}
//   2  b1_out  : tensor<8xf32>   {gacc.param_out = 1}
//   3  W2_out  : tensor<8x3xf32> {gacc.param_out = 2}
//   4  b2_out  : tensor<3xf32>   {gacc.param_out = 3}
//
// Forward:   a1 = x W1 + b1,  h = relu(a1)
//            logits = h W2 + b2
//            mx_i = max_c logits_ic  (per-sample reduction over classes)
//            s = logits - mx,  lse_i = log sum_c exp(s_ic),  logp = s - lse
//            onehot_ic = (c == labels_i)   (linalg.index + index_cast + cmpi)
//            nll_i = -sum_c onehot_ic logp_ic
//            loss = (sum_i nll_i) * (1/B),  1/B = 0.125
// Backward:  dlogits = (softmax(logits) - onehot) * (1/B)
//            dW2 = h^T dlogits          (linalg.transpose + matmul over samples)
//            db2 = sum_i dlogits_i
//            dh  = dlogits W2^T
//            da1 = dh * (a1 > 0)
//            dW1 = x^T da1,  db1 = sum_i da1_i
//            g   = all_reduce(grad, average) for each of the four gradients
// SGD:       p_out = p - lr * g

shard.grid @dp(shape = ?) {sym_visibility = "private"}

func.func @train_step(%W1: tensor<4x8xf32> {gacc.param},
                      %b1: tensor<8xf32> {gacc.param},
                      %W2: tensor<8x3xf32> {gacc.param},
                      %b2: tensor<3xf32> {gacc.param},
                      %x: tensor<8x4xf32> {gacc.batch = 0 : i64},
                      %labels: tensor<8xi64> {gacc.batch = 0 : i64},
                      %lr: tensor<f32> {gacc.state})
    -> (tensor<f32> {gacc.loss},
        tensor<4x8xf32> {gacc.param_out = 0 : i64},
        tensor<8xf32> {gacc.param_out = 1 : i64},
        tensor<8x3xf32> {gacc.param_out = 2 : i64},
        tensor<3xf32> {gacc.param_out = 3 : i64}) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %inv_b = arith.constant dense<0.125> : tensor<f32>

  // ================= forward =================
  // a1 = x W1 + b1 ; h = relu(a1)
  %e88 = tensor.empty() : tensor<8x8xf32>
  %z88 = linalg.fill ins(%zero : f32) outs(%e88 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %xw1 = linalg.matmul ins(%x, %W1 : tensor<8x4xf32>, tensor<4x8xf32>)
                       outs(%z88 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %a1 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%xw1, %b1 : tensor<8x8xf32>, tensor<8xf32>) outs(%e88 : tensor<8x8xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %h = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%a1 : tensor<8x8xf32>) outs(%e88 : tensor<8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c0 = arith.constant 0.0 : f32
    %r = arith.maximumf %v, %c0 : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>

  // logits = h W2 + b2
  %e83 = tensor.empty() : tensor<8x3xf32>
  %z83 = linalg.fill ins(%zero : f32) outs(%e83 : tensor<8x3xf32>) -> tensor<8x3xf32>
  %hw2 = linalg.matmul ins(%h, %W2 : tensor<8x8xf32>, tensor<8x3xf32>)
                       outs(%z83 : tensor<8x3xf32>) -> tensor<8x3xf32>
  %logits = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%hw2, %b2 : tensor<8x3xf32>, tensor<3xf32>) outs(%e83 : tensor<8x3xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  } -> tensor<8x3xf32>

  // stable log-softmax: row max over classes (per-sample reduction)
  %e8 = tensor.empty() : tensor<8xf32>
  %m8 = linalg.fill ins(%ninf : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %mx = linalg.reduce ins(%logits : tensor<8x3xf32>) outs(%m8 : tensor<8xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %m = arith.maximumf %init, %in : f32
      linalg.yield %m : f32
    }
  // ex = exp(logits - mx)
  %ex = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%logits, %mx : tensor<8x3xf32>, tensor<8xf32>) outs(%e83 : tensor<8x3xf32>) {
  ^bb0(%l: f32, %m: f32, %o: f32):
    %s = arith.subf %l, %m : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  } -> tensor<8x3xf32>
  %z8 = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %sumex = linalg.reduce ins(%ex : tensor<8x3xf32>) outs(%z8 : tensor<8xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %init, %in : f32
      linalg.yield %s : f32
    }

  // onehot_ic = (c == labels_i)
  %onehot = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%labels : tensor<8xi64>) outs(%e83 : tensor<8x3xf32>) {
  ^bb0(%lab: i64, %o: f32):
    %c = linalg.index 1 : index
    %ci = arith.index_cast %c : index to i64
    %eq = arith.cmpi eq, %ci, %lab : i64
    %one = arith.constant 1.0 : f32
    %c0 = arith.constant 0.0 : f32
    %v = arith.select %eq, %one, %c0 : f32
    linalg.yield %v : f32
  } -> tensor<8x3xf32>

  // nll_i = -sum_c onehot_ic * (logits_ic - mx_i - log(sumex_i))   (per-sample reduction)
  %z8n = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %nll = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%logits, %mx, %sumex, %onehot
          : tensor<8x3xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8x3xf32>)
      outs(%z8n : tensor<8xf32>) {
  ^bb0(%l: f32, %m: f32, %se: f32, %oh: f32, %acc: f32):
    %s = arith.subf %l, %m : f32
    %lse = math.log %se : f32
    %lp = arith.subf %s, %lse : f32
    %t = arith.mulf %oh, %lp : f32
    %n = arith.negf %t : f32
    %a = arith.addf %acc, %n : f32
    linalg.yield %a : f32
  } -> tensor<8xf32>

  // loss = sum_i nll_i / B   (reduction over the sample dim)
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %nllsum = linalg.reduce ins(%nll : tensor<8xf32>) outs(%z0 : tensor<f32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s = arith.addf %init, %in : f32
      linalg.yield %s : f32
    }
  %loss = arith.mulf %nllsum, %inv_b : tensor<f32>

  // ================= backward =================
  // dlogits = (ex / sumex - onehot) * (1/B)
  %dlogits = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%ex, %sumex, %onehot, %inv_b
          : tensor<8x3xf32>, tensor<8xf32>, tensor<8x3xf32>, tensor<f32>)
      outs(%e83 : tensor<8x3xf32>) {
  ^bb0(%e: f32, %se: f32, %oh: f32, %ib: f32, %o: f32):
    %p = arith.divf %e, %se : f32
    %d = arith.subf %p, %oh : f32
    %r = arith.mulf %d, %ib : f32
    linalg.yield %r : f32
  } -> tensor<8x3xf32>

  // dW2 = h^T dlogits   (matmul contracting over the sample dim)
  %hT = linalg.transpose ins(%h : tensor<8x8xf32>) outs(%e88 : tensor<8x8xf32>)
          permutation = [1, 0]
  %z83b = linalg.fill ins(%zero : f32) outs(%e83 : tensor<8x3xf32>) -> tensor<8x3xf32>
  %dW2 = linalg.matmul ins(%hT, %dlogits : tensor<8x8xf32>, tensor<8x3xf32>)
                       outs(%z83b : tensor<8x3xf32>) -> tensor<8x3xf32>

  // db2 = sum_i dlogits_i
  %e3 = tensor.empty() : tensor<3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %db2 = linalg.reduce ins(%dlogits : tensor<8x3xf32>) outs(%z3 : tensor<3xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s = arith.addf %init, %in : f32
      linalg.yield %s : f32
    }

  // dh = dlogits W2^T
  %e38 = tensor.empty() : tensor<3x8xf32>
  %W2T = linalg.transpose ins(%W2 : tensor<8x3xf32>) outs(%e38 : tensor<3x8xf32>)
           permutation = [1, 0]
  %z88b = linalg.fill ins(%zero : f32) outs(%e88 : tensor<8x8xf32>) -> tensor<8x8xf32>
  %dh = linalg.matmul ins(%dlogits, %W2T : tensor<8x3xf32>, tensor<3x8xf32>)
                      outs(%z88b : tensor<8x8xf32>) -> tensor<8x8xf32>

  // da1 = dh * (a1 > 0)
  %da1 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%dh, %a1 : tensor<8x8xf32>, tensor<8x8xf32>) outs(%e88 : tensor<8x8xf32>) {
  ^bb0(%d: f32, %a: f32, %o: f32):
    %c0 = arith.constant 0.0 : f32
    %pos = arith.cmpf ogt, %a, %c0 : f32
    %r = arith.select %pos, %d, %c0 : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>

  // dW1 = x^T da1   (matmul contracting over the sample dim)
  %e48 = tensor.empty() : tensor<4x8xf32>
  %xT = linalg.transpose ins(%x : tensor<8x4xf32>) outs(%e48 : tensor<4x8xf32>)
          permutation = [1, 0]
  %z48 = linalg.fill ins(%zero : f32) outs(%e48 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %dW1 = linalg.matmul ins(%xT, %da1 : tensor<4x8xf32>, tensor<8x8xf32>)
                       outs(%z48 : tensor<4x8xf32>) -> tensor<4x8xf32>

  // db1 = sum_i da1_i
  %z8b = linalg.fill ins(%zero : f32) outs(%e8 : tensor<8xf32>) -> tensor<8xf32>
  %db1 = linalg.reduce ins(%da1 : tensor<8x8xf32>) outs(%z8b : tensor<8xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s = arith.addf %init, %in : f32
      linalg.yield %s : f32
    }

  // ================= data-parallel sync =================
  %gW1 = shard.all_reduce %dW1 on @dp grid_axes = [0] reduction = average
           : tensor<4x8xf32> -> tensor<4x8xf32>
  %gb1 = shard.all_reduce %db1 on @dp grid_axes = [0] reduction = average
           : tensor<8xf32> -> tensor<8xf32>
  %gW2 = shard.all_reduce %dW2 on @dp grid_axes = [0] reduction = average
           : tensor<8x3xf32> -> tensor<8x3xf32>
  %gb2 = shard.all_reduce %db2 on @dp grid_axes = [0] reduction = average
           : tensor<3xf32> -> tensor<3xf32>

  // ================= SGD: p_out = p - lr * g =================
  %W1o = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%W1, %gW1, %lr : tensor<4x8xf32>, tensor<4x8xf32>, tensor<f32>)
      outs(%e48 : tensor<4x8xf32>) {
  ^bb0(%p: f32, %g: f32, %l: f32, %o: f32):
    %u = arith.mulf %l, %g : f32
    %n = arith.subf %p, %u : f32
    linalg.yield %n : f32
  } -> tensor<4x8xf32>
  %b1o = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%b1, %gb1, %lr : tensor<8xf32>, tensor<8xf32>, tensor<f32>)
      outs(%e8 : tensor<8xf32>) {
  ^bb0(%p: f32, %g: f32, %l: f32, %o: f32):
    %u = arith.mulf %l, %g : f32
    %n = arith.subf %p, %u : f32
    linalg.yield %n : f32
  } -> tensor<8xf32>
  %W2o = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%W2, %gW2, %lr : tensor<8x3xf32>, tensor<8x3xf32>, tensor<f32>)
      outs(%e83 : tensor<8x3xf32>) {
  ^bb0(%p: f32, %g: f32, %l: f32, %o: f32):
    %u = arith.mulf %l, %g : f32
    %n = arith.subf %p, %u : f32
    linalg.yield %n : f32
  } -> tensor<8x3xf32>
  %b2o = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%b2, %gb2, %lr : tensor<3xf32>, tensor<3xf32>, tensor<f32>)
      outs(%e3 : tensor<3xf32>) {
  ^bb0(%p: f32, %g: f32, %l: f32, %o: f32):
    %u = arith.mulf %l, %g : f32
    %n = arith.subf %p, %u : f32
    linalg.yield %n : f32
  } -> tensor<3xf32>

  return %loss, %W1o, %b1o, %W2o, %b2o
      : tensor<f32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8x3xf32>, tensor<3xf32>
}

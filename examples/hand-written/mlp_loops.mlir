// The hand-written MLP step of mlp_helpers.mlir (LAGrad's batched MLP at
// 5-5-5-3, B = 8 samples on dimension 1 of the input), with the loss and
// its gradient written as LAGrad writes them: scf.for loops over classes
// and samples with tensor.extract / tensor.insert per element, and the sum
// of the per-sample losses in an f32 iter_arg:
//   - the running max over classes carries a tensor<8xf32> (one element per
//     sample): a loop from class 1 around a loop over the samples, with
//     cmpf + select;
//   - the sum of exp(l - m) over classes likewise, the log-sum-exp a loop
//     over the samples;
//   - the loss, a loop over the samples with an f32 iter_arg, divided by B;
//   - the gradient of the logits, a loop nest writing tensor<3x8xf32> at
//     [class, sample], and the gradient of the output bias, a sum over the
//     samples written as a loop nest.
// gacc-prepare-step raises each perfect loop nest into the linalg.generic it
// writes out, and the batch analysis splits those like any linalg op
// (test/Check/hand-written.test; the raise: test/Transforms/raise-loops.mlir).

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#id1 = affine_map<(d0) -> (d0)>
#scalar1 = affine_map<(d0) -> ()>
// gw = dz a^T: (d0 out, d1 in, d2 sample)
#gw_dz = affine_map<(d0, d1, d2) -> (d0, d2)>
#gw_a = affine_map<(d0, d1, d2) -> (d1, d2)>
#gw_out = affine_map<(d0, d1, d2) -> (d0, d1)>
// da = w^T dz: (d0 in, d1 sample, d2 out)
#da_w = affine_map<(d0, d1, d2) -> (d2, d0)>
#da_dz = affine_map<(d0, d1, d2) -> (d2, d1)>
#da_out = affine_map<(d0, d1, d2) -> (d0, d1)>

shard.grid @dp(shape = ?) {sym_visibility = "private"}

func.func @train_step(%w1: tensor<5x5xf32> {gacc.param},
                      %b1: tensor<5xf32> {gacc.param},
                      %w2: tensor<5x5xf32> {gacc.param},
                      %b2: tensor<5xf32> {gacc.param},
                      %w3: tensor<3x5xf32> {gacc.param},
                      %b3: tensor<3xf32> {gacc.param},
                      %x: tensor<5x8xf32> {gacc.batch = 1 : i64},
                      %labels: tensor<8xi64> {gacc.batch = 0 : i64})
    -> (f32 {gacc.loss},
        tensor<5x5xf32> {gacc.grad = 0 : i64},
        tensor<5xf32> {gacc.grad = 1 : i64},
        tensor<5x5xf32> {gacc.grad = 2 : i64},
        tensor<5xf32> {gacc.grad = 3 : i64},
        tensor<3x5xf32> {gacc.grad = 4 : i64},
        tensor<3xf32> {gacc.grad = 5 : i64}) {
  %zero = arith.constant 0.0 : f32
  // ---- forward
  %z1, %a1 = func.call @dense_relu(%w1, %b1, %x)
      : (tensor<5x5xf32>, tensor<5xf32>, tensor<5x8xf32>)
      -> (tensor<5x8xf32>, tensor<5x8xf32>)
  %z2, %a2 = func.call @dense_relu(%w2, %b2, %a1)
      : (tensor<5x5xf32>, tensor<5xf32>, tensor<5x8xf32>)
      -> (tensor<5x8xf32>, tensor<5x8xf32>)
  %logits = func.call @dense(%w3, %b3, %a2)
      : (tensor<3x5xf32>, tensor<3xf32>, tensor<5x8xf32>) -> tensor<3x8xf32>
  %loss, %lse = func.call @softmax_cross_entropy(%logits, %labels)
      : (tensor<3x8xf32>, tensor<8xi64>) -> (f32, tensor<8xf32>)

  // ---- backward of the loss and the output layer
  %dl = func.call @softmax_cross_entropy_grad(%logits, %lse, %labels)
      : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xi64>) -> tensor<3x8xf32>
  %e35 = tensor.empty() : tensor<3x5xf32>
  %f35 = linalg.fill ins(%zero : f32) outs(%e35 : tensor<3x5xf32>)
      -> tensor<3x5xf32>
  %gw3 = linalg.generic {
      indexing_maps = [#gw_dz, #gw_a, #gw_out],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dl, %a2 : tensor<3x8xf32>, tensor<5x8xf32>)
      outs(%f35 : tensor<3x5xf32>) {
  ^bb0(%d: f32, %a: f32, %acc: f32):
    %p = arith.mulf %d, %a : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<3x5xf32>
  // gb3 = sum_i dl[:, i], as a loop nest over classes and samples.
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %z3 = arith.constant dense<0.0> : tensor<3xf32>
  %gb3 = scf.for %c = %c0 to %c3 step %c1 iter_args(%gc = %z3)
      -> (tensor<3xf32>) {
    %gi = scf.for %i = %c0 to %c8 step %c1 iter_args(%g = %gc)
        -> (tensor<3xf32>) {
      %d = tensor.extract %dl[%c, %i] : tensor<3x8xf32>
      %acc = tensor.extract %g[%c] : tensor<3xf32>
      %s = arith.addf %acc, %d : f32
      %n = tensor.insert %s into %g[%c] : tensor<3xf32>
      scf.yield %n : tensor<3xf32>
    }
    scf.yield %gi : tensor<3xf32>
  }
  %e58 = tensor.empty() : tensor<5x8xf32>
  %f58 = linalg.fill ins(%zero : f32) outs(%e58 : tensor<5x8xf32>)
      -> tensor<5x8xf32>
  %da2 = linalg.generic {
      indexing_maps = [#da_w, #da_dz, #da_out],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w3, %dl : tensor<3x5xf32>, tensor<3x8xf32>)
      outs(%f58 : tensor<5x8xf32>) {
  ^bb0(%w: f32, %d: f32, %acc: f32):
    %p = arith.mulf %w, %d : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x8xf32>

  // ---- backward of the hidden layers
  %gw2, %gb2, %da1 = func.call @dense_relu_backward(%w2, %a1, %z2, %da2)
      : (tensor<5x5xf32>, tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>)
      -> (tensor<5x5xf32>, tensor<5xf32>, tensor<5x8xf32>)
  %gw1, %gb1, %dx = func.call @dense_relu_backward(%w1, %x, %z1, %da1)
      : (tensor<5x5xf32>, tensor<5x8xf32>, tensor<5x8xf32>, tensor<5x8xf32>)
      -> (tensor<5x5xf32>, tensor<5xf32>, tensor<5x8xf32>)

  // ---- data-parallel gradient sync
  %sw1 = shard.all_reduce %gw1 on @dp grid_axes = [0] reduction = average
      : tensor<5x5xf32> -> tensor<5x5xf32>
  %sb1 = shard.all_reduce %gb1 on @dp grid_axes = [0] reduction = average
      : tensor<5xf32> -> tensor<5xf32>
  %sw2 = shard.all_reduce %gw2 on @dp grid_axes = [0] reduction = average
      : tensor<5x5xf32> -> tensor<5x5xf32>
  %sb2 = shard.all_reduce %gb2 on @dp grid_axes = [0] reduction = average
      : tensor<5xf32> -> tensor<5xf32>
  %sw3 = shard.all_reduce %gw3 on @dp grid_axes = [0] reduction = average
      : tensor<3x5xf32> -> tensor<3x5xf32>
  %sb3 = shard.all_reduce %gb3 on @dp grid_axes = [0] reduction = average
      : tensor<3xf32> -> tensor<3xf32>
  return %loss, %sw1, %sb1, %sw2, %sb2, %sw3, %sb3
      : f32, tensor<5x5xf32>, tensor<5xf32>, tensor<5x5xf32>, tensor<5xf32>,
        tensor<3x5xf32>, tensor<3xf32>
}

// z = w x + b (b broadcast over the samples): w [O, I], x [I, B].
func.func private @dense(%w: tensor<3x5xf32>, %b: tensor<3xf32>,
                         %x: tensor<5x8xf32>) -> tensor<3x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<3x8xf32>)
      -> tensor<3x8xf32>
  %wx = linalg.matmul ins(%w, %x : tensor<3x5xf32>, tensor<5x8xf32>)
      outs(%f : tensor<3x8xf32>) -> tensor<3x8xf32>
  %z = linalg.generic {
      indexing_maps = [#id2, #row, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%wx, %b : tensor<3x8xf32>, tensor<3xf32>)
      outs(%e : tensor<3x8xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    linalg.yield %s : f32
  } -> tensor<3x8xf32>
  return %z : tensor<3x8xf32>
}

// z = w x + b, a = relu(z).
func.func private @dense_relu(%w: tensor<5x5xf32>, %b: tensor<5xf32>,
                              %x: tensor<5x8xf32>)
    -> (tensor<5x8xf32>, tensor<5x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<5x8xf32>)
      -> tensor<5x8xf32>
  %wx = linalg.matmul ins(%w, %x : tensor<5x5xf32>, tensor<5x8xf32>)
      outs(%f : tensor<5x8xf32>) -> tensor<5x8xf32>
  %z = linalg.generic {
      indexing_maps = [#id2, #row, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%wx, %b : tensor<5x8xf32>, tensor<5xf32>)
      outs(%e : tensor<5x8xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    linalg.yield %s : f32
  } -> tensor<5x8xf32>
  %a = linalg.generic {
      indexing_maps = [#id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%z : tensor<5x8xf32>) outs(%e : tensor<5x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<5x8xf32>
  return %z, %a : tensor<5x8xf32>, tensor<5x8xf32>
}

// Given the layer's input x, pre-activation z and the gradient da of its
// activation: dz = da * (z > 0), gw = dz x^T, gb = sum_i dz, dx = w^T dz.
func.func private @dense_relu_backward(%w: tensor<5x5xf32>,
                                       %x: tensor<5x8xf32>,
                                       %z: tensor<5x8xf32>,
                                       %da: tensor<5x8xf32>)
    -> (tensor<5x5xf32>, tensor<5xf32>, tensor<5x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e58 = tensor.empty() : tensor<5x8xf32>
  %dz = linalg.generic {
      indexing_maps = [#id2, #id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%da, %z : tensor<5x8xf32>, tensor<5x8xf32>)
      outs(%e58 : tensor<5x8xf32>) {
  ^bb0(%d: f32, %zv: f32, %o: f32):
    %pos = arith.cmpf ogt, %zv, %zero : f32
    %r = arith.select %pos, %d, %zero : f32
    linalg.yield %r : f32
  } -> tensor<5x8xf32>
  %e55 = tensor.empty() : tensor<5x5xf32>
  %f55 = linalg.fill ins(%zero : f32) outs(%e55 : tensor<5x5xf32>)
      -> tensor<5x5xf32>
  %gw = linalg.generic {
      indexing_maps = [#gw_dz, #gw_a, #gw_out],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%dz, %x : tensor<5x8xf32>, tensor<5x8xf32>)
      outs(%f55 : tensor<5x5xf32>) {
  ^bb0(%d: f32, %a: f32, %acc: f32):
    %p = arith.mulf %d, %a : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x5xf32>
  %e5 = tensor.empty() : tensor<5xf32>
  %f5 = linalg.fill ins(%zero : f32) outs(%e5 : tensor<5xf32>) -> tensor<5xf32>
  %gb = linalg.generic {
      indexing_maps = [#id2, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%dz : tensor<5x8xf32>) outs(%f5 : tensor<5xf32>) {
  ^bb0(%d: f32, %acc: f32):
    %s = arith.addf %acc, %d : f32
    linalg.yield %s : f32
  } -> tensor<5xf32>
  %f58 = linalg.fill ins(%zero : f32) outs(%e58 : tensor<5x8xf32>)
      -> tensor<5x8xf32>
  %dx = linalg.generic {
      indexing_maps = [#da_w, #da_dz, #da_out],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %dz : tensor<5x5xf32>, tensor<5x8xf32>)
      outs(%f58 : tensor<5x8xf32>) {
  ^bb0(%wv: f32, %d: f32, %acc: f32):
    %p = arith.mulf %wv, %d : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<5x8xf32>
  return %gw, %gb, %dx : tensor<5x5xf32>, tensor<5xf32>, tensor<5x8xf32>
}

// lse_i = m_i + log sum_c exp(l_ci - m_i), m_i = max_c l_ci: the classes
// are dimension 0, the samples dimension 1; loops as LAGrad writes them.
func.func private @log_sum_exp(%l: tensor<3x8xf32>) -> tensor<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %e = tensor.empty() : tensor<8xf32>
  // m = l[0, :], then the running max over classes 1 and 2.
  %m0 = scf.for %i = %c0 to %c8 step %c1 iter_args(%t = %e)
      -> (tensor<8xf32>) {
    %v = tensor.extract %l[%c0, %i] : tensor<3x8xf32>
    %n = tensor.insert %v into %t[%i] : tensor<8xf32>
    scf.yield %n : tensor<8xf32>
  }
  %m = scf.for %c = %c1 to %c3 step %c1 iter_args(%run = %m0)
      -> (tensor<8xf32>) {
    %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%t = %run)
        -> (tensor<8xf32>) {
      %v = tensor.extract %l[%c, %i] : tensor<3x8xf32>
      %old = tensor.extract %t[%i] : tensor<8xf32>
      %gt = arith.cmpf ogt, %v, %old : f32
      %mx = arith.select %gt, %v, %old : f32
      %n = tensor.insert %mx into %t[%i] : tensor<8xf32>
      scf.yield %n : tensor<8xf32>
    }
    scf.yield %r : tensor<8xf32>
  }
  // s_i = sum_c exp(l_ci - m_i).
  %zeros = arith.constant dense<0.0> : tensor<8xf32>
  %s = scf.for %c = %c0 to %c3 step %c1 iter_args(%run = %zeros)
      -> (tensor<8xf32>) {
    %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%t = %run)
        -> (tensor<8xf32>) {
      %v = tensor.extract %l[%c, %i] : tensor<3x8xf32>
      %mv = tensor.extract %m[%i] : tensor<8xf32>
      %acc = tensor.extract %t[%i] : tensor<8xf32>
      %d = arith.subf %v, %mv : f32
      %x = math.exp %d : f32
      %a = arith.addf %acc, %x : f32
      %n = tensor.insert %a into %t[%i] : tensor<8xf32>
      scf.yield %n : tensor<8xf32>
    }
    scf.yield %r : tensor<8xf32>
  }
  %lse = scf.for %i = %c0 to %c8 step %c1 iter_args(%t = %e)
      -> (tensor<8xf32>) {
    %sv = tensor.extract %s[%i] : tensor<8xf32>
    %mv = tensor.extract %m[%i] : tensor<8xf32>
    %lg = math.log %sv : f32
    %r = arith.addf %lg, %mv : f32
    %n = tensor.insert %r into %t[%i] : tensor<8xf32>
    scf.yield %n : tensor<8xf32>
  }
  return %lse : tensor<8xf32>
}

// loss = (sum_i lse_i - l[label_i, i]) / B as an f32: a loop over the
// samples with an f32 iter_arg.
func.func private @softmax_cross_entropy(%l: tensor<3x8xf32>,
                                         %labels: tensor<8xi64>)
    -> (f32, tensor<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %count = arith.constant 8.0 : f32
  %lse = func.call @log_sum_exp(%l) : (tensor<3x8xf32>) -> tensor<8xf32>
  %sum = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %label = tensor.extract %labels[%i] : tensor<8xi64>
    %c = arith.index_cast %label : i64 to index
    %t = tensor.extract %l[%c, %i] : tensor<3x8xf32>
    %lv = tensor.extract %lse[%i] : tensor<8xf32>
    %nll = arith.subf %lv, %t : f32
    %a = arith.addf %acc, %nll : f32
    scf.yield %a : f32
  }
  %loss = arith.divf %sum, %count : f32
  return %loss, %lse : f32, tensor<8xf32>
}

// dlogits = (softmax(l) - onehot(labels)) / B, element by element.
func.func private @softmax_cross_entropy_grad(%l: tensor<3x8xf32>,
                                              %lse: tensor<8xf32>,
                                              %labels: tensor<8xi64>)
    -> tensor<3x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %inv_count = arith.constant 0.125 : f32
  %e = tensor.empty() : tensor<3x8xf32>
  %g = scf.for %c = %c0 to %c3 step %c1 iter_args(%gc = %e)
      -> (tensor<3x8xf32>) {
    %gi = scf.for %i = %c0 to %c8 step %c1 iter_args(%t = %gc)
        -> (tensor<3x8xf32>) {
      %v = tensor.extract %l[%c, %i] : tensor<3x8xf32>
      %lv = tensor.extract %lse[%i] : tensor<8xf32>
      %label = tensor.extract %labels[%i] : tensor<8xi64>
      %ci = arith.index_cast %c : index to i64
      %is = arith.cmpi eq, %ci, %label : i64
      %y = arith.select %is, %one, %zero : f32
      %d = arith.subf %v, %lv : f32
      %p = math.exp %d : f32
      %q = arith.subf %p, %y : f32
      %r = arith.mulf %q, %inv_count : f32
      %n = tensor.insert %r into %t[%c, %i] : tensor<3x8xf32>
      scf.yield %n : tensor<3x8xf32>
    }
    scf.yield %gi : tensor<3x8xf32>
  }
  return %g : tensor<3x8xf32>
}

// Linear classifier with integer-label cross-entropy and a dynamic batch
// dimension, as torch.export / iree-turbine export it (the sample dimension is
// a symbolic size) and torch-mlir's TorchToLinalg lowers it: batch arguments
// typed tensor<?x...>, sizes read with tensor.dim, tensor.empty(%n) inits.
// Same computation as nll_classifier.mlir (B = 4 when specialized, 3 features,
// 5 classes, mean over the targets that are not ignore_index = -100).
// Compile with --batch-size=4 (gacc-prepare-step specializes the step to the
// given batch; without it gacc-opt refuses the dynamic sample dimension).
//
// PyTorch:  loss = F.nll_loss(F.log_softmax(x @ W + b, dim=1), labels),
//           x: [N, 3] with N = torch.export.Dim("batch")
//   mm:          Linear.cpp ConvertAtenMmOp: createZeroInitTensor with the
//                sizes from getDimOp (tensor.dim of both operands), so the init
//                is tensor.empty(%n, %n5) : tensor<?x?xf32> and the result is
//                tensor.cast to the converted result type tensor<?x5xf32>;
//   elementwise: Uncategorized.cpp createElementwiseLinalgGeneric with
//                tensor.empty(%n) of the dynamic result shape;
//   log_softmax: amax/sum with keepdim into tensor<?x1xf32>, output map
//                (d0, d1) -> (d0, 0) (Reduction.cpp);
//   nll_loss_forward/backward: the extract-gather %logp[linalg.index 0, label]
//                and total_weight = tensor.dim(labels) - count(ignored), as in
//                nll_classifier.mlir;
//   t / mm / sum.dim_IntList: linalg.transpose into tensor.empty(%n), matmul, a
//                reduction generic over the samples.
//
// Arguments: 0 W [3,5] param, 1 b [5] param, 2 x [?,3] batch, 3 labels [?] batch.
// Results:   0 loss, 1 dW, 2 db.
func.func @train_step(%W: tensor<3x5xf32> {gacc.param},
                      %b: tensor<5xf32> {gacc.param},
                      %x: tensor<?x3xf32> {gacc.batch = 0 : i64},
                      %labels: tensor<?xi64> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<3x5xf32> {gacc.grad = 0 : i64},
        tensor<5xf32> {gacc.grad = 1 : i64}) {
  %cst0 = arith.constant 0.000000e+00 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %ignore = arith.constant -100 : i64
  %ignore_idx = arith.index_cast %ignore : i64 to index
  %c0_i32 = arith.constant 0 : i32
  %c0_i64 = arith.constant 0 : i64
  %c0 = arith.constant 0 : index
  %seed = arith.constant dense<1.000000e+00> : tensor<f32>
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c0 : tensor<?x3xf32>

  // ---- logits = x @ W + b
  %n5 = tensor.dim %W, %c1 : tensor<3x5xf32>
  %emm = tensor.empty(%n, %n5) : tensor<?x?xf32>
  %zmm = linalg.fill ins(%cst0 : f32) outs(%emm : tensor<?x?xf32>) -> tensor<?x?xf32>
  %mm0 = linalg.matmul ins(%x, %W : tensor<?x3xf32>, tensor<3x5xf32>) outs(%zmm : tensor<?x?xf32>) -> tensor<?x?xf32>
  %mm = tensor.cast %mm0 : tensor<?x?xf32> to tensor<?x5xf32>
  %e45 = tensor.empty(%n) : tensor<?x5xf32>
  %z45 = linalg.fill ins(%cst0 : f32) outs(%e45 : tensor<?x5xf32>) -> tensor<?x5xf32>
  %logits = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%mm, %b : tensor<?x5xf32>, tensor<5xf32>) outs(%e45 : tensor<?x5xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.addf %in, %in_0 : f32
    linalg.yield %0 : f32
  } -> tensor<?x5xf32>

  // ---- log_softmax(logits, dim=1)
  %e41 = tensor.empty(%n) : tensor<?x1xf32>
  %m41 = linalg.fill ins(%ninf : f32) outs(%e41 : tensor<?x1xf32>) -> tensor<?x1xf32>
  %amax = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%logits : tensor<?x5xf32>) outs(%m41 : tensor<?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<?x1xf32>
  %shifted = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%logits, %amax : tensor<?x5xf32>, tensor<?x1xf32>) outs(%e45 : tensor<?x5xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.subf %in, %in_0 : f32
    linalg.yield %0 : f32
  } -> tensor<?x5xf32>
  %exp = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%shifted : tensor<?x5xf32>) outs(%e45 : tensor<?x5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.exp %in : f32
    linalg.yield %0 : f32
  } -> tensor<?x5xf32>
  %z41 = linalg.fill ins(%cst0 : f32) outs(%e41 : tensor<?x1xf32>) -> tensor<?x1xf32>
  %sumexp = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%exp : tensor<?x5xf32>) outs(%z41 : tensor<?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<?x1xf32>
  %lse = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%sumexp : tensor<?x1xf32>) outs(%e41 : tensor<?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = math.log %in : f32
    linalg.yield %0 : f32
  } -> tensor<?x1xf32>
  %logp = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%shifted, %lse : tensor<?x5xf32>, tensor<?x1xf32>) outs(%e45 : tensor<?x5xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %0 = arith.subf %in, %in_0 : f32
    linalg.yield %0 : f32
  } -> tensor<?x5xf32>

  // ---- nll_loss_forward(logp, labels, reduction=mean, ignore_index=-100)
  %e4 = tensor.empty(%n) : tensor<?xf32>
  %nll = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%labels : tensor<?xi64>) outs(%e4 : tensor<?xf32>) {
  ^bb0(%in: i64, %out: f32):
    %0 = arith.index_cast %in : i64 to index
    %1 = arith.cmpi eq, %0, %ignore_idx : index
    %2 = linalg.index 0 : index
    // torch-mlir extracts at the raw label (out of bounds for -100, discarded
    // by the select below); the read is kept in bounds here.
    %safe = arith.select %1, %c0, %0 : index
    %extracted = tensor.extract %logp[%2, %safe] : tensor<?x5xf32>
    %3 = arith.negf %extracted : f32
    %4 = arith.select %1, %cst0, %3 : f32
    linalg.yield %4 : f32
  } -> tensor<?xf32>
  %ei32 = tensor.empty() : tensor<i32>
  %zi32 = linalg.fill ins(%c0_i32 : i32) outs(%ei32 : tensor<i32>) -> tensor<i32>
  %count = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%labels : tensor<?xi64>) outs(%zi32 : tensor<i32>) {
  ^bb0(%in: i64, %out: i32):
    %0 = arith.index_cast %in : i64 to index
    %1 = arith.cmpi ne, %0, %ignore_idx : index
    %2 = arith.extui %1 : i1 to i32
    %3 = arith.addi %out, %2 : i32
    linalg.yield %3 : i32
  } -> tensor<i32>
  %count_s = tensor.extract %count[] : tensor<i32>
  %count_f = arith.sitofp %count_s : i32 to f32
  %ef = tensor.empty() : tensor<f32>
  %zf = linalg.fill ins(%cst0 : f32) outs(%ef : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%nll : tensor<?xf32>) outs(%zf : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.divf %in, %count_f : f32
    %1 = arith.addf %0, %out : f32
    linalg.yield %1 : f32
  } -> tensor<f32>

  // total_weight = numel(labels) - count(labels == ignore_index)
  %ei64 = tensor.empty() : tensor<i64>
  %zi64 = linalg.fill ins(%c0_i64 : i64) outs(%ei64 : tensor<i64>) -> tensor<i64>
  %nignored = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>], iterator_types = ["reduction"]} ins(%labels : tensor<?xi64>) outs(%zi64 : tensor<i64>) {
  ^bb0(%in: i64, %out: i64):
    %0 = arith.cmpi eq, %in, %ignore : i64
    %1 = arith.extui %0 : i1 to i64
    %2 = arith.addi %1, %out : i64
    linalg.yield %2 : i64
  } -> tensor<i64>
  %nignored_s = tensor.extract %nignored[] : tensor<i64>
  %dim0 = tensor.dim %labels, %c0 : tensor<?xi64>
  %numel = arith.index_cast %dim0 : index to i64
  %tw_i = arith.subi %numel, %nignored_s : i64
  %tw_f = arith.sitofp %tw_i : i64 to f32
  %tw = linalg.fill ins(%tw_f : f32) outs(%ef : tensor<f32>) -> tensor<f32>

  // ---- nll_loss_backward(seed, logp, labels, reduction=mean, ignore_index, total_weight)
  %dlogp = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%seed, %labels, %tw : tensor<f32>, tensor<?xi64>, tensor<f32>) outs(%z45 : tensor<?x5xf32>) {
  ^bb0(%in: f32, %in_0: i64, %in_1: f32, %out: f32):
    %0 = arith.index_cast %in_0 : i64 to index
    %1 = linalg.index 1 : index
    %2 = arith.divf %in, %in_1 : f32
    %3 = arith.negf %2 : f32
    %cst1 = arith.constant 1.000000e+00 : f32
    %4 = arith.mulf %cst1, %3 : f32
    %5 = arith.cmpi ne, %0, %1 : index
    %6 = arith.cmpi eq, %0, %ignore_idx : index
    %7 = arith.ori %5, %6 : i1
    %8 = arith.select %7, %cst0, %4 : f32
    linalg.yield %8 : f32
  } -> tensor<?x5xf32>

  // ---- _log_softmax_backward_data: dlogits = dlogp - exp(logp) * sum(dlogp, 1, keepdim)
  %gsum = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%dlogp : tensor<?x5xf32>) outs(%z41 : tensor<?x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<?x1xf32>
  %dlogits = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%dlogp, %logp, %gsum : tensor<?x5xf32>, tensor<?x5xf32>, tensor<?x1xf32>) outs(%e45 : tensor<?x5xf32>) {
  ^bb0(%in: f32, %in_0: f32, %in_1: f32, %out: f32):
    %0 = math.exp %in_0 : f32
    %1 = arith.mulf %0, %in_1 : f32
    %2 = arith.subf %in, %1 : f32
    linalg.yield %2 : f32
  } -> tensor<?x5xf32>

  // ---- dW = x^T @ dlogits, db = sum(dlogits, 0)
  %e34 = tensor.empty(%n) : tensor<3x?xf32>
  %xT = linalg.transpose ins(%x : tensor<?x3xf32>) outs(%e34 : tensor<3x?xf32>) permutation = [1, 0]
  %e35 = tensor.empty() : tensor<3x5xf32>
  %z35 = linalg.fill ins(%cst0 : f32) outs(%e35 : tensor<3x5xf32>) -> tensor<3x5xf32>
  %dW = linalg.matmul ins(%xT, %dlogits : tensor<3x?xf32>, tensor<?x5xf32>) outs(%z35 : tensor<3x5xf32>) -> tensor<3x5xf32>
  %e5 = tensor.empty() : tensor<5xf32>
  %zb = linalg.fill ins(%cst0 : f32) outs(%e5 : tensor<5xf32>) -> tensor<5xf32>
  %db = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%dlogits : tensor<?x5xf32>) outs(%zb : tensor<5xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  } -> tensor<5xf32>
  return %loss, %dW, %db : tensor<f32>, tensor<3x5xf32>, tensor<5xf32>
}

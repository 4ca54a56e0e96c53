// Numerical equivalence test: a small two-layer MLP classifier step (the
// structure of examples/mlp.mlir shrunk to B = 4 samples, 2 features, 3 hidden
// units, 2 classes; single rank, no collective; the results are the loss and
// the four gradients) compiled for one micro-batch, four micro-batches of one
// sample and an unequal 3 + 1 split. Every run must print the same numbers.
// Results are printed as roundeven(1e4 * value), so float32 reassociation
// cannot change the printed digits (every value is at least 0.05 units of the
// last printed digit away from a rounding boundary; the pre-activations a1 are
// all at least 0.0625 away from the ReLU kink).
// Expected values (float64 reference, times 1e4):
//   loss = 0.9193334
//   dW1 = [[0.3632402, 0.0440972, -0.1924571], [-0.3909927, -0.0218749, 0.2711399]]
//   db1 = [0.0769338, 0.0222223, -0.0085558]
//   dW2 = [[0.2578221, -0.2578221], [0.0796874, -0.0796874], [0.0616741, -0.0616741]]
//   db2 = [0.0068446, -0.0068446]
//
// RUN: gacc-opt %s --gacc-pipeline="micro-batches=1" --gacc-inline-micro-batches \
// RUN: | mlir-opt %upstream_lower_to_llvm \
// RUN: | %mlir_run_main \
// RUN: | FileCheck %s

// RUN: gacc-opt %s --gacc-pipeline="micro-batches=4" --gacc-inline-micro-batches \
// RUN: | mlir-opt %upstream_lower_to_llvm \
// RUN: | %mlir_run_main \
// RUN: | FileCheck %s

// RUN: gacc-opt %s --gacc-pipeline="micro-batch-sizes=3,1" --gacc-inline-micro-batches \
// RUN: | mlir-opt %upstream_lower_to_llvm \
// RUN: | %mlir_run_main \
// RUN: | FileCheck %s

// CHECK:      rank = 0
// CHECK-NEXT: [9193]
// CHECK:      rank = 2 offset = 0 sizes = [2, 3]
// CHECK-NEXT: {{\[\[}}3632, 441, -1925],
// CHECK-NEXT:  [-3910, -219, 2711]{{\]}}
// CHECK:      rank = 1 offset = 0 sizes = [3]
// CHECK-NEXT: [769, 222, -86]
// CHECK:      rank = 2 offset = 0 sizes = [3, 2]
// CHECK-NEXT: {{\[\[}}2578, -2578],
// CHECK-NEXT:  [797, -797],
// CHECK-NEXT:  [617, -617]{{\]}}
// CHECK:      rank = 1 offset = 0 sizes = [2]
// CHECK-NEXT: [68, -68]
// CHECK-NOT:  Unranked Memref

func.func @train_step(%W1: tensor<2x3xf32> {gacc.param},
                      %b1: tensor<3xf32> {gacc.param},
                      %W2: tensor<3x2xf32> {gacc.param},
                      %b2: tensor<2xf32> {gacc.param},
                      %x: tensor<4x2xf32> {gacc.batch = 0 : i64},
                      %labels: tensor<4xi64> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss},
        tensor<2x3xf32> {gacc.grad = 0 : i64},
        tensor<3xf32> {gacc.grad = 1 : i64},
        tensor<3x2xf32> {gacc.grad = 2 : i64},
        tensor<2xf32> {gacc.grad = 3 : i64}) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %inv_b = arith.constant dense<0.25> : tensor<f32>

  // ================= forward =================
  // a1 = x W1 + b1 ; h = relu(a1)
  %e43 = tensor.empty() : tensor<4x3xf32>
  %z43 = linalg.fill ins(%zero : f32) outs(%e43 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %xw1 = linalg.matmul ins(%x, %W1 : tensor<4x2xf32>, tensor<2x3xf32>)
                       outs(%z43 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %a1 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%xw1, %b1 : tensor<4x3xf32>, tensor<3xf32>) outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %h = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%a1 : tensor<4x3xf32>) outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %c0 = arith.constant 0.0 : f32
    %r = arith.maximumf %v, %c0 : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>

  // logits = h W2 + b2
  %e42 = tensor.empty() : tensor<4x2xf32>
  %z42 = linalg.fill ins(%zero : f32) outs(%e42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %hw2 = linalg.matmul ins(%h, %W2 : tensor<4x3xf32>, tensor<3x2xf32>)
                       outs(%z42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %logits = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%hw2, %b2 : tensor<4x2xf32>, tensor<2xf32>) outs(%e42 : tensor<4x2xf32>) {
  ^bb0(%v: f32, %b: f32, %o: f32):
    %s = arith.addf %v, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>

  // stable log-softmax: row max over classes (per-sample reduction)
  %e4 = tensor.empty() : tensor<4xf32>
  %m4 = linalg.fill ins(%ninf : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %mx = linalg.reduce ins(%logits : tensor<4x2xf32>) outs(%m4 : tensor<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %m = arith.maximumf %init, %in : f32
      linalg.yield %m : f32
    }
  %ex = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%logits, %mx : tensor<4x2xf32>, tensor<4xf32>) outs(%e42 : tensor<4x2xf32>) {
  ^bb0(%l: f32, %m: f32, %o: f32):
    %s = arith.subf %l, %m : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  } -> tensor<4x2xf32>
  %z4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %sumex = linalg.reduce ins(%ex : tensor<4x2xf32>) outs(%z4 : tensor<4xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %s = arith.addf %init, %in : f32
      linalg.yield %s : f32
    }

  // onehot_ic = (c == labels_i)
  %onehot = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%labels : tensor<4xi64>) outs(%e42 : tensor<4x2xf32>) {
  ^bb0(%lab: i64, %o: f32):
    %c = linalg.index 1 : index
    %ci = arith.index_cast %c : index to i64
    %eq = arith.cmpi eq, %ci, %lab : i64
    %one = arith.constant 1.0 : f32
    %c0 = arith.constant 0.0 : f32
    %v = arith.select %eq, %one, %c0 : f32
    linalg.yield %v : f32
  } -> tensor<4x2xf32>

  // nll_i = -sum_c onehot_ic * (logits_ic - mx_i - log(sumex_i))
  %z4n = linalg.fill ins(%zero : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %nll = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
                       affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%logits, %mx, %sumex, %onehot
          : tensor<4x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4x2xf32>)
      outs(%z4n : tensor<4xf32>) {
  ^bb0(%l: f32, %m: f32, %se: f32, %oh: f32, %acc: f32):
    %s = arith.subf %l, %m : f32
    %lse = math.log %se : f32
    %lp = arith.subf %s, %lse : f32
    %t = arith.mulf %oh, %lp : f32
    %n = arith.negf %t : f32
    %a = arith.addf %acc, %n : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>

  // loss = sum_i nll_i / B
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %nllsum = linalg.reduce ins(%nll : tensor<4xf32>) outs(%z0 : tensor<f32>) dimensions = [0]
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
          : tensor<4x2xf32>, tensor<4xf32>, tensor<4x2xf32>, tensor<f32>)
      outs(%e42 : tensor<4x2xf32>) {
  ^bb0(%e: f32, %se: f32, %oh: f32, %ib: f32, %o: f32):
    %p = arith.divf %e, %se : f32
    %d = arith.subf %p, %oh : f32
    %r = arith.mulf %d, %ib : f32
    linalg.yield %r : f32
  } -> tensor<4x2xf32>

  // dW2 = h^T dlogits   (matmul contracting over the sample dim)
  %e34 = tensor.empty() : tensor<3x4xf32>
  %hT = linalg.transpose ins(%h : tensor<4x3xf32>) outs(%e34 : tensor<3x4xf32>)
          permutation = [1, 0]
  %e32 = tensor.empty() : tensor<3x2xf32>
  %z32 = linalg.fill ins(%zero : f32) outs(%e32 : tensor<3x2xf32>) -> tensor<3x2xf32>
  %dW2 = linalg.matmul ins(%hT, %dlogits : tensor<3x4xf32>, tensor<4x2xf32>)
                       outs(%z32 : tensor<3x2xf32>) -> tensor<3x2xf32>

  // db2 = sum_i dlogits_i
  %e2 = tensor.empty() : tensor<2xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  %db2 = linalg.reduce ins(%dlogits : tensor<4x2xf32>) outs(%z2 : tensor<2xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s = arith.addf %init, %in : f32
      linalg.yield %s : f32
    }

  // dh = dlogits W2^T
  %e23 = tensor.empty() : tensor<2x3xf32>
  %W2T = linalg.transpose ins(%W2 : tensor<3x2xf32>) outs(%e23 : tensor<2x3xf32>)
           permutation = [1, 0]
  %z43b = linalg.fill ins(%zero : f32) outs(%e43 : tensor<4x3xf32>) -> tensor<4x3xf32>
  %dh = linalg.matmul ins(%dlogits, %W2T : tensor<4x2xf32>, tensor<2x3xf32>)
                      outs(%z43b : tensor<4x3xf32>) -> tensor<4x3xf32>

  // da1 = dh * (a1 > 0)
  %da1 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%dh, %a1 : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e43 : tensor<4x3xf32>) {
  ^bb0(%d: f32, %a: f32, %o: f32):
    %c0 = arith.constant 0.0 : f32
    %pos = arith.cmpf ogt, %a, %c0 : f32
    %r = arith.select %pos, %d, %c0 : f32
    linalg.yield %r : f32
  } -> tensor<4x3xf32>

  // dW1 = x^T da1   (matmul contracting over the sample dim)
  %e24 = tensor.empty() : tensor<2x4xf32>
  %xT = linalg.transpose ins(%x : tensor<4x2xf32>) outs(%e24 : tensor<2x4xf32>)
          permutation = [1, 0]
  %z23 = linalg.fill ins(%zero : f32) outs(%e23 : tensor<2x3xf32>) -> tensor<2x3xf32>
  %dW1 = linalg.matmul ins(%xT, %da1 : tensor<2x4xf32>, tensor<4x3xf32>)
                       outs(%z23 : tensor<2x3xf32>) -> tensor<2x3xf32>

  // db1 = sum_i da1_i
  %e3 = tensor.empty() : tensor<3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %db1 = linalg.reduce ins(%da1 : tensor<4x3xf32>) outs(%z3 : tensor<3xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s = arith.addf %init, %in : f32
      linalg.yield %s : f32
    }

  return %loss, %dW1, %db1, %dW2, %db2
      : tensor<f32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<2xf32>
}

// Prints roundeven(1e4 * result) for every result.
func.func @main() {
  %W1 = arith.constant dense<[[0.5, -0.25, 0.75], [-0.5, 1.0, 0.25]]> : tensor<2x3xf32>
  %b1 = arith.constant dense<[0.125, -0.3125, 0.0625]> : tensor<3xf32>
  %W2 = arith.constant dense<[[1.0, -0.5], [0.25, 0.75], [-0.75, 0.5]]> : tensor<3x2xf32>
  %b2 = arith.constant dense<[0.25, -0.125]> : tensor<2xf32>
  %x = arith.constant dense<[[1.0, 0.5], [-0.5, 1.5], [2.0, -1.0], [0.25, 0.75]]> : tensor<4x2xf32>
  %labels = arith.constant dense<[0, 1, 1, 0]> : tensor<4xi64>
  %scale = arith.constant 1.0e4 : f32
  %r:5 = call @train_step(%W1, %b1, %W2, %b2, %x, %labels)
      : (tensor<2x3xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<2xf32>, tensor<4x2xf32>, tensor<4xi64>)
      -> (tensor<f32>, tensor<2x3xf32>, tensor<3xf32>, tensor<3x2xf32>, tensor<2xf32>)
  %e0 = tensor.empty() : tensor<f32>
  %q0 = linalg.generic {indexing_maps = [affine_map<() -> ()>, affine_map<() -> ()>], iterator_types = []}
      ins(%r#0 : tensor<f32>) outs(%e0 : tensor<f32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %scale : f32
    %n = math.roundeven %s : f32
    linalg.yield %n : f32
  } -> tensor<f32>
  %buf0 = bufferization.to_buffer %q0 : tensor<f32> to memref<f32>
  %u0 = memref.cast %buf0 : memref<f32> to memref<*xf32>
  call @printMemrefF32(%u0) : (memref<*xf32>) -> ()
  %e1 = tensor.empty() : tensor<2x3xf32>
  %q1 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%r#1 : tensor<2x3xf32>) outs(%e1 : tensor<2x3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %scale : f32
    %n = math.roundeven %s : f32
    linalg.yield %n : f32
  } -> tensor<2x3xf32>
  %buf1 = bufferization.to_buffer %q1 : tensor<2x3xf32> to memref<2x3xf32>
  %u1 = memref.cast %buf1 : memref<2x3xf32> to memref<*xf32>
  call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %e2 = tensor.empty() : tensor<3xf32>
  %q2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%r#2 : tensor<3xf32>) outs(%e2 : tensor<3xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %scale : f32
    %n = math.roundeven %s : f32
    linalg.yield %n : f32
  } -> tensor<3xf32>
  %buf2 = bufferization.to_buffer %q2 : tensor<3xf32> to memref<3xf32>
  %u2 = memref.cast %buf2 : memref<3xf32> to memref<*xf32>
  call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  %e3 = tensor.empty() : tensor<3x2xf32>
  %q3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%r#3 : tensor<3x2xf32>) outs(%e3 : tensor<3x2xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %scale : f32
    %n = math.roundeven %s : f32
    linalg.yield %n : f32
  } -> tensor<3x2xf32>
  %buf3 = bufferization.to_buffer %q3 : tensor<3x2xf32> to memref<3x2xf32>
  %u3 = memref.cast %buf3 : memref<3x2xf32> to memref<*xf32>
  call @printMemrefF32(%u3) : (memref<*xf32>) -> ()
  %e4 = tensor.empty() : tensor<2xf32>
  %q4 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%r#4 : tensor<2xf32>) outs(%e4 : tensor<2xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.mulf %v, %scale : f32
    %n = math.roundeven %s : f32
    linalg.yield %n : f32
  } -> tensor<2xf32>
  %buf4 = bufferization.to_buffer %q4 : tensor<2xf32> to memref<2xf32>
  %u4 = memref.cast %buf4 : memref<2xf32> to memref<*xf32>
  call @printMemrefF32(%u4) : (memref<*xf32>) -> ()
  return
}

func.func private @printMemrefF32(memref<*xf32>)

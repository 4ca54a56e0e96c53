//===- TorchMlirFormsTest.cpp - LibTorch evaluator: torch-mlir's forms ----===//
//
// The forms torch-mlir's TorchToLinalg (and tosa-to-linalg) emit, each against
// LibTorch and with autograd gradients (lib/Check/EvalLinalg.cpp above all):
// log_softmax and softmax with keepdim maps, arg-max/min, embedding gathers,
// layer norm, batch-1 constant indices, convolutions forward and backward,
// pooling, and nll_loss with its out-of-bounds extract.
//
//===----------------------------------------------------------------------===//

#include "EvaluatorTest.h"

using namespace mlir;
using namespace mlir::gacc::torch_eval_test;

namespace {

// log_softmax and softmax as torch-mlir lowers them after decomposition:
// aten.max.dim (values and an unused index result in one generic, then
// expand_shape to keepdim), keepdim sums with `(d0, 0)` output maps, and
// `(d0, 0)` broadcasts of the [N, 1] statistics.
TEST_F(EvaluatorTest, KeepdimReductionsLikeTorchMlirSoftmax) {
  func::FuncOp f = parse(R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
#keep = affine_map<(d0, d1) -> (d0, 0)>
func.func @log_softmax(%x: tensor<4x5xf32>)
    -> (tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x1xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %c0i = arith.constant 0 : i64
  %ev = tensor.empty() : tensor<4xf32>
  %fv = linalg.fill ins(%ninf : f32) outs(%ev : tensor<4xf32>) -> tensor<4xf32>
  %ei = tensor.empty() : tensor<4xi64>
  %fi = linalg.fill ins(%c0i : i64) outs(%ei : tensor<4xi64>) -> tensor<4xi64>
  %max:2 = linalg.generic {indexing_maps = [#map, #red, #red],
                           iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x5xf32>) outs(%fv, %fi : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %old: f32, %oldi: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %m = arith.maximumf %in, %old : f32
    %gt = arith.cmpf ogt, %in, %old : f32
    %sel = arith.select %gt, %ii, %oldi : i64
    linalg.yield %m, %sel : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  %maxk = tensor.expand_shape %max#0 [[0, 1]] output_shape [4, 1]
      : tensor<4xf32> into tensor<4x1xf32>
  %e = tensor.empty() : tensor<4x5xf32>
  %sub = linalg.generic {indexing_maps = [#map, #keep, #map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x, %maxk : tensor<4x5xf32>, tensor<4x1xf32>)
      outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %exp = linalg.generic {indexing_maps = [#map, #map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%sub : tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.exp %a : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %e41 = tensor.empty() : tensor<4x1xf32>
  %z41 = linalg.fill ins(%zero : f32) outs(%e41 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %sum = linalg.generic {indexing_maps = [#map, #keep],
                         iterator_types = ["parallel", "reduction"]}
      ins(%exp : tensor<4x5xf32>) outs(%z41 : tensor<4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %log = linalg.generic {indexing_maps = [#map, #map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<4x1xf32>) outs(%e41 : tensor<4x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = math.log %a : f32
    linalg.yield %s : f32
  } -> tensor<4x1xf32>
  %ls = linalg.generic {indexing_maps = [#map, #keep, #map],
                        iterator_types = ["parallel", "parallel"]}
      ins(%sub, %log : tensor<4x5xf32>, tensor<4x1xf32>)
      outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.subf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %sm = linalg.generic {indexing_maps = [#map, #keep, #map],
                        iterator_types = ["parallel", "parallel"]}
      ins(%exp, %sum : tensor<4x5xf32>, tensor<4x1xf32>)
      outs(%e : tensor<4x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.divf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  return %ls, %sm, %sum : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x1xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(11);
  Tensor x = (torch::randn({4, 5}, torch::kDouble) * 3).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {x}, torch::kFloat64);
  ASSERT_EQ(r.size(), 3u);
  Tensor ls = torch::log_softmax(x, 1), sm = torch::softmax(x, 1);
  EXPECT_LE(relError(r[0], ls), 1e-14);
  EXPECT_LE(relError(r[1], sm), 1e-14);
  Tensor shifted = x - std::get<0>(x.max(1, /*keepdim=*/true));
  EXPECT_LE(relError(r[2], shifted.exp().sum(1, /*keepdim=*/true)), 1e-14);
  // Autograd flows through the max, the keepdim sums and the broadcasts.
  Tensor seed = torch::randn({4, 5}, torch::kDouble);
  EXPECT_LE(
      relError(gradients(r[0], seed, {x})[0], gradients(ls, seed, {x})[0]),
      1e-13);
  EXPECT_LE(
      relError(gradients(r[1], seed, {x})[0], gradients(sm, seed, {x})[0]),
      1e-13);
  // Float32 agrees.
  std::vector<Tensor> r32 =
      evaluate(f, {x.detach().to(torch::kFloat)}, torch::kFloat32);
  ASSERT_EQ(r32.size(), 3u);
  EXPECT_LE(relError(r32[0], ls), 1e-6);
}

// aten.max.dim / argmax as TorchToLinalg lowers them: one generic yields the
// running maximum and `select(cmpf ogt, index_cast(linalg.index 1), idx)`;
// ties keep the first index, an initial value that is not beaten keeps the
// initial index.
TEST_F(EvaluatorTest, ArgMaxAndArgMinLikeTorchMlir) {
  func::FuncOp f = parse(R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @argmax(%x: tensor<3x4xf32>)
    -> (tensor<3xf32>, tensor<3xi64>, tensor<3xf32>, tensor<3xi64>) {
  %ninf = arith.constant 0xFF800000 : f32
  %m2 = arith.constant -2.0 : f32
  %c0i = arith.constant 0 : i64
  %c7i = arith.constant 7 : i64
  %ev = tensor.empty() : tensor<3xf32>
  %fv = linalg.fill ins(%ninf : f32) outs(%ev : tensor<3xf32>) -> tensor<3xf32>
  %gv = linalg.fill ins(%m2 : f32) outs(%ev : tensor<3xf32>) -> tensor<3xf32>
  %ei = tensor.empty() : tensor<3xi64>
  %fi = linalg.fill ins(%c0i : i64) outs(%ei : tensor<3xi64>) -> tensor<3xi64>
  %gi = linalg.fill ins(%c7i : i64) outs(%ei : tensor<3xi64>) -> tensor<3xi64>
  %max:2 = linalg.generic {indexing_maps = [#map, #red, #red],
                           iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%fv, %fi : tensor<3xf32>, tensor<3xi64>) {
  ^bb0(%in: f32, %old: f32, %oldi: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %m = arith.maximumf %in, %old : f32
    %gt = arith.cmpf ogt, %in, %old : f32
    %sel = arith.select %gt, %ii, %oldi : i64
    linalg.yield %m, %sel : f32, i64
  } -> (tensor<3xf32>, tensor<3xi64>)
  %min:2 = linalg.generic {indexing_maps = [#map, #red, #red],
                           iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%gv, %gi : tensor<3xf32>, tensor<3xi64>) {
  ^bb0(%in: f32, %old: f32, %oldi: i64):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i64
    %m = arith.minimumf %in, %old : f32
    %lt = arith.cmpf olt, %in, %old : f32
    %sel = arith.select %lt, %ii, %oldi : i64
    linalg.yield %m, %sel : f32, i64
  } -> (tensor<3xf32>, tensor<3xi64>)
  return %max#0, %max#1, %min#0, %min#1
      : tensor<3xf32>, tensor<3xi64>, tensor<3xf32>, tensor<3xi64>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor x = torch::tensor({{1.0f, 5.0f, 5.0f, 2.0f},
                            {-1.0f, -1.0f, -3.0f, -3.0f},
                            {0.f, 0.f, 0.f, 0.f}});
  std::vector<Tensor> r = evaluate(f, {x}, torch::kFloat32);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(torch::equal(r[0], torch::tensor({5.0f, -1.0f, 0.0f})));
  EXPECT_TRUE(torch::equal(r[1], torch::tensor(std::vector<int64_t>{1, 0, 0})));
  EXPECT_TRUE(torch::equal(r[2], torch::tensor({-2.0f, -3.0f, -2.0f})));
  EXPECT_TRUE(torch::equal(r[3], torch::tensor(std::vector<int64_t>{7, 2, 7})));
  // NaN has no defined arg-max here: an error, not a number.
  Tensor xn = x.clone();
  xn[0][1] = std::nanf("");
  std::string diag = evaluateExpectingFailure(f, {xn}, torch::kFloat32);
  EXPECT_NE(diag.find("arg-max/min of values that contain NaN"),
            std::string::npos)
      << diag;
}

// tosa.argmax as tosa-to-linalg lowers it: both outputs are selects on
// `cmpf ugt %in, %max and cmpf ord %max, %max` (NaN-propagating); a select
// max (`select(x < out, x, out)` for a min) without an index output too.
TEST_F(EvaluatorTest, ArgMaxAndSelectMaxLikeTosa) {
  func::FuncOp f = parse(R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @argmax(%x: tensor<3x4xf32>)
    -> (tensor<3xi32>, tensor<3xf32>, tensor<3xf32>) {
  %lowest = arith.constant -3.40282347E+38 : f32
  %c0i = arith.constant 0 : i32
  %big = arith.constant 3.0 : f32
  %ev = tensor.empty() : tensor<3xf32>
  %fv = linalg.fill ins(%lowest : f32) outs(%ev : tensor<3xf32>) -> tensor<3xf32>
  %gv = linalg.fill ins(%big : f32) outs(%ev : tensor<3xf32>) -> tensor<3xf32>
  %ei = tensor.empty() : tensor<3xi32>
  %fi = linalg.fill ins(%c0i : i32) outs(%ei : tensor<3xi32>) -> tensor<3xi32>
  %am:2 = linalg.generic {indexing_maps = [#map, #red, #red],
                          iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%fi, %fv : tensor<3xi32>, tensor<3xf32>) {
  ^bb0(%in: f32, %oldi: i32, %old: f32):
    %i = linalg.index 1 : index
    %ii = arith.index_cast %i : index to i32
    %gt = arith.cmpf ugt, %in, %old : f32
    %ord = arith.cmpf ord, %old, %old : f32
    %take = arith.andi %gt, %ord : i1
    %m = arith.select %take, %in, %old : f32
    %sel = arith.select %take, %ii, %oldi : i32
    linalg.yield %sel, %m : i32, f32
  } -> (tensor<3xi32>, tensor<3xf32>)
  %min = linalg.generic {indexing_maps = [#map, #red],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xf32>) outs(%gv : tensor<3xf32>) {
  ^bb0(%in: f32, %old: f32):
    %lt = arith.cmpf olt, %in, %old : f32
    %m = arith.select %lt, %in, %old : f32
    linalg.yield %m : f32
  } -> tensor<3xf32>
  return %am#0, %am#1, %min : tensor<3xi32>, tensor<3xf32>, tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor x = torch::tensor({{1.0f, 5.0f, 5.0f, 2.0f},
                            {-1.0f, -1.0f, -3.0f, -3.0f},
                            {4.f, 6.f, 4.f, 5.f}});
  std::vector<Tensor> r = evaluate(f, {x}, torch::kFloat32);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(torch::equal(r[0], torch::tensor(std::vector<int32_t>{1, 0, 1})));
  EXPECT_TRUE(torch::equal(r[1], torch::tensor({5.0f, -1.0f, 6.0f})));
  EXPECT_TRUE(torch::equal(r[2], torch::tensor({1.0f, -3.0f, 3.0f})));
  // With NaN the select forms are not max/min: an error, not a number.
  Tensor xn = x.clone();
  xn[2][3] = std::nanf("");
  std::string diag = evaluateExpectingFailure(f, {xn}, torch::kFloat32);
  EXPECT_NE(diag.find("that contain NaN"), std::string::npos) << diag;
}

// aten.embedding as TorchToLinalg lowers it: a generic over [indices...,
// D] that gathers `tensor.extract %weight[index_cast(ids), linalg.index 2]`;
// the gradient of the weight accumulates over repeated ids. And a keepdim
// output on the einsum fast path (`out[i, 0] += x[i, j] * x[i, j]`).
TEST_F(EvaluatorTest, EmbeddingGatherAndKeepdimContraction) {
  func::FuncOp f = parse(R"mlir(
func.func @embed(%ids: tensor<2x3xi64>, %w: tensor<5x4xf32>)
    -> (tensor<2x3x4xf32>, tensor<5x1xf32>) {
  %e = tensor.empty() : tensor<2x3x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1)>,
                                        affine_map<(d0, d1, d2) -> (d0, d1, d2)>],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%ids : tensor<2x3xi64>) outs(%e : tensor<2x3x4xf32>) {
  ^bb0(%id: i64, %o: f32):
    %i = arith.index_cast %id : i64 to index
    %j = linalg.index 2 : index
    %v = tensor.extract %w[%i, %j] : tensor<5x4xf32>
    linalg.yield %v : f32
  } -> tensor<2x3x4xf32>
  %zero = arith.constant 0.0 : f32
  %e51 = tensor.empty() : tensor<5x1xf32>
  %z51 = linalg.fill ins(%zero : f32) outs(%e51 : tensor<5x1xf32>) -> tensor<5x1xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                         affine_map<(d0, d1) -> (d0, d1)>,
                                         affine_map<(d0, d1) -> (d0, 0)>],
                        iterator_types = ["parallel", "reduction"]}
      ins(%w, %w : tensor<5x4xf32>, tensor<5x4xf32>) outs(%z51 : tensor<5x1xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<5x1xf32>
  return %r, %sq : tensor<2x3x4xf32>, tensor<5x1xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(16);
  Tensor ids =
      torch::tensor(std::vector<int64_t>{0, 4, 4, 2, 0, 4}).reshape({2, 3});
  Tensor w = torch::randn({5, 4}, torch::kDouble).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {ids, w}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  Tensor ref = torch::embedding(w, ids);
  EXPECT_TRUE(torch::equal(r[0], ref));
  EXPECT_LE(relError(r[1], (w * w).sum(1, /*keepdim=*/true)), 1e-15);
  Tensor seed = torch::randn({2, 3, 4}, torch::kDouble);
  EXPECT_LE(
      relError(gradients(r[0], seed, {w})[0], gradients(ref, seed, {w})[0]),
      1e-15);
  EXPECT_LE(relError(torch::autograd::grad({r[1].sum()}, {w})[0], 2 * w),
            1e-15);
}

// Layer norm over the last dimension as TorchToLinalg writes it: keepdim
// mean and variance ([N, 1] outputs through `(d0, 0)`), then the normalized
// value with `(d0, 0)` broadcasts and an affine [D] scale and shift.
TEST_F(EvaluatorTest, LayerNormWithKeepdimMaps) {
  func::FuncOp f = parse(R"mlir(
#map = affine_map<(d0, d1) -> (d0, d1)>
#keep = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @layer_norm(%x: tensor<3x6xf32>, %g: tensor<6xf32>, %b: tensor<6xf32>)
    -> tensor<3x6xf32> {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 6.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  %e31 = tensor.empty() : tensor<3x1xf32>
  %z31 = linalg.fill ins(%zero : f32) outs(%e31 : tensor<3x1xf32>) -> tensor<3x1xf32>
  %sum = linalg.generic {indexing_maps = [#map, #keep],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x6xf32>) outs(%z31 : tensor<3x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<3x1xf32>
  %e = tensor.empty() : tensor<3x6xf32>
  %cen = linalg.generic {indexing_maps = [#map, #keep, #map],
                         iterator_types = ["parallel", "parallel"]}
      ins(%x, %sum : tensor<3x6xf32>, tensor<3x1xf32>) outs(%e : tensor<3x6xf32>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %m = arith.divf %s, %n : f32
    %c = arith.subf %a, %m : f32
    linalg.yield %c : f32
  } -> tensor<3x6xf32>
  %ss = linalg.generic {indexing_maps = [#map, #keep],
                        iterator_types = ["parallel", "reduction"]}
      ins(%cen : tensor<3x6xf32>) outs(%z31 : tensor<3x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sq = arith.mulf %a, %a : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<3x1xf32>
  %y = linalg.generic {indexing_maps = [#map, #keep, #col, #col, #map],
                       iterator_types = ["parallel", "parallel"]}
      ins(%cen, %ss, %g, %b : tensor<3x6xf32>, tensor<3x1xf32>, tensor<6xf32>, tensor<6xf32>)
      outs(%e : tensor<3x6xf32>) {
  ^bb0(%c: f32, %s: f32, %gi: f32, %bi: f32, %o: f32):
    %var = arith.divf %s, %n : f32
    %ve = arith.addf %var, %eps : f32
    %r = math.rsqrt %ve : f32
    %nrm = arith.mulf %c, %r : f32
    %sc = arith.mulf %nrm, %gi : f32
    %sh = arith.addf %sc, %bi : f32
    linalg.yield %sh : f32
  } -> tensor<3x6xf32>
  return %y : tensor<3x6xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(12);
  Tensor x = torch::randn({3, 6}, torch::kDouble).requires_grad_(true);
  Tensor g = torch::randn({6}, torch::kDouble).requires_grad_(true);
  Tensor b = torch::randn({6}, torch::kDouble).requires_grad_(true);
  // The f32 constant 1e-5 is what the graph uses, also in float64.
  double eps = static_cast<double>(1.0e-5f);
  std::vector<Tensor> r = evaluate(f, {x, g, b}, torch::kFloat64);
  ASSERT_EQ(r.size(), 1u);
  Tensor ref = torch::layer_norm(x, {6}, g, b, eps);
  EXPECT_LE(relError(r[0], ref), 1e-13);
  Tensor seed = torch::randn({3, 6}, torch::kDouble);
  std::vector<Tensor> got = gradients(r[0], seed, {x, g, b});
  std::vector<Tensor> want = gradients(ref, seed, {x, g, b});
  for (unsigned i = 0; i < 3; ++i)
    EXPECT_LE(relError(got[i], want[i]), 1e-12) << "input #" << i;
}

// Batch-1 graphs: maps that index a size-1 dimension with the constant 0,
// on inputs (`(d0) -> (0)` broadcasts) and on outputs (a keepdim total).
TEST_F(EvaluatorTest, ConstantZeroIndicesOfSizeOneDimensions) {
  func::FuncOp f = parse(R"mlir(
func.func @batch1(%s: tensor<1xf32>, %x: tensor<1x3xf32>)
    -> (tensor<3xf32>, tensor<1xf32>, tensor<1x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %e3 = tensor.empty() : tensor<3xf32>
  %bc = linalg.generic {indexing_maps = [affine_map<(d0) -> (0)>,
                                         affine_map<(d0) -> (0, d0)>,
                                         affine_map<(d0) -> (d0)>],
                        iterator_types = ["parallel"]}
      ins(%s, %x : tensor<1xf32>, tensor<1x3xf32>) outs(%e3 : tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<3xf32>
  %e1 = tensor.empty() : tensor<1xf32>
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1xf32>) -> tensor<1xf32>
  %tot = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                          affine_map<(d0) -> (0)>],
                         iterator_types = ["reduction"]}
      ins(%bc : tensor<3xf32>) outs(%z1 : tensor<1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  } -> tensor<1xf32>
  %e13 = tensor.empty() : tensor<1x3xf32>
  %sq = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (0, d1)>,
                                         affine_map<(d0, d1) -> (d0, d1)>],
                        iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<1x3xf32>) outs(%e13 : tensor<1x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %a, %a : f32
    linalg.yield %t : f32
  } -> tensor<1x3xf32>
  return %bc, %tot, %sq : tensor<3xf32>, tensor<1xf32>, tensor<1x3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor s = torch::tensor({2.0}, torch::kDouble).requires_grad_(true);
  Tensor x = torch::tensor({{1.0, -2.0, 4.0}}, torch::kDouble);
  std::vector<Tensor> r = evaluate(f, {s, x}, torch::kFloat64);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_TRUE(torch::equal(r[0].detach(),
                           torch::tensor({2.0, -4.0, 8.0}, torch::kDouble)));
  EXPECT_TRUE(
      torch::equal(r[1].detach(), torch::tensor({6.0}, torch::kDouble)));
  EXPECT_TRUE(torch::equal(r[2], x * x));
  Tensor g = torch::autograd::grad({r[1].sum()}, {s})[0];
  EXPECT_EQ(g.item<double>(), 3.0);
}

// A keepdim output whose constant index is not the only position: the other
// positions keep the output operand's values.
TEST_F(EvaluatorTest, ConstantOutputIndexWritesOnlyItsPosition) {
  func::FuncOp f = parse(R"mlir(
func.func @col(%x: tensor<2x3xf32>, %init: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                        affine_map<(d0, d1) -> (d0, 2)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x3xf32>) outs(%init : tensor<2x4xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.maximumf %acc, %a : f32
    linalg.yield %t : f32
  } -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor x =
      torch::tensor({{1.0, 5.0, 3.0}, {-1.0, -7.0, -2.0}}, torch::kDouble);
  Tensor init = torch::full({2, 4}, -3.0, torch::kDouble);
  std::vector<Tensor> r = evaluate(f, {x, init}, torch::kFloat64);
  ASSERT_EQ(r.size(), 1u);
  Tensor want = init.clone();
  want.index_put_({torch::indexing::Slice(), 2},
                  torch::tensor({5.0, -1.0}, torch::kDouble));
  EXPECT_TRUE(torch::equal(r[0], want)) << r[0];
}

// A padded, strided convolution as TorchToLinalg lowers aten.convolution
// (tensor.pad, linalg.broadcast of the bias, linalg.conv_2d_nchw_fchw) and
// aten.convolution_backward: the input gradient as a generic over the
// gradient scattered with strides by insert_slice and the weight flipped by
// an extract-gather, `(d0, d4, d5 + d2, d6 + d3)`; the weight gradient as a
// generic over the padded input, `(d4, d1, d2 + d5 * 2, d3 + d6 * 2)`.
TEST_F(EvaluatorTest, ConvolutionForwardAndBackwardLikeTorchMlir) {
  func::FuncOp f = parse(R"mlir(
func.func @conv(%x: tensor<2x3x7x7xf32>, %w: tensor<4x3x3x3xf32>,
                %bias: tensor<4xf32>, %gy: tensor<2x4x4x4xf32>)
    -> (tensor<2x4x4x4xf32>, tensor<2x3x7x7xf32>, tensor<4x3x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<2x3x7x7xf32> to tensor<2x3x9x9xf32>
  %ey = tensor.empty() : tensor<2x4x4x4xf32>
  %yb = linalg.broadcast ins(%bias : tensor<4xf32>)
          outs(%ey : tensor<2x4x4x4xf32>) dimensions = [0, 2, 3]
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>,
                                 strides = dense<2> : tensor<2xi64>}
         ins(%xp, %w : tensor<2x3x9x9xf32>, tensor<4x3x3x3xf32>)
         outs(%yb : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>

  // Input gradient.
  %ew = tensor.empty() : tensor<4x3x3x3xf32>
  %wf = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>,
                       affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%w : tensor<4x3x3x3xf32>) outs(%ew : tensor<4x3x3x3xf32>) {
  ^bb0(%a: f32, %o: f32):
    %c2 = arith.constant 2 : index
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %f2 = arith.subi %c2, %i2 : index
    %f3 = arith.subi %c2, %i3 : index
    %v = tensor.extract %w[%i0, %i1, %f2, %f3] : tensor<4x3x3x3xf32>
    linalg.yield %v : f32
  } -> tensor<4x3x3x3xf32>
  %z = arith.constant dense<0.0> : tensor<2x4x9x9xf32>
  %gys = tensor.insert_slice %gy into %z[0, 0, 1, 1] [2, 4, 4, 4] [1, 1, 2, 2]
           : tensor<2x4x4x4xf32> into tensor<2x4x9x9xf32>
  %ex = tensor.empty() : tensor<2x3x7x7xf32>
  %zx = linalg.fill ins(%zero : f32) outs(%ex : tensor<2x3x7x7xf32>) -> tensor<2x3x7x7xf32>
  %gx = linalg.generic {
      indexing_maps = [
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d5 + d2, d6 + d3)>,
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d1, d5, d6)>,
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel",
                        "reduction", "reduction", "reduction"]}
      ins(%gys, %wf : tensor<2x4x9x9xf32>, tensor<4x3x3x3xf32>)
      outs(%zx : tensor<2x3x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x3x7x7xf32>

  // Weight gradient.
  %zw = linalg.fill ins(%zero : f32) outs(%ew : tensor<4x3x3x3xf32>) -> tensor<4x3x3x3xf32>
  %gw = linalg.generic {
      indexing_maps = [
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d1, d2 + d5 * 2, d3 + d6 * 2)>,
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d0, d5, d6)>,
        affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel",
                        "reduction", "reduction", "reduction"]}
      ins(%xp, %gy : tensor<2x3x9x9xf32>, tensor<2x4x4x4xf32>)
      outs(%zw : tensor<4x3x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4x3x3x3xf32>
  return %y, %gx, %gw
      : tensor<2x4x4x4xf32>, tensor<2x3x7x7xf32>, tensor<4x3x3x3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(13);
  Tensor x = torch::randn({2, 3, 7, 7}, torch::kDouble).requires_grad_(true);
  Tensor w = torch::randn({4, 3, 3, 3}, torch::kDouble).requires_grad_(true);
  Tensor bias = torch::randn({4}, torch::kDouble).requires_grad_(true);
  Tensor gy = torch::randn({2, 4, 4, 4}, torch::kDouble);
  std::vector<Tensor> r = evaluate(f, {x, w, bias, gy}, torch::kFloat64);
  ASSERT_EQ(r.size(), 3u);
  Tensor y = torch::conv2d(x, w, bias, /*stride=*/{2, 2},
                           /*padding=*/at::IntArrayRef{1, 1});
  EXPECT_LE(relError(r[0], y), 1e-14);
  std::vector<Tensor> want = gradients(y, gy, {x, w, bias});
  // The graph's backward forms compute what autograd computes ...
  EXPECT_LE(relError(r[1], want[0]), 1e-14);
  EXPECT_LE(relError(r[2], want[1]), 1e-14);
  // ... and autograd flows through the evaluated forward convolution.
  std::vector<Tensor> got = gradients(r[0], gy, {x, w, bias});
  for (unsigned i = 0; i < 3; ++i)
    EXPECT_LE(relError(got[i], want[i]), 1e-14) << "input #" << i;
  // Float32 agrees.
  std::vector<Tensor> r32 =
      evaluate(f,
               {x.detach().to(torch::kFloat), w.detach().to(torch::kFloat),
                bias.detach().to(torch::kFloat), gy.to(torch::kFloat)},
               torch::kFloat32);
  ASSERT_EQ(r32.size(), 3u);
  for (unsigned j = 0; j < 3; ++j)
    EXPECT_LE(relError(r32[j], r[j]), 1e-5) << "result #" << j;
}

// The other named convolution and pooling ops, with strides and dilations.
TEST_F(EvaluatorTest, NamedConvolutionAndPoolingOps) {
  func::FuncOp f = parse(R"mlir(
func.func @named(%x: tensor<2x3x7x7xf32>, %dw: tensor<3x3x3xf32>,
                 %xh: tensor<2x7x7x3xf32>, %wh: tensor<3x3x3x4xf32>)
    -> (tensor<2x3x3x3xf32>, tensor<2x5x5x4xf32>, tensor<2x3x3x3xf32>,
        tensor<2x3x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<2x3x3x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  %dconv = linalg.depthwise_conv_2d_nchw_chw
      {dilations = dense<2> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %dw : tensor<2x3x7x7xf32>, tensor<3x3x3xf32>)
      outs(%z : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  %eh = tensor.empty() : tensor<2x5x5x4xf32>
  %zh = linalg.fill ins(%zero : f32) outs(%eh : tensor<2x5x5x4xf32>) -> tensor<2x5x5x4xf32>
  %hconv = linalg.conv_2d_nhwc_hwcf
      {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%xh, %wh : tensor<2x7x7x3xf32>, tensor<3x3x3x4xf32>)
      outs(%zh : tensor<2x5x5x4xf32>) -> tensor<2x5x5x4xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %m = linalg.fill ins(%ninf : f32) outs(%e : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  %maxp = linalg.pooling_nchw_max
      {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %win : tensor<2x3x7x7xf32>, tensor<3x3xf32>)
      outs(%m : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  %sump = linalg.pooling_nchw_sum
      {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %win : tensor<2x3x7x7xf32>, tensor<3x3xf32>)
      outs(%z : tensor<2x3x3x3xf32>) -> tensor<2x3x3x3xf32>
  return %dconv, %hconv, %maxp, %sump
      : tensor<2x3x3x3xf32>, tensor<2x5x5x4xf32>, tensor<2x3x3x3xf32>,
        tensor<2x3x3x3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(14);
  Tensor x = torch::randn({2, 3, 7, 7}, torch::kDouble).requires_grad_(true);
  Tensor dw = torch::randn({3, 3, 3}, torch::kDouble).requires_grad_(true);
  Tensor xh = torch::randn({2, 7, 7, 3}, torch::kDouble).requires_grad_(true);
  Tensor wh = torch::randn({3, 3, 3, 4}, torch::kDouble).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {x, dw, xh, wh}, torch::kFloat64);
  ASSERT_EQ(r.size(), 4u);
  std::vector<Tensor> want = {
      torch::conv2d(x, dw.unsqueeze(1), Tensor(), /*stride=*/{1, 1},
                    /*padding=*/at::IntArrayRef{0, 0}, /*dilation=*/{2, 2},
                    /*groups=*/3),
      torch::conv2d(xh.permute({0, 3, 1, 2}), wh.permute({3, 2, 0, 1}))
          .permute({0, 2, 3, 1}),
      torch::max_pool2d(x, 3, 2), torch::avg_pool2d(x, 3, 2) * 9};
  for (unsigned j = 0; j < 4; ++j) {
    EXPECT_LE(relError(r[j], want[j]), 1e-14) << "result #" << j;
    Tensor seed = torch::randn(want[j].sizes(), torch::kDouble);
    std::vector<Tensor> inputs = {x, dw, xh, wh};
    std::vector<Tensor> got = gradients(r[j], seed, inputs);
    std::vector<Tensor> ref = gradients(want[j], seed, inputs);
    for (unsigned i = 0; i < 4; ++i) {
      ASSERT_EQ(got[i].defined(), ref[i].defined()) << j << " " << i;
      if (ref[i].defined()) {
        EXPECT_LE(relError(got[i], ref[i]), 1e-13)
            << "result #" << j << ", input #" << i;
      }
    }
  }
}

// nll_loss as TorchToLinalg lowers aten.nll_loss_forward (mean, ignore_index
// -100) and aten.nll_loss_backward: the per-sample generic gathers
// `tensor.extract %logp[linalg.index 0, target]` also for ignored targets (an
// out-of-bounds read whose value the select discards), the count of valid
// targets is an integer reduction, the backward a generic over [N, C].
TEST_F(EvaluatorTest, NllLossGatherLikeTorchMlir) {
  func::FuncOp f = parse(R"mlir(
func.func @nll(%logp: tensor<4x5xf32>, %t: tensor<4xi64>)
    -> (tensor<f32>, tensor<4x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %ig = arith.constant -100 : i64
  %ign = arith.index_cast %ig : i64 to index
  %e4 = tensor.empty() : tensor<4xf32>
  %per = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                          affine_map<(d0) -> (d0)>],
                         iterator_types = ["parallel"]}
      ins(%t : tensor<4xi64>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%tv: i64, %o: f32):
    %it = arith.index_cast %tv : i64 to index
    %eq = arith.cmpi eq, %it, %ign : index
    %i = linalg.index 0 : index
    %v = tensor.extract %logp[%i, %it] : tensor<4x5xf32>
    %n = arith.negf %v : f32
    %s = arith.select %eq, %zero, %n : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %zi = arith.constant 0 : i32
  %ei = tensor.empty() : tensor<i32>
  %fi = linalg.fill ins(%zi : i32) outs(%ei : tensor<i32>) -> tensor<i32>
  %cnt = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                          affine_map<(d0) -> ()>],
                         iterator_types = ["reduction"]}
      ins(%t : tensor<4xi64>) outs(%fi : tensor<i32>) {
  ^bb0(%tv: i64, %acc: i32):
    %it = arith.index_cast %tv : i64 to index
    %ne = arith.cmpi ne, %it, %ign : index
    %x = arith.extui %ne : i1 to i32
    %a = arith.addi %acc, %x : i32
    linalg.yield %a : i32
  } -> tensor<i32>
  %cv = tensor.extract %cnt[] : tensor<i32>
  %cf = arith.sitofp %cv : i32 to f32
  %e0 = tensor.empty() : tensor<f32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                           affine_map<(d0) -> ()>],
                          iterator_types = ["reduction"]}
      ins(%per : tensor<4xf32>) outs(%f0 : tensor<f32>) {
  ^bb0(%v: f32, %acc: f32):
    %d = arith.divf %v, %cf : f32
    %a = arith.addf %d, %acc : f32
    linalg.yield %a : f32
  } -> tensor<f32>
  // Backward with grad_output = 1 and total_weight = the count.
  %gout = linalg.fill ins(%one : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %tw = linalg.fill ins(%cf : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %e45 = tensor.empty() : tensor<4x5xf32>
  %z45 = linalg.fill ins(%zero : f32) outs(%e45 : tensor<4x5xf32>) -> tensor<4x5xf32>
  %gin = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>,
                                          affine_map<(d0, d1) -> (d0)>,
                                          affine_map<(d0, d1) -> ()>,
                                          affine_map<(d0, d1) -> (d0, d1)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%gout, %t, %tw : tensor<f32>, tensor<4xi64>, tensor<f32>)
      outs(%z45 : tensor<4x5xf32>) {
  ^bb0(%g: f32, %tv: i64, %w: f32, %o: f32):
    %it = arith.index_cast %tv : i64 to index
    %c = linalg.index 1 : index
    %gd = arith.divf %g, %w : f32
    %ng = arith.negf %gd : f32
    %wg = arith.mulf %one, %ng : f32
    %ne = arith.cmpi ne, %it, %c : index
    %eq = arith.cmpi eq, %it, %ign : index
    %isz = arith.ori %ne, %eq : i1
    %r = arith.select %isz, %zero, %wg : f32
    linalg.yield %r : f32
  } -> tensor<4x5xf32>
  return %loss, %gin : tensor<f32>, tensor<4x5xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(15);
  Tensor logits = torch::randn({4, 5}, torch::kDouble).requires_grad_(true);
  Tensor logp = torch::log_softmax(logits, 1);
  Tensor t = torch::tensor(std::vector<int64_t>{3, -100, 0, 4});
  std::vector<Tensor> r = evaluate(f, {logp, t}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  Tensor ref = torch::nll_loss(logp, t, {}, at::Reduction::Mean, -100);
  EXPECT_LE(relError(r[0], ref), 1e-15);
  // The graph's backward is autograd's gradient with respect to logp, and
  // autograd flows through the gather (nothing into the ignored row).
  Tensor glogp = torch::autograd::grad({ref}, {logp}, {}, true)[0];
  EXPECT_LE(relError(r[1], glogp), 1e-15);
  EXPECT_TRUE(
      torch::equal(r[1][1].detach(), torch::zeros({5}, torch::kDouble)));
  Tensor got = torch::autograd::grad({r[0]}, {logits}, {}, true)[0];
  Tensor want = torch::autograd::grad({ref}, {logits}, {}, true)[0];
  EXPECT_LE(relError(got, want), 1e-14);

  // The same read that reaches a result is an error, not a number.
  func::FuncOp g = parse(R"mlir(
func.func @oob(%logp: tensor<4x5xf32>, %t: tensor<4xi64>) -> tensor<4xf32> {
  %e4 = tensor.empty() : tensor<4xf32>
  %per = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,
                                          affine_map<(d0) -> (d0)>],
                         iterator_types = ["parallel"]}
      ins(%t : tensor<4xi64>) outs(%e4 : tensor<4xf32>) {
  ^bb0(%tv: i64, %o: f32):
    %it = arith.index_cast %tv : i64 to index
    %i = linalg.index 0 : index
    %v = tensor.extract %logp[%i, %it] : tensor<4x5xf32>
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<4xf32>
  return %per : tensor<4xf32>
}
)mlir");
  ASSERT_TRUE(g);
  std::string diag =
      evaluateExpectingFailure(g, {logp.detach(), t}, torch::kFloat64);
  EXPECT_NE(diag.find("cannot evaluate 'linalg.generic' with LibTorch: output "
                      "#0 depends on a tensor.extract that reads out of "
                      "bounds (at 1 points"),
            std::string::npos)
      << diag;
  // With all targets in range it evaluates.
  Tensor t2 = torch::tensor(std::vector<int64_t>{3, 1, 0, 4});
  std::vector<Tensor> r2 = evaluate(g, {logp.detach(), t2}, torch::kFloat64);
  ASSERT_EQ(r2.size(), 1u);
  EXPECT_TRUE(torch::equal(
      r2[0], -logp.detach().gather(1, t2.unsqueeze(1)).squeeze(1)));
}

} // namespace

//===- EvalLinalgTest.cpp - LibTorch evaluator: linalg ops ----------------===//
//
// Op-by-op tests of the LibTorch evaluator on linalg structured ops
// (lib/Check/EvalLinalg.cpp): named and generic ops, the reduction combiners,
// gathers through affine indexing maps, and the errors for out-of-bounds
// gathers and oversized iteration domains.
//
//===----------------------------------------------------------------------===//

#include "EvaluatorTest.h"

using namespace mlir;
using namespace mlir::gacc::torch_eval_test;

namespace {

TEST_F(EvaluatorTest, StructuredOps) {
  func::FuncOp f = parse(R"mlir(
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @structured(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>,
                      %m: tensor<3x4xf32>, %v: tensor<4xf32>)
    -> (tensor<2x3x5xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3xf32>, tensor<3x4xf32>,
        tensor<3xf32>, tensor<4x2xf32>, tensor<3x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e235 = tensor.empty() : tensor<2x3x5xf32>
  %z235 = linalg.fill ins(%zero : f32) outs(%e235 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %bmm = linalg.batch_matmul ins(%a, %b : tensor<2x3x4xf32>, tensor<2x4x5xf32>)
           outs(%z235 : tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %e43 = tensor.empty() : tensor<4x3xf32>
  %mt = linalg.transpose ins(%m : tensor<3x4xf32>) outs(%e43 : tensor<4x3xf32>)
          permutation = [1, 0]
  %e34 = tensor.empty() : tensor<3x4xf32>
  %vb = linalg.broadcast ins(%v : tensor<4xf32>) outs(%e34 : tensor<3x4xf32>)
          dimensions = [0]
  %sum = linalg.add ins(%m, %vb : tensor<3x4xf32>, tensor<3x4xf32>)
           outs(%e34 : tensor<3x4xf32>) -> tensor<3x4xf32>
  %ex = linalg.exp ins(%m : tensor<3x4xf32>) outs(%e34 : tensor<3x4xf32>) -> tensor<3x4xf32>
  %idx = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, 0)>, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<3x4xf32>) outs(%e34 : tensor<3x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c10 = arith.constant 10 : index
    %i10 = arith.muli %i, %c10 : index
    %k = arith.addi %i10, %j : index
    %ki = arith.index_cast %k : index to i64
    %kf = arith.sitofp %ki : i64 to f32
    %r = arith.addf %x, %kf : f32
    linalg.yield %r : f32
  } -> tensor<3x4xf32>
  %e3 = tensor.empty() : tensor<3xf32>
  %z3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %mv = linalg.matvec ins(%m, %v : tensor<3x4xf32>, tensor<4xf32>)
          outs(%z3 : tensor<3xf32>) -> tensor<3xf32>
  %copy = linalg.copy ins(%m : tensor<3x4xf32>) outs(%e34 : tensor<3x4xf32>) -> tensor<3x4xf32>
  // General (non-einsum) reduction: sum_j exp(m[i,j]) * v[j] + 1.
  %one = arith.constant 1.0 : f32
  %o3 = linalg.fill ins(%one : f32) outs(%e3 : tensor<3xf32>) -> tensor<3xf32>
  %ev = linalg.generic {
      indexing_maps = [#id2, affine_map<(d0, d1) -> (d1)>, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%m, %v : tensor<3x4xf32>, tensor<4xf32>) outs(%o3 : tensor<3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %e = math.exp %x : f32
    %p = arith.mulf %e, %y : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  // Reduction with a permuted output map: out[k, b] = sum_i a[b, i, k].
  %e42 = tensor.empty() : tensor<4x2xf32>
  %z42 = linalg.fill ins(%zero : f32) outs(%e42 : tensor<4x2xf32>) -> tensor<4x2xf32>
  %tr = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d2, d0)>],
      iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a : tensor<2x3x4xf32>) outs(%z42 : tensor<4x2xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %acc, %x : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  // Elementwise use of the output value: out = m + init (init = m).
  %acc = linalg.generic {
      indexing_maps = [#id2, #id2],
      iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<3x4xf32>) outs(%m : tensor<3x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<3x4xf32>
  return %bmm, %mt, %vb, %sum, %ex, %idx, %mv, %copy, %ev, %tr, %acc
      : tensor<2x3x5xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3xf32>, tensor<3x4xf32>,
        tensor<3xf32>, tensor<4x2xf32>, tensor<3x4xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(5);
  Tensor a = torch::randn({2, 3, 4}, torch::kDouble);
  Tensor b = torch::randn({2, 4, 5}, torch::kDouble);
  Tensor m = torch::randn({3, 4}, torch::kDouble);
  Tensor v = torch::randn({4}, torch::kDouble);
  std::vector<Tensor> r = evaluate(f, {a, b, m, v}, torch::kFloat64);
  ASSERT_EQ(r.size(), 11u);
  EXPECT_LE(relError(r[0], torch::bmm(a, b)), 1e-14);
  EXPECT_TRUE(torch::equal(r[1], m.t()));
  EXPECT_TRUE(torch::equal(r[2], v.expand({3, 4})));
  EXPECT_TRUE(torch::equal(r[3], m + v));
  EXPECT_LE(relError(r[4], m.exp()), 1e-15);
  Tensor ij = torch::arange(3, torch::kDouble).unsqueeze(1) * 10 +
              torch::arange(4, torch::kDouble);
  EXPECT_TRUE(torch::equal(
      r[5], m.index({torch::indexing::Slice(), 0}).unsqueeze(1) + ij));
  EXPECT_LE(relError(r[6], m.matmul(v)), 1e-14);
  EXPECT_TRUE(torch::equal(r[7], m));
  EXPECT_LE(relError(r[8], m.exp().matmul(v) + 1), 1e-14);
  EXPECT_LE(relError(r[9], a.sum(1).t()), 1e-14);
  EXPECT_TRUE(torch::equal(r[10], 2 * m));

  // The same in float32 agrees.
  std::vector<Tensor> r32 = evaluate(f,
                                     {a.to(torch::kFloat), b.to(torch::kFloat),
                                      m.to(torch::kFloat), v.to(torch::kFloat)},
                                     torch::kFloat32);
  ASSERT_EQ(r32.size(), 11u);
  for (unsigned j = 0; j < 11; ++j) {
    EXPECT_EQ(r32[j].scalar_type(), torch::kFloat);
    EXPECT_LE(relError(r32[j], r[j]), 1e-5) << "result #" << j;
  }
}

TEST_F(EvaluatorTest, NamedElementwiseAndContractionOps) {
  func::FuncOp f = parse(R"mlir(
func.func @named(%a: tensor<3x4xf32>, %b: tensor<3x4xf32>, %bt: tensor<5x4xf32>)
    -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x5xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x5xf32>) {
  %e = tensor.empty() : tensor<3x4xf32>
  %sub = linalg.sub ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %mul = linalg.mul ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %div = linalg.div ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %max = linalg.max ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %min = linalg.min ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %neg = linalg.negf ins(%a : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %abs = linalg.abs ins(%a : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %log = linalg.log ins(%abs : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %zero = arith.constant 0.0 : f32
  %e35 = tensor.empty() : tensor<3x5xf32>
  %z35 = linalg.fill ins(%zero : f32) outs(%e35 : tensor<3x5xf32>) -> tensor<3x5xf32>
  %mm = linalg.matmul
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                       affine_map<(d0, d1, d2) -> (d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%a, %bt : tensor<3x4xf32>, tensor<5x4xf32>)
      outs(%z35 : tensor<3x5xf32>) -> tensor<3x5xf32>
  %sm = linalg.softmax dimension(1) ins(%a : tensor<3x4xf32>)
          outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %ew = linalg.elementwise kind=#linalg.elementwise_kind<exp>
          ins(%a : tensor<3x4xf32>) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %map = linalg.map { arith.addf } ins(%a, %b : tensor<3x4xf32>, tensor<3x4xf32>)
           outs(%e : tensor<3x4xf32>)
  %ct = linalg.contract
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                       affine_map<(d0, d1, d2) -> (d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%a, %bt : tensor<3x4xf32>, tensor<5x4xf32>)
      outs(%z35 : tensor<3x5xf32>) -> tensor<3x5xf32>
  return %sub, %mul, %div, %max, %min, %neg, %abs, %log, %mm, %sm, %ew, %map,
         %ct
      : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x5xf32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32>,
        tensor<3x5xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(7);
  Tensor a = torch::randn({3, 4}, torch::kDouble);
  Tensor b = torch::randn({3, 4}, torch::kDouble);
  Tensor bt = torch::randn({5, 4}, torch::kDouble);
  std::vector<Tensor> r = evaluate(f, {a, b, bt}, torch::kFloat64);
  ASSERT_EQ(r.size(), 13u);
  EXPECT_TRUE(torch::equal(r[0], a - b));
  EXPECT_TRUE(torch::equal(r[1], a * b));
  EXPECT_TRUE(torch::equal(r[2], a / b));
  EXPECT_TRUE(torch::equal(r[3], torch::maximum(a, b)));
  EXPECT_TRUE(torch::equal(r[4], torch::minimum(a, b)));
  EXPECT_TRUE(torch::equal(r[5], -a));
  EXPECT_TRUE(torch::equal(r[6], a.abs()));
  EXPECT_TRUE(torch::equal(r[7], a.abs().log()));
  EXPECT_LE(relError(r[8], a.matmul(bt.t())), 1e-14);
  EXPECT_LE(relError(r[9], torch::softmax(a, 1)), 1e-14);
  EXPECT_LE(relError(r[10], a.exp()), 1e-15);
  EXPECT_TRUE(torch::equal(r[11], a + b));
  EXPECT_LE(relError(r[12], a.matmul(bt.t())), 1e-14);
}

TEST_F(EvaluatorTest, ReductionCombiners) {
  func::FuncOp f = parse(R"mlir(
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @reductions(%a: tensor<3x4xf32>, %n: tensor<3x4xi32>)
    -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>,
        tensor<4xf32>, tensor<3xi32>, tensor<3xi32>, tensor<f32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %pinf = arith.constant 0x7F800000 : f32
  %e = tensor.empty() : tensor<3xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %n0 = linalg.fill ins(%pinf : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %p0 = linalg.fill ins(%one : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %r:4 = linalg.generic {
      indexing_maps = [#id2, #row, #row, #row, #row],
      iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<3x4xf32>) outs(%s0, %m0, %n0, %p0
        : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
  ^bb0(%x: f32, %s: f32, %m: f32, %mn: f32, %p: f32):
    %sq = arith.mulf %x, %x : f32
    %s1 = arith.addf %s, %sq : f32
    %m1 = arith.maximumf %m, %x : f32
    %n1 = arith.minnumf %x, %mn : f32
    %p1 = arith.mulf %p, %x : f32
    linalg.yield %s1, %m1, %n1, %p1 : f32, f32, f32, f32
  } -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  %e4 = tensor.empty() : tensor<4xf32>
  %c0 = linalg.fill ins(%one : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  %cs = linalg.reduce ins(%a : tensor<3x4xf32>) outs(%c0 : tensor<4xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %t = arith.addf %in, %init : f32
      linalg.yield %t : f32
    }
  %ei = tensor.empty() : tensor<3xi32>
  %izero = arith.constant 0 : i32
  %imin = arith.constant -2147483648 : i32
  %zi = linalg.fill ins(%izero : i32) outs(%ei : tensor<3xi32>) -> tensor<3xi32>
  %mi = linalg.fill ins(%imin : i32) outs(%ei : tensor<3xi32>) -> tensor<3xi32>
  %isum = linalg.reduce ins(%n : tensor<3x4xi32>) outs(%zi : tensor<3xi32>) dimensions = [1]
    (%in: i32, %init: i32) {
      %t = arith.addi %init, %in : i32
      linalg.yield %t : i32
    }
  %imax = linalg.reduce ins(%n : tensor<3x4xi32>) outs(%mi : tensor<3xi32>) dimensions = [1]
    (%in: i32, %init: i32) {
      %t = arith.maxsi %init, %in : i32
      linalg.yield %t : i32
    }
  // A reduction of a value that does not depend on the loops: 12 * 2.
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %two = arith.constant 2.0 : f32
  %cnt = linalg.generic {
      indexing_maps = [#id2, affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%a : tensor<3x4xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%unused: f32, %acc: f32):
    %s = arith.addf %acc, %two : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r#0, %r#1, %r#2, %r#3, %cs, %isum, %imax, %cnt
      : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>,
        tensor<4xf32>, tensor<3xi32>, tensor<3xi32>, tensor<f32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(6);
  Tensor a = torch::randn({3, 4});
  Tensor n = torch::randint(-100, 100, {3, 4}, torch::kInt);
  for (auto computeType : {torch::kFloat32, torch::kFloat64}) {
    Tensor ac = computeType == torch::kFloat64 ? a.to(torch::kDouble) : a;
    std::vector<Tensor> r = evaluate(f, {ac, n}, computeType);
    ASSERT_EQ(r.size(), 8u);
    EXPECT_LE(relError(r[0], ac.pow(2).sum(1)), 1e-6);
    EXPECT_TRUE(torch::equal(r[1], std::get<0>(ac.max(1))));
    EXPECT_TRUE(torch::equal(r[2], std::get<0>(ac.min(1))));
    EXPECT_LE(relError(r[3], ac.prod(1)), 1e-6);
    EXPECT_LE(relError(r[4], ac.sum(0) + 1), 1e-6);
    EXPECT_EQ(r[5].scalar_type(), torch::kInt);
    EXPECT_TRUE(torch::equal(r[5], n.sum(1).to(torch::kInt)));
    EXPECT_TRUE(torch::equal(r[6], std::get<0>(n.max(1))));
    EXPECT_EQ(r[7].item<double>(), 24.0);
  }
}

// Any affine indexing map is evaluated by a gather: a Hankel matrix
// a[i + j], and a diagonal read a[i, i].
TEST_F(EvaluatorTest, AffineIndexingMapsGather) {
  func::FuncOp f = parse(R"mlir(
func.func @hankel(%a: tensor<7xf32>, %m: tensor<3x3xf32>)
    -> (tensor<4x4xf32>, tensor<3xf32>) {
  %e = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<7xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x4xf32>
  %e3 = tensor.empty() : tensor<3xf32>
  %d = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0, d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%m : tensor<3x3xf32>) outs(%e3 : tensor<3xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<3xf32>
  return %r, %d : tensor<4x4xf32>, tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor a = torch::arange(7, torch::kDouble).requires_grad_(true);
  Tensor m = torch::arange(9, torch::kDouble).reshape({3, 3});
  std::vector<Tensor> r = evaluate(f, {a, m}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  Tensor ij = torch::arange(4, torch::kLong).unsqueeze(1) +
              torch::arange(4, torch::kLong);
  EXPECT_TRUE(torch::equal(r[0].detach(), ij.to(torch::kDouble)));
  EXPECT_TRUE(torch::equal(r[1], m.diagonal()));
  // Each a[k] appears min(k, 6 - k, 3) + 1 times.
  EXPECT_TRUE(torch::equal(
      torch::autograd::grad({r[0].sum()}, {a})[0],
      torch::tensor({1.0, 2.0, 3.0, 4.0, 3.0, 2.0, 1.0}, torch::kDouble)));
}

TEST_F(EvaluatorTest, OutOfBoundsAndOversizedGathersAreErrors) {
  func::FuncOp f = parse(R"mlir(
func.func @hankel(%a: tensor<?xf32>) -> tensor<4x4xf32> {
  %e = tensor.empty() : tensor<4x4xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0 + d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<?xf32>) outs(%e : tensor<4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}
)mlir");
  ASSERT_TRUE(f);
  std::string diag =
      evaluateExpectingFailure(f, {torch::zeros({6})}, torch::kFloat32);
  EXPECT_NE(diag.find("cannot evaluate 'linalg.generic' with LibTorch: "
                      "indexing map (d0, d1) -> (d0 + d1) reads operand #0 "
                      "out of bounds in dimension 0 (indices 0 to 6, size 6)"),
            std::string::npos)
      << diag;

  // An iteration domain of 2^28 points is refused, not allocated.
  func::FuncOp g = parse(R"mlir(
func.func @big(%a: tensor<1024x256xf32>, %b: tensor<1024x256xf32>)
    -> tensor<1024x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x1024xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                       affine_map<(d0, d1, d2) -> (d1, d2)>,
                       affine_map<(d0, d1, d2) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<1024x256xf32>, tensor<1024x256xf32>)
      outs(%z : tensor<1024x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %t = math.tanh %m : f32
    %s = arith.addf %acc, %t : f32
    linalg.yield %s : f32
  } -> tensor<1024x1024xf32>
  return %r : tensor<1024x1024xf32>
}
)mlir");
  ASSERT_TRUE(g);
  diag = evaluateExpectingFailure(
      g, {torch::zeros({1024, 256}), torch::zeros({1024, 256})},
      torch::kFloat32);
  EXPECT_NE(diag.find("the iteration domain [1024, 1024, 256] has 268435456 "
                      "points (more than 2^27)"),
            std::string::npos)
      << diag;
}

} // namespace

//===- EvalTensorTest.cpp - LibTorch evaluator: tensor ops ----------------===//
//
// Op-by-op tests of the LibTorch evaluator on tensor ops, gacc.scatter_add and
// ml_program globals (lib/Check/EvalTensor.cpp): slices, reshapes, extract and
// insert, concat, pad and generate, bit casts and dense_resource constants,
// with gradients through them.
//
//===----------------------------------------------------------------------===//

#include "EvaluatorTest.h"

using namespace mlir;
using namespace mlir::gacc::torch_eval_test;

namespace {

TEST_F(EvaluatorTest, TensorOps) {
  func::FuncOp f = parse(R"mlir(
func.func @slices(%a: tensor<4x6xf32>)
    -> (tensor<6xf32>, tensor<2x3xf32>, tensor<4x6xf32>, tensor<24xf32>,
        tensor<2x2x6xf32>, tensor<?x6xf32>, index, f32, tensor<3xf32>,
        tensor<f32>, tensor<2x6xf32>, tensor<5x7xf32>, tensor<2x3xf32>) {
  %row = tensor.extract_slice %a[1, 0] [1, 6] [1, 1]
           : tensor<4x6xf32> to tensor<6xf32>
  %blk = tensor.extract_slice %a[0, 1] [2, 3] [2, 2]
           : tensor<4x6xf32> to tensor<2x3xf32>
  %z = arith.constant dense<0.0> : tensor<4x6xf32>
  %ins = tensor.insert_slice %row into %z[3, 0] [1, 6] [1, 1]
           : tensor<6xf32> into tensor<4x6xf32>
  %flat = tensor.collapse_shape %a [[0, 1]] : tensor<4x6xf32> into tensor<24xf32>
  %exp = tensor.expand_shape %a [[0, 1], [2]] output_shape [2, 2, 6]
           : tensor<4x6xf32> into tensor<2x2x6xf32>
  %cast = tensor.cast %a : tensor<4x6xf32> to tensor<?x6xf32>
  %c0 = arith.constant 0 : index
  %d = tensor.dim %cast, %c0 : tensor<?x6xf32>
  %c2 = arith.constant 2 : index
  %c5 = arith.constant 5 : index
  %e = tensor.extract %a[%c2, %c5] : tensor<4x6xf32>
  %one = arith.constant 1.0 : f32
  %fe = tensor.from_elements %e, %one, %e : tensor<3xf32>
  %fe0 = tensor.from_elements %e : tensor<f32>
  %cat = tensor.concat dim(1) %blk, %blk : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  %pad = tensor.pad %a low[1, 0] high[0, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %one : f32
  } : tensor<4x6xf32> to tensor<5x7xf32>
  %cst = arith.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  return %row, %blk, %ins, %flat, %exp, %cast, %d, %e, %fe, %fe0, %cat, %pad, %cst
      : tensor<6xf32>, tensor<2x3xf32>, tensor<4x6xf32>, tensor<24xf32>,
        tensor<2x2x6xf32>, tensor<?x6xf32>, index, f32, tensor<3xf32>,
        tensor<f32>, tensor<2x6xf32>, tensor<5x7xf32>, tensor<2x3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor a = torch::arange(24, torch::kFloat).reshape({4, 6});
  std::vector<Tensor> r = evaluate(f, {a}, torch::kFloat32);
  ASSERT_EQ(r.size(), 13u);
  EXPECT_TRUE(torch::equal(r[0], a[1]));
  EXPECT_TRUE(torch::equal(r[1], a.index({torch::indexing::Slice(0, 4, 2),
                                          torch::indexing::Slice(1, 6, 2)})));
  Tensor ins = torch::zeros({4, 6});
  ins[3] = a[1];
  EXPECT_TRUE(torch::equal(r[2], ins));
  EXPECT_TRUE(torch::equal(r[3], a.flatten()));
  EXPECT_TRUE(torch::equal(r[4], a.reshape({2, 2, 6})));
  EXPECT_TRUE(torch::equal(r[5], a));
  EXPECT_EQ(r[6].scalar_type(), torch::kLong);
  EXPECT_EQ(r[6].item<int64_t>(), 4);
  EXPECT_EQ(r[7].dim(), 0);
  EXPECT_EQ(r[7].item<float>(), 17.0f);
  EXPECT_TRUE(torch::equal(r[8], torch::tensor({17.0f, 1.0f, 17.0f})));
  EXPECT_EQ(r[9].dim(), 0);
  EXPECT_TRUE(torch::equal(r[10], torch::cat({r[1], r[1]}, 1)));
  Tensor padded = torch::ones({5, 7});
  padded.index_put_(
      {torch::indexing::Slice(1, 5), torch::indexing::Slice(0, 6)}, a);
  EXPECT_TRUE(torch::equal(r[11], padded));
  EXPECT_TRUE(torch::equal(
      r[12], torch::tensor({{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}})));

  // Gradients flow through slices and inserts.
  Tensor ag = a.to(torch::kDouble).requires_grad_(true);
  std::vector<Tensor> rg = evaluate(f, {ag}, torch::kFloat64);
  ASSERT_EQ(rg.size(), 13u);
  Tensor g = torch::autograd::grad(
      {rg[2].sum() + 2 * rg[1].sum() + rg[7] + rg[11].sum()}, {ag})[0];
  Tensor expected = torch::ones({4, 6}, torch::kDouble); // pad
  expected[1] += 1.0;                                    // inserted row
  expected.index({torch::indexing::Slice(0, 4, 2),
                  torch::indexing::Slice(1, 6, 2)}) += 2.0;
  expected[2][5] += 1.0; // extract
  EXPECT_TRUE(torch::allclose(g, expected)) << g;
}

TEST_F(EvaluatorTest, MoreTensorOps) {
  func::FuncOp f = parse(R"mlir(
func.func @more(%s: f32, %a: tensor<2x3xi64>, %n: index)
    -> (tensor<2x?xf32>, tensor<2x3xi64>, tensor<3x2xi64>, index) {
  %sp = tensor.splat %s[%n] : tensor<2x?xf32>
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %v = arith.constant 42 : i64
  %ins = tensor.insert %v into %a[%c1, %c2] : tensor<2x3xi64>
  %shape = arith.constant dense<[3, 2]> : tensor<2xi64>
  %rs = tensor.reshape %a(%shape) : (tensor<2x3xi64>, tensor<2xi64>) -> tensor<3x2xi64>
  %rk = tensor.rank %a : tensor<2x3xi64>
  return %sp, %ins, %rs, %rk : tensor<2x?xf32>, tensor<2x3xi64>, tensor<3x2xi64>, index
}
)mlir");
  ASSERT_TRUE(f);
  Tensor a = torch::arange(6, torch::kLong).reshape({2, 3});
  std::vector<Tensor> r = evaluate(
      f, {torch::tensor(2.5f), a, torch::tensor(int64_t(4))}, torch::kFloat32);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_TRUE(torch::equal(r[0], torch::full({2, 4}, 2.5f)));
  Tensor ins = a.clone();
  ins[1][2] = 42;
  EXPECT_TRUE(torch::equal(r[1], ins));
  EXPECT_TRUE(torch::equal(a, torch::arange(6, torch::kLong).reshape({2, 3})))
      << "inputs are not modified";
  EXPECT_TRUE(torch::equal(r[2], a.reshape({3, 2})));
  EXPECT_EQ(r[3].item<int64_t>(), 2);
}

// gacc.scatter_add (the embedding's gradient) is index_add along the rows of
// its init, differentiable in its updates and init, in float64 and in the
// graph's own type (bf16 too); an index outside the rows is an error at the
// op, as the compiled step reports it.
TEST_F(EvaluatorTest, ScatterAddIsIndexAddAlongRows) {
  func::FuncOp f = parse(R"mlir(
func.func @scatter(%u: tensor<2x3x4xf32>, %ids: tensor<2x3xi64>,
                   %init: tensor<5x4xf32>) -> tensor<5x4xf32> {
  %r = gacc.scatter_add ins(%u, %ids : tensor<2x3x4xf32>, tensor<2x3xi64>) outs(%init : tensor<5x4xf32>) -> tensor<5x4xf32>
  return %r : tensor<5x4xf32>
}
)mlir");
  ASSERT_TRUE(f);
  torch::manual_seed(17);
  Tensor ids =
      torch::tensor(std::vector<int64_t>{0, 4, 4, 2, 0, 4}).reshape({2, 3});
  Tensor u = torch::randn({2, 3, 4}, torch::kDouble).requires_grad_(true);
  Tensor init = torch::randn({5, 4}, torch::kDouble).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {u, ids, init}, torch::kFloat64);
  ASSERT_EQ(r.size(), 1u);
  Tensor ref = init.index_put({ids.reshape({-1})}, u.reshape({6, 4}),
                              /*accumulate=*/true);
  EXPECT_LE(relError(r[0], ref), 1e-15);
  // Autograd: d/du gathers the seed's rows, d/dinit is the seed.
  Tensor seed = torch::randn({5, 4}, torch::kDouble);
  std::vector<Tensor> grads = gradients(r[0], seed, {u, init});
  EXPECT_LE(relError(grads[0], torch::embedding(seed, ids)), 1e-15);
  EXPECT_LE(relError(grads[1], seed), 1e-15);

  std::string diag = evaluateExpectingFailure(
      f,
      {torch::zeros({2, 3, 4}),
       torch::tensor(std::vector<int64_t>{0, 1, 7, 2, -1, 4}).reshape({2, 3}),
       torch::zeros({5, 4})},
      torch::kFloat32);
  EXPECT_NE(diag.find("cannot evaluate 'gacc.scatter_add' with LibTorch: "
                      "index 7 out of range [0, 5) in scatter_add (2 "
                      "out-of-range positions)"),
            std::string::npos)
      << diag;

  func::FuncOp g = parse(R"mlir(
func.func @scatter_bf16(%u: tensor<3x2xbf16>, %ids: tensor<3xi32>,
                        %init: tensor<4x2xbf16>) -> tensor<4x2xbf16> {
  %r = gacc.scatter_add ins(%u, %ids : tensor<3x2xbf16>, tensor<3xi32>) outs(%init : tensor<4x2xbf16>) -> tensor<4x2xbf16>
  return %r : tensor<4x2xbf16>
}
)mlir");
  ASSERT_TRUE(g);
  Tensor u16 = torch::randn({3, 2}).to(torch::kBFloat16);
  Tensor ids32 = torch::tensor(std::vector<int32_t>{3, 1, 3});
  Tensor init16 = torch::zeros({4, 2}, torch::kBFloat16);
  r = evaluate(g, {u16, ids32, init16}, torch::kFloat32);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(
      torch::equal(r[0], init16.index_add(0, ids32.to(torch::kLong), u16)));
}

// tensor.pad with dynamic and computed padding, concat, generate (with a
// gather), bitcast, dense_resource constants; gradients through pad and
// concat.
TEST_F(EvaluatorTest, PadConcatGenerateAndResources) {
  func::FuncOp f = parse(R"mlir(
func.func @forms(%a: tensor<2x3xf32>, %b: tensor<1x3xf32>, %lo: index,
                 %hi: index)
    -> (tensor<?x5xf32>, tensor<4x5xf32>, tensor<3x3xf32>, tensor<2x4xf32>,
        tensor<3xi32>, tensor<3xf32>, i32) {
  %zero = arith.constant 0.0 : f32
  %padd = tensor.pad %a low[%lo, 1] high[%hi, 1] {
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  } : tensor<2x3xf32> to tensor<?x5xf32>
  %padr = tensor.pad %a low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
    %s = arith.addi %i, %j : index
    %si = arith.index_cast %s : index to i64
    %f = arith.sitofp %si : i64 to f32
    tensor.yield %f : f32
  } : tensor<2x3xf32> to tensor<4x5xf32>
  %cat = tensor.concat dim(0) %a, %b
      : (tensor<2x3xf32>, tensor<1x3xf32>) -> tensor<3x3xf32>
  %gen = tensor.generate {
  ^bb0(%i: index, %j: index):
    %c3 = arith.constant 3 : index
    %j3 = arith.remui %j, %c3 : index
    %v = tensor.extract %a[%i, %j3] : tensor<2x3xf32>
    tensor.yield %v : f32
  } : tensor<2x4xf32>
  %res = arith.constant dense_resource<blob1> : tensor<3xf32>
  %bits = tensor.bitcast %res : tensor<3xf32> to tensor<3xi32>
  %one = arith.constant 1.0 : f32
  %sbits = arith.bitcast %one : f32 to i32
  return %padd, %padr, %cat, %gen, %bits, %res, %sbits
      : tensor<?x5xf32>, tensor<4x5xf32>, tensor<3x3xf32>, tensor<2x4xf32>,
        tensor<3xi32>, tensor<3xf32>, i32
}
{-#
  dialect_resources: {
    builtin: {
      blob1: "0x040000000000803F0000004000004040"
    }
  }
#-}
)mlir");
  ASSERT_TRUE(f);
  using torch::indexing::Slice;
  Tensor a =
      torch::arange(6, torch::kDouble).reshape({2, 3}).requires_grad_(true);
  Tensor b = torch::full({1, 3}, 7.0, torch::kDouble).requires_grad_(true);
  Tensor lo = torch::tensor(int64_t(2)), hi = torch::tensor(int64_t(1));
  std::vector<Tensor> r = evaluate(f, {a, b, lo, hi}, torch::kFloat64);
  ASSERT_EQ(r.size(), 7u);
  EXPECT_TRUE(torch::equal(r[0], torch::constant_pad_nd(a, {1, 1, 2, 1})));
  Tensor padr = (torch::arange(4, torch::kDouble).unsqueeze(1) +
                 torch::arange(5, torch::kDouble))
                    .contiguous();
  padr.index_put_({Slice(1, 3), Slice(1, 4)}, a.detach());
  EXPECT_TRUE(torch::equal(r[1], padr)) << r[1];
  EXPECT_TRUE(torch::equal(r[2], torch::cat({a, b}, 0)));
  EXPECT_TRUE(
      torch::equal(r[3], torch::cat({a, a.index({Slice(), Slice(0, 1)})}, 1)));
  EXPECT_TRUE(torch::equal(
      r[4], torch::tensor({0x3F800000, 0x40000000, 0x40400000}, torch::kInt)));
  EXPECT_TRUE(
      torch::equal(r[5], torch::tensor({1.0, 2.0, 3.0}, torch::kDouble)));
  EXPECT_EQ(r[6].item<int32_t>(), 0x3F800000);
  std::vector<Tensor> g = torch::autograd::grad(
      {r[0].sum() + r[1].sum() + 2 * r[2].sum() + r[3].sum()}, {a, b});
  Tensor ga = torch::full({2, 3}, 5.0, torch::kDouble);
  ga.index_put_({Slice(), 0}, 6.0); // generate reads column 0 twice
  EXPECT_TRUE(torch::equal(g[0], ga)) << g[0];
  EXPECT_TRUE(torch::equal(g[1], torch::full({1, 3}, 2.0, torch::kDouble)));
}

// Padding with a scalar argument that requires grad, where the padded tensor
// is as small as the padding value (no copy would be made by a broadcast).
TEST_F(EvaluatorTest, PadWithArgumentValueIsDifferentiable) {
  func::FuncOp f = parse(R"mlir(
func.func @pad(%a: tensor<1xf32>, %p: f32) -> (tensor<1xf32>, tensor<3xf32>) {
  %same = tensor.pad %a low[0] high[0] {
  ^bb0(%i: index):
    tensor.yield %p : f32
  } : tensor<1xf32> to tensor<1xf32>
  %more = tensor.pad %a low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %p : f32
  } : tensor<1xf32> to tensor<3xf32>
  return %same, %more : tensor<1xf32>, tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor a = torch::tensor({2.0}, torch::kDouble).requires_grad_(true);
  Tensor p = torch::tensor(5.0, torch::kDouble).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {a, p}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(torch::equal(r[0].detach(), a.detach()));
  EXPECT_TRUE(torch::equal(r[1].detach(),
                           torch::tensor({5.0, 2.0, 5.0}, torch::kDouble)));
  std::vector<Tensor> g =
      torch::autograd::grad({r[0].sum() + r[1].sum()}, {a, p});
  EXPECT_EQ(g[0].item<double>(), 2.0);
  EXPECT_EQ(g[1].item<double>(), 2.0);
}

// ml_program constant globals and never-stored mutable globals read their
// initial value; a stored mutable global is an error.
TEST_F(EvaluatorTest, MlProgramGlobals) {
  func::FuncOp f = parse(R"mlir(
ml_program.global private @w(dense<[1.0, 2.0, 3.0]> : tensor<3xf32>) : tensor<3xf32>
ml_program.global private mutable @m(dense<4.0> : tensor<3xf32>) : tensor<3xf32>
func.func @step(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %w = ml_program.global_load_const @w : tensor<3xf32>
  %m = ml_program.global_load @m : tensor<3xf32>
  %y = arith.mulf %x, %w : tensor<3xf32>
  return %y, %m : tensor<3xf32>, tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(f);
  Tensor x =
      torch::tensor({2.0, 2.0, 2.0}, torch::kDouble).requires_grad_(true);
  std::vector<Tensor> r = evaluate(f, {x}, torch::kFloat64);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(torch::equal(r[0].detach(),
                           torch::tensor({2.0, 4.0, 6.0}, torch::kDouble)));
  EXPECT_TRUE(torch::equal(r[1], torch::full({3}, 4.0, torch::kDouble)));
  EXPECT_TRUE(torch::equal(torch::autograd::grad({r[0].sum()}, {x})[0],
                           torch::tensor({1.0, 2.0, 3.0}, torch::kDouble)));

  func::FuncOp g = parse(R"mlir(
ml_program.global private mutable @m(dense<4.0> : tensor<3xf32>) : tensor<3xf32>
func.func @step(%x: tensor<3xf32>) -> tensor<3xf32> {
  %m = ml_program.global_load @m : tensor<3xf32>
  ml_program.global_store @m = %x : tensor<3xf32>
  return %m : tensor<3xf32>
}
)mlir");
  ASSERT_TRUE(g);
  std::string diag = evaluateExpectingFailure(
      g, {torch::zeros({3}, torch::kDouble)}, torch::kFloat64);
  EXPECT_NE(diag.find("cannot evaluate 'ml_program.global_load' with "
                      "LibTorch: the global @m is stored to"),
            std::string::npos)
      << diag;
}

} // namespace

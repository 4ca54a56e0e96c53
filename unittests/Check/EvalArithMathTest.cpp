//===- EvalArithMathTest.cpp - LibTorch evaluator: arith and math ---------===//
//
// Op-by-op tests of the LibTorch evaluator on arith and math ops
// (lib/Check/EvalArithMath.cpp): comparisons with NaN, IEEE and NaN-ignoring
// extrema, signed and unsigned integer division and comparison, casts, and math
// functions, each against LibTorch.
//
//===----------------------------------------------------------------------===//

#include "EvaluatorTest.h"

#include <cstdint>
#include <limits>

using namespace mlir;
using namespace mlir::gacc::torch_eval_test;

namespace {

TEST_F(EvaluatorTest, ArithAndMathOps) {
  func::FuncOp f = parse(R"mlir(
func.func @elementwise(%x: tensor<6xf32>, %y: tensor<6xf32>,
                       %i: tensor<6xi32>, %j: tensor<6xi32>)
    -> (tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<6xi1>,
        tensor<6xi1>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>,
        tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<6xi32>,
        tensor<6xi32>, tensor<6xi32>, tensor<6xi1>, tensor<6xi1>,
        tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<6xf32>,
        tensor<6xi64>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>) {
  %oeq = arith.cmpf oeq, %x, %y : tensor<6xf32>
  %une = arith.cmpf une, %x, %y : tensor<6xf32>
  %ult = arith.cmpf ult, %x, %y : tensor<6xf32>
  %ord = arith.cmpf ord, %x, %y : tensor<6xf32>
  %uno = arith.cmpf uno, %x, %y : tensor<6xf32>
  %ogt = arith.cmpf ogt, %x, %y : tensor<6xf32>
  %maxf = arith.maximumf %x, %y : tensor<6xf32>
  %maxn = arith.maxnumf %x, %y : tensor<6xf32>
  %minf = arith.minimumf %x, %y : tensor<6xf32>
  %minn = arith.minnumf %x, %y : tensor<6xf32>
  %sel = arith.select %ogt, %x, %y : tensor<6xi1>, tensor<6xf32>
  %div = arith.divsi %i, %j : tensor<6xi32>
  %rem = arith.remsi %i, %j : tensor<6xi32>
  %fdiv = arith.floordivsi %i, %j : tensor<6xi32>
  %cdiv = arith.ceildivsi %i, %j : tensor<6xi32>
  %cult = arith.cmpi ult, %i, %j : tensor<6xi32>
  %cslt = arith.cmpi slt, %i, %j : tensor<6xi32>
  %sf = arith.sitofp %i : tensor<6xi32> to tensor<6xf32>
  %uf = arith.uitofp %i : tensor<6xi32> to tensor<6xf32>
  %fi = arith.fptosi %y : tensor<6xf32> to tensor<6xi32>
  %bf = arith.truncf %x : tensor<6xf32> to tensor<6xbf16>
  %bx = arith.extf %bf : tensor<6xbf16> to tensor<6xf32>
  %ext = arith.extui %i : tensor<6xi32> to tensor<6xi64>
  %ax = math.absf %x : tensor<6xf32>
  %t = math.tanh %ax : tensor<6xf32>
  %s = math.sqrt %ax : tensor<6xf32>
  %rs = math.rsqrt %ax : tensor<6xf32>
  %l = math.log1p %ax : tensor<6xf32>
  %e2 = math.exp2 %t : tensor<6xf32>
  %er = math.erf %e2 : tensor<6xf32>
  %pw = math.powf %ax, %er : tensor<6xf32>
  %lg = math.log %pw : tensor<6xf32>
  %ex = math.exp %lg : tensor<6xf32>
  %sum = arith.addf %s, %rs : tensor<6xf32>
  %sum2 = arith.addf %sum, %l : tensor<6xf32>
  %neg = arith.negf %ex : tensor<6xf32>
  return %oeq, %une, %ult, %ord, %uno, %ogt, %maxf, %maxn, %minf, %minn, %sel,
         %div, %rem, %fdiv, %cdiv, %cult, %cslt, %sf, %uf, %fi, %bx, %ext,
         %sum2, %neg, %er
      : tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<6xi1>, tensor<6xi1>,
        tensor<6xi1>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>,
        tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<6xi32>,
        tensor<6xi32>, tensor<6xi32>, tensor<6xi1>, tensor<6xi1>,
        tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<6xf32>,
        tensor<6xi64>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
}
)mlir");
  ASSERT_TRUE(f);
  float nan = std::nanf("");
  Tensor x = torch::tensor({1.5f, -2.0f, nan, 0.25f, 3.0f, 1.2345678f});
  Tensor y = torch::tensor({1.5f, 2.0f, 1.0f, nan, -1.7f, -0.5f});
  Tensor i = torch::tensor({7, -7, 7, -7, 0, -3}, torch::kInt);
  Tensor j = torch::tensor({2, 2, -2, -2, 5, 4}, torch::kInt);
  std::vector<Tensor> r = evaluate(f, {x, y, i, j}, torch::kFloat32);
  ASSERT_EQ(r.size(), 25u);
  auto bools = [](std::initializer_list<int> v) {
    return torch::tensor(std::vector<int>(v), torch::kInt).to(torch::kBool);
  };
  EXPECT_TRUE(torch::equal(r[0], bools({1, 0, 0, 0, 0, 0}))); // oeq
  EXPECT_TRUE(torch::equal(r[1], bools({0, 1, 1, 1, 1, 1}))); // une
  EXPECT_TRUE(torch::equal(r[2], bools({0, 1, 1, 1, 0, 0}))); // ult
  EXPECT_TRUE(torch::equal(r[3], bools({1, 1, 0, 0, 1, 1}))); // ord
  EXPECT_TRUE(torch::equal(r[4], bools({0, 0, 1, 1, 0, 0}))); // uno
  EXPECT_TRUE(torch::equal(r[5], bools({0, 0, 0, 0, 1, 1}))); // ogt
  auto same = [](const Tensor &a, const Tensor &b) {
    return torch::allclose(a, b, 1e-6, 1e-6, /*equal_nan=*/true);
  };
  EXPECT_TRUE(
      same(r[6], torch::tensor({1.5f, 2.0f, nan, nan, 3.0f, 1.2345678f})));
  EXPECT_TRUE(
      same(r[7], torch::tensor({1.5f, 2.0f, 1.0f, 0.25f, 3.0f, 1.2345678f})));
  EXPECT_TRUE(same(r[8], torch::tensor({1.5f, -2.0f, nan, nan, -1.7f, -0.5f})));
  EXPECT_TRUE(
      same(r[9], torch::tensor({1.5f, -2.0f, 1.0f, 0.25f, -1.7f, -0.5f})));
  EXPECT_TRUE(
      same(r[10], torch::tensor({1.5f, 2.0f, 1.0f, nan, 3.0f, 1.2345678f})));
  EXPECT_TRUE(
      torch::equal(r[11], torch::tensor({3, -3, -3, 3, 0, 0}, torch::kInt)));
  EXPECT_TRUE(
      torch::equal(r[12], torch::tensor({1, -1, 1, -1, 0, -3}, torch::kInt)));
  EXPECT_TRUE(
      torch::equal(r[13], torch::tensor({3, -4, -4, 3, 0, -1}, torch::kInt)));
  EXPECT_TRUE(
      torch::equal(r[14], torch::tensor({4, -3, -3, 4, 0, 0}, torch::kInt)));
  // Unsigned: -7 and -3 are huge.
  EXPECT_TRUE(torch::equal(r[15], bools({0, 0, 1, 1, 1, 0})));
  EXPECT_TRUE(torch::equal(r[16], bools({0, 1, 0, 1, 1, 1})));
  EXPECT_TRUE(torch::equal(r[17], i.to(torch::kFloat)));
  Tensor uf =
      torch::tensor({7.0, 4294967289.0, 7.0, 4294967289.0, 0.0, 4294967293.0},
                    torch::kDouble)
          .to(torch::kFloat);
  EXPECT_TRUE(torch::equal(r[18], uf));
  // fptosi of NaN is poison: compare the defined lanes only.
  EXPECT_TRUE(torch::equal(r[19].index({torch::indexing::Slice(0, 3)}),
                           torch::tensor({1, 2, 1}, torch::kInt)));
  EXPECT_TRUE(torch::equal(r[19].index({torch::indexing::Slice(4, 6)}),
                           torch::tensor({-1, 0}, torch::kInt)));
  EXPECT_TRUE(same(r[20], x.to(torch::kBFloat16).to(torch::kFloat)));
  EXPECT_FALSE(torch::equal(r[20].index({5}), x.index({5})));
  EXPECT_TRUE(
      torch::equal(r[21], torch::tensor(std::vector<int64_t>{
                              7, 4294967289, 7, 4294967289, 0, 4294967293})));
  Tensor ax = x.abs();
  Tensor er = torch::erf(torch::exp2(torch::tanh(ax)));
  EXPECT_TRUE(same(r[22], ax.sqrt() + ax.rsqrt() + ax.log1p()));
  EXPECT_TRUE(same(r[23], -torch::exp(torch::log(torch::pow(ax, er)))));
  EXPECT_TRUE(same(r[24], er));
}

// An integer division or remainder by zero, or INT_MIN / -1, is undefined:
// an error at the op (as the compiled step reports it), on whole tensors and
// in a payload.
TEST_F(EvaluatorTest, UndefinedIntegerDivisionIsAnError) {
  for (const char *op : {"divsi", "divui", "remsi", "remui", "floordivsi",
                         "ceildivsi", "ceildivui"}) {
    std::string source = std::string(R"mlir(
func.func @f(%i: tensor<3xi32>, %j: tensor<3xi32>) -> tensor<3xi32> {
  %r = arith.)mlir") + op +
                         R"mlir( %i, %j : tensor<3xi32>
  return %r : tensor<3xi32>
})mlir";
    func::FuncOp f = parse(source);
    ASSERT_TRUE(f) << source;
    Tensor i = torch::tensor({7, -7, 3}, torch::kInt);
    std::string diag = evaluateExpectingFailure(
        f, {i, torch::tensor({2, 0, 1}, torch::kInt)}, torch::kFloat32);
    EXPECT_NE(diag.find(std::string("cannot evaluate 'arith.") + op +
                        "' with LibTorch: integer division by zero"),
              std::string::npos)
        << diag;
    // Without a zero divisor it evaluates.
    evaluate(f, {i, torch::tensor({2, 5, 1}, torch::kInt)}, torch::kFloat32);
  }
  // INT_MIN / -1 overflows: an error at the op too.
  func::FuncOp overflow = parse(R"mlir(
func.func @f(%i: tensor<2xi32>, %j: tensor<2xi32>) -> tensor<2xi32> {
  %r = arith.divsi %i, %j : tensor<2xi32>
  return %r : tensor<2xi32>
})mlir");
  ASSERT_TRUE(overflow);
  std::string overflowDiag = evaluateExpectingFailure(
      overflow,
      {torch::tensor({std::numeric_limits<int32_t>::min(), 3}, torch::kInt),
       torch::tensor({-1, -1}, torch::kInt)},
      torch::kFloat32);
  EXPECT_NE(overflowDiag.find("signed division of the minimum value by -1 "
                              "overflows (undefined behaviour)"),
            std::string::npos)
      << overflowDiag;
  func::FuncOp payload = parse(R"mlir(
func.func @f(%i: tensor<3xi64>, %j: tensor<3xi64>) -> tensor<3xi64> {
  %e = tensor.empty() : tensor<3xi64>
  %r = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%i, %j : tensor<3xi64>, tensor<3xi64>) outs(%e : tensor<3xi64>) {
  ^bb0(%a: i64, %b: i64, %o: i64):
    %q = arith.divsi %a, %b : i64
    linalg.yield %q : i64
  } -> tensor<3xi64>
  return %r : tensor<3xi64>
})mlir");
  ASSERT_TRUE(payload);
  std::string diag =
      evaluateExpectingFailure(payload,
                               {torch::tensor({1, 2, 3}, torch::kLong),
                                torch::tensor({1, 0, 3}, torch::kLong)},
                               torch::kFloat32);
  EXPECT_NE(diag.find("cannot evaluate 'arith.divsi' with LibTorch: integer "
                      "division by zero"),
            std::string::npos)
      << diag;
}

} // namespace

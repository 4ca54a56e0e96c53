//===- EvalControlFlowTest.cpp - LibTorch evaluator: calls and scalars ----===//
//
// Tests of the LibTorch evaluator on control flow
// (lib/Check/EvalControlFlow.cpp): func.call, with scalar arithmetic around it.
//
//===----------------------------------------------------------------------===//

#include "EvaluatorTest.h"

using namespace mlir;
using namespace mlir::gacc::torch_eval_test;

namespace {

TEST_F(EvaluatorTest, CallsAndScalars) {
  func::FuncOp f = parse(R"mlir(
func.func private @square(%x: tensor<3xf32>) -> tensor<3xf32> {
  %r = arith.mulf %x, %x : tensor<3xf32>
  return %r : tensor<3xf32>
}
func.func @main(%x: tensor<3xf32>, %s: f32) -> (tensor<3xf32>, f32) {
  %sq = func.call @square(%x) : (tensor<3xf32>) -> tensor<3xf32>
  %two = arith.constant 2.0 : f32
  %t = arith.mulf %s, %two : f32
  return %sq, %t : tensor<3xf32>, f32
}
)mlir",
                         "main");
  ASSERT_TRUE(f);
  std::vector<Tensor> r =
      evaluate(f, {torch::tensor({1.0f, 2.0f, 3.0f}), torch::tensor(1.5f)},
               torch::kFloat32);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(torch::equal(r[0], torch::tensor({1.0f, 4.0f, 9.0f})));
  EXPECT_EQ(r[1].item<float>(), 3.0f);
}

} // namespace

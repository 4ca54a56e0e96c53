//===- EvaluatorTest.h - the LibTorch evaluator tests' fixture --*- C++ -*-===//
//
// What the tests of gacc-check's LibTorch evaluator share: a context with
// gacc-check's dialects, the example training steps, evaluation helpers that
// fail the test with the diagnostics, and the EvaluatorTest fixture. The tests
// are split like the evaluator (lib/Check): TorchEvaluatorTest.cpp (whole
// training steps, the type helpers, dead ops, diagnostics),
// EvalArithMathTest.cpp, EvalTensorTest.cpp, EvalLinalgTest.cpp,
// TorchMlirFormsTest.cpp (the forms torch-mlir's TorchToLinalg emits) and
// EvalControlFlowTest.cpp; they build into one GoogleTest binary,
// gacc-torch-eval-tests.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_UNITTESTS_CHECK_EVALUATORTEST_H
#define GACC_UNITTESTS_CHECK_EVALUATORTEST_H

#include "gacc/Check/TorchEvaluator.h"

#include "gacc/Dialect/Gacc/IR/StepRoles.h"
#include "gacc/Dialect/Gacc/IR/RegisterDialects.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

// Named, not anonymous: every test file must see the same EvaluatorTest.
namespace mlir::gacc::torch_eval_test {

using torch::Tensor;

/// A context with the dialects gacc-check loads.
inline std::unique_ptr<MLIRContext> makeContext() {
  DialectRegistry registry;
  gacc::registerGaccDialects(registry);
  registry.insert<ml_program::MLProgramDialect>(); // gacc-check has them all
  auto context = std::make_unique<MLIRContext>(registry);
  context->loadAllAvailableDialects();
  return context;
}

/// The path of the example training step `name` (examples/).
inline std::string examplePath(const std::string &name) {
  return std::string(GACC_EXAMPLES_DIR) + "/" + name;
}

/// The training step of a module: the function with gacc roles, else the
/// only function.
inline func::FuncOp getStep(ModuleOp module) {
  func::FuncOp found;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (gacc::hasGaccRoles(func))
      return func;
    found = func;
  }
  return found;
}

/// Normwise relative error: max |a - ref| / max |ref|.
inline double relError(const Tensor &a, const Tensor &ref) {
  Tensor x = a.detach().to(torch::kDouble);
  Tensor r = ref.detach().to(torch::kDouble);
  double err = (x - r).abs().max().item<double>();
  double scale = r.abs().max().item<double>();
  return err / std::max(scale, 1e-300);
}

/// Evaluates and returns the results; fails the test (with the diagnostics)
/// on failure.
inline std::vector<Tensor> evaluate(func::FuncOp func, ArrayRef<Tensor> args,
                                    torch::ScalarType computeType) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(func.getContext(), [&](Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return success();
  });
  FailureOr<SmallVector<Tensor>> results =
      gacc::evaluateWithTorch(func, args, computeType);
  EXPECT_TRUE(succeeded(results)) << diagnostics;
  if (failed(results))
    return {};
  EXPECT_EQ(results->size(), func.getNumResults());
  for (auto [j, t] : llvm::enumerate(*results))
    EXPECT_TRUE(gacc::matchesType(t, func.getResultTypes()[j], computeType))
        << "result #" << j;
  return std::vector<Tensor>(results->begin(), results->end());
}

/// Evaluates expecting failure; returns the diagnostics.
inline std::string evaluateExpectingFailure(func::FuncOp func,
                                            ArrayRef<Tensor> args,
                                            torch::ScalarType computeType) {
  std::string diagnostics;
  ScopedDiagnosticHandler handler(func.getContext(), [&](Diagnostic &diag) {
    EXPECT_EQ(diag.getSeverity(), DiagnosticSeverity::Error);
    diagnostics += diag.str() + "\n";
    return success();
  });
  EXPECT_TRUE(failed(gacc::evaluateWithTorch(func, args, computeType)));
  return diagnostics;
}

/// Parses training steps (an example, or source text) in a context of
/// their own.
class EvaluatorTest : public ::testing::Test {
protected:
  void SetUp() override { context = makeContext(); }

  func::FuncOp loadExample(const std::string &name) {
    module = parseSourceFile<ModuleOp>(examplePath(name), context.get());
    if (!module)
      return func::FuncOp();
    return getStep(*module);
  }

  func::FuncOp parse(StringRef source, StringRef funcName = "") {
    module = parseSourceString<ModuleOp>(source, context.get());
    if (!module)
      return func::FuncOp();
    if (funcName.empty())
      return getStep(*module);
    return module->lookupSymbol<func::FuncOp>(funcName);
  }

  std::unique_ptr<MLIRContext> context;
  OwningOpRef<ModuleOp> module;
};

/// d(sum(out * seed))/d(inputs) by LibTorch autograd.
inline std::vector<Tensor> gradients(const Tensor &out, const Tensor &seed,
                                     const std::vector<Tensor> &inputs) {
  return torch::autograd::grad({(out * seed).sum()}, inputs,
                               /*grad_outputs=*/{}, /*retain_graph=*/true,
                               /*create_graph=*/false, /*allow_unused=*/true);
}

} // namespace mlir::gacc::torch_eval_test

#endif // GACC_UNITTESTS_CHECK_EVALUATORTEST_H

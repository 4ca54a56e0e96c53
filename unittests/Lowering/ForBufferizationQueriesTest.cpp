//===- ForBufferizationQueriesTest.cpp - scf.for alias queries ------------===//
//
// registerLinearForBufferizationQueries replaces how one-shot bufferization
// asks which operands of an `scf.for` alias one of its results. The answer
// must be the one upstream's default query gives: for every result of
// loops whose iteration arguments are updated in place, copied, swapped and
// not tensors, and for the iteration arguments, after the one-shot
// analysis.
//
//===----------------------------------------------------------------------===//

#include "gacc/InitAll.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace mlir::bufferization;

namespace {
// In place (%a), written out of place because the init is read later (%b),
// swapped with each other (%c, %d), yielded unchanged (%e), an index.
constexpr const char *kLoops = R"mlir(
func.func @loops(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>,
                 %d: tensor<4xf32>, %e: tensor<4xf32>, %n: index, %f: f32)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, index, f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:6 = scf.for %i = %c0 to %n step %c1
      iter_args(%x = %a, %y = %b, %z = %c, %w = %d, %v = %e, %k = %c0)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
          tensor<4xf32>, index) {
    %x1 = tensor.insert %f into %x[%c0] : tensor<4xf32>
    %y1 = tensor.insert %f into %y[%c1] : tensor<4xf32>
    %k1 = arith.addi %k, %c1 : index
    scf.yield %x1, %y1, %w, %z, %v, %k1
        : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
          tensor<4xf32>, index
  }
  %read = tensor.extract %b[%c0] : tensor<4xf32>
  return %r#0, %r#1, %r#2, %r#3, %r#4, %r#5, %read
      : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>,
        tensor<4xf32>, index, f32
}
)mlir";

/// Same list of (operand, relation, definite).
void expectSame(const AliasingOpOperandList &actual,
                const AliasingOpOperandList &expected, unsigned result) {
  ASSERT_EQ(actual.getNumAliases(), expected.getNumAliases())
      << "result #" << result;
  for (auto [x, y] : llvm::zip(actual, expected)) {
    EXPECT_EQ(x.opOperand, y.opOperand) << "result #" << result;
    EXPECT_EQ(x.relation, y.relation) << "result #" << result;
    EXPECT_EQ(x.isDefinite, y.isDefinite) << "result #" << result;
  }
}

TEST(ForBufferizationQueries, SameAnswersAsTheDefaultQuery) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  gacc::registerGaccDialects(registry);
  gacc::registerGaccLoweringExternalModels(registry);
  MLIRContext context(registry);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(kLoops, ParserConfig(&context));
  ASSERT_TRUE(module);
  auto func = *module->getOps<func::FuncOp>().begin();
  scf::ForOp loop = *func.getOps<scf::ForOp>().begin();

  OneShotBufferizationOptions options;
  // The swapped pair is yielded out of place.
  options.allowReturnAllocsFromLoops = true;
  OneShotAnalysisState state(func, options);
  ASSERT_TRUE(succeeded(analyzeOp(func, state)));

  unsigned tensorAliases = 0;
  for (OpResult result : loop->getResults()) {
    AliasingOpOperandList actual = state.getAliasingOpOperands(result);
    AliasingOpOperandList expected =
        bufferization::detail::defaultGetAliasingOpOperands(result, state);
    expectSame(actual, expected, result.getResultNumber());
    tensorAliases += actual.getNumAliases();
  }
  // Each tensor result aliases its init; the index result nothing.
  EXPECT_EQ(tensorAliases, 5u);
  // A region iteration argument (a use-def chain through a view of it
  // reaches it; the query goes to the loop): nothing, as by default.
  for (BlockArgument arg : loop.getRegionIterArgs()) {
    AliasingOpOperandList actual = state.getAliasingOpOperands(arg);
    AliasingOpOperandList expected =
        bufferization::detail::defaultGetAliasingOpOperands(arg, state);
    expectSame(actual, expected, 100 + arg.getArgNumber());
    EXPECT_EQ(actual.getNumAliases(), 0u);
  }
  // The swapped pair is not equivalent to its inits, the unchanged argument
  // is: the test covers both relations.
  auto relation = [&](unsigned i) {
    return state.getAliasingOpOperands(loop->getResult(i))
        .getAliases()
        .front()
        .relation;
  };
  EXPECT_EQ(relation(2), BufferRelation::Unknown);
  EXPECT_EQ(relation(4), BufferRelation::Equivalent);
}
} // namespace

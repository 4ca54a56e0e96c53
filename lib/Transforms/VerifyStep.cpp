//===- VerifyStep.cpp - check the training-step contract --------*- C++ -*-===//
//
// The gacc-verify-step pass and the test pass that prints the batch-analysis
// class of each op (gacc-test-print-batch-analysis).
//
//===----------------------------------------------------------------------===//

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Transforms/Passes.h"
#include "gacc/Transforms/Utils.h"

#define DEBUG_TYPE "gacc-verify-step"

namespace mlir::gacc {
#define GEN_PASS_DEF_VERIFYSTEPPASS
#define GEN_PASS_DEF_TESTPRINTBATCHANALYSISPASS
#define GEN_PASS_DEF_TESTBREAKIRPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Finds the step and runs the analysis; null on failure (diagnosed).
static std::optional<std::pair<func::FuncOp, BatchAnalysis>>
analyzeStep(ModuleOp module, StringRef entry, bool allowStatistics) {
  func::FuncOp func = findTrainingStep(module, entry);
  if (!func || failed(verifyNotMicroBatched(func)))
    return std::nullopt;
  BatchAnalysisOptions options;
  options.allowMicroBatchStatistics = allowStatistics;
  FailureOr<BatchAnalysis> analysis = BatchAnalysis::run(func, options);
  if (failed(analysis))
    return std::nullopt;
  return std::make_pair(func, std::move(*analysis));
}

namespace {
struct VerifyStepPass : public gacc::impl::VerifyStepPassBase<VerifyStepPass> {
  using VerifyStepPassBase::VerifyStepPassBase;
  void runOnOperation() override {
    mlir::gacc::PassResultVerifier verifyResult(
        getOperation(), getArgument(), [this] { signalPassFailure(); });
    if (!analyzeStep(getOperation(), entry, allowMicroBatchStatistics))
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};

/// Test only: leaves IR the verifier rejects (every func.return loses its
/// operands), so that the "produced invalid IR" internal error is tested.
struct TestBreakIRPass
    : public gacc::impl::TestBreakIRPassBase<TestBreakIRPass> {
  using TestBreakIRPassBase::TestBreakIRPassBase;
  void runOnOperation() override {
    mlir::gacc::PassResultVerifier verifyResult(
        getOperation(), getArgument(), [this] { signalPassFailure(); });
    getOperation().walk([](func::ReturnOp ret) { ret->setOperands({}); });
  }
};

struct TestPrintBatchAnalysisPass
    : public gacc::impl::TestPrintBatchAnalysisPassBase<
          TestPrintBatchAnalysisPass> {
  using TestPrintBatchAnalysisPassBase::TestPrintBatchAnalysisPassBase;
  void runOnOperation() override {
    mlir::gacc::PassResultVerifier verifyResult(
        getOperation(), getArgument(), [this] { signalPassFailure(); });
    auto step = analyzeStep(getOperation(), entry, allowMicroBatchStatistics);
    if (!step)
      return signalPassFailure();
    auto &[func, analysis] = *step;
    for (Operation &op : func.getBody().front().without_terminator()) {
      const BatchOpInfo &opInfo = analysis.getInfo(&op);
      InFlightDiagnostic remark = op.emitRemark()
                                  << stringifyBatchClass(opInfo.kind);
      if (op.getNumResults() != 0) {
        const BatchValueInfo &vi = analysis.getInfo(op.getResult(0));
        if (vi.kind == BatchClass::PerSample) {
          remark << " dim " << vi.dim;
          if (vi.factor != 1)
            remark << " x" << vi.factor;
        }
      }
      if (opInfo.kind == BatchClass::Partial)
        remark << " (over loop " << opInfo.loopDim << ")";
    }
    markAllAnalysesPreserved();
  }
};
} // namespace

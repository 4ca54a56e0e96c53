//===- TestPrintBatchAnalysis.cpp - print the batch classes -----*- C++ -*-===//
//
// The gacc-test-print-batch-analysis test pass: a remark on each op of the
// step with the batch-analysis class of the op (and of its first result), so
// that lit tests can check the analysis directly. And
// gacc-test-build-step-for-batch-size: the step rebuilt for another number
// of samples, as gacc-check builds its tail and eager references.
//
//===----------------------------------------------------------------------===//

#include "AnalyzeStep.h"
#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/MicroBatch.h"
#include "gacc/Transforms/Passes.h"

#define DEBUG_TYPE "gacc-test-print-batch-analysis"

namespace mlir::gacc {
#define GEN_PASS_DEF_TESTPRINTBATCHANALYSISPASS
#define GEN_PASS_DEF_TESTBUILDSTEPFORBATCHSIZEPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct TestPrintBatchAnalysisPass
    : public gacc::impl::TestPrintBatchAnalysisPassBase<
          TestPrintBatchAnalysisPass> {
  using TestPrintBatchAnalysisPassBase::TestPrintBatchAnalysisPassBase;
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
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

struct TestBuildStepForBatchSizePass
    : public gacc::impl::TestBuildStepForBatchSizePassBase<
          TestBuildStepForBatchSizePass> {
  using TestBuildStepForBatchSizePassBase::TestBuildStepForBatchSizePassBase;
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    auto step = analyzeStep(getOperation(), entry,
                            /*allowMicroBatchStatistics=*/false);
    if (!step)
      return signalPassFailure();
    auto &[func, analysis] = *step;
    std::string name = (func.getSymName() + "_" + Twine(size)).str();
    if (failed(buildStepForBatchSize(func, analysis, size, name)))
      return signalPassFailure();
  }
};
} // namespace

//===- VerifyStep.cpp - check the training-step contract --------*- C++ -*-===//
//
// The gacc-verify-step pass: finds the training step and runs the batch
// dataflow analysis on it, so that an unsupported step fails with the
// analysis's diagnostics before any rewrite.
//
//===----------------------------------------------------------------------===//

#include "AnalyzeStep.h"
#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/Passes.h"

#define DEBUG_TYPE "gacc-verify-step"

namespace mlir::gacc {
#define GEN_PASS_DEF_VERIFYSTEPPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct VerifyStepPass : public gacc::impl::VerifyStepPassBase<VerifyStepPass> {
  using VerifyStepPassBase::VerifyStepPassBase;
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    if (!analyzeStep(getOperation(), entry, allowMicroBatchStatistics))
      signalPassFailure();
    markAllAnalysesPreserved();
  }
};
} // namespace

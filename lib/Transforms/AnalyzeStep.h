//===- AnalyzeStep.h - find the step and analyze it -------------*- C++ -*-===//
//
// Private to lib/Transforms: the common start of the passes that analyze the
// training step (gacc-verify-step, gacc-micro-batch, gacc-runtime-batch-size
// and the test passes gacc-test-print-batch-analysis and
// gacc-test-build-step-for-batch-size): find the step, refuse one that is
// already micro-batched, run the batch analysis.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LIB_TRANSFORMS_ANALYZESTEP_H
#define GACC_LIB_TRANSFORMS_ANALYZESTEP_H

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Transforms/Utils.h"

#include <optional>
#include <utility>

namespace mlir::gacc {

/// Finds the step (`entry`, or the only function with gacc roles), refuses
/// it when it is already micro-batched, folds `tensor.dim` of static
/// dimensions when `foldDims`, and runs the batch analysis (micro-batch
/// statistics allowed with `allowStatistics`). std::nullopt on failure,
/// which is diagnosed.
inline std::optional<std::pair<func::FuncOp, BatchAnalysis>>
analyzeStep(ModuleOp module, StringRef entry, bool allowStatistics,
            bool foldDims = false) {
  func::FuncOp func = findTrainingStep(module, entry);
  if (!func || failed(verifyNotMicroBatched(func)))
    return std::nullopt;
  if (foldDims)
    foldStaticDims(func);
  BatchAnalysisOptions options;
  options.allowMicroBatchStatistics = allowStatistics;
  FailureOr<BatchAnalysis> analysis = BatchAnalysis::run(func, options);
  if (failed(analysis))
    return std::nullopt;
  return std::make_pair(func, std::move(*analysis));
}

} // namespace mlir::gacc

#endif // GACC_LIB_TRANSFORMS_ANALYZESTEP_H

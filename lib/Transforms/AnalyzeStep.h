//===- AnalyzeStep.h - find the step and analyze it -------------*- C++ -*-===//
//
// Internal helper shared by gacc-verify-step and
// gacc-test-print-batch-analysis.
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

/// Finds the step and runs the analysis; null on failure (diagnosed).
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

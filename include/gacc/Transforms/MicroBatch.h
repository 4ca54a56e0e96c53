//===- MicroBatch.h - what gacc-micro-batch offers the tools ----*- C++ -*-===//
//
// The parts of gacc-micro-batch (lib/Transforms/MicroBatch.cpp) that the
// tools use outside the pass: the one rule that splits a batch of B samples
// into micro-batch sizes, and the step rewritten for one micro-batch's size
// (gacc-check's eager recipe).
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TRANSFORMS_MICROBATCH_H
#define GACC_TRANSFORMS_MICROBATCH_H

#include "gacc/Analysis/BatchAnalysis.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::gacc {

/// Splits a batch of `batchSize` samples: `explicitSizes` when given (each
/// positive, summing to the batch; `microBatches` is 1 or their count), else
/// `microBatches` sizes (between 1 and the batch size) that differ by at most
/// one, the larger first. Otherwise reports through `emitError` (whose
/// diagnostic the message is appended to) and fails.
FailureOr<SmallVector<int64_t>>
getMicroBatchSizes(int64_t batchSize, int64_t microBatches,
                   ArrayRef<int64_t> explicitSizes,
                   llvm::function_ref<InFlightDiagnostic()> emitError);

/// Builds, next to `func`, the same step written for `size` samples (the
/// "eager" view of one micro-batch): batch arguments and per-sample values
/// have `size` samples, and the sample-count constants B and 1/B become size
/// and 1/size, as a user's step for that batch would normalize. Used by
/// gacc-check for the eager "loss ÷ m" recipe.
FailureOr<func::FuncOp> buildStepForBatchSize(func::FuncOp func,
                                              const BatchAnalysis &analysis,
                                              int64_t size, StringRef name);

} // namespace mlir::gacc

#endif // GACC_TRANSFORMS_MICROBATCH_H

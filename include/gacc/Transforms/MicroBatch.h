//===- MicroBatch.h - what gacc-micro-batch offers the tools ----*- C++ -*-===//
//
// The one rule that splits a batch of B samples into micro-batch sizes, used
// by gacc-micro-batch and by the tools (gacc-check's eager recipe).
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TRANSFORMS_MICROBATCH_H
#define GACC_TRANSFORMS_MICROBATCH_H

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

} // namespace mlir::gacc

#endif // GACC_TRANSFORMS_MICROBATCH_H

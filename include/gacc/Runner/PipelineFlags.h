//===- PipelineFlags.h - gacc-pipeline options as tool flags ----*- C++ -*-===//
//
// The command-line flags that gacc-run, gacc-check and gacc-compile share:
// every gacc-pipeline option under its own name, plus the device and the
// lowering's knobs (DESIGN.md §5).
//
//===----------------------------------------------------------------------===//

#ifndef GACC_RUNNER_PIPELINEFLAGS_H
#define GACC_RUNNER_PIPELINEFLAGS_H

#include "gacc/Runner/StepRunner.h"

#include "llvm/Support/CommandLine.h"

#include <string>
#include <vector>

namespace mlir::gacc {

/// The category that holds the shared flags; tools put their own flags in it
/// too so that --help lists them together.
llvm::cl::OptionCategory &getToolFlagCategory();

/// The step options the shared flags select.
StepOptions getStepOptionsFromFlags();

/// The value of --run-batch-size (gacc-run, gacc-check): the samples of a
/// tail step, 0 for the whole batch.
int64_t getRunBatchSizeFlag();

/// The shared flags as arguments for another gacc tool (gacc-check starting
/// gacc-run under mpirun).
std::vector<std::string> getPipelineFlagArguments();

} // namespace mlir::gacc

#endif // GACC_RUNNER_PIPELINEFLAGS_H

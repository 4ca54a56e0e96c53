//===- PipelineFlags.h - pipeline options as tool flags ---------*- C++ -*-===//
//
// The command-line flags that gacc-run, gacc-check and gacc-compile share:
// every gacc-pipeline option under its own name (PipelineOptions.def), the
// device, and the CPU lowering's knobs (LoweringOptions.def). A tool owns
// them: it constructs one PipelineFlags in main before
// llvm::cl::ParseCommandLineOptions, and the flags exist while the object
// lives. The runner library itself defines no global flag, so an embedder's
// command line inherits none.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_RUNNER_PIPELINEFLAGS_H
#define GACC_RUNNER_PIPELINEFLAGS_H

#include "gacc/Runner/StepRunner.h"

#include "llvm/Support/CommandLine.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir::gacc {

/// The category that holds the shared flags; tools put their own flags in it
/// too so that --help lists them together.
llvm::cl::OptionCategory &getToolFlagCategory();

/// The shared flags of the tools that compile steps.
class PipelineFlags {
public:
  /// Registers the flags (in getToolFlagCategory()).
  PipelineFlags();
  ~PipelineFlags();
  PipelineFlags(const PipelineFlags &) = delete;
  PipelineFlags &operator=(const PipelineFlags &) = delete;

  /// The step options the flags select; false with `error` set when a value
  /// is not one the flags accept (an unknown --device).
  bool getStepOptions(StepOptions &options, std::string &error) const;

  /// The value of --run-batch-size (gacc-run, gacc-check): the samples of a
  /// tail step, 0 for the whole batch.
  int64_t getRunBatchSize() const;

  /// Hides --run-batch-size (gacc-compile runs nothing).
  void hideRunBatchSize();

  /// The flags that differ from their defaults as arguments for another
  /// gacc tool (gacc-check starting gacc-run under mpirun), --device always.
  std::vector<std::string> getArguments() const;

private:
  struct Flags;
  std::unique_ptr<Flags> flags;
};

} // namespace mlir::gacc

#endif // GACC_RUNNER_PIPELINEFLAGS_H

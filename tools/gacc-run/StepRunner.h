//===- StepRunner.h - compile and run a training step -----------*- C++ -*-===//
//
// The library behind gacc-run (and gacc-check's compiled side): parses a
// training step, records its signature (roles, shapes, element types), runs
// gacc-pipeline and gacc-lower-to-cpu, JIT-compiles the result with MLIR's
// ExecutionEngine and runs steps on host arrays.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TOOLS_GACCRUN_STEPRUNNER_H
#define GACC_TOOLS_GACCRUN_STEPRUNNER_H

#include "Npy.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gacc {

/// The role of a step argument or result (DESIGN.md §1).
enum class Role {
  None,
  Param,
  Batch,
  State,
  Loss,
  Grad,
  ParamOut,
  StateOut,
  Metric
};

/// Returns "param", "batch", "loss", ...
const char *roleName(Role role);

/// One argument or result of the step.
struct TensorInfo {
  Role role = Role::None;
  /// Batch arguments: the sample dimension. Grad/ParamOut/StateOut results:
  /// the argument they refer to.
  int64_t index = -1;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Integer batch inputs used as indices: values are drawn from
  /// [0, indexBound) (0 when unknown).
  int64_t indexBound = 0;
  /// Float batch inputs that only scale other values (masks): drawn as 0/1.
  bool isMask = false;
  /// Arguments the pipeline added (the loss scale and its growth tracker):
  /// the value they start from when no input file gives one.
  bool hasFill = false;
  double fill = 0;
};

/// Options of a compiled step: the gacc-pipeline options and lowering knobs.
struct StepOptions {
  std::string entry;
  /// Samples of batch arguments whose sample dimension is dynamic (0: none).
  int64_t batchSize = 0;
  int64_t microBatches = 1;
  std::vector<int64_t> microBatchSizes;
  bool allowMicroBatchStatistics = false;
  std::string accumulateType;
  int64_t bucketBytes = 26214400;
  bool testSkipGlobalNormalizer = false;
  /// gacc-loss-scale: none, static, static=S or dynamic, and its knobs.
  std::string lossScale = "none";
  double lossScaleInit = 65536.0;
  double lossScaleGrowthFactor = 2.0;
  double lossScaleBackoffFactor = 0.5;
  int64_t lossScaleGrowthInterval = 2000;
  bool blas = true;
  bool traceRegions = true;
  /// "cpu" or "cuda".
  std::string device = "cpu";
};

/// Finalizes the runtime: the CUDA backend (NCCL communicator, device trace
/// events) when it was used, then gaccrt (trace file, MPI).
void finalizeRuntime();

/// A step compiled for the host.
class CompiledStep {
public:
  ~CompiledStep();

  /// Parses `path` and compiles its training step. Diagnostics go to stderr;
  /// returns null (with `error` set) on failure.
  static std::unique_ptr<CompiledStep> compile(const std::string &path,
                                               const StepOptions &options,
                                               std::string &error);

  const std::string &getName() const { return name; }
  const std::vector<TensorInfo> &getArgs() const { return args; }
  const std::vector<TensorInfo> &getResults() const { return results; }
  /// The number of samples of the rank's batch.
  int64_t getBatchSize() const { return batchSize; }

  /// Checks `inputs` against the signature (count, shape, dtype) and
  /// converts float/int arrays to the argument's element type. Returns false
  /// with a message naming the argument when they do not fit.
  bool prepareInputs(std::vector<NpyArray> &inputs, std::string &error) const;

  /// Memory accounting of the device the step runs on: the runtime-accounted
  /// heap of the compiled code on the CPU, device memory on CUDA.
  int64_t currentBytes() const;
  int64_t peakBytes() const;
  void resetPeak() const;
  bool isCuda() const { return cuda; }

  /// Runs one step. `inputs` must have been prepared. An out-of-range
  /// gather index (gacc-guard-gathers) fails the step with a message naming
  /// the index, the bound and the site.
  bool run(const std::vector<NpyArray> &inputs, std::vector<NpyArray> &outputs,
           std::string &error);

private:
  CompiledStep();
  struct Impl;
  std::unique_ptr<Impl> impl;
  std::string name;
  bool cuda = false;
  std::vector<TensorInfo> args, results;
  int64_t batchSize = 0;
  /// Descriptions of the checked gathers, by site number.
  std::vector<std::string> gatherSites;
};

/// Reads the inputs of `rank` (of `world` ranks) from `dir`: `arg<i>.npy`,
/// or `rank<r>/arg<i>.npy` when per-rank folders exist (there must be
/// exactly `world`; a file missing from a rank folder falls back to the
/// shared one), checked and converted by prepareInputs. Returns false with a
/// message naming the file or argument.
bool readStepInputs(const CompiledStep &step, const std::string &dir, int rank,
                    int world, std::vector<NpyArray> &inputs,
                    std::string &error);

/// Draws inputs for `step`: parameters from `seed` (the same on every rank),
/// batch inputs from `seed` and `rank` (each rank its own batch), integer
/// index inputs in range, masks as 0/1, rank-0 float state 0.1 (a learning
/// rate), other state zeros.
std::vector<NpyArray> makeRandomInputs(const CompiledStep &step, uint64_t seed,
                                       int rank);

} // namespace gacc

#endif // GACC_TOOLS_GACCRUN_STEPRUNNER_H

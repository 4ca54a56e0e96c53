//===- StepRunner.h - compile and run a training step -----------*- C++ -*-===//
//
// The runner library (Gacc::GaccRunner) behind gacc-run and gacc-check, for
// embedders too: parses a training step, records its signature (roles,
// shapes, element types), runs gacc-pipeline and the CPU or CUDA lowering,
// JIT-compiles the result with MLIR's ExecutionEngine (for the host CPU) and
// runs steps on buffers that stay alive between steps.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_RUNNER_STEPRUNNER_H
#define GACC_RUNNER_STEPRUNNER_H

#include "gacc/Runner/StepIO.h"

#include "gacc/Dialect/Gacc/IR/StepRoles.h"
#include "gacc/Pipelines/PipelineOptions.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class Operation;
} // namespace mlir

namespace mlir::gacc {

/// Options of a compiled step: the gacc-pipeline options and the CPU
/// lowering's (the members of GaccPipelineConfig and LowerToCPUConfig, with
/// their defaults), and the device.
struct StepOptions : GaccPipelineConfig, LowerToCPUConfig {
  Device device = Device::CPU;
  /// compile(): the compiler's code leaves the resident set
  /// (releaseCompilerCode) once MLIR has translated the step to LLVM IR and
  /// again after LLVM's code generation, so that neither part's code adds to
  /// the other's, nor to the running steps' memory (gacc-run).
  bool releaseCompilerCode = false;
  /// compile(): when set, the step's LLVM IR after optimizeStepModule (what
  /// code generation gets: the parts of the module, one after the other) is
  /// written to this file (gacc-run's --dump-llvm-ir).
  std::string optimizedIrFile;
  /// compile(): threads of LLVM's optimization and code generation (the
  /// step's functions are optimized and compiled in as many parts); 0: one
  /// per hardware thread, at most 8.
  unsigned compileThreads = 0;
  /// compile(), CPU steps: the directory of the step cache (StepCache.h):
  /// a step compiled before with the same file, options, CPU and build is
  /// linked from the machine code kept there, without running the pipeline
  /// or LLVM; a step compiled here is kept there (unless the compile
  /// emitted a diagnostic, which a hit would not repeat). Empty: no cache.
  std::string stepCacheDir;
  /// The most bytes the step cache's entries may take: storing an entry
  /// removes those used longest ago beyond it.
  uint64_t stepCacheMaxBytes = uint64_t(2) << 30;
  /// compile() and lower(): called with the step's arguments as soon as
  /// they are known, before the pipeline runs, so that the caller can
  /// prepare inputs meanwhile (gacc-run draws its random ones). Not called
  /// with shard-optimizer-state, whose shards are known only afterwards.
  std::function<void(const std::vector<TensorInfo> &)> onArguments;
};

/// A step compiled for the host.
class CompiledStep {
public:
  ~CompiledStep();

  /// Parses `path` and compiles its training step. Diagnostics go to stderr;
  /// returns null (with `error` set) on failure.
  static std::unique_ptr<CompiledStep> compile(const std::string &path,
                                               const StepOptions &options,
                                               std::string &error);

  /// Parses `path`, records the signature and runs gacc-pipeline and the
  /// device's lowering (gacc-lower-to-cpu or gacc-lower-to-cuda) down to the
  /// LLVM dialect, without JIT compilation (gacc-compile translates the
  /// result to an object file). Needs no GPU. Diagnostics go to stderr;
  /// returns null (with `error` set) on failure.
  static std::unique_ptr<CompiledStep> lower(const std::string &path,
                                             const StepOptions &options,
                                             std::string &error);

  /// The lowered module (a `builtin.module` in the LLVM dialect) of lower();
  /// null after compile(), whose JIT holds the machine code instead.
  mlir::Operation *getLoweredModule() const;

  /// compile() with StepOptions::releaseCompilerCode: the resident bytes of
  /// compiler code it released (releaseCompilerCode), else 0.
  int64_t getReleasedCompilerBytes() const { return releasedCompilerBytes; }

  /// compile() with StepOptions::stepCacheDir: whether the machine code came
  /// from the step cache.
  bool isFromStepCache() const { return fromStepCache; }
  /// compile() with StepOptions::stepCacheDir: why the compiled step could
  /// not be kept in the cache (a full disk), else empty. The step itself is
  /// good.
  const std::string &getStepCacheWarning() const { return stepCacheWarning; }

  const StepSignature &getSignature() const { return signature; }
  const std::string &getName() const { return signature.name; }
  const std::vector<TensorInfo> &getArgs() const { return signature.args; }
  const std::vector<TensorInfo> &getResults() const {
    return signature.results;
  }
  /// The number of samples of the rank's batch.
  int64_t getBatchSize() const { return signature.batchSize; }

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
  /// On CUDA, the kernel launches, host waits and allocations since the
  /// last call (gaccrt_cuda_get_counts), and restarts the counts.
  std::optional<gaccrt_cuda_counts> takeDeviceCounts() const;

  /// Copies the prepared `inputs` into buffers that stay alive between steps
  /// (device buffers on CUDA) and allocates the result buffers once. Returns
  /// false with a message when the count does not match.
  bool setInputs(const std::vector<NpyArray> &inputs, std::string &error);

  /// Runs `count` steps on the buffers of setInputs without copying inputs or
  /// results: the param_out and state_out results of a step become the
  /// parameters and state of the next (their buffers are swapped). An
  /// out-of-range gather index (gacc-guard-gathers) fails the step with a
  /// message naming the index, the bound and the site.
  bool runSteps(int64_t count, std::string &error);

  /// Copies result `j` of the last step out of its buffer.
  NpyArray getOutput(size_t j) const;

  /// Copies every result of the last step out.
  std::vector<NpyArray> getOutputs() const;

  /// describeNonFinite (StepIO.h) of result `j` of the last step, read in
  /// its buffer (no copy on the host).
  std::string describeNonFiniteOutput(size_t j) const;

  /// Bytes of the buffers of setInputs (inputs and results).
  int64_t getBufferBytes() const;

  /// Runs one step on `inputs` (prepared): setInputs, runSteps(1) and
  /// getOutputs in one call.
  bool run(const std::vector<NpyArray> &inputs, std::vector<NpyArray> &outputs,
           std::string &error);

private:
  CompiledStep();
  struct Impl;
  std::unique_ptr<Impl> impl;
  bool cuda = false;
  int64_t releasedCompilerBytes = 0;
  bool fromStepCache = false;
  std::string stepCacheWarning;
  StepSignature signature;
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

/// The step cache directory of a tool that keeps one (gacc-run): the
/// environment variable GACC_STEP_CACHE (empty or "off": none), else
/// $XDG_CACHE_HOME/gacc/steps, else ~/.cache/gacc/steps; empty when none
/// of them is set.
std::string getDefaultStepCacheDir();

/// After compiling: tells the kernel that the compiler's code is not needed
/// while steps run. The read-only mappings of libMLIR and libLLVM that the
/// process has not modified (their code and constants: clean pages of the
/// files, which the kernel would reclaim under memory pressure anyway) leave
/// the resident set (madvise MADV_DONTNEED); a later call into the compiler
/// pages its code back in from the files. Mappings with modified pages
/// (relocated data) are kept. Returns the resident bytes released (0 where
/// /proc/self/smaps is unavailable).
int64_t releaseCompilerCode();

} // namespace mlir::gacc

#endif // GACC_RUNNER_STEPRUNNER_H

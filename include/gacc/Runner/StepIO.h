//===- StepIO.h - a compiled step's signature, inputs and calls -*- C++ -*-===//
//
// The half of the step runner that needs no LLVM or MLIR, shared by gacc-run
// (JIT) and gacc-run-aot (a step compiled ahead of time by gacc-compile): the
// step's signature (roles, element types, shapes, gather sites) and its text
// form embedded in a compiled step, input files and random inputs, the
// calling convention of a lowered step (every memref expanded into allocated,
// aligned, offset, sizes, strides and passed packed as `void **`), the CUDA
// runtime opened with dlopen, and the summary both runners print.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_RUNNER_STEPIO_H
#define GACC_RUNNER_STEPIO_H

#include "Npy.h"
#include "gacc/Dialect/Gacc/IR/Roles.h"
#include "gaccrt/gaccrt_cuda.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mlir::gacc {

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
  /// The scalar type the step declares ("f32", "i64", "index"; empty for a
  /// tensor). A scalar is a 0-d array here (shape {}) and a rank-0 memref
  /// in the compiled step's calling convention; an `index` is an i64.
  std::string scalarType;
  /// A state argument or its state_out result that the compiled step holds
  /// as the rank's shard (shard-optimizer-state): the full shape, and the
  /// number of ranks it is split over (`shape` is then the shard's, {s});
  /// empty and 0 otherwise. The layout: the full tensor flattened, padded
  /// with zeros to shardRanks * s elements, rank r holding [r s, r s + s).
  std::vector<int64_t> shardOf;
  int64_t shardRanks = 0;
};

/// The rank's shard of `full` (TensorInfo::shardOf's layout) for `ranks`
/// ranks: a 1-D array of ceil(n / ranks) elements.
NpyArray sliceShard(const NpyArray &full, int64_t ranks, int64_t rank);

/// The full array of `shape` from every rank's shard, in rank order (the
/// padding is dropped).
NpyArray joinShards(const std::vector<NpyArray> &shards,
                    const std::vector<int64_t> &shape);

/// Where a compiled step runs.
enum class Device { CPU, CUDA };

/// "cpu" or "cuda".
const char *getDeviceName(Device device);

/// The device named "cpu" or "cuda", or none.
std::optional<Device> parseDevice(const std::string &name);

/// What a runner needs to know about a compiled step.
struct StepSignature {
  /// The step function's name.
  std::string name;
  Device device = Device::CPU;
  /// The number of samples of the rank's batch.
  int64_t batchSize = 0;
  /// How the batch is split: "4 micro-batches" or "micro-batch sizes 3,1".
  std::string split;
  std::vector<TensorInfo> args, results;
  /// Descriptions of the checked gathers, by site number.
  std::vector<std::string> gatherSites;

  /// The sample count argument (runtime-batch-size), or -1.
  int getSampleCountArgument() const;
  bool hasSampleCount() const { return getSampleCountArgument() >= 0; }
};

/// The site number with which a library's `gacc_step` (gacc-compile, CPU)
/// reports a sample count outside [1, B] through gaccrt_index_error (index
/// B', bound B + 1); the step then runs with B' clamped into [1, B].
constexpr int64_t kSampleCountSite = -1;

/// The index of the `sample_count` argument among `args` (runtime-batch-size),
/// or -1.
int getSampleCountArgument(const std::vector<TensorInfo> &args);

/// The number of real samples `inputs` give a step with a sample count
/// argument `countArg` (the value of that argument).
int64_t getSampleCount(const std::vector<NpyArray> &inputs, int countArg);

/// The first line of a signature's text, with its newline.
extern const char kSignatureMagic[];

/// The signature as text (one line per field, argument, result and gather
/// site), the form gacc-compile embeds as `gacc_step_signature`.
std::string serializeSignature(const StepSignature &signature);

/// Parses serializeSignature's text. Returns false with a message on text of
/// another version or a malformed line.
bool parseSignature(const std::string &text, StepSignature &signature,
                    std::string &error);

/// A step library made by gacc-compile, loaded (loadStepLibrary).
struct StepLibrary {
  StepSignature signature;
  void *handle = nullptr;
  /// gacc_step: takes the packed arguments and results (PackedStep::run).
  void (*entry)(void **) = nullptr;
  bool cuda = false;
};

/// Loads the step library at `path` (a path without a slash is taken from
/// the working directory): reads its signature from the file, initializes
/// the CUDA runtime for a CUDA step (its constructors load its kernels),
/// opens it and checks its gacc_step_signature against the file's. Returns
/// false with a message that names `path`.
bool loadStepLibrary(const std::string &path, StepLibrary &library,
                     std::string &error);

/// Checks `inputs` against `args` (count, shape, dtype) and converts
/// float/int arrays to the argument's element type. Returns false with a
/// message naming the argument when they do not fit.
///
/// A step compiled with runtime-batch-size (it has a `sample_count`
/// argument) also takes batch arguments with fewer samples B' (a tail
/// step): they are padded with zeros to the compiled batch, and the sample
/// count argument is set to B' (to the full batch otherwise).
///
/// `files`, when given, names the file each input was read from (empty for
/// one that was not), and a shape or dtype error names it.
bool prepareStepInputs(const std::vector<TensorInfo> &args,
                       std::vector<NpyArray> &inputs, std::string &error,
                       const std::vector<std::string> *files = nullptr);

/// Keeps the first `samples` samples of each batch argument of `inputs`
/// (gacc-run's and gacc-check's --run-batch-size with generated inputs).
/// Returns false with a message when `samples` is not in 1..B.
bool narrowBatchInputs(const std::vector<TensorInfo> &args,
                       std::vector<NpyArray> &inputs, int64_t samples,
                       std::string &error);

/// gacc-run's and gacc-check's --run-batch-size: runs the generated `inputs`
/// as a tail of their first `samples` samples (narrowBatchInputs, then
/// prepareStepInputs). An error for a step without a sample count argument,
/// or for inputs read from files (`fromFiles`).
bool runTailOfInputs(const StepSignature &signature,
                     std::vector<NpyArray> &inputs, int64_t samples,
                     bool fromFiles, std::string &error);

/// The first `samples` entries of `array` along `dim`.
NpyArray narrowArray(const NpyArray &array, int64_t dim, int64_t samples);

/// Reads the inputs of `rank` (of `world` ranks) from `dir`: `arg<i>.npy`,
/// or `rank<r>/arg<i>.npy` when per-rank folders exist (there must be
/// exactly `world`; a file missing from a rank folder falls back to the
/// shared one), checked and converted by prepareStepInputs. A folder with a
/// MANIFEST (a set gacc wrote) must match it, and one with only
/// MANIFEST.pending (an interrupted write) is refused (checkResultSet).
/// Returns false with a message naming the file or argument.
bool readStepInputs(const std::vector<TensorInfo> &args, const std::string &dir,
                    int rank, int world, std::vector<NpyArray> &inputs,
                    std::string &error);

/// Draws inputs for `args`: parameters from `seed` (the same on every rank),
/// batch inputs from `seed` and `rank` (each rank its own batch), integer
/// index inputs in range, masks as 0/1, rank-0 float state 0.1 (a learning
/// rate), other state zeros.
std::vector<NpyArray> makeRandomInputs(const std::vector<TensorInfo> &args,
                                       uint64_t seed, int rank);

/// Loads libgaccrt_cuda (dlopen, once) and initializes the device. Returns
/// false with a message when the library or a usable device is missing.
bool initCudaRuntime(std::string &error);

/// Finalizes the runtime: the CUDA backend (NCCL communicator, device trace
/// events) when it was used, then gaccrt (trace file, MPI).
void finalizeRuntime();

/// Memory accounting of the device a step runs on: the runtime-accounted
/// heap on the CPU, device memory on CUDA (after initCudaRuntime).
int64_t deviceCurrentBytes(bool cuda);
int64_t devicePeakBytes(bool cuda);
void deviceResetPeak(bool cuda);

/// Device time between two calls on the CUDA stream (CUDA events):
/// startDeviceTimer records the first event, deviceElapsedMs the second and
/// waits for it.
void startDeviceTimer();
double deviceElapsedMs();

/// On CUDA, the kernel launches, host waits and allocations since the last
/// call (gaccrt_cuda_get_counts), and restarts the counts. False when the
/// CUDA runtime is not loaded.
bool takeDeviceCounts(gaccrt_cuda_counts &counts);

/// One host copy of copyOnThreads: `bytes` from `from` to `to`, or zeros
/// where `from` is null.
struct HostCopy {
  void *to;
  const void *from;
  int64_t bytes;
};

/// Does `copies` on up to 8 threads (as many as the CPU has), in pieces of
/// 4 MiB: the first touch of fresh pages is most of a large copy's time.
void copyOnThreads(const std::vector<HostCopy> &copies);

/// A step called through its packed wrapper (`void (void **)`, the calling
/// convention of a lowered step), with its argument and result buffers
/// allocated once (on the device for CUDA; host pages touched at
/// construction) and kept across steps, as a training loop keeps its
/// parameters: what gacc-run-aot and CompiledStep (gacc-run, gacc-check)
/// run. After each step the param_out and state_out results become the next
/// step's arguments by swapping buffers.
class PackedStep {
public:
  PackedStep(const StepSignature &signature, bool cuda);
  ~PackedStep();
  PackedStep(const PackedStep &) = delete;
  PackedStep &operator=(const PackedStep &) = delete;

  /// Copies the prepared `inputs` into the argument buffers (outside any
  /// timing); the next run uses them as they are. Fails with a message when
  /// a buffer could not be allocated. Call before `run`.
  bool setInputs(const std::vector<NpyArray> &inputs, std::string &error);
  /// Runs one step through `invoke`. An out-of-range gather index fails the
  /// step with a message naming the index, the bound and the site. With
  /// `callMs`, sets it to the time of the call alone (device time by CUDA
  /// events for CUDA).
  bool run(const std::function<bool(void **, size_t, std::string &)> &invoke,
           std::string &error, double *callMs = nullptr);
  /// Result `j` of the last step, copied to the host.
  NpyArray getOutput(size_t j) const;
  std::vector<NpyArray> getOutputs() const;
  /// describeNonFinite of result `j` of the last step, read in place on
  /// the host (copied from the device for CUDA).
  std::string describeNonFiniteOutput(size_t j) const;
  /// Bytes of the argument and result buffers.
  int64_t getBufferBytes() const;

private:
  struct Buffer {
    void *data = nullptr;
    int64_t bytes = 0;
    std::vector<int64_t> shape;
  };
  const StepSignature &signature;
  bool cuda;
  std::vector<Buffer> buffers; // the arguments, then the results
  void *hostBlock = nullptr;   // every host buffer, in one allocation
  int64_t hostBlockBytes = 0;  // its size (also when it failed)
  std::vector<int64_t> fields;
  std::vector<void *> packed;
  bool pendingFeedback = false;
};

/// Formats a byte count ("1.50 MiB").
std::string formatBytes(int64_t bytes);

/// For a float array with NaN or infinite values, what they are ("2 NaN, 1
/// +inf of 4 values"); "" when every value is finite or the array is not
/// of a float type.
std::string describeNonFinite(const NpyArray &array);
/// The same for `count` values of `dtype` at `data`.
std::string describeNonFinite(DType dtype, const void *data, int64_t count);

/// One line per result that is not finite, "result <j> (<role>): 2 NaN, 1
/// +inf of 4 values", in the order of `results`; `describe(j)` is
/// describeNonFinite of result `j`.
std::vector<std::string>
describeNonFiniteResults(const std::vector<TensorInfo> &results,
                         const std::function<std::string(size_t)> &describe);

/// The summary line of gacc-run and gacc-run-aot.
std::string formatStepSummary(int64_t steps, int64_t warmup,
                              const std::vector<double> &stepMs, int64_t peak,
                              bool cuda, int64_t collectives,
                              int64_t bytesReduced,
                              const gaccrt_cuda_counts *counts = nullptr);

} // namespace mlir::gacc

#endif // GACC_RUNNER_STEPIO_H

//===- gacc-run.cpp - compile and run gradient-accumulated steps -*- C++
//-*-===//
//
// gacc-run STEP.mlir --micro-batches=M [pipeline options] [--device=cpu|cuda]
//   [--steps=K] [--input-dir=DIR] [--output-dir=DIR] [--seed=S] [--trace=FILE]
//
// Compiles the training step with gacc-pipeline and gacc-lower-to-cpu, runs
// it K times (param_out/state_out feed the next step), prints the loss per
// step and a summary. Under `mpirun -np N` every rank runs its own batch and
// the sunk all-reduces go through MPI.
//
//===----------------------------------------------------------------------===//

#include "gacc/Runner/PipelineFlags.h"
#include "gacc/Runner/StepRunner.h"
#include "gacc/Runner/StepTuning.h"
#include "gacc/Transforms/LossScaleMode.h"

#include "gaccrt/gaccrt.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <unistd.h>

using namespace mlir::gacc;
namespace cl = llvm::cl;

static cl::OptionCategory &category = getToolFlagCategory();
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<step.mlir>"),
                                      cl::Required, cl::cat(category));
static cl::opt<int64_t> steps("steps", cl::desc("Number of steps"), cl::init(1),
                              cl::cat(category));
static cl::opt<int64_t>
    warmup("warmup",
           cl::desc("Leave the first N steps out of the timing summary"),
           cl::init(0), cl::cat(category));
static cl::opt<std::string>
    inputDir("input-dir", cl::desc("Read arg<i>.npy (rank<r>/arg<i>.npy)"),
             cl::init(""), cl::cat(category));
static cl::opt<std::string>
    outputDir("output-dir", cl::desc("Write result<j>.npy of the last step"),
              cl::init(""), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of random inputs"),
                              cl::init(0), cl::cat(category));
static cl::opt<std::string> traceFile("trace",
                                      cl::desc("Write a Chrome trace (JSON)"),
                                      cl::init(""), cl::cat(category));
static cl::opt<std::string> dumpLlvmIr(
    "dump-llvm-ir",
    cl::desc("Write the step's LLVM IR, as optimized for this CPU before its "
             "code generation, to FILE"),
    cl::value_desc("FILE"), cl::init(""), cl::cat(category));
static cl::opt<unsigned> compileThreads(
    "compile-threads",
    cl::desc("Threads of LLVM's code generation (0: one per hardware thread, "
             "at most 8)"),
    cl::init(0), cl::cat(category));
static cl::opt<double> collectiveTimeout(
    "collective-timeout",
    cl::desc("Fail (naming the call and the rank) when a collective has not "
             "completed after SECONDS (a stopped rank); 0: wait forever"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> rssEvery(
    "rss-every",
    cl::desc("Print the process's resident set size after every N steps "
             "(rank 0; bench/soak.sh checks that it stays flat)"),
    cl::value_desc("N"), cl::init(0), cl::cat(category));
static cl::opt<bool> tuneGemm(
    "tune-gemm",
    cl::desc("With several GEMM threads under GACCRT_GEMM=auto: time this "
             "step with every GEMM on each library (a few steps each, before "
             "the run's own), record the fastest in the GEMM cache for later "
             "runs, and use it"),
    cl::init(false), cl::cat(category));
static cl::opt<bool> autoTuneGemm(
    "auto-tune-gemm",
    cl::desc("With several GEMM threads under GACCRT_GEMM=auto, on one rank, "
             "with a GEMM cache that has no choice for this step: tune it "
             "first, as --tune-gemm does (default on; =false keeps "
             "gaccrt's kernels untimed)"),
    cl::init(true), cl::cat(category));
static cl::opt<std::string> stepCache(
    "step-cache",
    cl::desc("Directory of the step cache: a step compiled before with the "
             "same file, options, CPU and gacc build is linked from the "
             "machine code kept there, without compiling ('off': no cache; "
             "default: GACC_STEP_CACHE, else $XDG_CACHE_HOME/gacc/steps, else "
             "~/.cache/gacc/steps)"),
    cl::value_desc("DIR"), cl::init(""), cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("Print only errors"),
                           cl::init(false), cl::cat(category));
static cl::opt<bool>
    printResults("print-results",
                 cl::desc("Print every result of the last step (rank 0)"),
                 cl::init(false), cl::cat(category));

/// Prints an error (with the rank under MPI) and returns exit code 1.
static int fail(const std::string &message) {
  // One write: under mpirun the ranks' lines must not interleave.
  std::string line = gaccrt_world_size() > 1
                         ? "gacc-run: error (rank " +
                               std::to_string(gaccrt_rank()) + "): " + message +
                               "\n"
                         : "gacc-run: error: " + message + "\n";
  llvm::errs() << line;
  llvm::errs().flush();
  if (gaccrt_world_size() > 1)
    gaccrt_abort(message.c_str());
  finalizeRuntime();
  return 1;
}

/// Prints a warning (with the rank under MPI) in one write.
static void warn(const std::string &message) {
  std::string line = gaccrt_world_size() > 1
                         ? "gacc-run: warning (rank " +
                               std::to_string(gaccrt_rank()) + "): " + message +
                               "\n"
                         : "gacc-run: warning: " + message + "\n";
  llvm::outs().flush();
  llvm::errs() << line;
  llvm::errs().flush();
}

/// The resident set size of this process in KiB (/proc/self/statm), or -1.
static int64_t residentKiB() {
  std::FILE *file = std::fopen("/proc/self/statm", "r");
  if (!file)
    return -1;
  long long size = 0, resident = 0;
  int read = std::fscanf(file, "%lld %lld", &size, &resident);
  std::fclose(file);
  return read == 2 ? resident * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

/// Returns the scalar value of a rank-0 float array.
static double scalarValue(const NpyArray &array) {
  NpyArray f64 = convertToDType(array, DType::F64);
  return f64.data.empty() ? NAN
                          : *reinterpret_cast<const double *>(f64.data.data());
}

/// argv[1..] without the flags named in `dropped` and the step's file;
/// every other flag written as "--name" or "--name=value"
/// however it was given ("-name", "-name value", "--name=value"), so that
/// the same flags give the same arguments.
static std::vector<std::string>
getArgsWithout(int argc, char **argv, llvm::ArrayRef<llvm::StringRef> dropped) {
  auto &options = cl::getRegisteredOptions();
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg(argv[i]);
    if (!arg.starts_with("-") || arg == "-") {
      if (arg != inputFile.getValue())
        args.push_back(arg.str());
      continue;
    }
    auto [name, value] = arg.ltrim('-').split('=');
    std::string flag = "--" + name.str();
    if (arg.contains('=')) {
      flag += "=" + value.str();
    } else if (cl::Option *option = options.lookup(name);
               option && option->getValueExpectedFlag() == cl::ValueRequired &&
               i + 1 < argc) {
      flag += "=" + std::string(argv[++i]); // its value
    }
    if (!llvm::is_contained(dropped, name))
      args.push_back(flag);
  }
  return args;
}

/// The key of this step in the GEMM cache: a hash of the step's file and of
/// the flags that change what is compiled (not those that only say how long
/// it runs, what it reads or writes, or what it prints).
static std::string getStepKey(int argc, char **argv) {
  auto buffer = llvm::MemoryBuffer::getFile(inputFile);
  std::string text = buffer ? (*buffer)->getBuffer().str() : inputFile;
  for (const std::string &arg :
       getArgsWithout(argc, argv,
                      {"steps", "warmup", "input-dir", "output-dir", "seed",
                       "trace", "dump-llvm-ir", "compile-threads",
                       "collective-timeout", "rss-every", "quiet",
                       "print-results", "tune-gemm", "auto-tune-gemm",
                       "step-cache"})) {
    text += '\0';
    text += arg;
  }
  return "step-" + llvm::utohexstr(llvm::xxh3_64bits(text), /*LowerCase=*/true);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  PipelineFlags pipelineFlags;
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "gacc-run: compile a training step with gradient accumulation and run "
      "it\n");
  if (collectiveTimeout < 0) {
    llvm::errs()
        << "gacc-run: error: --collective-timeout must be at least 0\n";
    return 1;
  }
  gaccrt_set_collective_timeout(collectiveTimeout);
  // InitLLVM's SIGTERM handler only removes files registered with
  // llvm::sys::RemoveFileOnSignal, which gacc-run does not use (its files
  // are written atomically). Without it, the runtime handles SIGTERM on
  // several ranks: mpirun stopping this rank because another one died is
  // reported with the collective this rank waited in (docs/Robustness.md).
  std::signal(SIGTERM, SIG_DFL);
  if (gaccrt_init() != 0)
    return 1;
  int rank = gaccrt_rank(), world = gaccrt_world_size();
  bool print = !quiet && rank == 0;

  StepOptions options;
  std::string error;
  if (!pipelineFlags.getStepOptions(options, error))
    return fail(error);
  // The shards of shard-optimizer-state are sized for the ranks that run.
  if (options.shardOptimizerState && options.dataParallelSize == 0)
    options.dataParallelSize = world;
  if (steps < 1)
    return fail("--steps must be at least 1");
  if (rssEvery < 0)
    return fail("--rss-every must be at least 0");
  if (warmup < 0 || warmup >= steps)
    return fail("--warmup must be between 0 and --steps - 1");
  if (!traceFile.empty()) {
    // Fail before compiling when the trace cannot be written at the end.
    llvm::SmallString<128> parent(llvm::sys::path::parent_path(traceFile));
    if (parent.empty())
      parent = ".";
    if (!llvm::sys::fs::is_directory(parent) ||
        llvm::sys::fs::access(parent, llvm::sys::fs::AccessMode::Write))
      return fail("--trace='" + traceFile + "': cannot write in '" +
                  parent.str().str() + "'");
  }

  options.traceRegions = !traceFile.empty();
  // The compiler's code is not needed while the steps run: its pages leave
  // the resident set before the step's buffers are allocated.
  options.releaseCompilerCode = true;
  options.optimizedIrFile = dumpLlvmIr;
  options.compileThreads = compileThreads;
  options.stepCacheDir = stepCache.empty()    ? getDefaultStepCacheDir()
                         : stepCache == "off" ? std::string()
                                              : std::string(stepCache);
  if (const char *max = std::getenv("GACC_STEP_CACHE_MAX_MB"); max && *max) {
    char *end;
    unsigned long long mib = std::strtoull(max, &end, 10);
    if (*end || max[0] == '-')
      return fail("GACC_STEP_CACHE_MAX_MB='" + std::string(max) +
                  "' is not a number of MiB");
    options.stepCacheMaxBytes = static_cast<uint64_t>(mib) << 20;
  }

  // Random inputs are drawn while the step compiles (26 M parameters of a
  // 100-layer, 512-wide MLP take a second), from the arguments the
  // signature has before the pipeline runs; a failed compile waits for them
  // (the future's destructor).
  std::future<std::vector<NpyArray>> drawn;
  if (inputDir.empty())
    options.onArguments = [&](const std::vector<TensorInfo> &args) {
      drawn = std::async(std::launch::async, [args, rank] {
        return makeRandomInputs(args, seed, rank);
      });
    };
  double compileStart = gaccrt_now_us();
  std::unique_ptr<CompiledStep> step =
      CompiledStep::compile(inputFile, options, error);
  if (!step)
    return fail(error);
  double compileMs = (gaccrt_now_us() - compileStart) / 1000.0;

  std::vector<NpyArray> inputs;
  if (!inputDir.empty()) {
    if (!readStepInputs(*step, inputDir, gaccrt_rank(), gaccrt_world_size(),
                        inputs, error))
      return fail(error);
  } else {
    inputs = drawn.valid() ? drawn.get() : makeRandomInputs(*step, seed, rank);
  }
  if (int64_t tail = pipelineFlags.getRunBatchSize())
    if (!runTailOfInputs(step->getSignature(), inputs, tail, !inputDir.empty(),
                         error))
      return fail(error);

  // runtime-batch-size: the real samples of this step.
  int countArg = step->getSignature().getSampleCountArgument();
  int64_t samples =
      countArg >= 0 ? getSampleCount(inputs, countArg) : step->getBatchSize();

  const auto &results = step->getResults();
  int lossIndex = -1;
  for (size_t j = 0; j < results.size(); ++j)
    if (results[j].role == Role::Loss)
      lossIndex = j;

  if (print) {
    llvm::outs()
        << "gacc-run: " << step->getName() << " from " << inputFile
        << ", batch " << step->getBatchSize() << " per rank"
        << (samples != step->getBatchSize()
                ? " (tail step: " + std::to_string(samples) + " samples)"
                : std::string())
        << ", " << step->getSignature().split << ", " << world << " rank"
        << (world == 1 ? "" : "s") << " (" << gaccrt_backend_name()
        << "), compiled in " << llvm::format("%.0f", compileMs) << " ms ("
        << (step->isFromStepCache()
                ? std::string("from the step cache")
                : std::to_string(step->getReleasedCompilerBytes() >> 20) +
                      " MiB of compiler code released")
        << ")\n";
  }
  if (print && !step->getStepCacheWarning().empty())
    warn(step->getStepCacheWarning());

  // loss-scale=dynamic: the scale and its growth tracker are the last two
  // state arguments and have state_out results; a step whose gradients were
  // not finite leaves the parameters and the state unchanged, resets the
  // tracker and backs the scale off (GradScaler).
  int scaleResult = -1, trackerResult = -1;
  double scaleIn = 0;
  int64_t trackerIn = 0, skippedSteps = 0;
  {
    std::string ignored;
    std::optional<LossScaleMode> mode =
        parseLossScaleMode(options.lossScale, options.lossScaleInit, ignored);
    const auto &args = step->getSignature().args;
    if (mode && mode->kind == LossScaleKind::Dynamic && args.size() >= 2) {
      int64_t scaleArg = args.size() - 2, trackerArg = args.size() - 1;
      for (size_t j = 0; j < results.size(); ++j)
        if (results[j].role == Role::StateOut) {
          if (results[j].index == scaleArg)
            scaleResult = j;
          if (results[j].index == trackerArg)
            trackerResult = j;
        }
      if (scaleResult >= 0 && trackerResult >= 0) {
        scaleIn = scalarValue(inputs[scaleArg]);
        trackerIn = static_cast<int64_t>(scalarValue(inputs[trackerArg]));
      } else {
        scaleResult = trackerResult = -1;
      }
    }
  }

  // The inputs are copied into the step's buffers once; updated parameters
  // and state feed the next step there.
  if (!step->setInputs(inputs, error))
    return fail(error);

  // GACCRT_GEMM=auto on several GEMM threads: every GEMM on the whole-step
  // choice measured for this step (--tune-gemm, or its first run here), on
  // steps run before the run's own, whose inputs are then copied in again.
  if (!step->isCuda()) {
    StepGemmSetup gemmSetup;
    gemmSetup.tool = "gacc-run";
    gemmSetup.key = getStepKey(argc, argv);
    gemmSetup.tune = tuneGemm;
    gemmSetup.autoTune = autoTuneGemm;
    // The copies of a pair may run side by side or in lockstep: both forms
    // are candidates.
    gemmSetup.lockstepToo = options.microBatches >= 2 && options.pairGemms &&
                            options.concurrentCopies;
    gemmSetup.print = print;
    gemmSetup.runStep = [&](double &ms, std::string &stepError) {
      double start = gaccrt_now_us();
      if (!step->runSteps(1, stepError))
        return false;
      ms = (gaccrt_now_us() - start) / 1000.0;
      return true;
    };
    std::string gemmNote;
    bool ranSteps = false;
    llvm::outs().flush();
    if (!setUpStepGemms(gemmSetup, ranSteps, gemmNote, error))
      return fail(error);
    if (ranSteps && !step->setInputs(inputs, error))
      return fail(error);
    if (print && !gemmNote.empty())
      llvm::outs() << "GEMM library: " << gemmNote << " [" << gemmSetup.key
                   << "]\n";
  }
  if (!traceFile.empty())
    gaccrt_trace_enable(traceFile.c_str());
  std::vector<double> stepMs;
  int64_t peak = 0, collectives = 0, bytesReduced = 0, bytesMoved = 0;
  std::optional<gaccrt_cuda_counts> deviceCounts;
  for (int64_t k = 0; k < steps; ++k) {
    gaccrt_reset_stats();
    step->resetPeak();
    (void)step->takeDeviceCounts();
    int64_t base = step->currentBytes();
    double start = gaccrt_now_us();
    if (!step->runSteps(1, error))
      return fail(error);
    double ms = (gaccrt_now_us() - start) / 1000.0;
    if (k >= warmup)
      stepMs.push_back(ms);
    if (int64_t leaked = step->currentBytes() - base)
      return fail("the compiled step leaked " + std::to_string(leaked) +
                  " bytes");
    peak = std::max(peak, step->peakBytes() - base);
    // Of the last step (with its input and result copies).
    deviceCounts = step->takeDeviceCounts();
    collectives = gaccrt_collectives_issued();
    bytesReduced = gaccrt_bytes_reduced();
    std::string skipped;
    if (scaleResult >= 0) {
      double scaleOut = scalarValue(step->getOutput(scaleResult));
      auto trackerOut =
          static_cast<int64_t>(scalarValue(step->getOutput(trackerResult)));
      // Without an overflow the tracker counts up, and is reset only when
      // it reaches the growth interval.
      if (trackerOut == 0 && trackerIn + 1 < options.lossScaleGrowthInterval) {
        ++skippedSteps;
        char text[160];
        std::snprintf(text, sizeof(text),
                      " (inf/NaN in the gradients: step skipped, loss scale "
                      "%g -> %g)",
                      scaleIn, scaleOut);
        skipped = text;
      }
      scaleIn = scaleOut;
      trackerIn = trackerOut;
    }
    bytesMoved = gaccrt_bytes_moved();
    if (print && lossIndex >= 0)
      llvm::outs() << "step " << k + 1 << ": loss = "
                   << llvm::format("%.6g",
                                   scalarValue(step->getOutput(lossIndex)))
                   << (world > 1 ? " (rank 0)" : "") << skipped << "\n";
    if (print && rssEvery > 0 && (k + 1) % rssEvery == 0)
      llvm::outs() << "step " << k + 1 << ": resident set " << residentKiB()
                   << " KiB\n";
  }
  // On the device the inputs and results count too.
  if (step->isCuda())
    peak += step->getBufferBytes();
  // Copied out only to be written or printed (a deep step's parameters are
  // hundreds of MiB).
  std::vector<NpyArray> outputs;
  if (!outputDir.empty() || printResults)
    outputs = step->getOutputs();

  if (!outputDir.empty()) {
    std::string dir = outputDir;
    if (world > 1)
      dir += "/rank" + std::to_string(rank);
    if (!writeNpySet(dir, "result", outputs, error))
      return fail(error);
  }

  if (printResults && rank == 0)
    for (size_t j = 0; j < outputs.size(); ++j) {
      NpyArray f64 = convertToDType(outputs[j], DType::F64);
      const auto *values = reinterpret_cast<const double *>(f64.data.data());
      llvm::outs() << "result " << j << " (" << roleName(results[j].role)
                   << "): [";
      for (int64_t k = 0, n = f64.numElements(); k < n; ++k)
        llvm::outs() << (k ? ", " : "") << llvm::format("%.6g", values[k]);
      llvm::outs() << "]\n";
    }

  // Non-finite results of the last step: named one by one on every rank
  // (each writes its own), listed in rank 0's summary.
  std::vector<std::string> nonFinite = describeNonFiniteResults(
      results, [&](size_t j) { return step->describeNonFiniteOutput(j); });
  for (const std::string &line : nonFinite)
    warn(line + " in the results of the last step");
  if (print) {
    std::string summary = formatStepSummary(
        steps, warmup, stepMs, peak, step->isCuda(), collectives, bytesReduced,
        deviceCounts ? &*deviceCounts : nullptr);
    if (scaleResult >= 0)
      summary += ", steps skipped for inf/NaN gradients " +
                 std::to_string(skippedSteps);
    if (!nonFinite.empty()) {
      summary += ", non-finite results:";
      for (const std::string &line : nonFinite)
        summary += " " + line.substr(0, line.find(':')) + ";";
      summary.pop_back();
    }
    llvm::outs() << summary << "\n";
    // Optimizer state (gacc.state arguments) this rank holds, and what it
    // would hold unsharded; bytes this rank sent (ring estimate).
    int64_t stateBytes = 0, wholeStateBytes = 0, shardRanks = 0;
    for (const TensorInfo &arg : step->getSignature().args) {
      if (arg.role != Role::State)
        continue;
      int64_t bytes = dtypeSize(arg.dtype), whole = bytes;
      for (int64_t d : arg.shape)
        bytes *= d;
      for (int64_t d : arg.shardRanks ? arg.shardOf : arg.shape)
        whole *= d;
      stateBytes += bytes;
      wholeStateBytes += whole;
      shardRanks = std::max(shardRanks, arg.shardRanks);
    }
    llvm::outs() << "optimizer state: " << stateBytes << " bytes per rank";
    if (shardRanks)
      llvm::outs() << " (sharded over " << shardRanks << " ranks; "
                   << wholeStateBytes << " unsharded)";
    llvm::outs() << ", bytes moved/step " << bytesMoved
                 << " per rank (ring estimate)\n";
  }
  if (!traceFile.empty()) {
    int written = gaccrt_trace_write();
    gaccrt_trace_enable(nullptr); // written once, not again at finalize
    if (written != 0)
      return fail("cannot write the trace to '" + traceFile + "'");
  }
  // The step (its buffers, its JIT-loaded GPU module) goes before the
  // runtime.
  step.reset();
  finalizeRuntime();
  return 0;
}

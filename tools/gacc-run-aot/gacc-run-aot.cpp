//===- gacc-run-aot.cpp - run a step compiled ahead of time ------*- C++
//-*-===//
//
// gacc-run-aot STEP.so [--steps=K] [--warmup=N] [--input-dir=DIR]
//   [--output-dir=DIR] [--seed=S] [--trace=FILE] [--collective-timeout=S]
//   [--save-inputs=DIR] [--print-results] [--quiet] [--tune-gemm]
//   [--auto-tune-gemm=false]
//
// Runs a training step compiled by gacc-compile: opens the library, reads
// its signature (gacc_step_signature) and calls gacc_step K times with the
// conventions of gacc-run (inputs DIR/arg<i>.npy or drawn from --seed,
// param_out/state_out feed the next step, outputs DIR/result<j>.npy, the
// same loss lines and summary). Links no LLVM or MLIR: only gaccrt, and
// libgaccrt_cuda through dlopen for CUDA steps. The argument and result
// buffers are allocated once and kept across steps (PackedStep: updated
// parameters swap into the arguments, as in gacc-run), so step times are
// those of the call alone (CUDA events for CUDA steps), without copies or
// first-touch page faults of fresh buffers.
// --save-inputs writes the first step's inputs as DIR/arg<i>.npy (for
// --input-dir of another run). --tune-gemm and --auto-tune-gemm choose the
// library of a step's GEMMs on several threads as gacc-run does
// (StepTuning.h), under a key hashed from the step library's bytes.
//
//===----------------------------------------------------------------------===//

#include "StepIO.h"
#include "StepTuning.h"

#include "gaccrt/gaccrt.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace mlir::gacc;

namespace {
struct Flags {
  std::string library;
  int64_t steps = 1;
  int64_t warmup = 0;
  std::string inputDir, outputDir, traceFile, saveInputs;
  uint64_t seed = 0;
  double collectiveTimeout = 0;
  bool printResults = false;
  bool quiet = false;
  bool tuneGemm = false;
  bool autoTuneGemm = true;
};

const char kUsage[] =
    "usage: gacc-run-aot STEP.so [--steps=K] [--warmup=N] [--input-dir=DIR]\n"
    "         [--output-dir=DIR] [--seed=S] [--trace=FILE]\n"
    "         [--collective-timeout=SECONDS] [--save-inputs=DIR]\n"
    "         [--print-results] [--quiet] [--tune-gemm]\n"
    "         [--auto-tune-gemm=false]\n"
    "Runs a training step compiled by gacc-compile (see gacc-run for the\n"
    "input and output conventions).\n";
} // namespace

/// Prints an error (with the rank under MPI) and returns exit code 1.
static int fail(const std::string &message) {
  if (gaccrt_world_size() > 1)
    std::fprintf(stderr, "gacc-run-aot: error (rank %d): %s\n", gaccrt_rank(),
                 message.c_str());
  else
    std::fprintf(stderr, "gacc-run-aot: error: %s\n", message.c_str());
  std::fflush(stderr);
  if (gaccrt_world_size() > 1)
    gaccrt_abort(message.c_str());
  finalizeRuntime();
  return 1;
}

/// Parses an integer or floating flag value; false on trailing text.
static bool parseNumber(const std::string &text, int64_t &value) {
  char *end = nullptr;
  value = std::strtoll(text.c_str(), &end, 10);
  return !text.empty() && !*end;
}
static bool parseNumber(const std::string &text, double &value) {
  char *end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return !text.empty() && !*end;
}

/// Parses the command line; returns false with a message.
static bool parseFlags(int argc, char **argv, Flags &flags,
                       std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      if (!flags.library.empty()) {
        error = "more than one step library ('" + flags.library + "', '" + arg +
                "')";
        return false;
      }
      flags.library = arg;
      continue;
    }
    std::string name = arg.substr(2), value;
    bool hasValue = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasValue = true;
    }
    auto needValue = [&]() {
      if (hasValue)
        return true;
      if (i + 1 < argc) {
        value = argv[++i];
        return true;
      }
      error = "--" + name + " needs a value";
      return false;
    };
    auto badValue = [&]() {
      error = "--" + name + "='" + value + "' is not a number";
      return false;
    };
    if (name == "steps" || name == "warmup" || name == "seed") {
      int64_t number;
      if (!needValue())
        return false;
      if (!parseNumber(value, number))
        return badValue();
      if (name == "steps")
        flags.steps = number;
      else if (name == "warmup")
        flags.warmup = number;
      else
        flags.seed = static_cast<uint64_t>(number);
    } else if (name == "collective-timeout") {
      if (!needValue())
        return false;
      if (!parseNumber(value, flags.collectiveTimeout))
        return badValue();
    } else if (name == "input-dir" || name == "output-dir" || name == "trace" ||
               name == "save-inputs") {
      if (!needValue())
        return false;
      (name == "input-dir"    ? flags.inputDir
       : name == "output-dir" ? flags.outputDir
       : name == "trace"      ? flags.traceFile
                              : flags.saveInputs) = value;
    } else if (name == "print-results" && !hasValue) {
      flags.printResults = true;
    } else if (name == "quiet" && !hasValue) {
      flags.quiet = true;
    } else if (name == "tune-gemm" && !hasValue) {
      flags.tuneGemm = true;
    } else if (name == "auto-tune-gemm" &&
               (!hasValue || value == "true" || value == "false")) {
      flags.autoTuneGemm = !hasValue || value == "true";
    } else if (name == "help" && !hasValue) {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else {
      error = "unknown option '" + arg + "'";
      return false;
    }
  }
  if (flags.library.empty()) {
    error = "no step library given (compile one with gacc-compile)";
    return false;
  }
  return true;
}

/// Returns the scalar value of a rank-0 float array.
static double scalarValue(const NpyArray &array) {
  NpyArray f64 = convertToDType(array, DType::F64);
  return f64.data.empty() ? NAN
                          : *reinterpret_cast<const double *>(f64.data.data());
}

int main(int argc, char **argv) {
  Flags flags;
  std::string error;
  if (!parseFlags(argc, argv, flags, error)) {
    std::fprintf(stderr, "gacc-run-aot: error: %s\n%s", error.c_str(), kUsage);
    return 1;
  }
  if (flags.collectiveTimeout < 0) {
    std::fprintf(stderr,
                 "gacc-run-aot: error: --collective-timeout must be at least "
                 "0\n");
    return 1;
  }
  gaccrt_set_collective_timeout(flags.collectiveTimeout);
  if (gaccrt_init() != 0)
    return 1;
  int rank = gaccrt_rank(), world = gaccrt_world_size();
  bool print = !flags.quiet && rank == 0;
  if (flags.steps < 1)
    return fail("--steps must be at least 1");
  if (flags.warmup < 0 || flags.warmup >= flags.steps)
    return fail("--warmup must be between 0 and --steps - 1");
  if (!flags.traceFile.empty()) {
    std::filesystem::path parent =
        std::filesystem::path(flags.traceFile).parent_path();
    if (parent.empty())
      parent = ".";
    std::error_code ec;
    if (!std::filesystem::is_directory(parent, ec) ||
        access(parent.c_str(), W_OK) != 0)
      return fail("--trace='" + flags.traceFile + "': cannot write in '" +
                  parent.string() + "'");
  }

  // The GEMM cache key of the step library, read before it is loaded.
  std::string stepKey;
  bool hasCopies = false;
  bool described = describeStepLibrary(flags.library, stepKey, hasCopies);
  if (!described && flags.tuneGemm)
    return fail("cannot read '" + flags.library + "'");

  double loadStart = gaccrt_now_us();
  StepLibrary library;
  if (!loadStepLibrary(flags.library, library, error))
    return fail(error);
  const StepSignature &signature = library.signature;
  bool cuda = library.cuda;
  void *handle = library.handle;
  auto *entry = library.entry;
  double loadMs = (gaccrt_now_us() - loadStart) / 1000.0;

  std::vector<NpyArray> inputs;
  if (!flags.inputDir.empty()) {
    if (!readStepInputs(signature.args, flags.inputDir, rank, world, inputs,
                        error))
      return fail(error);
  } else {
    inputs = makeRandomInputs(signature.args, flags.seed, rank);
  }

  if (!flags.saveInputs.empty() && rank == 0 &&
      !writeNpySet(flags.saveInputs, "arg", inputs, error))
    return fail(error);

  const std::vector<TensorInfo> &results = signature.results;
  int lossIndex = -1;
  for (size_t j = 0; j < results.size(); ++j)
    if (results[j].role == Role::Loss)
      lossIndex = j;

  if (print)
    std::printf("gacc-run-aot: %s from %s (%s), batch %lld per rank, %s, %d "
                "rank%s (%s), loaded in %.0f ms\n",
                signature.name.c_str(), flags.library.c_str(),
                getDeviceName(signature.device),
                static_cast<long long>(signature.batchSize),
                signature.split.c_str(), world, world == 1 ? "" : "s",
                gaccrt_backend_name(), loadMs);

  auto invoke = [&](void **packed, size_t, std::string &) {
    entry(packed);
    return true;
  };
  PackedStep step(signature, cuda);
  if (!step.setInputs(inputs, error))
    return fail(error);

  // GACCRT_GEMM=auto on several GEMM threads: every GEMM on the whole-step
  // choice measured for this step library (--tune-gemm, or its first run
  // here), on steps run before the run's own, whose inputs are then copied
  // in again.
  if (described && !cuda) {
    StepGemmSetup gemmSetup;
    gemmSetup.tool = "gacc-run-aot";
    gemmSetup.key = stepKey;
    gemmSetup.lockstepToo = hasCopies;
    gemmSetup.tune = flags.tuneGemm;
    gemmSetup.autoTune = flags.autoTuneGemm;
    gemmSetup.print = print;
    gemmSetup.runStep = [&](double &ms, std::string &stepError) {
      return step.run(invoke, stepError, &ms);
    };
    std::string gemmNote;
    bool ranSteps = false;
    if (!setUpStepGemms(gemmSetup, ranSteps, gemmNote, error))
      return fail(error);
    if (ranSteps && !step.setInputs(inputs, error))
      return fail(error);
    if (print && !gemmNote.empty())
      std::printf("GEMM library: %s [%s]\n", gemmNote.c_str(), stepKey.c_str());
  }
  if (!flags.traceFile.empty())
    gaccrt_trace_enable(flags.traceFile.c_str());
  std::vector<double> stepMs;
  int64_t peak = 0, collectives = 0, bytesReduced = 0;
  // Kernel launches, host waits and allocations of the last step's call.
  std::optional<gaccrt_cuda_counts> deviceCounts;
  for (int64_t k = 0; k < flags.steps; ++k) {
    gaccrt_reset_stats();
    deviceResetPeak(cuda);
    gaccrt_cuda_counts counts;
    if (cuda)
      (void)takeDeviceCounts(counts);
    int64_t base = deviceCurrentBytes(cuda);
    double ms = 0;
    if (!step.run(invoke, error, &ms))
      return fail(error);
    if (k >= flags.warmup)
      stepMs.push_back(ms);
    if (int64_t leaked = deviceCurrentBytes(cuda) - base)
      return fail("the compiled step leaked " + std::to_string(leaked) +
                  " bytes");
    peak = std::max(peak, devicePeakBytes(cuda) - base);
    if (cuda && takeDeviceCounts(counts))
      deviceCounts = counts;
    collectives = gaccrt_collectives_issued();
    bytesReduced = gaccrt_bytes_reduced();
    if (print && lossIndex >= 0)
      std::printf("step %lld: loss = %.6g%s\n", static_cast<long long>(k + 1),
                  scalarValue(step.getOutput(lossIndex)),
                  world > 1 ? " (rank 0)" : "");
  }
  // Copied out only to be written or printed.
  std::vector<NpyArray> outputs;
  if (!flags.outputDir.empty() || flags.printResults)
    outputs = step.getOutputs();

  if (!flags.outputDir.empty()) {
    std::string dir = flags.outputDir;
    if (world > 1)
      dir += "/rank" + std::to_string(rank);
    if (!writeNpySet(dir, "result", outputs, error))
      return fail(error);
  }

  if (flags.printResults && rank == 0)
    for (size_t j = 0; j < outputs.size(); ++j) {
      NpyArray f64 = convertToDType(outputs[j], DType::F64);
      const auto *values = reinterpret_cast<const double *>(f64.data.data());
      std::printf("result %zu (%s): [", j, roleName(results[j].role));
      for (int64_t k = 0, n = f64.numElements(); k < n; ++k)
        std::printf("%s%.6g", k ? ", " : "", values[k]);
      std::printf("]\n");
    }

  // Non-finite results of the last step: named one by one on every rank,
  // listed in rank 0's summary (as gacc-run).
  std::vector<std::string> nonFinite = describeNonFiniteResults(
      results, [&](size_t j) { return step.describeNonFiniteOutput(j); });
  std::fflush(stdout);
  for (const std::string &line : nonFinite) {
    if (world > 1)
      std::fprintf(stderr,
                   "gacc-run-aot: warning (rank %d): %s in the results of the "
                   "last step\n",
                   rank, line.c_str());
    else
      std::fprintf(stderr,
                   "gacc-run-aot: warning: %s in the results of the last "
                   "step\n",
                   line.c_str());
  }
  std::fflush(stderr);
  if (print) {
    std::string summary = formatStepSummary(
        flags.steps, flags.warmup, stepMs, peak, cuda, collectives,
        bytesReduced, deviceCounts ? &*deviceCounts : nullptr);
    if (!nonFinite.empty()) {
      summary += ", non-finite results:";
      for (const std::string &line : nonFinite)
        summary += " " + line.substr(0, line.find(':')) + ";";
      summary.pop_back();
    }
    std::printf("%s\n", summary.c_str());
  }
  std::fflush(stdout);
  if (!flags.traceFile.empty()) {
    int written = gaccrt_trace_write();
    gaccrt_trace_enable(nullptr); // written once, not again at finalize
    if (written != 0)
      return fail("cannot write the trace to '" + flags.traceFile + "'");
  }
  // Unloading the step runs its destructors (CUDA module unload) while the
  // runtime is still alive.
  dlclose(handle);
  finalizeRuntime();
  return 0;
}

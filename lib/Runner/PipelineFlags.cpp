//===- PipelineFlags.cpp - gacc-pipeline options as tool flags --*- C++ -*-===//
//
// Defines the flags of PipelineFlags.h once for gacc-run, gacc-check and
// gacc-compile: one flag per gacc-pipeline option, generated from
// PipelineOptions.def, plus --device and the lowering's knobs (--no-blas,
// --no-pair-gemms, --no-concurrent-copies, --no-lockstep-copies,
// --no-paired-copies, --no-outline-copies, --pair-any-size,
// --serial-loops).
//
//===----------------------------------------------------------------------===//

#include "gacc/Runner/PipelineFlags.h"

#include <cstdio>

namespace cl = llvm::cl;

llvm::cl::OptionCategory &mlir::gacc::getToolFlagCategory() {
  static cl::OptionCategory category("gacc tool options");
  return category;
}

namespace {
/// The flags, one per gacc-pipeline option, registered with llvm::cl when
/// the tool starts.
struct PipelineFlags {
#define GACC_PIPELINE_OPTION(NAME, TYPE, FLAG, DEFAULT, DESCRIPTION,           \
                             TOOL_HIDDEN)                                      \
  cl::opt<TYPE> NAME{FLAG, cl::desc(DESCRIPTION), cl::init(DEFAULT),           \
                     TOOL_HIDDEN ? cl::Hidden : cl::NotHidden,                 \
                     cl::cat(mlir::gacc::getToolFlagCategory())};
#define GACC_PIPELINE_LIST_OPTION(NAME, TYPE, FLAG, DESCRIPTION)               \
  cl::list<TYPE> NAME{FLAG, cl::desc(DESCRIPTION), cl::CommaSeparated,         \
                      cl::cat(mlir::gacc::getToolFlagCategory())};
#include "gacc/Pipelines/PipelineOptions.def"
};
} // namespace

static PipelineFlags flags;
static cl::opt<std::string> device("device", cl::desc("cpu or cuda"),
                                   cl::init("cpu"),
                                   cl::cat(mlir::gacc::getToolFlagCategory()));

// The lowering's knobs (not gacc-pipeline options).
static cl::opt<bool> noBlas("no-blas",
                            cl::desc("Lower matmuls to loops, not "
                                     "gaccrt_sgemm (oneDNN, gaccrt's AVX-512 "
                                     "kernels or OpenBLAS)"),
                            cl::init(false),
                            cl::cat(mlir::gacc::getToolFlagCategory()));
static cl::opt<bool> noPairGemms(
    "no-pair-gemms",
    cl::desc("One GEMM call per micro-batch's weight gradient (no "
             "gaccrt_sgemm_pair of two micro-batches: less memory)"),
    cl::init(false), cl::cat(mlir::gacc::getToolFlagCategory()));
static cl::opt<bool> noConcurrentCopies(
    "no-concurrent-copies",
    cl::desc("Run the two micro-batches of a GEMM pair one after the other "
             "(no gaccrt_parallel_copies: each GEMM and loop split over the "
             "threads)"),
    cl::init(false), cl::cat(mlir::gacc::getToolFlagCategory()));
static cl::opt<bool> noLockstepCopies(
    "no-lockstep-copies",
    cl::desc("No lockstep form of a GEMM pair's two micro-batches for when "
             "they run in turn (no gaccrt_sgemm_rows_pair)"),
    cl::init(false), cl::cat(mlir::gacc::getToolFlagCategory()));
static cl::opt<bool> noPairedCopies(
    "no-paired-copies",
    cl::desc("Copies of one micro-batch each, not of two in lockstep (no "
             "gaccrt_sgemm_quad)"),
    cl::init(false), cl::cat(mlir::gacc::getToolFlagCategory()));
static cl::opt<bool>
    noOutlineCopies("no-outline-copies",
                    cl::desc("Compile each form of the copies on its own (no "
                             "gacc-outline-copies: more code, the same steps)"),
                    cl::init(false),
                    cl::cat(mlir::gacc::getToolFlagCategory()));
static cl::opt<bool> pairAnySize(
    "pair-any-size",
    cl::desc("Pair weight gradients (and run the copies side by side) "
             "whatever the operands' sizes: for tests on small graphs"),
    cl::init(false), cl::Hidden, cl::cat(mlir::gacc::getToolFlagCategory()));
static cl::opt<bool> serialLoops(
    "serial-loops",
    cl::desc("Run every loop on the calling thread (no gaccrt_parallel_for)"),
    cl::init(false), cl::cat(mlir::gacc::getToolFlagCategory()));

static cl::opt<int64_t> runBatchSize(
    "run-batch-size",
    cl::desc("With --runtime-batch-size: run a tail step on the first N "
             "samples of the generated inputs (0: the whole batch)"),
    cl::init(0), cl::cat(mlir::gacc::getToolFlagCategory()));

int64_t mlir::gacc::getRunBatchSizeFlag() { return runBatchSize; }

mlir::gacc::StepOptions mlir::gacc::getStepOptionsFromFlags() {
  StepOptions options;
#define GACC_PIPELINE_OPTION(NAME, ...) options.NAME = flags.NAME;
#define GACC_PIPELINE_LIST_OPTION(NAME, ...)                                   \
  options.NAME.assign(flags.NAME.begin(), flags.NAME.end());
#include "gacc/Pipelines/PipelineOptions.def"
  options.device = device;
  options.blas = !noBlas;
  options.pairGemms = !noPairGemms;
  options.concurrentCopies = !noConcurrentCopies;
  options.pairAnySize = pairAnySize;
  options.lockstepCopies = !noLockstepCopies;
  options.pairedCopies = !noPairedCopies;
  options.outlineCopies = !noOutlineCopies;
  options.parallelLoops = !serialLoops;
  return options;
}

// The text of a flag value that llvm::cl parses back to the same value.
static std::string formatFlagValue(const std::string &value) { return value; }
static std::string formatFlagValue(bool value) {
  return value ? "true" : "false";
}
static std::string formatFlagValue(int64_t value) {
  return std::to_string(value);
}
static std::string formatFlagValue(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}
static std::string formatFlagValue(const std::vector<int64_t> &values) {
  std::string list;
  for (int64_t value : values)
    list += (list.empty() ? "" : ",") + std::to_string(value);
  return list;
}

std::vector<std::string> mlir::gacc::getPipelineFlagArguments() {
  // Every option that differs from its default, so that the other tool
  // selects the same options.
  StepOptions options = getStepOptionsFromFlags();
  const mlir::gacc::GaccPipelineConfig defaults;
  std::vector<std::string> args;
#define GACC_PIPELINE_OPTION(NAME, TYPE, FLAG, ...)                            \
  if (options.NAME != defaults.NAME)                                           \
    args.push_back(std::string("--") + FLAG + "=" +                            \
                   formatFlagValue(options.NAME));
#define GACC_PIPELINE_LIST_OPTION(NAME, TYPE, FLAG, ...)                       \
  if (options.NAME != defaults.NAME)                                           \
    args.push_back(std::string("--") + FLAG + "=" +                            \
                   formatFlagValue(options.NAME));
#include "gacc/Pipelines/PipelineOptions.def"
  args.push_back("--device=" + options.device);
  for (const cl::opt<bool> *flag :
       {&noBlas, &noPairGemms, &noConcurrentCopies, &noLockstepCopies,
        &noPairedCopies, &noOutlineCopies, &pairAnySize, &serialLoops})
    if (*flag)
      args.push_back(("--" + flag->ArgStr + "=true").str());
  return args;
}

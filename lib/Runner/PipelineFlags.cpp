//===- PipelineFlags.cpp - pipeline options as tool flags -------*- C++ -*-===//
//
// The flags of PipelineFlags.h, generated from PipelineOptions.def (one per
// gacc-pipeline option) and LoweringOptions.def (the CPU lowering's tool
// flags: --no-blas, --no-pair-gemms, ..., --serial-loops), plus --device and
// --run-batch-size.
//
//===----------------------------------------------------------------------===//

#include "gacc/Runner/PipelineFlags.h"

#include <cstdio>

using namespace mlir::gacc;
namespace cl = llvm::cl;

llvm::cl::OptionCategory &mlir::gacc::getToolFlagCategory() {
  static cl::OptionCategory category("gacc tool options");
  return category;
}

struct PipelineFlags::Flags {
#define GACC_PIPELINE_OPTION(NAME, TYPE, FLAG, DEFAULT, DESCRIPTION,           \
                             TOOL_HIDDEN)                                      \
  cl::opt<TYPE> NAME{FLAG, cl::desc(DESCRIPTION), cl::init(DEFAULT),           \
                     TOOL_HIDDEN ? cl::Hidden : cl::NotHidden,                 \
                     cl::cat(getToolFlagCategory())};
#define GACC_PIPELINE_LIST_OPTION(NAME, TYPE, FLAG, DESCRIPTION)               \
  cl::list<TYPE> NAME{FLAG, cl::desc(DESCRIPTION), cl::CommaSeparated,         \
                      cl::cat(getToolFlagCategory())};
#include "gacc/Pipelines/PipelineOptions.def"

  /// One bool per tool flag of the CPU lowering, named after its option.
  struct LoweringFlags {
#define GACC_LOWER_TO_CPU_TOOL_FLAG(NAME, TOOL_FLAG, NEGATED, HIDDEN,          \
                                    DESCRIPTION)                               \
  cl::opt<bool> NAME{TOOL_FLAG, cl::desc(DESCRIPTION), cl::init(false),        \
                     HIDDEN ? cl::Hidden : cl::NotHidden,                      \
                     cl::cat(getToolFlagCategory())};
#include "gacc/Pipelines/LoweringOptions.def"
  } lowering;

  cl::opt<std::string> device{"device", cl::desc("cpu or cuda"),
                              cl::init("cpu"), cl::cat(getToolFlagCategory())};
  cl::opt<int64_t> runBatchSize{
      "run-batch-size",
      cl::desc("With --runtime-batch-size: run a tail step on the first N "
               "samples of the generated inputs (0: the whole batch)"),
      cl::init(0), cl::cat(getToolFlagCategory())};
};

PipelineFlags::PipelineFlags() : flags(std::make_unique<Flags>()) {}
PipelineFlags::~PipelineFlags() = default;

bool PipelineFlags::getStepOptions(StepOptions &options,
                                   std::string &error) const {
  options = StepOptions();
#define GACC_PIPELINE_OPTION(NAME, ...) options.NAME = flags->NAME;
#define GACC_PIPELINE_LIST_OPTION(NAME, ...)                                   \
  options.NAME.assign(flags->NAME.begin(), flags->NAME.end());
#include "gacc/Pipelines/PipelineOptions.def"
#define GACC_LOWER_TO_CPU_TOOL_FLAG(NAME, TOOL_FLAG, NEGATED, ...)             \
  if (flags->lowering.NAME)                                                    \
    options.NAME = !NEGATED;
#include "gacc/Pipelines/LoweringOptions.def"
  std::optional<Device> device = parseDevice(flags->device);
  if (!device) {
    error = "unknown --device='" + flags->device + "' (expected cpu or cuda)";
    return false;
  }
  options.device = *device;
  return true;
}

int64_t PipelineFlags::getRunBatchSize() const { return flags->runBatchSize; }

void PipelineFlags::hideRunBatchSize() {
  flags->runBatchSize.setHiddenFlag(cl::ReallyHidden);
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

std::vector<std::string> PipelineFlags::getArguments() const {
  // Every option that differs from its default, so that the other tool
  // selects the same options.
  const GaccPipelineConfig defaults;
  std::vector<std::string> args;
#define GACC_PIPELINE_OPTION(NAME, TYPE, FLAG, ...)                            \
  if (TYPE(flags->NAME) != defaults.NAME)                                      \
    args.push_back(std::string("--") + FLAG + "=" +                            \
                   formatFlagValue(TYPE(flags->NAME)));
#define GACC_PIPELINE_LIST_OPTION(NAME, TYPE, FLAG, ...)                       \
  if (!flags->NAME.empty())                                                    \
    args.push_back(std::string("--") + FLAG + "=" +                            \
                   formatFlagValue(std::vector<TYPE>(flags->NAME.begin(),      \
                                                     flags->NAME.end())));
#include "gacc/Pipelines/PipelineOptions.def"
  args.push_back("--device=" + flags->device);
#define GACC_LOWER_TO_CPU_TOOL_FLAG(NAME, TOOL_FLAG, ...)                      \
  if (flags->lowering.NAME)                                                    \
    args.push_back(std::string("--") + TOOL_FLAG + "=true");
#include "gacc/Pipelines/LoweringOptions.def"
  return args;
}

//===- PipelineFlags.cpp - gacc-pipeline options as tool flags --*- C++ -*-===//
//
// Defines the flags of PipelineFlags.h once for both tools.
//
//===----------------------------------------------------------------------===//

#include "gacc/Runner/PipelineFlags.h"

#include <algorithm>
#include <cstdio>

namespace cl = llvm::cl;

llvm::cl::OptionCategory &gacc::getToolFlagCategory() {
  static cl::OptionCategory category("gacc tool options");
  return category;
}

static cl::opt<std::string>
    entry("entry", cl::desc("Name of the training-step function"), cl::init(""),
          cl::cat(gacc::getToolFlagCategory()));
static cl::opt<int64_t> microBatches("micro-batches",
                                     cl::desc("Number of micro-batches m"),
                                     cl::init(1),
                                     cl::cat(gacc::getToolFlagCategory()));
static cl::list<int64_t>
    microBatchSizes("micro-batch-sizes",
                    cl::desc("Explicit micro-batch sizes (sum to the batch)"),
                    cl::CommaSeparated, cl::cat(gacc::getToolFlagCategory()));
static cl::opt<bool> allowStatistics(
    "allow-micro-batch-statistics",
    cl::desc("Accept parameter-dependent batch statistics per micro-batch"),
    cl::init(false), cl::cat(gacc::getToolFlagCategory()));
static cl::opt<int64_t>
    batchSize("batch-size",
              cl::desc("Samples of batch arguments whose sample dimension is "
                       "dynamic (specializes the step)"),
              cl::init(0), cl::cat(gacc::getToolFlagCategory()));
static cl::opt<std::string>
    accumulateType("accumulate-type",
                   cl::desc("Accumulator type for narrower floats (f32)"),
                   cl::init(""), cl::cat(gacc::getToolFlagCategory()));
static cl::opt<int64_t> bucketBytes("bucket-bytes",
                                    cl::desc("Maximum bucket size in bytes"),
                                    cl::init(26214400),
                                    cl::cat(gacc::getToolFlagCategory()));
static cl::opt<bool>
    skipNormalizer("test-skip-global-normalizer",
                   cl::desc("Test only: a deliberately wrong normalizer"),
                   cl::init(false), cl::Hidden,
                   cl::cat(gacc::getToolFlagCategory()));
static cl::opt<std::string>
    lossScale("loss-scale",
              cl::desc("Loss scaling: none, static, static=S or dynamic"),
              cl::init("none"), cl::cat(gacc::getToolFlagCategory()));
static cl::opt<double>
    lossScaleInit("loss-scale-init",
                  cl::desc("Static scale, or the initial dynamic scale"),
                  cl::init(65536.0), cl::cat(gacc::getToolFlagCategory()));
static cl::opt<double>
    lossScaleGrowth("loss-scale-growth-factor",
                    cl::desc("Dynamic loss scale: growth factor"),
                    cl::init(2.0), cl::cat(gacc::getToolFlagCategory()));
static cl::opt<double>
    lossScaleBackoff("loss-scale-backoff-factor",
                     cl::desc("Dynamic loss scale: backoff factor"),
                     cl::init(0.5), cl::cat(gacc::getToolFlagCategory()));
static cl::opt<int64_t>
    lossScaleInterval("loss-scale-growth-interval",
                      cl::desc("Dynamic loss scale: clean steps before growth"),
                      cl::init(2000), cl::cat(gacc::getToolFlagCategory()));
// Overlap of the bucket all-reduces with the final region.
static cl::opt<bool> overlapAllReduce(
    "overlap-all-reduce",
    cl::desc("Start each bucket's all-reduce as soon as the final region has "
             "finished it (default true)"),
    cl::init(true), cl::cat(gacc::getToolFlagCategory()));
static cl::opt<std::string> device("device", cl::desc("cpu or cuda"),
                                   cl::init("cpu"),
                                   cl::cat(gacc::getToolFlagCategory()));

gacc::StepOptions gacc::getStepOptionsFromFlags() {
  StepOptions options;
  options.entry = entry;
  options.batchSize = batchSize;
  options.microBatches = microBatches;
  options.microBatchSizes.assign(microBatchSizes.begin(),
                                 microBatchSizes.end());
  options.allowMicroBatchStatistics = allowStatistics;
  options.accumulateType = accumulateType;
  options.bucketBytes = bucketBytes;
  options.testSkipGlobalNormalizer = skipNormalizer;
  options.lossScale = lossScale;
  options.lossScaleInit = lossScaleInit;
  options.lossScaleGrowthFactor = lossScaleGrowth;
  options.lossScaleBackoffFactor = lossScaleBackoff;
  options.lossScaleGrowthInterval = lossScaleInterval;
  options.overlapAllReduce = overlapAllReduce;
  options.device = device;
  return options;
}

std::vector<std::string> gacc::getPipelineFlagArguments() {
  std::vector<std::string> args;
  if (!entry.empty())
    args.push_back("--entry=" + entry);
  if (batchSize > 0)
    args.push_back("--batch-size=" + std::to_string(batchSize));
  if (!microBatchSizes.empty()) {
    std::string list;
    for (int64_t size : microBatchSizes)
      list += (list.empty() ? "" : ",") + std::to_string(size);
    args.push_back("--micro-batch-sizes=" + list);
  } else {
    args.push_back("--micro-batches=" + std::to_string(microBatches));
  }
  if (allowStatistics)
    args.push_back("--allow-micro-batch-statistics");
  if (!accumulateType.empty())
    args.push_back("--accumulate-type=" + accumulateType);
  args.push_back("--bucket-bytes=" + std::to_string(bucketBytes));
  if (skipNormalizer)
    args.push_back("--test-skip-global-normalizer");
  if (lossScale != "none") {
    auto number = [](double v) {
      char buffer[64];
      std::snprintf(buffer, sizeof(buffer), "%.17g", v);
      return std::string(buffer);
    };
    args.push_back("--loss-scale=" + lossScale);
    args.push_back("--loss-scale-init=" + number(lossScaleInit));
    args.push_back("--loss-scale-growth-factor=" + number(lossScaleGrowth));
    args.push_back("--loss-scale-backoff-factor=" + number(lossScaleBackoff));
    args.push_back("--loss-scale-growth-interval=" +
                   std::to_string(lossScaleInterval));
  }
  if (!overlapAllReduce)
    args.push_back("--overlap-all-reduce=false");
  args.push_back("--device=" + device);
  return args;
}

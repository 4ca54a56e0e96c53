//===- PipelineOptions.h - pipeline options as plain values -----*- C++ -*-===//
//
// The options of gacc-pipeline (PipelineOptions.def), gacc-lower-to-cpu and
// gacc-lower-to-cuda (LoweringOptions.def) as plain structs with their
// defaults, for embedders that set options in C++ without llvm::cl
// (StepOptions extends GaccPipelineConfig and LowerToCPUConfig). The build
// functions of Pipelines.h take them directly. Plain C++17, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_PIPELINES_PIPELINEOPTIONS_H
#define GACC_PIPELINES_PIPELINEOPTIONS_H

#include "gacc/Transforms/PassDefaults.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::gacc {

/// The values of the gacc-pipeline options; each member defaults to the
/// option's default.
struct GaccPipelineConfig {
#define GACC_PIPELINE_OPTION(NAME, TYPE, FLAG, DEFAULT, DESCRIPTION,           \
                             TOOL_HIDDEN)                                      \
  TYPE NAME = DEFAULT;
#define GACC_PIPELINE_LIST_OPTION(NAME, TYPE, FLAG, DESCRIPTION)               \
  std::vector<TYPE> NAME;
#include "gacc/Pipelines/PipelineOptions.def"
};

/// The values of the gacc-lower-to-cpu options.
struct LowerToCPUConfig {
#define GACC_LOWER_TO_CPU_OPTION(NAME, TYPE, FLAG, DEFAULT, DESCRIPTION)       \
  TYPE NAME = DEFAULT;
#include "gacc/Pipelines/LoweringOptions.def"
};

/// The values of the gacc-lower-to-cuda options.
struct LowerToCUDAConfig {
#define GACC_LOWER_TO_CUDA_OPTION(NAME, TYPE, FLAG, DEFAULT, DESCRIPTION)      \
  TYPE NAME = DEFAULT;
#define GACC_LOWER_TO_CUDA_LIST_OPTION(NAME, TYPE, FLAG, DESCRIPTION)          \
  std::vector<TYPE> NAME;
#include "gacc/Pipelines/LoweringOptions.def"
};

} // namespace mlir::gacc

#endif // GACC_PIPELINES_PIPELINEOPTIONS_H

//===- PipelineOptions.h - gacc-pipeline options as plain values -*- C++
//-*-===//
//
// GaccPipelineConfig: the options of gacc-pipeline (PipelineOptions.def) as
// a plain struct with their defaults, for embedders that set options in C++
// without llvm::cl (gacc::StepOptions extends it). buildGaccPipeline takes
// it directly. Plain C++17, no LLVM.
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

} // namespace mlir::gacc

#endif // GACC_PIPELINES_PIPELINEOPTIONS_H

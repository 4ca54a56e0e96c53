//===- PassDefaults.h - defaults of the gacc pass options -------*- C++ -*-===//
//
// The default value of every gacc pass option that is not empty or false,
// written once: Passes.td names these constants as the default of each pass
// option, and the gacc-pipeline options (PipelineOptions.def), the plain
// option struct of embedders and the tool flags take them from here. Plain
// C++17, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TRANSFORMS_PASSDEFAULTS_H
#define GACC_TRANSFORMS_PASSDEFAULTS_H

#include <cstdint>

namespace mlir::gacc {

/// Samples of a batch argument whose sample dimension is dynamic; 0: none may
/// be.
inline constexpr int64_t kDefaultBatchSize = 0;
/// Micro-batches m.
inline constexpr int64_t kDefaultMicroBatches = 1;
/// Maximum size of an accumulator bucket: 25 MiB, as PyTorch DDP's
/// bucket_cap_mb.
inline constexpr int64_t kDefaultBucketBytes = 26214400;
/// Loss scaling mode (none, static, static=S, dynamic).
inline constexpr const char kDefaultLossScale[] = "none";
/// Static scale, or the initial dynamic scale (GradScaler's init_scale).
inline constexpr double kDefaultLossScaleInit = 65536.0;
/// Dynamic loss scale: growth and backoff factors, clean steps before growth
/// (GradScaler's defaults).
inline constexpr double kDefaultLossScaleGrowthFactor = 2.0;
inline constexpr double kDefaultLossScaleBackoffFactor = 0.5;
inline constexpr int64_t kDefaultLossScaleGrowthInterval = 2000;
/// Start each bucket's all-reduce as soon as the final region has finished
/// it (gacc-sink-all-reduce's overlap, gacc-overlap-all-reduce).
inline constexpr bool kDefaultOverlapAllReduce = true;

} // namespace mlir::gacc

#endif // GACC_TRANSFORMS_PASSDEFAULTS_H

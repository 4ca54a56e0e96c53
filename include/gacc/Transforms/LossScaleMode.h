//===- LossScaleMode.h - the loss-scale option, parsed ----------*- C++ -*-===//
//
// The one reading of the loss-scale option (`none`, `static`, `static=S`,
// `dynamic`) with loss-scale-init: gacc-loss-scale, gacc-pipeline, the runner
// (which adds the dynamic scale's state to the signature) and gacc-check's
// GradScaler recipe all ask this parser instead of comparing strings. Plain
// C++17, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TRANSFORMS_LOSSSCALEMODE_H
#define GACC_TRANSFORMS_LOSSSCALEMODE_H

#include "gacc/Transforms/PassDefaults.h"

#include <optional>
#include <string>

namespace mlir::gacc {

/// How the loss is scaled.
enum class LossScaleKind {
  /// No scaling (the default).
  None,
  /// A fixed scale.
  Static,
  /// GradScaler's dynamic scale: step state that grows and backs off.
  Dynamic,
};

/// The parsed loss-scale option.
struct LossScaleMode {
  LossScaleKind kind = LossScaleKind::None;
  /// The static scale, or the initial dynamic scale (positive, finite).
  double scale = kDefaultLossScaleInit;
};

/// Parses loss-scale=`text` with loss-scale-init=`init` (the scale of
/// `static` and `dynamic`; `static=S` gives its own). Returns none with
/// `error` set for an unknown mode or a scale that is not positive and
/// finite.
std::optional<LossScaleMode> parseLossScaleMode(const std::string &text,
                                                double init,
                                                std::string &error);

} // namespace mlir::gacc

#endif // GACC_TRANSFORMS_LOSSSCALEMODE_H

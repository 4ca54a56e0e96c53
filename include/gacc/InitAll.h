//===- InitAll.h - register everything gacc provides ------------*- C++ -*-===//
//
// One entry point for gacc-opt and for embedders: the gacc dialect
// (registerGaccDialects, gacc/Dialect/Gacc/IR/RegisterDialects.h), the
// lowering's external models (registerGaccLoweringExternalModels,
// gacc/Lowering/Common/ExternalModels.h), the gacc passes and pipelines, and
// (optionally) every upstream dialect and pass.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_INITALL_H
#define GACC_INITALL_H

#include "gacc/Dialect/Gacc/IR/RegisterDialects.h"
#include "gacc/Lowering/Common/ExternalModels.h"

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::gacc {

/// Registers the gacc passes and the gacc-pipeline with the global pass
/// registry (for command-line parsing).
void registerAllGaccPasses();

/// Registers everything gacc-opt offers: every upstream dialect, extension and
/// pass, plus gacc's (registerGaccDialects, registerGaccLoweringExternalModels
/// and registerAllGaccPasses). Embedders that only need gacc call those:
/// registerGaccDialects to read and transform a step, and
/// registerGaccLoweringExternalModels too (after upstream's
/// registerAllExtensions) to lower it.
void registerAllGacc(DialectRegistry &registry);

} // namespace mlir::gacc

#endif // GACC_INITALL_H

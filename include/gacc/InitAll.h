//===- InitAll.h - register everything gacc provides ------------*- C++ -*-===//
//
// One entry point for gacc-opt and for embedders: the gacc dialect, the gacc
// passes and pipeline, and (optionally) every upstream dialect and pass.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_INITALL_H
#define GACC_INITALL_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::gacc {

/// Adds the gacc dialect and the upstream dialects that gacc's passes create
/// or accept in a training step (func, arith, math, linalg, tensor, shard)
/// to `registry`.
void registerGaccDialects(DialectRegistry &registry);

/// Registers the gacc passes and the gacc-pipeline with the global pass
/// registry (for command-line parsing).
void registerAllGaccPasses();

/// Registers everything gacc-opt offers: every upstream dialect, extension and
/// pass, plus gacc's. Embedders that only need gacc call the two above.
void registerAllGacc(DialectRegistry &registry);

} // namespace mlir::gacc

#endif // GACC_INITALL_H

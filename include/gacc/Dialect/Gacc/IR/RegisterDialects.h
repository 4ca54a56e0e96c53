//===- RegisterDialects.h - the dialects of a training step -----*- C++ -*-===//
//
// registerGaccDialects: the dialects a training step is written in, for every
// tool and embedder that parses one (library GaccDialect, so that reading a
// step needs neither the passes nor the lowering). What lowering a step also
// needs, the lowering's bufferization models, is attached by
// registerGaccLoweringExternalModels (gacc/Lowering/Common/ExternalModels.h).
//
//===----------------------------------------------------------------------===//

#ifndef GACC_DIALECT_GACC_IR_REGISTERDIALECTS_H
#define GACC_DIALECT_GACC_IR_REGISTERDIALECTS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::gacc {

/// Adds the gacc dialect and the upstream dialects that gacc's passes create
/// or accept in a training step (func, arith, math, linalg, tensor, shard)
/// to `registry`. Registers dialects only: callers that lower a step call
/// registerGaccLoweringExternalModels too.
void registerGaccDialects(DialectRegistry &registry);

} // namespace mlir::gacc

#endif // GACC_DIALECT_GACC_IR_REGISTERDIALECTS_H

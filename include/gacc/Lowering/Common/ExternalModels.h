//===- ExternalModels.h - the lowering's external models --------*- C++ -*-===//
//
// The interface models that the lowering attaches to upstream ops (library
// GaccLoweringCommon): bufferization of `shard.all_reduce`, linear alias
// queries of `scf.for`. Tools and embedders that lower a step call
// registerGaccLoweringExternalModels after registerGaccDialects; reading or
// transforming a step does not need them.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LOWERING_COMMON_EXTERNALMODELS_H
#define GACC_LOWERING_COMMON_EXTERNALMODELS_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace mlir::gacc {

/// Makes `shard.all_reduce` bufferizable: in place on its operand's buffer,
/// as a call to the runtime (`gaccrt_all_reduce`).
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);

/// Makes one-shot bufferization's alias queries about `scf.for` results
/// linear in the number of iteration arguments instead of quadratic (a
/// workaround for upstream MLIR 22; same answers). Must be registered after
/// the SCF dialect's bufferization models (registerAllExtensions).
void registerLinearForBufferizationQueries(DialectRegistry &registry);

/// Both of the above: every external model that lowering a step needs. Like
/// registerLinearForBufferizationQueries, after registerAllExtensions.
void registerGaccLoweringExternalModels(DialectRegistry &registry);

} // namespace mlir::gacc

#endif // GACC_LOWERING_COMMON_EXTERNALMODELS_H

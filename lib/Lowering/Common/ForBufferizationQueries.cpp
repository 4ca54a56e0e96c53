//===- ForBufferizationQueries.cpp - linear alias queries of scf.for ------===//
//
// A compile-time workaround for upstream MLIR 22. The BufferizableOpInterface
// model of `scf.for` does not implement `getAliasingOpOperands`, so the
// default one asks every operand of the loop for its aliasing values, and
// each of those answers (through `bufferRelation`) looks the result up with
// `LoopLikeOpInterface::getTiedLoopRegionIterArg`, a linear search of the
// loop's results. One query about a result of a loop with n iteration
// arguments is O(n^2); one-shot analysis asks about each result several
// times, so a loop carrying one accumulator per gradient (the rolled
// micro-batch regions of a 400-layer model: about 800) spent 23 s in it.
//
// The only operand that can alias result i of an `scf.for` is its init
// operand i (`getAliasingValues` of any other operand never returns result
// i), so asking that operand alone gives the same answer in O(n). This file
// installs that query into the model the SCF dialect registered, after it
// is attached; the model's other methods are unchanged.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Common/ExternalModels.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;

/// getAliasingOpOperands of an `scf.for` result: the aliasing values of its
/// tied init operand that are `value`, as the default implementation would
/// find by asking every operand. Nothing for a region argument.
static AliasingOpOperandList
getForAliasingOpOperands(const BufferizableOpInterface::Concept *,
                         Operation *op, Value value,
                         const AnalysisState &state) {
  auto forOp = cast<scf::ForOp>(op);
  // A region iteration argument (the analysis asks its owner, the loop, when
  // a use-def chain reaches it): no operand's aliasing values name it, so
  // the default answer is empty.
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return {};
  OpOperand &init = forOp.getInitArgsMutable()[result.getResultNumber()];
  AliasingOpOperandList operands;
  if (!isa<TensorType>(init.get().getType()))
    return operands;
  for (const AliasingValue &alias : state.getAliasingValues(init))
    if (alias.value == value)
      operands.addAlias({&init, alias.relation, alias.isDefinite});
  return operands;
}

void mlir::gacc::registerLinearForBufferizationQueries(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, scf::SCFDialect *) {
    std::optional<RegisteredOperationName> name =
        RegisteredOperationName::lookup(scf::ForOp::getOperationName(), ctx);
    if (!name)
      return;
    // Present once the SCF dialect's bufferization models are attached
    // (registered before this extension); otherwise nothing to speed up.
    if (auto *model = name->getInterface<BufferizableOpInterface>())
      model->getAliasingOpOperands = getForAliasingOpOperands;
  });
}

//===- PrepareStep.cpp - prepare frontend output ----------------*- C++ -*-===//
//
// The gacc-prepare-step pass: specializes batch arguments whose sample
// dimension is dynamic to the `batch-size` option, canonicalizes and CSEs the
// training step (frontends emit `tensor.empty` of `?` sizes with casts, dead
// ops and `tensor.dim` chains that the batch analysis should not have to
// read), and returns results with the static types canonicalization found.
//
//===----------------------------------------------------------------------===//

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Dialect/Gacc/IR/StepSignature.h"
#include "gacc/Transforms/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#define DEBUG_TYPE "gacc-prepare-step"

namespace mlir::gacc {
#define GEN_PASS_DEF_PREPARESTEPPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Gives every batch argument of `func` whose sample dimension is dynamic
/// `batchSize` samples; its uses see the old type through a `tensor.cast`.
static LogicalResult specializeBatchSize(func::FuncOp func, int64_t batchSize) {
  if (func.isExternal())
    return success();
  Block &entry = func.getBody().front();
  OpBuilder builder = OpBuilder::atBlockBegin(&entry);
  bool changed = false;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    RoleInfo role = getArgumentRole(func, i);
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (role.role != Role::Batch || !type || role.index < 0 ||
        role.index >= type.getRank())
      continue; // The role verifier reports these.
    int64_t d = role.index;
    if (!type.isDynamicDim(d)) {
      if (batchSize > 0 && type.getDimSize(d) != batchSize)
        return func.emitOpError()
               << "batch-size=" << batchSize << " disagrees with the "
               << type.getDimSize(d) << " samples of batch argument #" << i;
      continue;
    }
    if (batchSize <= 0)
      return func.emitOpError()
             << "batch argument #" << i << " has a dynamic sample dimension ("
             << type << "); pass batch-size=N to specialize the step to N "
             << "samples";
    SmallVector<int64_t> shape(type.getShape());
    shape[d] = batchSize;
    auto staticType =
        RankedTensorType::get(shape, type.getElementType(), type.getEncoding());
    BlockArgument arg = func.getArgument(i);
    arg.setType(staticType);
    auto cast = tensor::CastOp::create(builder, arg.getLoc(), type, arg);
    arg.replaceAllUsesExcept(cast, cast);
    changed = true;
  }
  if (changed)
    func.setFunctionType(FunctionType::get(
        func.getContext(), entry.getArgumentTypes(), func.getResultTypes()));
  return success();
}

/// Returns values that canonicalization proved static with their static
/// type: a result `tensor.cast` to a less static type is dropped.
static void refineResultTypes(func::FuncOp func) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return;
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (!ret)
    return;
  bool changed = false;
  for (OpOperand &operand : ret->getOpOperands()) {
    auto cast = operand.get().getDefiningOp<tensor::CastOp>();
    if (!cast)
      continue;
    auto from = dyn_cast<RankedTensorType>(cast.getSource().getType());
    auto to = dyn_cast<RankedTensorType>(cast.getType());
    if (from && to && from.hasStaticShape() && !to.hasStaticShape()) {
      operand.set(cast.getSource());
      changed = true;
    }
  }
  if (changed)
    func.setFunctionType(FunctionType::get(
        func.getContext(), func.getArgumentTypes(), ret.getOperandTypes()));
}

namespace {
struct PrepareStepPass
    : public gacc::impl::PrepareStepPassBase<PrepareStepPass> {
  using PrepareStepPassBase::PrepareStepPassBase;

  void runOnOperation() override {
    mlir::gacc::PassResultVerifier verifyResult(
        getOperation(), getArgument(), [this] { signalPassFailure(); },
        [this] {
          getAnalysisManager().invalidate({});
          markAllAnalysesPreserved();
        });
    if (batchSize < 0) {
      getOperation().emitError()
          << "option batch-size must be >= 0, got " << batchSize;
      return signalPassFailure();
    }
    func::FuncOp func = findTrainingStep(getOperation(), entry);
    if (!func)
      return signalPassFailure();
    if (failed(specializeBatchSize(func, batchSize)))
      return signalPassFailure();
    if (canonicalize && !func.isExternal()) {
      OpPassManager pm(func::FuncOp::getOperationName());
      pm.addPass(createCanonicalizerPass());
      pm.addPass(createCSEPass());
      if (failed(runPipeline(pm, func)))
        return signalPassFailure();
    }
    refineResultTypes(func);
  }
};
} // namespace

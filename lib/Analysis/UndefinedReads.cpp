//===- UndefinedReads.cpp - reads of tensor.empty's contents ----*- C++ -*-===//
//
// Implements verifyNoUndefinedReads (UndefinedReads.h), which the batch
// analysis runs on every training step: a read of a `tensor.empty`'s
// contents is an error at the reading op rather than a value that differs
// between the compiled step and gacc-check's reference.
//
//===----------------------------------------------------------------------===//

#include "gacc/Analysis/UndefinedReads.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace mlir::gacc;

/// The `tensor.empty` that `value` is, or is a view of; null otherwise. A
/// tensor without elements has no contents to read: null.
static tensor::EmptyOp getEmptyRoot(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || (type.hasStaticShape() && type.getNumElements() == 0))
    return {};
  while (Operation *def = value.getDefiningOp()) {
    if (auto empty = dyn_cast<tensor::EmptyOp>(def))
      return empty;
    if (!isa<tensor::CastOp, tensor::ExtractSliceOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp>(def))
      return {};
    value = def->getOperand(0);
  }
  return {};
}

/// The operands of `op` whose contents it reads, each with how to name it
/// in the error ("init #0"); those it only writes or takes the shape of are
/// left out.
static SmallVector<std::pair<OpOperand *, std::string>>
getReadOperands(Operation *op) {
  SmallVector<std::pair<OpOperand *, std::string>> reads;
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
    for (OpOperand *input : linalgOp.getDpsInputOperands())
      if (linalgOp.payloadUsesValueFromOperand(input))
        reads.push_back(
            {input, "input #" + std::to_string(input->getOperandNumber())});
    for (OpOperand &init : linalgOp.getDpsInitsMutable())
      if (linalgOp.payloadUsesValueFromOperand(&init))
        reads.push_back(
            {&init, "init #" + std::to_string(init.getOperandNumber() -
                                              linalgOp.getNumDpsInputs())});
    return reads;
  }
  auto all = [&](StringRef what) {
    for (OpOperand &operand : op->getOpOperands())
      reads.push_back(
          {&operand,
           (Twine(what) + " #" + Twine(operand.getOperandNumber())).str()});
  };
  if (auto extract = dyn_cast<tensor::ExtractOp>(op))
    reads.push_back({&extract.getTensorMutable(), "tensor"});
  else if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
    reads.push_back({&insert.getSourceMutable(), "source"});
  else if (auto pad = dyn_cast<tensor::PadOp>(op))
    reads.push_back({&pad.getSourceMutable(), "source"});
  else if (isa<func::ReturnOp>(op))
    all("result");
  else if (isa<tensor::ConcatOp, shard::AllReduceOp>(op))
    all("operand");
  else if (op->getDialect() && (op->getDialect()->getNamespace() == "arith" ||
                                op->getDialect()->getNamespace() == "math"))
    all("operand");
  return reads;
}

/// Checks `func`'s ops; adds the functions it calls to `work`.
static LogicalResult verifyFunction(func::FuncOp func,
                                    SmallVectorImpl<func::FuncOp> &work) {
  WalkResult result = func.walk([&](Operation *op) {
    if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              call, call.getCalleeAttr()))
        work.push_back(callee);
    for (auto &[operand, name] : getReadOperands(op)) {
      tensor::EmptyOp empty = getEmptyRoot(operand->get());
      if (!empty)
        continue;
      bool returns = isa<func::ReturnOp>(op);
      InFlightDiagnostic diag =
          op->emitOpError()
          << (returns ? "returns" : "reads") << " undefined contents: its "
          << name << " is a tensor.empty"
          << (isa<linalg::LinalgOp>(op) ? " and its body reads the value" : "")
          << "; write the tensor first (linalg.fill)";
      diag.attachNote(empty.getLoc())
          << "the tensor.empty, whose contents are undefined until written";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult mlir::gacc::verifyNoUndefinedReads(func::FuncOp func) {
  SmallVector<func::FuncOp> work{func};
  SmallPtrSet<Operation *, 8> seen;
  while (!work.empty()) {
    func::FuncOp next = work.pop_back_val();
    if (next.isExternal() || !seen.insert(next).second)
      continue;
    if (failed(verifyFunction(next, work)))
      return failure();
  }
  return success();
}

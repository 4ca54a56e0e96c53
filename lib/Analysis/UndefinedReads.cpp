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
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"

#include <set>
#include <vector>

using namespace mlir;
using namespace mlir::gacc;

/// What a function's arguments are, for a function reached through calls:
/// argument -> the caller's tensor.empty it is (or is a view of), and
/// whether that came from an argument of the function being checked.
using ArgumentEmpties = DenseMap<Value, std::pair<tensor::EmptyOp, bool>>;

/// The `tensor.empty` that `value` is, or is a view of, with `viaArgument`
/// set when it reached `value` as an argument of the function (`arguments`);
/// null otherwise. An scf.for iter_arg is its init in the first iteration;
/// the result of a call to a one-block function is what that function
/// returns, with the call's operands for its arguments. A tensor without
/// elements has no contents to read: null.
static tensor::EmptyOp getEmptyRoot(Value value,
                                    const ArgumentEmpties &arguments,
                                    bool *viaArgument = nullptr,
                                    int depth = 0) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || (type.hasStaticShape() && type.getNumElements() == 0))
    return {};
  for (;;) {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      if (auto loop = dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp())) {
        if (OpOperand *init = loop.getTiedLoopInit(arg)) {
          value = init->get();
          continue;
        }
        return {};
      }
      auto found = arguments.find(value);
      if (found == arguments.end())
        return {};
      if (viaArgument)
        *viaArgument = found->second.second;
      return found->second.first;
    }
    Operation *def = value.getDefiningOp();
    if (auto empty = dyn_cast<tensor::EmptyOp>(def))
      return empty;
    if (auto call = dyn_cast<func::CallOp>(def)) {
      // Bounded: a recursive step is refused elsewhere, not looped on here.
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (depth > 16 || !callee || callee.isExternal() ||
          !llvm::hasSingleElement(callee.getBody()))
        return {};
      auto ret =
          dyn_cast<func::ReturnOp>(callee.getBody().front().getTerminator());
      if (!ret)
        return {};
      ArgumentEmpties inner;
      for (auto [operand, arg] :
           llvm::zip(call.getOperands(), callee.getArguments())) {
        bool via = false;
        if (tensor::EmptyOp empty =
                getEmptyRoot(operand, arguments, &via, depth + 1))
          inner[arg] = {empty, via};
      }
      return getEmptyRoot(
          ret.getOperand(cast<OpResult>(value).getResultNumber()), inner,
          viaArgument, depth + 1);
    }
    if (!isa<tensor::CastOp, tensor::ExtractSliceOp, tensor::ExpandShapeOp,
             tensor::CollapseShapeOp>(def))
      return {};
    value = def->getOperand(0);
  }
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

namespace {
/// A function to check, with the arguments that are a caller's
/// tensor.empty and the call that passed them (null for the step itself).
struct Visit {
  func::FuncOp func;
  ArgumentEmpties arguments;
  func::CallOp call;
};
} // namespace

/// Checks the ops of `visit.func`; adds the functions it calls to `work`,
/// with the arguments that receive a tensor.empty.
static LogicalResult verifyFunction(Visit &visit,
                                    SmallVectorImpl<Visit> &work) {
  WalkResult result = visit.func.walk([&](Operation *op) {
    if (auto call = dyn_cast<func::CallOp>(op))
      if (auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
              call, call.getCalleeAttr())) {
        Visit next{callee, ArgumentEmpties(), call};
        if (!callee.isExternal())
          for (auto [operand, arg] :
               llvm::zip(call.getOperands(), callee.getArguments()))
            if (tensor::EmptyOp empty = getEmptyRoot(operand, visit.arguments))
              next.arguments[arg] = {empty, true};
        work.push_back(std::move(next));
      }
    for (auto &[operand, name] : getReadOperands(op)) {
      bool viaArgument = false;
      tensor::EmptyOp empty =
          getEmptyRoot(operand->get(), visit.arguments, &viaArgument);
      if (!empty)
        continue;
      bool returns = isa<func::ReturnOp>(op);
      // A helper that returns the tensor.empty it was given reads nothing;
      // its caller's use of the result is what counts.
      if (returns && viaArgument)
        continue;
      InFlightDiagnostic diag =
          op->emitOpError()
          << (returns ? "returns" : "reads") << " undefined contents: its "
          << name << " is a tensor.empty"
          << (isa<linalg::LinalgOp>(op) ? " and its body reads the value" : "")
          << "; write the tensor first (linalg.fill)";
      diag.attachNote(empty.getLoc())
          << "the tensor.empty, whose contents are undefined until written";
      if (viaArgument && visit.call)
        diag.attachNote(visit.call.getLoc())
            << "passed to @" << visit.func.getSymName() << " here";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

LogicalResult mlir::gacc::verifyNoUndefinedReads(func::FuncOp func) {
  SmallVector<Visit> work;
  work.push_back(Visit{func, ArgumentEmpties(), func::CallOp()});
  // A function is checked once without arguments from a caller and once
  // per set of arguments that receive a tensor.empty.
  std::set<std::pair<Operation *, std::vector<unsigned>>> seen;
  while (!work.empty()) {
    Visit next = work.pop_back_val();
    if (next.func.isExternal())
      continue;
    std::vector<unsigned> emptyArguments;
    for (auto &[arg, empty] : next.arguments)
      emptyArguments.push_back(cast<BlockArgument>(arg).getArgNumber());
    llvm::sort(emptyArguments);
    if (!seen.insert({next.func, emptyArguments}).second)
      continue;
    if (failed(verifyFunction(next, work)))
      return failure();
  }
  return success();
}

//===- StepBoundary.cpp - calls and scalars at the step boundary -*- C++
//-*-===//
//
// Brings a hand-written training step into the form every later pass reads:
// the functions it calls are inlined (so the batch analysis, the regions and
// the lowering see one function), and its scalar arguments and results
// (`f32`, `i64`, `index`, ...) become rank-0 tensors (so a scalar loss is a
// `tensor<f32>` like any frontend's, and the compiled step's calling
// convention has one kind of argument). gacc-prepare-step runs both first;
// gacc-check inlines the same way before it evaluates the step.
//
//===----------------------------------------------------------------------===//

#include "gacc/Dialect/Gacc/IR/StepRoles.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// Inlines the body of a func.func into the training step, with no dialect
/// hooks: the callees are single-block functions of value-semantic ops (the
/// step is checked as a whole after inlining), and func.return's operands
/// replace the call's results. So inlining needs no inliner interface
/// registered in the context (func's is an extension embedders may lack).
struct StepInlinerInterface : public InlinerInterface {
  using InlinerInterface::InlinerInterface;

  bool isLegalToInline(Operation *call, Operation *callable,
                       bool wouldBeCloned) const override {
    return true;
  }
  bool isLegalToInline(Region *dest, Region *src, bool wouldBeCloned,
                       IRMapping &valueMapping) const override {
    return true;
  }
  bool isLegalToInline(Operation *op, Region *dest, bool wouldBeCloned,
                       IRMapping &valueMapping) const override {
    return true;
  }
  bool shouldAnalyzeRecursively(Operation *op) const override { return true; }
  void handleTerminator(Operation *op, Block *newDest) const override {
    llvm_unreachable("only single-block callees are inlined");
  }
  void handleTerminator(Operation *op,
                        ValueRange valuesToReplace) const override {
    for (auto [from, to] : llvm::zip(valuesToReplace, op->getOperands()))
      from.replaceAllUsesWith(to);
  }
  Value handleArgument(OpBuilder &builder, Operation *call, Operation *callable,
                       Value argument,
                       DictionaryAttr argumentAttrs) const override {
    return argument;
  }
  Value handleResult(OpBuilder &builder, Operation *call, Operation *callable,
                     Value result, DictionaryAttr resultAttrs) const override {
    return result;
  }
  void processInlinedCallBlocks(
      Operation *call,
      iterator_range<Region::iterator> inlinedBlocks) const override {}
  bool allowSingleBlockOptimization(
      iterator_range<Region::iterator> inlinedBlocks) const override {
    return true;
  }
};
} // namespace

/// Attaches "called from" notes for the chain of calls that reached the
/// function being checked, innermost first.
static void noteCallChain(InFlightDiagnostic &diag,
                          ArrayRef<func::CallOp> chain) {
  for (func::CallOp call : llvm::reverse(chain))
    diag.attachNote(call.getLoc())
        << "called from '@"
        << call->getParentOfType<func::FuncOp>().getSymName() << "' here";
}

/// Checks every call reachable from `func`: a func.call of a defined,
/// single-block, non-recursive function of the module. `stack` holds the
/// functions being checked, `chain` the calls that reached `func`.
static LogicalResult checkCalls(func::FuncOp func,
                                SmallVectorImpl<func::FuncOp> &stack,
                                SmallVectorImpl<func::CallOp> &chain,
                                DenseSet<Operation *> &checked) {
  WalkResult walk = func.walk([&](Operation *op) -> WalkResult {
    if (isa<func::CallIndirectOp>(op)) {
      InFlightDiagnostic diag =
          op->emitOpError("calls a function value; only func.call of a "
                          "function of the module can be inlined into the "
                          "training step");
      noteCallChain(diag, chain);
      return WalkResult::interrupt();
    }
    auto call = dyn_cast<func::CallOp>(op);
    if (!call)
      return WalkResult::advance();
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee) {
      InFlightDiagnostic diag = call.emitOpError()
                                << "calls '" << call.getCalleeAttr()
                                << "', which is not a func.func of the module";
      noteCallChain(diag, chain);
      return WalkResult::interrupt();
    }
    if (callee.isExternal()) {
      InFlightDiagnostic diag =
          call.emitOpError()
          << "calls the external function '@" << callee.getSymName()
          << "', which has no body to inline; a training step calls only "
             "functions defined in its module";
      diag.attachNote(callee.getLoc()) << "declared here";
      noteCallChain(diag, chain);
      return WalkResult::interrupt();
    }
    if (llvm::is_contained(stack, callee)) {
      InFlightDiagnostic diag =
          call.emitOpError()
          << "calls '@" << callee.getSymName()
          << "' recursively; a recursive call cannot be inlined into the "
             "training step";
      noteCallChain(diag, chain);
      return WalkResult::interrupt();
    }
    if (!callee.getBody().hasOneBlock()) {
      InFlightDiagnostic diag =
          call.emitOpError()
          << "calls '@" << callee.getSymName() << "', whose body has "
          << callee.getBody().getBlocks().size()
          << " blocks; only single-block functions can be inlined into the "
             "training step";
      noteCallChain(diag, chain);
      return WalkResult::interrupt();
    }
    if (!checked.insert(callee).second)
      return WalkResult::advance();
    stack.push_back(callee);
    chain.push_back(call);
    LogicalResult result = checkCalls(callee, stack, chain, checked);
    chain.pop_back();
    stack.pop_back();
    return failed(result) ? WalkResult::interrupt() : WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

LogicalResult mlir::gacc::inlineStepCalls(func::FuncOp func) {
  if (func.isExternal())
    return success();
  SmallVector<func::FuncOp> stack{func};
  SmallVector<func::CallOp> chain;
  DenseSet<Operation *> checked;
  if (failed(checkCalls(func, stack, chain, checked)))
    return failure();

  StepInlinerInterface interface(func.getContext());
  auto cloneCallback = [](OpBuilder &builder, Region *src, Block *inlineBlock,
                          Block *postInsertBlock, IRMapping &mapper,
                          bool shouldCloneInlinedRegion) {
    src->cloneInto(inlineBlock->getParent(), postInsertBlock->getIterator(),
                   mapper);
  };
  SetVector<func::FuncOp> callees;
  // Each round inlines the calls the previous one exposed; the call graph
  // is acyclic (checked above), so this ends.
  while (true) {
    SmallVector<func::CallOp> calls;
    func.walk([&](func::CallOp call) { calls.push_back(call); });
    if (calls.empty())
      break;
    for (func::CallOp call : calls) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (failed(inlineCall(interface, cloneCallback, call, callee,
                            &callee.getBody()))) {
        InFlightDiagnostic diag =
            call.emitOpError("cannot be inlined into the training step");
        diag.attachNote(callee.getLoc()) << "callee";
        return diag;
      }
      callees.insert(callee);
      call.erase();
    }
  }
  // Private callees left without uses go (the module's public functions
  // stay: they are its interface), innermost last so that a helper's own
  // callees lose their uses first.
  auto module = func->getParentOfType<ModuleOp>();
  bool erased = true;
  while (module && erased) {
    erased = false;
    for (func::FuncOp callee : callees) {
      if (!callee || !callee.isPrivate() || callee == func)
        continue;
      if (!SymbolTable::symbolKnownUseEmpty(callee, module))
        continue;
      callees.remove(callee);
      callee.erase();
      erased = true;
      break;
    }
  }
  return success();
}

/// The rank-0 tensor type that stands for the scalar `type` at the step's
/// boundary (an index is an i64 there), or null when `type` is no scalar.
static RankedTensorType getBoxedType(Type type) {
  if (isa<IndexType>(type))
    return RankedTensorType::get({}, IntegerType::get(type.getContext(), 64));
  if (isa<FloatType, IntegerType>(type))
    return RankedTensorType::get({}, type);
  return {};
}

LogicalResult mlir::gacc::boxScalarBoundary(func::FuncOp func) {
  // The batch analysis reports a step without a single block.
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return success();
  Block &entry = func.getBody().front();
  bool changed = false;
  OpBuilder builder = OpBuilder::atBlockBegin(&entry);
  for (BlockArgument arg : entry.getArguments()) {
    Type scalar = arg.getType();
    RankedTensorType boxed = getBoxedType(scalar);
    if (!boxed)
      continue;
    arg.setType(boxed);
    Location loc = arg.getLoc();
    auto extract = tensor::ExtractOp::create(builder, loc, arg, ValueRange{});
    Value value = extract;
    if (isa<IndexType>(scalar))
      value = arith::IndexCastOp::create(builder, loc, scalar, extract);
    arg.replaceAllUsesExcept(value, extract);
    changed = true;
  }
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  builder.setInsertionPoint(ret);
  for (OpOperand &operand : ret->getOpOperands()) {
    Type scalar = operand.get().getType();
    RankedTensorType boxed = getBoxedType(scalar);
    if (!boxed)
      continue;
    Location loc = ret.getLoc();
    Value value = operand.get();
    if (isa<IndexType>(scalar))
      value = arith::IndexCastOp::create(builder, loc, boxed.getElementType(),
                                         value);
    operand.set(tensor::FromElementsOp::create(builder, loc, boxed, value));
    changed = true;
  }
  if (changed)
    func.setFunctionType(FunctionType::get(
        func.getContext(), entry.getArgumentTypes(), ret.getOperandTypes()));
  return success();
}

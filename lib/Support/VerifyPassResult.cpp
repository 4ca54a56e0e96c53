//===- VerifyPassResult.cpp - verify what a gacc pass produced --*- C++ -*-===//
//
// Implements VerifyPassResult.h: local verification, ChangedOps and
// ChangeTrackingRewriter, PassResultVerifier.
//
//===----------------------------------------------------------------------===//

#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Threading.h"

using namespace mlir;
using namespace mlir::gacc;

//===----------------------------------------------------------------------===//
// Local verification
//===----------------------------------------------------------------------===//

LogicalResult
mlir::gacc::verifyUse(Operation *user, Value value, DominanceInfo &dominance,
                      llvm::function_ref<InFlightDiagnostic()> emitError) {
  if (Operation *isolated =
          user->getParentWithTrait<OpTrait::IsIsolatedFromAbove>()) {
    Region *region = value.getParentRegion();
    if (!region || !isolated->isAncestor(region->getParentOp()))
      return emitError() << "is defined outside the isolated-from-above '"
                         << isolated->getName() << "'";
  }
  if (user->getBlock() && dominance.isReachableFromEntry(user->getBlock()) &&
      !dominance.properlyDominates(value, user))
    return emitError() << "does not dominate this use";
  return success();
}

LogicalResult mlir::gacc::verifyOperandUses(Operation *op,
                                            DominanceInfo &dominance) {
  for (OpOperand &operand : op->getOpOperands())
    if (failed(verifyUse(op, operand.get(), dominance, [&] {
          return op->emitError("operand #")
                 << operand.getOperandNumber() << " ";
        })))
      return failure();
  return success();
}

LogicalResult mlir::gacc::verifyOpShallowly(Operation *op, bool symbolUses) {
  // The isolated-from-above ops whose only region invariants are their
  // isolation and symbol table.
  if (!isa<ModuleOp, func::FuncOp>(op))
    return mlir::verify(op, /*verifyRecursively=*/false);
  if (failed(op->getName().verifyInvariants(op)))
    return failure();
  if (!op->hasTrait<OpTrait::SymbolTable>())
    return success();
  if (symbolUses)
    return mlir::detail::verifySymbolTable(op);
  DenseMap<StringAttr, Operation *> names;
  for (Block &block : op->getRegion(0))
    for (Operation &symbol : block) {
      auto name =
          symbol.getAttrOfType<StringAttr>(SymbolTable::getSymbolAttrName());
      if (name && !names.try_emplace(name, &symbol).second)
        return symbol.emitError("redefinition of symbol named '")
               << name.getValue() << "'";
    }
  return success();
}

LogicalResult
mlir::gacc::verifySymbolUsesIn(Operation *op, bool nested,
                               SymbolTableCollection &symbolTables) {
  auto check = [&](Operation *o) {
    auto user = dyn_cast<SymbolUserOpInterface>(o);
    return user ? user.verifySymbolUses(symbolTables) : success();
  };
  if (!nested)
    return check(op);
  return failure(op->walk([&](Operation *o) {
                     return failed(check(o)) ? WalkResult::interrupt()
                                             : WalkResult::advance();
                   }).wasInterrupted());
}

LogicalResult mlir::gacc::verifyTerminators(Operation *op) {
  if (op->mightHaveTrait<OpTrait::NoTerminator>())
    return success();
  for (Region &region : op->getRegions())
    for (Block &block : region)
      if (!block.empty() &&
          !block.back().mightHaveTrait<OpTrait::IsTerminator>())
        return block.back().emitError("block with no terminator, has ")
               << block.back();
  return success();
}

//===----------------------------------------------------------------------===//
// ChangedOps
//===----------------------------------------------------------------------===//

void ChangedOps::record(Operation *op, Change change) {
  auto [it, inserted] = changes.try_emplace(op, change);
  if (inserted)
    return;
  // A new op at the address of an erased one, or a stronger change.
  if (it->second == Change::Erased || change == Change::Erased ||
      change > it->second)
    it->second = change;
}

void ChangedOps::notifyOperationInserted(Operation *op,
                                         OpBuilder::InsertPoint previous) {
  // Created, or moved: either way verified with its regions where it is now.
  record(op, Change::Created);
}

void ChangedOps::notifyOperationModified(Operation *op) {
  record(op, nextIsRewire ? Change::Rewired : Change::Modified);
}

ChangeTrackingRewriter::Signature
ChangeTrackingRewriter::getSignature(Operation *op) {
  Signature signature{op->getName(),
                      {},
                      op->getDiscardableAttrDictionary(),
                      op->hashProperties()};
  llvm::append_range(signature.types, op->getOperandTypes());
  llvm::append_range(signature.types, op->getResultTypes());
  for (Region &region : op->getRegions())
    for (Block &block : region)
      llvm::append_range(signature.types, block.getArgumentTypes());
  return signature;
}

void ChangeTrackingRewriter::startOpModification(Operation *op) {
  pending.insert_or_assign(op, getSignature(op));
  IRRewriter::startOpModification(op);
}

void ChangeTrackingRewriter::finalizeOpModification(Operation *op) {
  auto it = pending.find(op);
  changes.nextIsRewire = it != pending.end() && it->second == getSignature(op);
  if (it != pending.end())
    pending.erase(it);
  IRRewriter::finalizeOpModification(op);
  changes.nextIsRewire = false;
}

void ChangeTrackingRewriter::cancelOpModification(Operation *op) {
  pending.erase(op);
  IRRewriter::cancelOpModification(op);
}

void ChangedOps::notifyOperationErased(Operation *op) {
  if (Operation *parent = op->getParentOp())
    record(parent, Change::ErasedFrom);
  record(op, Change::Erased);
}

LogicalResult ChangedOps::verify(Operation *root) const {
  // Live ops by change, skipping those inside a created op (its recursive
  // verification covers them).
  auto insideCreated = [&](Operation *op) {
    for (Operation *p = op->getParentOp(); p; p = p->getParentOp()) {
      auto it = changes.find(p);
      if (it != changes.end() && it->second == Change::Created)
        return true;
      if (p == root)
        break;
    }
    return false;
  };
  SmallVector<Operation *> deep;
  llvm::SetVector<Operation *> shallow;
  SmallVector<Operation *> rewired; // created or modified: check dominance
  SmallVector<Operation *> modified;
  SmallVector<Operation *> onlyRewired; // same types: dominance only
  SmallVector<Operation *> erasedFrom;
  for (auto [op, change] : changes) {
    if (change == Change::Erased || insideCreated(op))
      continue;
    switch (change) {
    case Change::Created:
      deep.push_back(op);
      rewired.push_back(op);
      break;
    case Change::Modified:
      shallow.insert(op);
      rewired.push_back(op);
      modified.push_back(op);
      break;
    case Change::Rewired:
      onlyRewired.push_back(op);
      break;
    case Change::ErasedFrom:
      shallow.insert(op);
      erasedFrom.push_back(op);
      break;
    case Change::Erased:
      break;
    }
  }
  // Users of the results (their operand types may have changed) and the
  // ancestors (their region invariants may involve the changed ops).
  for (Operation *op : rewired)
    for (Operation *user : op->getUsers())
      if (!insideCreated(user))
        shallow.insert(user);
  SmallVector<Operation *> changed(shallow.begin(), shallow.end());
  llvm::append_range(changed, deep);
  for (Operation *op : changed)
    for (Operation *p = op->getParentOp(); p; p = p->getParentOp()) {
      if (!shallow.insert(p) || p == root)
        break;
    }

  for (Operation *op : erasedFrom)
    if (failed(verifyTerminators(op)))
      return failure();
  for (Operation *op : deep)
    if (failed(mlir::verify(op, /*verifyRecursively=*/true)))
      return failure();
  // A symbol table with a direct child created, modified or erased is
  // checked with all its symbol uses (a symbol may be gone or renamed).
  llvm::SmallPtrSet<Operation *, 8> parentsOfChanged(erasedFrom.begin(),
                                                     erasedFrom.end());
  for (Operation *op : rewired)
    if (Operation *parent = op->getParentOp())
      parentsOfChanged.insert(parent);
  for (Operation *op : shallow)
    if (!insideCreated(op) &&
        failed(verifyOpShallowly(op, parentsOfChanged.contains(op))))
      return failure();
  DominanceInfo dominance;
  SymbolTableCollection symbolTables;
  for (Operation *op : deep)
    if (failed(verifySymbolUsesIn(op, /*nested=*/true, symbolTables)))
      return failure();
  for (Operation *op : modified)
    if (failed(verifySymbolUsesIn(op, /*nested=*/false, symbolTables)))
      return failure();
  llvm::append_range(rewired, onlyRewired);
  for (Operation *op : rewired)
    if (failed(verifyOperandUses(op, dominance)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// PassResultVerifier
//===----------------------------------------------------------------------===//

PassResultVerifier::PassResultVerifier(
    Operation *op, StringRef passArgument, std::function<void()> signalFailure,
    std::function<void()> markVerified,
    std::function<LogicalResult(Operation *)> verifier)
    : op(op), passArgument(passArgument.str()),
      signalFailure(std::move(signalFailure)),
      markVerified(std::move(markVerified)), verifier(std::move(verifier)),
      thread(llvm::get_threadid()) {
  // Notes which errors this pass reported (on this thread: function passes
  // run in parallel), and lets every diagnostic through.
  errorWatch.emplace(op->getContext(), [this](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error &&
        llvm::get_threadid() == thread)
      sawError = true;
    return failure();
  });
}

PassResultVerifier::~PassResultVerifier() {
  errorWatch.reset();
  if (sawError)
    return; // the pass failed with its own diagnostic
  // The verifier's diagnostics of this thread are kept, not printed.
  std::optional<Location> firstLoc;
  std::string firstMessage;
  LogicalResult verified = success();
  {
    ScopedDiagnosticHandler capture(op->getContext(), [&](Diagnostic &diag) {
      if (llvm::get_threadid() != thread)
        return failure();
      if (diag.getSeverity() == DiagnosticSeverity::Error && !firstLoc) {
        firstLoc = diag.getLocation();
        firstMessage = diag.str();
      }
      return success();
    });
    verified = verifier ? verifier(op) : verify(op);
  }
  if (succeeded(verified)) {
    if (markVerified)
      markVerified();
    return;
  }
  Location loc = firstLoc ? *firstLoc : op->getLoc();
  InFlightDiagnostic diag =
      emitError(loc) << "internal error: pass '" << passArgument
                     << "' produced invalid IR; please report it as a gacc "
                        "bug with the input and the command line";
  if (!firstMessage.empty())
    diag.attachNote(loc) << "the IR verifier said: " << firstMessage;
  diag.report();
  signalFailure();
}

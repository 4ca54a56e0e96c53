//===- Utils.cpp - helpers shared by the gacc passes ------------*- C++ -*-===//
//
// Implements the IR helpers of Utils.h.
//
//===----------------------------------------------------------------------===//

#include "gacc/Transforms/Utils.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gacc;

bool mlir::gacc::isFillOf(Value value, TypedAttr scalar) {
  auto fill = value.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Attribute attr;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&attr)))
    return false;
  return attr == scalar;
}

Value mlir::gacc::createCombine(OpBuilder &builder, Location loc,
                                Combiner combiner, Value lhs, Value rhs) {
  Operation *op = nullptr;
  switch (combiner) {
  case Combiner::AddF:
    op = arith::AddFOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::AddI:
    op = arith::AddIOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::MaxF:
    op = arith::MaximumFOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::MinF:
    op = arith::MinimumFOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::MaxNumF:
    op = arith::MaxNumFOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::MinNumF:
    op = arith::MinNumFOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::None:
    llvm_unreachable("no combiner");
  }
  op->setAttr(GaccDialect::kCombineAttrName, builder.getUnitAttr());
  return op->getResult(0);
}

std::optional<SampleCountForm>
mlir::gacc::matchSampleCount(arith::ConstantOp cst, int64_t batchSize) {
  std::optional<double> value;
  Attribute attr = cst.getValue();
  if (auto f = dyn_cast<FloatAttr>(attr))
    value = f.getValueAsDouble();
  else if (auto splat = dyn_cast<SplatElementsAttr>(attr);
           splat && isa<FloatType>(splat.getElementType()))
    value = splat.getSplatValue<APFloat>().convertToDouble();
  if (!value)
    return std::nullopt;
  auto near = [](double a, double b) {
    return std::abs(a - b) <= 1e-6 * std::abs(b);
  };
  std::optional<SampleCountForm> form;
  if (near(*value, static_cast<double>(batchSize)))
    form = SampleCountForm::Count;
  else if (near(*value, 1.0 / static_cast<double>(batchSize)))
    form = SampleCountForm::Reciprocal;
  if (!form)
    return std::nullopt;
  for (Operation *user : cst->getUsers())
    if (isa<arith::CmpFOp, arith::MinimumFOp, arith::MaximumFOp,
            arith::MinNumFOp, arith::MaxNumFOp>(user))
      return std::nullopt;
  return form;
}

bool mlir::gacc::hasDynamicSampleDimension(func::FuncOp func) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    RoleInfo role = getArgumentRole(func, i);
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (role.role == Role::Batch && type && role.index >= 0 &&
        role.index < type.getRank() && type.isDynamicDim(role.index))
      return true;
  }
  return false;
}

BlockArgument mlir::gacc::getOrAddSampleCountArgument(func::FuncOp func) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (getArgumentRole(func, i).role == Role::SampleCount)
      return func.getArgument(i);
  Builder builder(func.getContext());
  unsigned index = func.getNumArguments();
  auto attrs = builder.getDictionaryAttr(builder.getNamedAttr(
      GaccDialect::kSampleCountAttrName, builder.getUnitAttr()));
  (void)func.insertArgument(index,
                            RankedTensorType::get({}, builder.getI64Type()),
                            attrs, func.getLoc());
  return func.getArgument(index);
}

void mlir::gacc::foldStaticDims(func::FuncOp func) {
  SmallVector<tensor::DimOp> dims;
  func.walk([&](tensor::DimOp dim) { dims.push_back(dim); });
  for (tensor::DimOp dim : dims) {
    std::optional<int64_t> index = dim.getConstantIndex();
    auto type = dyn_cast<RankedTensorType>(dim.getSource().getType());
    if (!index || !type || *index < 0 || *index >= type.getRank() ||
        type.isDynamicDim(*index))
      continue;
    OpBuilder builder(dim);
    Value cst = arith::ConstantIndexOp::create(builder, dim.getLoc(),
                                               type.getDimSize(*index));
    dim.replaceAllUsesWith(cst);
    dim.erase();
  }
}

void mlir::gacc::eraseDeadOps(Block &block, RewriterBase *rewriter) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
      if (isOpTriviallyDead(&op)) {
        if (rewriter)
          rewriter->eraseOp(&op);
        else
          op.erase();
        changed = true;
      }
  }
}

Value mlir::gacc::getViewRoot(Value view) {
  while (auto op = view.getDefiningOp<ViewLikeOpInterface>()) {
    // extract_strided_metadata's first result is its source's buffer (the
    // others are sizes and strides).
    bool base = isa<memref::ExtractStridedMetadataOp>(op.getOperation()) &&
                cast<OpResult>(view).getResultNumber() == 0;
    if ((op->getNumResults() != 1 && !base) || op.getViewSource() == view)
      break;
    view = op.getViewSource();
  }
  return view;
}

Value mlir::gacc::transposeMatrix(OpBuilder &builder, Location loc,
                                  Value matrix) {
  auto type = cast<RankedTensorType>(matrix.getType());
  Value init = tensor::EmptyOp::create(
      builder, loc, ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(0)},
      type.getElementType());
  return linalg::TransposeOp::create(builder, loc, matrix, init,
                                     ArrayRef<int64_t>{1, 0})
      ->getResult(0);
}

Value mlir::gacc::flattenTensor(OpBuilder &builder, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == 1)
    return value;
  auto flatType =
      RankedTensorType::get({type.getNumElements()}, type.getElementType());
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(builder, loc, flatType, value,
                                         ArrayRef<ReassociationIndices>{});
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return tensor::CollapseShapeOp::create(builder, loc, flatType, value,
                                         ArrayRef<ReassociationIndices>{all});
}

Value mlir::gacc::unflattenTensor(OpBuilder &builder, Location loc, Value flat,
                                  RankedTensorType type) {
  if (type.getRank() == 1)
    return flat;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(builder, loc, type, flat,
                                           ArrayRef<ReassociationIndices>{});
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return tensor::ExpandShapeOp::create(builder, loc, type, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

Value mlir::gacc::extractFlatSlice(OpBuilder &builder, Location loc,
                                   Value source, int64_t offset, int64_t size) {
  return tensor::ExtractSliceOp::create(
      builder, loc, source,
      ArrayRef<OpFoldResult>{builder.getIndexAttr(offset)},
      ArrayRef<OpFoldResult>{builder.getIndexAttr(size)},
      ArrayRef<OpFoldResult>{builder.getIndexAttr(1)});
}

Value mlir::gacc::insertFlatSlice(OpBuilder &builder, Location loc,
                                  Value source, Value dest, int64_t offset) {
  int64_t size = cast<RankedTensorType>(source.getType()).getDimSize(0);
  return tensor::InsertSliceOp::create(
      builder, loc, source, dest,
      ArrayRef<OpFoldResult>{builder.getIndexAttr(offset)},
      ArrayRef<OpFoldResult>{builder.getIndexAttr(size)},
      ArrayRef<OpFoldResult>{builder.getIndexAttr(1)});
}

LogicalResult mlir::gacc::verifyNotMicroBatched(func::FuncOp func) {
  MicroBatchOp region;
  func.walk([&](MicroBatchOp op) {
    region = op;
    return WalkResult::interrupt();
  });
  if (!region)
    return success();
  region.emitOpError("step '")
      << func.getSymName()
      << "' is already micro-batched; run gacc-pipeline (or "
         "gacc-micro-batch) once, on the original step";
  return failure();
}

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

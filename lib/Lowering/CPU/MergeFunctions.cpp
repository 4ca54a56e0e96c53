//===- MergeFunctions.cpp - one function per distinct body ------*- C++ -*-===//
//
// The gacc-merge-functions pass: private functions with the same type and
// the same body become one. A deep step repeats its loop bodies (one per
// layer, region and copy form at the same shapes: 572 parallel-loop bodies,
// 6 distinct, in a 100 x 512 MLP at m = 8) and its chunks (the SGD update
// of 17 layers, six times, differing only in where the arena holds each
// gradient: 69 chunks, 42 distinct). Every later pass, the translation and LLVM
// then see each body once.
//
// Two functions are the same when their bodies match operation by
// operation (names, attributes, result types, operands in the same
// places, symbol references included, so that merging the callees first
// makes their callers the same). A function only called directly may also
// differ from another in the values of integer constants used only in the
// byte shift of a memref.view (a buffer's place in the arena, maybe added
// to a copy's base offset): the merged function takes those as
// arguments, and each call passes its own. A constant that sizes a loop or
// indexes an element is never made an argument.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::gacc {
#define GEN_PASS_DEF_MERGEFUNCTIONSPASS
#include "gacc/Lowering/CPU/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Whether every use of `value` is the byte shift of a memref.view, or
/// adds to such a shift (a copy's base offset plus a buffer's place).
static bool isOnlyShift(Value value, int depth = 0) {
  return llvm::all_of(value.getUses(), [&](OpOperand &use) {
    Operation *user = use.getOwner();
    if (auto view = dyn_cast<memref::ViewOp>(user))
      return use.get() == view.getByteShift() && use.getOperandNumber() == 1;
    return isa<arith::AddIOp>(user) && depth < 4 &&
           isOnlyShift(user->getResult(0), depth + 1);
  });
}

/// Whether `op` is an integer constant used only in byte shifts of
/// memref.view (isOnlyShift): its value may become an argument.
static bool isShiftConstant(Operation *op) {
  auto constant = dyn_cast<arith::ConstantOp>(op);
  return constant && constant.getType().isIntOrIndex() &&
         !constant->use_empty() && isOnlyShift(constant);
}

/// The operations of `func` in pre-order (the function itself excluded).
static SmallVector<Operation *> getOps(func::FuncOp func) {
  SmallVector<Operation *> ops;
  func.getBody().walk<WalkOrder::PreOrder>(
      [&](Operation *op) { ops.push_back(op); });
  return ops;
}

/// Whether `a` and `b` have the same attributes and properties.
static bool haveSameAttributes(Operation *a, Operation *b) {
  return a->getRawDictionaryAttrs() == b->getRawDictionaryAttrs() &&
         a->getName().compareOpProperties(a->getPropertiesStorage(),
                                          b->getPropertiesStorage());
}

/// A hash of `func`'s type and body that ignores the values of shift
/// constants and the identity of operands.
static llvm::hash_code hashFunction(func::FuncOp func) {
  llvm::hash_code hash =
      llvm::hash_value(func.getFunctionType().getAsOpaquePointer());
  for (Operation *op : getOps(func)) {
    hash = llvm::hash_combine(hash, op->getName().getAsOpaquePointer(),
                              op->getNumOperands(), op->getNumRegions());
    for (Type type : op->getResultTypes())
      hash = llvm::hash_combine(hash, type.getAsOpaquePointer());
    if (!isShiftConstant(op))
      hash = llvm::hash_combine(
          hash, op->getRawDictionaryAttrs().getAsOpaquePointer(),
          op->hashProperties());
  }
  return hash;
}

namespace {
/// The shift constants of a function whose values differ from the
/// leader's: their position in the leader's pre-order, and the value.
using Differences = SmallVector<std::pair<unsigned, TypedAttr>>;
} // namespace

/// Whether `other` is `leader`, or (where `differences` is given) is
/// `leader` but for the values of the shift constants it lists.
static bool isSameFunction(func::FuncOp leader, func::FuncOp other,
                           Differences *differences) {
  if (leader.getFunctionType() != other.getFunctionType())
    return false;
  // The attributes other than the name (visibility, linkage, passthrough).
  NamedAttrList leaderAttrs(leader->getAttrDictionary()),
      otherAttrs(other->getAttrDictionary());
  leaderAttrs.erase(SymbolTable::getSymbolAttrName());
  otherAttrs.erase(SymbolTable::getSymbolAttrName());
  if (leaderAttrs != otherAttrs)
    return false;

  SmallVector<Operation *> leaderOps = getOps(leader), otherOps = getOps(other);
  if (leaderOps.size() != otherOps.size())
    return false;
  DenseMap<Value, Value> values;
  DenseMap<Block *, Block *> blocks;
  auto mapBlocks = [&](Region &a, Region &b) {
    if (a.getBlocks().size() != b.getBlocks().size())
      return false;
    for (auto [x, y] : llvm::zip(a, b)) {
      if (x.getNumArguments() != y.getNumArguments())
        return false;
      blocks[&x] = &y;
      for (auto [p, q] : llvm::zip(x.getArguments(), y.getArguments())) {
        if (p.getType() != q.getType())
          return false;
        values[p] = q;
      }
    }
    return true;
  };
  if (!mapBlocks(leader.getBody(), other.getBody()))
    return false;
  for (auto [index, a, b] : llvm::enumerate(leaderOps, otherOps)) {
    if (a->getName() != b->getName() ||
        a->getNumOperands() != b->getNumOperands() ||
        a->getNumRegions() != b->getNumRegions() ||
        a->getNumSuccessors() != b->getNumSuccessors() ||
        a->getResultTypes() != b->getResultTypes())
      return false;
    // In pre-order a value is defined before its uses (or is the argument
    // of a block mapped with its region).
    for (auto [p, q] : llvm::zip(a->getOperands(), b->getOperands())) {
      auto it = values.find(p);
      if (it == values.end() || it->second != q)
        return false;
    }
    for (auto [p, q] : llvm::zip(a->getSuccessors(), b->getSuccessors()))
      if (blocks.lookup(p) != q)
        return false;
    if (!haveSameAttributes(a, b)) {
      if (!differences || !isShiftConstant(a))
        return false;
      differences->push_back({static_cast<unsigned>(index),
                              cast<arith::ConstantOp>(b).getValue()});
    }
    for (auto [p, q] : llvm::zip(a->getResults(), b->getResults()))
      values[p] = q;
    for (auto [x, y] : llvm::zip(a->getRegions(), b->getRegions()))
      if (!mapBlocks(x, y))
        return false;
  }
  return true;
}

namespace {
struct MergeFunctionsPass
    : public mlir::gacc::impl::MergeFunctionsPassBase<MergeFunctionsPass> {
  using MergeFunctionsPassBase::MergeFunctionsPassBase;
  void runOnOperation() override;

private:
  /// One round over the module's private functions; false when nothing
  /// merged.
  bool mergeRound();

  /// The direct calls of each function, and the functions referred to
  /// otherwise (their type may not change).
  DenseMap<StringAttr, SmallVector<func::CallOp>> calls;
  llvm::DenseSet<StringAttr> otherUses;
  /// Merged functions, erased at the end of a round.
  SmallVector<func::FuncOp> merged;
  /// The functions merged as they are, and the name of the one they are:
  /// their references are renamed at the end of a round.
  DenseMap<StringAttr, StringAttr> renamed;

  /// Makes `members` (each `leader` but for the shift constants listed)
  /// `leader`.
  void mergeInto(func::FuncOp leader,
                 ArrayRef<std::pair<func::FuncOp, Differences>> members);
};
} // namespace

void MergeFunctionsPass::mergeInto(
    func::FuncOp leader,
    ArrayRef<std::pair<func::FuncOp, Differences>> members) {
  // The shift constants that differ somewhere become trailing arguments.
  SmallVector<unsigned> positions;
  for (const auto &member : members)
    for (const auto &difference : member.second)
      positions.push_back(difference.first);
  llvm::sort(positions);
  positions.erase(llvm::unique(positions), positions.end());

  if (positions.empty()) {
    for (auto [func, differences] : members) {
      renamed[func.getSymNameAttr()] = leader.getSymNameAttr();
      merged.push_back(func);
    }
    return;
  }

  // (insertArgument keeps the type, the argument attributes and the entry
  // block in step.)
  SmallVector<Operation *> ops = getOps(leader);
  SmallVector<TypedAttr> leaderValues;
  for (unsigned position : positions) {
    auto constant = cast<arith::ConstantOp>(ops[position]);
    leaderValues.push_back(constant.getValue());
    unsigned index = leader.getNumArguments();
    if (failed(leader.insertArgument(index, constant.getType(),
                                     /*argAttrs=*/{}, constant.getLoc())))
      return signalPassFailure();
    constant.replaceAllUsesWith(leader.getArgument(index));
    constant.erase();
  }

  // Each call passes its callee's values.
  auto rewriteCalls = [&](StringAttr callee, ArrayRef<TypedAttr> values) {
    for (func::CallOp call : calls.lookup(callee)) {
      OpBuilder builder(call);
      SmallVector<Value> operands(call.getOperands());
      for (TypedAttr value : values)
        operands.push_back(
            arith::ConstantOp::create(builder, call.getLoc(), value));
      auto replacement =
          func::CallOp::create(builder, call.getLoc(), leader, operands);
      replacement->setDiscardableAttrs(call->getDiscardableAttrDictionary());
      call.replaceAllUsesWith(replacement.getResults());
      call.erase();
    }
  };
  rewriteCalls(leader.getSymNameAttr(), leaderValues);
  for (auto [func, differences] : members) {
    SmallVector<TypedAttr> values = leaderValues;
    for (const auto &[position, value] : differences)
      values[llvm::lower_bound(positions, position) - positions.begin()] =
          value;
    rewriteCalls(func.getSymNameAttr(), values);
    merged.push_back(func);
  }
}

bool MergeFunctionsPass::mergeRound() {
  ModuleOp module = getOperation();
  calls.clear();
  otherUses.clear();
  if (auto uses = SymbolTable::getSymbolUses(&module.getBodyRegion()))
    for (const SymbolTable::SymbolUse &use : *uses) {
      StringAttr name = use.getSymbolRef().getRootReference();
      auto call = dyn_cast<func::CallOp>(use.getUser());
      if (call && call.getCalleeAttr() == use.getSymbolRef())
        calls[name].push_back(call);
      else
        otherUses.insert(name);
    }
  llvm::MapVector<llvm::hash_code, SmallVector<func::FuncOp>> buckets;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPrivate() && !func.isExternal())
      buckets[hashFunction(func)].push_back(func);

  bool changed = false;
  for (auto &bucket : buckets) {
    SmallVector<func::FuncOp> remaining = std::move(bucket.second);
    while (remaining.size() >= 2) {
      func::FuncOp leader = remaining.front();
      // Shift constants become arguments only where every use of the
      // functions is a call.
      bool leaderCalledOnly =
          parametrize && !otherUses.contains(leader.getSymNameAttr());
      SmallVector<std::pair<func::FuncOp, Differences>> members;
      SmallVector<func::FuncOp> rest;
      for (func::FuncOp func : llvm::drop_begin(remaining)) {
        bool calledOnly = !otherUses.contains(func.getSymNameAttr());
        if (leaderCalledOnly && !calledOnly) {
          rest.push_back(func);
          continue;
        }
        Differences differences;
        if (isSameFunction(leader, func,
                           leaderCalledOnly ? &differences : nullptr))
          members.push_back({func, std::move(differences)});
        else
          rest.push_back(func);
      }
      remaining = std::move(rest);
      if (members.empty())
        continue;
      changed = true;
      mergeInto(leader, members);
    }
  }
  for (func::FuncOp func : merged)
    func.erase();
  merged.clear();
  // One walk renames the references to every function merged as it is.
  if (!renamed.empty()) {
    AttrTypeReplacer replacer;
    replacer.addReplacement([&](SymbolRefAttr ref) -> std::optional<Attribute> {
      StringAttr name = renamed.lookup(ref.getRootReference());
      if (!name)
        return std::nullopt;
      return SymbolRefAttr::get(name, ref.getNestedReferences());
    });
    replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                          /*replaceLocs=*/false,
                                          /*replaceTypes=*/false);
    renamed.clear();
  }
  return changed;
}

void MergeFunctionsPass::runOnOperation() {
  // Merging callees can make their callers the same: until nothing merges.
  while (mergeRound()) {
  }
}

//===- BufferAccess.cpp - which ops touch which buffer bytes ----*- C++ -*-===//

#include "BufferAccess.h"
#include "RuntimeCalls.h"
#include "gacc/Support/IRUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::gacc;

bool mlir::gacc::collectAliases(Value root, SmallVectorImpl<Value> &aliases,
                                SmallVectorImpl<Operation *> &escapes) {
  if (auto arg = dyn_cast<BlockArgument>(root)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!func || !arg.getOwner()->isEntryBlock() || func.isPrivate())
      return false;
  } else if (!isa<memref::AllocOp, memref::AllocaOp>(root.getDefiningOp())) {
    return false;
  }
  aliases.push_back(root);
  for (size_t i = 0; i < aliases.size(); ++i) {
    for (Operation *user : aliases[i].getUsers()) {
      if (auto view = dyn_cast<ViewLikeOpInterface>(user)) {
        if (view.getViewSource() == aliases[i]) {
          for (Value result : user->getResults())
            if (isa<BaseMemRefType>(result.getType()))
              aliases.push_back(result);
          continue;
        }
      }
      if (llvm::any_of(user->getResultTypes(), llvm::IsaPred<BaseMemRefType>))
        return false;
      // The buffer stored into memory or passed on by a terminator (an
      // scf.yield, a branch): its later uses are not followed. (A
      // func.return ends the function: nothing after it in it.)
      if (auto store = dyn_cast<memref::StoreOp>(user);
          store && store.getValueToStore() == aliases[i])
        return false;
      if (user->hasTrait<OpTrait::IsTerminator>() && !isa<func::ReturnOp>(user))
        return false;
      if (auto address =
              dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(user)) {
        SmallVector<Value> integers = {address.getResult()};
        while (!integers.empty()) {
          Value value = integers.pop_back_val();
          for (Operation *use : value.getUsers()) {
            if (isa<arith::ArithDialect>(use->getDialect()))
              llvm::append_range(integers, use->getResults());
            else
              escapes.push_back(use);
          }
        }
      }
    }
  }
  return true;
}

bool mlir::gacc::mayWriteOrFree(Operation *user, Value value) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(user);
  if (!effects)
    return !isa<ViewLikeOpInterface>(user);
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffectsOnValue(value, list);
  return llvm::any_of(list, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Write, MemoryEffects::Free>(e.getEffect());
  });
}

std::optional<ArrayRef<Operation *>> BufferTouchers::get(Value root,
                                                         Block *block) {
  auto [rootIt, newRoot] = users.try_emplace(root);
  if (newRoot) {
    SmallVector<Value> aliases;
    SmallVector<Operation *> escapes;
    if (collectAliases(root, aliases, escapes)) {
      SmallVector<Operation *> &list = rootIt->second.emplace();
      for (Value alias : aliases)
        for (Operation *user : alias.getUsers())
          if (!isa<ViewLikeOpInterface>(user))
            list.push_back(user);
      // The ops that take the address, and every op that uses what they
      // make of it (a pointer made before a loop and dereferenced in it).
      DenseSet<Operation *> seen;
      SmallVector<Operation *> worklist(escapes);
      while (!worklist.empty()) {
        Operation *escape = worklist.pop_back_val();
        if (!seen.insert(escape).second)
          continue;
        list.push_back(escape);
        for (Value result : escape->getResults())
          llvm::append_range(worklist, result.getUsers());
      }
    }
  }
  if (!rootIt->second)
    return std::nullopt;
  auto [it, inserted] = inBlock.try_emplace({root, block});
  SmallVector<Operation *> &ancestors = it->second;
  if (inserted) {
    for (Operation *user : *rootIt->second)
      if (Operation *ancestor = block->findAncestorOpInBlock(*user))
        ancestors.push_back(ancestor);
    llvm::sort(ancestors, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    ancestors.erase(llvm::unique(ancestors), ancestors.end());
  }
  return ArrayRef<Operation *>(ancestors);
}

std::optional<ArrayRef<Operation *>>
mlir::gacc::getTouchersBefore(Operation *op, Value buffer,
                              BufferTouchers &touchers) {
  std::optional<ArrayRef<Operation *>> inBlock =
      touchers.get(getViewRoot(buffer), op->getBlock());
  if (!inBlock)
    return std::nullopt;
  auto end = llvm::lower_bound(*inBlock, op, [](Operation *a, Operation *b) {
    return a->isBeforeInBlock(b);
  });
  return inBlock->take_front(std::distance(inBlock->begin(), end));
}

std::optional<ByteRange> mlir::gacc::getByteRange(Value view) {
  // A cast (e.g. to the runtime's fully dynamic matrix type) covers the
  // bytes of its source.
  while (auto cast = view.getDefiningOp<memref::CastOp>())
    view = cast.getSource();
  auto type = dyn_cast<MemRefType>(view.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  if (bits % 8 != 0)
    return std::nullopt;
  int64_t bytes = bits / 8;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) || llvm::any_of(strides, [](int64_t s) {
        return ShapedType::isDynamic(s) || s < 0;
      }))
    return std::nullopt;
  if (type.getNumElements() == 0)
    return ByteRange{0, 0};
  int64_t last = offset;
  for (auto [size, stride] : llvm::zip(type.getShape(), strides))
    last += (size - 1) * stride;
  ByteRange range{offset * bytes, (last + 1) * bytes};
  // Casts, reshapes and subviews keep the descriptor's base pointer (the
  // offsets of `type` count from it); memref.view moves it by its byte shift
  // into a flat i8 buffer, which must be the root itself.
  Value root = getViewRoot(view);
  Value current = view;
  while (current != root) {
    Operation *def = current.getDefiningOp();
    if (auto viewOp = dyn_cast<memref::ViewOp>(def)) {
      APInt shift;
      if (!viewOp.getSizes().empty() || viewOp.getSource() != root ||
          !matchPattern(viewOp.getByteShift(), m_ConstantInt(&shift)) ||
          !cast<MemRefType>(root.getType()).getLayout().isIdentity())
        return std::nullopt;
      range.begin += shift.getSExtValue();
      range.end += shift.getSExtValue();
      return range;
    }
    if (!isa<memref::CastOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
             memref::SubViewOp>(def))
      return std::nullopt;
    current = cast<ViewLikeOpInterface>(def).getViewSource();
  }
  return range;
}

bool mlir::gacc::touchesOnlyElsewhere(Operation *toucher, Value output,
                                      std::optional<ByteRange> range) {
  if (!range)
    return false;
  Value root = getViewRoot(output);
  // An op that takes an address, a pointer or an integer made from one may
  // reach any byte; so may a call other than the runtime's GEMMs, whatever
  // view it is given.
  auto isAddress = [](Value value) {
    SmallVector<Value> worklist = {value};
    for (int steps = 0; !worklist.empty() && steps < 16; ++steps) {
      Value next = worklist.pop_back_val();
      if (isa<LLVM::LLVMPointerType>(next.getType()))
        return true;
      Operation *def = next.getDefiningOp();
      if (!def)
        continue;
      if (isa<memref::ExtractAlignedPointerAsIndexOp, LLVM::IntToPtrOp>(def))
        return true;
      if (isa<arith::ArithDialect>(def->getDialect()))
        llvm::append_range(worklist, def->getOperands());
    }
    return !worklist.empty();
  };
  WalkResult opaque = toucher->walk([&](Operation *op) {
    if (auto call = dyn_cast<func::CallOp>(op);
        call && !getGemmWrittenOperands(call))
      return WalkResult::interrupt();
    for (Value operand : op->getOperands())
      if (!isa<BaseMemRefType>(operand.getType()) &&
          (isa<LLVM::LLVMPointerType>(operand.getType()) ||
           operand.getType().isIntOrIndex()) &&
          isAddress(operand))
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (opaque.wasInterrupted())
    return false;
  // A nested op that uses the buffer from above (a linalg.generic body
  // that updates it): what it touches is not among the op's operands.
  WalkResult nested = toucher->walk([&](Operation *op) {
    if (op == toucher)
      return WalkResult::advance();
    for (Value operand : op->getOperands())
      if (isa<BaseMemRefType>(operand.getType()) &&
          !toucher->isAncestor(operand.getParentBlock()->getParentOp()) &&
          getViewRoot(operand) == root)
        return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (nested.wasInterrupted())
    return false;
  bool touches = false;
  for (Value operand : toucher->getOperands()) {
    if (!isa<BaseMemRefType>(operand.getType()) || getViewRoot(operand) != root)
      continue;
    touches = true;
    std::optional<ByteRange> other = getByteRange(operand);
    if (!other || (other->begin < range->end && range->begin < other->end))
      return false;
  }
  // An op in the list that has no view of the buffer among its operands
  // reaches it through its address (or a nested op): it may touch anything.
  return touches;
}

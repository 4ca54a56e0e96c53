//===- PlaceBuckets.cpp - accumulators inside their buckets -----*- C++ -*-===//
//
// The gacc-place-buckets pass (after bufferization; gacc-split-buckets runs
// before it).
//
// A bucket built as one tensor from a chain of insert_slices gives one-shot
// bufferization one alias set with every accumulator of every region in it,
// and its analysis grows with the cube of the depth. gacc-split-buckets
// therefore hands bufferization one all-reduce per accumulator (marked with
// its bucket and offset); gacc-place-buckets then allocates each bucket as
// bytes, makes every accumulator a `memref.view` of those bytes (identity
// layouts, so every user keeps its type) and merges the bucket's collectives
// into one call on the whole bucket. Accumulators packed into a bucket buffer
// by a copy (a bucket that was bufferized whole) are placed the same way.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Dialect/Gacc/IR/StepSignature.h"
#include "gacc/Lowering/Passes.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"

#include "gacc/Dialect/Gacc/IR/GaccDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "gacc-place-buckets"

namespace mlir::gacc {
#define GEN_PASS_DEF_PLACEBUCKETSPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Returns the static offset of a unit-stride slice `view` of a 1-D `base`.
static std::optional<int64_t> getFlatSliceOffset(memref::SubViewOp view) {
  if (view.getSourceType().getRank() != 1 || !view.hasUnitStride() ||
      view.getStaticOffsets()[0] == ShapedType::kDynamic)
    return std::nullopt;
  return view.getStaticOffsets()[0];
}

/// Returns true when every use of `buffer` and of the views derived from it
/// comes before `point` in its block.
static bool allUsesBefore(Value buffer, Operation *point) {
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = point->getBlock()->findAncestorOpInBlock(*use.getOwner());
    if (!user)
      return false;
    if (use.getOwner() == point)
      continue;
    if (!user->isBeforeInBlock(point))
      return false;
    if (auto view = dyn_cast<ViewLikeOpInterface>(use.getOwner()))
      if (view.getViewSource() == buffer &&
          !allUsesBefore(view->getResult(0), point))
        return false;
  }
  return true;
}

/// Returns true when `a` and `b` are the same static slice of one buffer.
static bool isSameSlice(Value a, Value b) {
  auto va = a.getDefiningOp<memref::SubViewOp>();
  auto vb = b.getDefiningOp<memref::SubViewOp>();
  return va && vb && va.getSource() == vb.getSource() &&
         va.getStaticOffsets() == vb.getStaticOffsets() &&
         va.getStaticSizes() == vb.getStaticSizes() &&
         va.getStaticStrides() == vb.getStaticStrides() &&
         va.getOffsets().empty() && vb.getOffsets().empty() &&
         va.getSizes().empty() && vb.getSizes().empty() &&
         va.getStrides().empty() && vb.getStrides().empty();
}

/// Whether an op after `after` and before `before` (in one block; nested ops
/// included) other than a view or an op `allowed` accepts uses a memref
/// whose root is one of `roots`.
static bool usesRootBetween(ArrayRef<Value> roots, Operation *after,
                            Operation *before,
                            llvm::function_ref<bool(Operation *)> allowed) {
  for (Operation *op = after->getNextNode(); op && op != before;
       op = op->getNextNode()) {
    WalkResult result = op->walk([&](Operation *nested) {
      // A view touches nothing itself (its users are seen).
      if (isa<ViewLikeOpInterface>(nested) || allowed(nested))
        return WalkResult::advance();
      for (Value operand : nested->getOperands())
        if (isa<BaseMemRefType>(operand.getType()) &&
            llvm::is_contained(roots, getViewRoot(operand)))
          return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return true;
  }
  return false;
}

/// Whether an op between `after` and `before` touches `buffer` other than
/// by a copy into a unit-stride slice of it at elements disjoint from
/// [begin, end). The accumulator placed at [begin, end) writes there from its
/// allocation on: nothing else may see or change those elements until the
/// copy that it replaces.
static bool isTouchedBetween(Value buffer, int64_t begin, int64_t end,
                             Operation *after, Operation *before) {
  return usesRootBetween(buffer, after, before, [&](Operation *op) {
    auto copy = dyn_cast<memref::CopyOp>(op);
    auto slice = copy ? copy.getTarget().getDefiningOp<memref::SubViewOp>()
                      : memref::SubViewOp();
    std::optional<int64_t> offset = slice && slice.getSource() == buffer
                                        ? getFlatSliceOffset(slice)
                                        : std::nullopt;
    if (!offset || getViewRoot(copy.getSource()) == buffer)
      return false;
    int64_t size = slice.getType().getNumElements();
    return *offset + size <= begin || end <= *offset;
  });
}

//===----------------------------------------------------------------------===//
// gacc-place-buckets
//===----------------------------------------------------------------------===//

/// Returns the buffer whose address the runtime call `call` passes first
/// (`index_cast(extract_aligned_pointer_as_index(buffer))`).
static Value getReducedBuffer(func::CallOp call) {
  if (call.getNumOperands() != 5)
    return {};
  auto cast = call.getOperand(0).getDefiningOp<arith::IndexCastOp>();
  auto address =
      cast
          ? cast.getIn().getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>()
          : memref::ExtractAlignedPointerAsIndexOp();
  return address ? address.getSource() : Value();
}

/// Returns the allocation that `buffer` is an identity reshape or cast of.
static memref::AllocOp getReshapedAlloc(Value buffer) {
  while (true) {
    Operation *def = buffer.getDefiningOp();
    if (auto alloc = dyn_cast_or_null<memref::AllocOp>(def))
      return alloc;
    if (auto collapse = dyn_cast_or_null<memref::CollapseShapeOp>(def))
      buffer = collapse.getSrc();
    else if (auto expand = dyn_cast_or_null<memref::ExpandShapeOp>(def))
      buffer = expand.getSrc();
    else if (auto castOp = dyn_cast_or_null<memref::CastOp>(def))
      buffer = castOp.getSource();
    else if (auto loop = dyn_cast_or_null<scf::ForOp>(def)) {
      // A loop that updates its iteration argument in place (a region loop
      // carrying an accumulator): the buffer is the loop's init.
      unsigned i = llvm::cast<OpResult>(buffer).getResultNumber();
      if (loop.getYieldedValues()[i] != loop.getRegionIterArgs()[i])
        return {};
      buffer = loop.getInitArgs()[i];
    } else
      return {};
    if (!cast<MemRefType>(buffer.getType()).getLayout().isIdentity())
      return {};
  }
}

/// Merges the runtime all-reduces of the members of one bucket (`calls`, in
/// one block) into one call on a bucket allocated as bytes; each member's
/// buffer is allocated in the bucket where it can be, copied in and out
/// otherwise.
static void mergeBucket(ArrayRef<func::CallOp> calls) {
  struct Member {
    func::CallOp call;
    Value buffer;
    int64_t offset;
  };
  SmallVector<Member> members;
  Type elementType;
  int64_t numElements = 0;
  for (func::CallOp call : calls) {
    Value buffer = getReducedBuffer(call);
    auto type = buffer ? dyn_cast<MemRefType>(buffer.getType()) : MemRefType();
    if (!type || !type.hasStaticShape() || !type.getLayout().isIdentity() ||
        !type.getElementType().isIntOrFloat() ||
        (elementType && elementType != type.getElementType()))
      return;
    elementType = type.getElementType();
    int64_t offset =
        call->getAttrOfType<IntegerAttr>(kBucketOffsetAttrName).getInt();
    numElements = std::max(numElements, offset + type.getNumElements());
    members.push_back({call, buffer, offset});
  }
  Block *block = calls.front()->getBlock();
  func::CallOp last = calls.front();
  for (func::CallOp call : calls)
    if (last->isBeforeInBlock(call))
      last = call;
  // One call for all: the same reduction (operands 2-4) for every member,
  // members at disjoint elements, and nothing that uses a member's buffer
  // between its own all-reduce and the merged one (which runs at the last).
  auto same = [](Value a, Value b) {
    Attribute attrA, attrB;
    return a == b || (matchPattern(a, m_Constant(&attrA)) &&
                      matchPattern(b, m_Constant(&attrB)) && attrA == attrB);
  };
  for (func::CallOp call : calls)
    for (unsigned i = 2; i < 5; ++i)
      if (!same(call.getOperand(i), last.getOperand(i)))
        return;
  SmallVector<Member> sorted(members);
  llvm::sort(sorted, [](const Member &a, const Member &b) {
    return a.offset < b.offset;
  });
  for (size_t i = 0; i + 1 < sorted.size(); ++i)
    if (sorted[i].offset +
            cast<MemRefType>(sorted[i].buffer.getType()).getNumElements() >
        sorted[i + 1].offset)
      return;
  for (Member &member : members) {
    if (member.call == last)
      continue;
    SmallVector<Value, 2> roots = {getViewRoot(member.buffer)};
    if (memref::AllocOp alloc = getReshapedAlloc(member.buffer))
      roots.push_back(alloc.getResult());
    if (usesRootBetween(roots, member.call, last,
                        [](Operation *) { return false; }))
      return;
  }

  int64_t elemBytes = llvm::divideCeil(elementType.getIntOrFloatBitWidth(), 8);
  OpBuilder builder(block, block->begin());
  Location loc = last.getLoc();
  auto bytes = memref::AllocOp::create(
      builder, loc,
      MemRefType::get({numElements * elemBytes}, builder.getI8Type()),
      builder.getI64IntegerAttr(64));
  auto viewAt = [&](int64_t offset, MemRefType viewType) {
    Value shift =
        arith::ConstantIndexOp::create(builder, loc, offset * elemBytes);
    return memref::ViewOp::create(builder, loc, viewType, bytes, shift,
                                  ValueRange{})
        .getResult();
  };
  Value bucket = viewAt(0, MemRefType::get({numElements}, elementType));
  DenseSet<Operation *> placed;
  SmallVector<std::pair<Value, Value>> copiedBack;
  for (Member &member : members) {
    memref::AllocOp alloc = getReshapedAlloc(member.buffer);
    bool placeable =
        alloc && alloc->getBlock() == block && !placed.contains(alloc) &&
        alloc.getType().hasStaticShape() &&
        alloc.getType().getNumElements() ==
            cast<MemRefType>(member.buffer.getType()).getNumElements() &&
        llvm::none_of(alloc->getUsers(), [](Operation *user) {
          return isa<memref::DeallocOp>(user);
        });
    if (placeable) {
      placed.insert(alloc);
      alloc.getResult().replaceAllUsesWith(
          viewAt(member.offset, alloc.getType()));
      alloc.erase();
      continue;
    }
    // Not an allocation of this block: reduce a copy in the bucket.
    auto type = cast<MemRefType>(member.buffer.getType());
    Value view = viewAt(member.offset, type);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(last);
    memref::CopyOp::create(builder, loc, member.buffer, view);
    copiedBack.push_back({view, member.buffer});
  }

  builder.setInsertionPoint(last);
  Value address =
      memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, bucket);
  Type i64 = builder.getI64Type();
  Value addressI64 = arith::IndexCastOp::create(builder, loc, i64, address);
  Value count = arith::ConstantIntOp::create(builder, loc, i64, numElements);
  auto merged = func::CallOp::create(
      builder, loc, last.getCallee(), last.getResultTypes(),
      ValueRange{addressI64, count, last.getOperand(2), last.getOperand(3),
                 last.getOperand(4)});
  if (llvm::any_of(calls, [](func::CallOp call) {
        return call->hasAttr(GaccDialect::kOverlapAttrName);
      }))
    merged->setAttr(GaccDialect::kOverlapAttrName, builder.getUnitAttr());
  builder.setInsertionPointAfter(merged);
  for (auto [view, buffer] : copiedBack)
    memref::CopyOp::create(builder, loc, view, buffer);
  for (func::CallOp call : calls) {
    Value addressOperand = call.getOperand(0);
    call.erase();
    // The member's address computation is dead now.
    if (auto cast = addressOperand.getDefiningOp<arith::IndexCastOp>();
        cast && cast->use_empty()) {
      Operation *pointer = cast.getIn().getDefiningOp();
      cast.erase();
      if (pointer && pointer->use_empty())
        pointer->erase();
    }
  }
}

/// Merges the runtime collectives of split buckets (see gacc-split-buckets).
static void mergeSplitBuckets(ModuleOp module) {
  llvm::MapVector<std::pair<Block *, int64_t>, SmallVector<func::CallOp>>
      buckets;
  module.walk([&](func::CallOp call) {
    auto bucket = call->getAttrOfType<IntegerAttr>(kBucketOffsetAttrName);
    if (!bucket || call.getCallee() != "gaccrt_all_reduce" ||
        call.getNumOperands() != 5)
      return;
    APInt id;
    if (!matchPattern(call.getOperand(4), m_ConstantInt(&id)))
      return;
    buckets[{call->getBlock(), id.getSExtValue()}].push_back(call);
  });
  for (auto &entry : buckets)
    mergeBucket(entry.second);
}

namespace {
struct Placement {
  memref::CopyOp copy;
  memref::AllocOp accumulator;
  int64_t offset;
};

struct PlaceBucketsPass
    : public gacc::impl::PlaceBucketsPassBase<PlaceBucketsPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    mergeSplitBuckets(getOperation());

    // Copies of a slice onto itself.
    SmallVector<memref::CopyOp> selfCopies;
    getOperation().walk([&](memref::CopyOp copy) {
      if (isSameSlice(copy.getSource(), copy.getTarget()))
        selfCopies.push_back(copy);
    });
    for (memref::CopyOp copy : selfCopies)
      copy.erase();

    // Accumulators copied into slices of a 1-D bucket, grouped by bucket.
    llvm::MapVector<memref::AllocOp, SmallVector<Placement>> buckets;
    getOperation().walk([&](memref::CopyOp copy) {
      auto slice = copy.getTarget().getDefiningOp<memref::SubViewOp>();
      auto bucket = slice ? slice.getSource().getDefiningOp<memref::AllocOp>()
                          : memref::AllocOp();
      auto acc = copy.getSource().getDefiningOp<memref::AllocOp>();
      // Byte views need a bit width: not `index` elements.
      if (!bucket || !acc || !bucket.getType().hasStaticShape() ||
          !bucket.getType().getElementType().isIntOrFloat() ||
          !bucket.getType().getLayout().isIdentity() ||
          bucket.getType().getRank() != 1 || !acc.getType().hasStaticShape() ||
          !acc.getType().getLayout().isIdentity() ||
          acc.getType().getElementType() != bucket.getType().getElementType() ||
          acc->getBlock() != copy->getBlock() ||
          bucket->getBlock() != copy->getBlock() || !slice->hasOneUse())
        return;
      std::optional<int64_t> offset = getFlatSliceOffset(slice);
      if (!offset || !allUsesBefore(acc, copy) ||
          isTouchedBetween(bucket.getResult(), *offset,
                           *offset + acc.getType().getNumElements(), acc, copy))
        return;
      buckets[bucket].push_back({copy, acc, *offset});
    });

    for (auto &[bucket, placements] : buckets) {
      MemRefType type = bucket.getType();
      int64_t elemBytes = llvm::divideCeil(type.getElementTypeBitWidth(), 8);
      Block *block = bucket->getBlock();
      OpBuilder builder(block, block->begin());
      Location loc = bucket.getLoc();
      auto bytesType = MemRefType::get({type.getNumElements() * elemBytes},
                                       builder.getI8Type());
      auto bytes = memref::AllocOp::create(builder, loc, bytesType,
                                           bucket.getAlignmentAttr());
      auto viewAt = [&](int64_t offset, MemRefType viewType) {
        Value shift =
            arith::ConstantIndexOp::create(builder, loc, offset * elemBytes);
        return memref::ViewOp::create(builder, loc, viewType, bytes, shift,
                                      ValueRange{})
            .getResult();
      };
      bucket.getResult().replaceAllUsesWith(viewAt(0, type));
      bucket.erase();
      for (Placement &placement : placements) {
        placement.accumulator.getResult().replaceAllUsesWith(
            viewAt(placement.offset, placement.accumulator.getType()));
        placement.copy.erase();
        placement.accumulator.erase();
      }
    }
    // The slices that fed the erased copies are dead now.
    SmallVector<memref::SubViewOp> dead;
    getOperation().walk([&](memref::SubViewOp view) {
      if (view->use_empty())
        dead.push_back(view);
    });
    for (memref::SubViewOp view : dead)
      view.erase();
  }
};
} // namespace

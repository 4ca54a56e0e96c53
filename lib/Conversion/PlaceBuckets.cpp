//===- PlaceBuckets.cpp - accumulators inside their buckets -----*- C++ -*-===//
//
// The gacc-place-buckets pass (and gacc-erase-grids, which drops the device
// grids once the collectives are runtime calls). Bufferization keeps the first
// accumulator of a bucket in place but gives the others buffers of their own,
// packed into the bucket by a copy after the final region. This pass removes
// those copies: the bucket is allocated as bytes, the bucket itself and each
// accumulator become `memref.view`s of those bytes (identity layouts, so every
// user keeps its type), and the accumulator is computed where the all-reduce
// reads it.
//
//===----------------------------------------------------------------------===//

#include "gacc/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#define DEBUG_TYPE "gacc-place-buckets"

namespace mlir::gacc {
#define GEN_PASS_DEF_PLACEBUCKETSPASS
#define GEN_PASS_DEF_ERASEGRIDSPASS
#include "gacc/Conversion/Passes.h.inc"
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
         va.getOffsets().empty() && vb.getOffsets().empty();
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
      if (!bucket || !acc || !bucket.getType().hasStaticShape() ||
          !bucket.getType().getLayout().isIdentity() ||
          bucket.getType().getRank() != 1 || !acc.getType().hasStaticShape() ||
          !acc.getType().getLayout().isIdentity() ||
          acc.getType().getElementType() != bucket.getType().getElementType() ||
          acc->getBlock() != copy->getBlock() ||
          bucket->getBlock() != copy->getBlock() || !slice->hasOneUse())
        return;
      std::optional<int64_t> offset = getFlatSliceOffset(slice);
      if (!offset || !allUsesBefore(acc, copy))
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

struct EraseGridsPass : public gacc::impl::EraseGridsPassBase<EraseGridsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto grid :
         llvm::make_early_inc_range(module.getOps<shard::GridOp>())) {
      if (!SymbolTable::symbolKnownUseEmpty(grid, module)) {
        grid.emitOpError("is still used after bufferization; only "
                         "shard.all_reduce lowers to the gacc runtime");
        return signalPassFailure();
      }
      grid.erase();
    }
  }
};
} // namespace

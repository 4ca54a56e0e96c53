//===- SplitBuckets.cpp - one all-reduce per bucket member ------*- C++ -*-===//
//
// The gacc-split-buckets pass (before bufferization): a bucket built as one
// tensor from a chain of insert_slices gives one-shot bufferization one alias
// set with every accumulator of every region in it, and its analysis grows
// with the cube of the depth. This pass therefore hands bufferization one
// all-reduce per accumulator, marked with its bucket and offset;
// gacc-place-buckets puts the accumulators back into their bucket after
// bufferization.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Dialect/Gacc/IR/StepSignature.h"
#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "gacc/Dialect/Gacc/IR/GaccDialect.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#define DEBUG_TYPE "gacc-split-buckets"

namespace mlir::gacc {
#define GEN_PASS_DEF_SPLITBUCKETSPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// One accumulator packed into a bucket tensor.
struct PackedMember {
  tensor::InsertSliceOp insert;
  int64_t offset;
  int64_t size;
};

struct SplitBucketsPass
    : public gacc::impl::SplitBucketsPassBase<SplitBucketsPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<shard::AllReduceOp> buckets;
    getOperation().walk([&](shard::AllReduceOp op) {
      if (op->hasAttr(GaccDialect::kBucketAttrName) &&
          !op->hasAttr(kBucketOffsetAttrName))
        buckets.push_back(op);
    });
    for (shard::AllReduceOp op : buckets)
      split(op);
  }

  /// Returns the static [offset, size) of a unit-stride 1-D slice op.
  template <typename OpTy>
  static std::optional<std::pair<int64_t, int64_t>> getFlatRange(OpTy op) {
    if (op.getStaticOffsets().size() != 1 || !op.getOffsets().empty() ||
        !op.getSizes().empty() || !op.hasUnitStride())
      return std::nullopt;
    return std::make_pair(op.getStaticOffsets()[0], op.getStaticSizes()[0]);
  }

  /// Replaces the bucket all-reduce `op` (of a chain of insert_slices into an
  /// empty bucket tensor) by one all-reduce per packed accumulator. Leaves
  /// any other form alone.
  void split(shard::AllReduceOp op) {
    SmallVector<PackedMember> members;
    Value packed = op.getInput();
    while (auto insert = packed.getDefiningOp<tensor::InsertSliceOp>()) {
      auto range = getFlatRange(insert);
      if (!range || !insert->hasOneUse() ||
          insert.getSourceType().getRank() != 1)
        return;
      members.push_back({insert, range->first, range->second});
      packed = insert.getDest();
    }
    auto storage = packed.getDefiningOp<tensor::EmptyOp>();
    if (!storage || members.empty())
      return;
    // Each element of the bucket one member's: a later insert over an
    // earlier one's elements would leave parts of two members (what
    // gacc-sink-all-reduce never builds).
    SmallVector<PackedMember> byOffset(members);
    llvm::sort(byOffset, [](const PackedMember &a, const PackedMember &b) {
      return a.offset < b.offset;
    });
    for (size_t i = 0; i + 1 < byOffset.size(); ++i)
      if (byOffset[i].offset + byOffset[i].size > byOffset[i + 1].offset)
        return;
    // The other users of the storage are the first-region views of the
    // accumulators; the users of the reduced bucket read the members back.
    SmallVector<tensor::ExtractSliceOp> views, reads;
    for (Operation *user : storage->getUsers()) {
      if (user == members.back().insert)
        continue;
      auto view = dyn_cast<tensor::ExtractSliceOp>(user);
      if (!view || !getFlatRange(view))
        return;
      views.push_back(view);
    }
    DenseMap<std::pair<int64_t, int64_t>, unsigned> memberAt;
    for (auto [i, member] : llvm::enumerate(members))
      memberAt[{member.offset, member.size}] = i;
    for (Operation *user : op->getUsers()) {
      auto read = dyn_cast<tensor::ExtractSliceOp>(user);
      if (!read || !getFlatRange(read) || !memberAt.count(*getFlatRange(read)))
        return;
      reads.push_back(read);
    }

    OpBuilder builder(op);
    Location loc = op.getLoc();
    // Each accumulator starts in a tensor of its own.
    for (tensor::ExtractSliceOp view : views) {
      builder.setInsertionPoint(view);
      Value empty = tensor::EmptyOp::create(builder, view.getLoc(),
                                            view.getType().getShape(),
                                            view.getType().getElementType());
      view.getResult().replaceAllUsesWith(empty);
      view.erase();
    }
    // One collective per accumulator, where the bucket's was.
    builder.setInsertionPoint(op);
    SmallVector<Value> reduced(members.size());
    for (auto [i, member] : llvm::enumerate(llvm::reverse(members))) {
      Value source = member.insert.getSource();
      auto single = shard::AllReduceOp::create(
          builder, loc, source.getType(), op.getGridAttr(),
          op.getGridAxesAttr(), source, op.getReductionAttr());
      single->setAttr(GaccDialect::kBucketAttrName,
                      op->getAttr(GaccDialect::kBucketAttrName));
      single->setAttr(kBucketOffsetAttrName,
                      builder.getI64IntegerAttr(member.offset));
      if (op->hasAttr(GaccDialect::kOverlapAttrName))
        single->setAttr(GaccDialect::kOverlapAttrName, builder.getUnitAttr());
      reduced[members.size() - 1 - i] = single.getResult();
    }
    for (tensor::ExtractSliceOp read : reads) {
      read.getResult().replaceAllUsesWith(
          reduced[memberAt.lookup(*getFlatRange(read))]);
      read.erase();
    }
    op.erase();
    for (PackedMember &member : members)
      member.insert.erase();
    if (storage->use_empty())
      storage.erase();
  }
};
} // namespace

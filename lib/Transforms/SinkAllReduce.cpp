//===- SinkAllReduce.cpp - one all-reduce per bucket ------------*- C++ -*-===//
//
// The gacc-sink-all-reduce pass. gacc-micro-batch already places the
// collectives that the graph applies to partials after the final region
// (they are epilogue ops). This pass groups the linear ones (sum, average)
// into contiguous buckets of at most bucket-bytes: each accumulator becomes a
// view of its bucket from the first region on (its first-region init is a
// slice of the bucket), the accumulated buckets are reduced with one
// `shard.all_reduce` each, and the gradients are read back as views. With
// `overlap`, buckets follow the order in which the final region finishes
// the accumulators and their all-reduces are marked `gacc.overlap` for the
// lowering (gacc-overlap-all-reduce).
//
//===----------------------------------------------------------------------===//

#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

#define DEBUG_TYPE "gacc-sink-all-reduce"

namespace mlir::gacc {
#define GEN_PASS_DEF_SINKALLREDUCEPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// An all-reduce of an accumulated partial.
struct BucketMember {
  shard::AllReduceOp allReduce;
  /// The accumulator as the regions produce it (possibly wider than the
  /// all-reduce input, which may be its truncation).
  Value accumulator;
  /// The op whose init starts the accumulator in the first region, if it can
  /// be made a view of the bucket.
  OpOperand *firstInit = nullptr;
  int64_t numElements = 0;
  int64_t offset = 0;
};

/// Collectives that may share a bucket.
struct BucketKey {
  FlatSymbolRefAttr grid;
  ArrayRef<int16_t> axes;
  shard::ReductionKind kind;
  Type elementType;
  bool operator==(const BucketKey &other) const {
    return grid == other.grid && axes == other.axes && kind == other.kind &&
           elementType == other.elementType;
  }
};

struct Bucket {
  BucketKey key;
  SmallVector<BucketMember> members;
  int64_t numElements = 0;
};
} // namespace

/// Returns the accumulator chain link of region result `acc` in the first
/// region, when the chain is fused (every region continues the previous one).
static OpOperand *findFirstInit(Value acc,
                                MutableArrayRef<gacc::MicroBatchOp> regions) {
  auto result = dyn_cast<OpResult>(acc);
  if (!result || result.getOwner() != regions.back().getOperation())
    return nullptr;
  unsigned index = result.getResultNumber();
  for (auto it = regions.rbegin(); it != regions.rend(); ++it) {
    auto yield = cast<gacc::YieldOp>(it->getBody().front().back());
    auto produced = dyn_cast<OpResult>(yield.getOperand(index));
    // A linalg reduction or a gacc.scatter_add.
    auto op = produced
                  ? dyn_cast<DestinationStyleOpInterface>(produced.getOwner())
                  : DestinationStyleOpInterface();
    if (!op || !op->hasAttr(kPartialAttrName))
      return nullptr;
    OpOperand *init = op.getDpsInitOperand(produced.getResultNumber());
    if (std::next(it) == regions.rend())
      return init;
    // A fused chain starts from the previous region's accumulator.
    if (init->get() != std::next(it)->getResult(index))
      return nullptr;
  }
  return nullptr;
}

/// Returns the bucket member for `allReduce` when it reduces an accumulated
/// partial linearly.
static std::optional<BucketMember>
matchMember(shard::AllReduceOp allReduce,
            MutableArrayRef<gacc::MicroBatchOp> regions) {
  auto kind = allReduce.getReduction();
  if (kind != shard::ReductionKind::Sum &&
      kind != shard::ReductionKind::Average)
    return std::nullopt;
  if (allReduce.getInput().getType() != allReduce.getResult().getType())
    return std::nullopt;
  Value acc = allReduce.getInput();
  if (auto trunc = acc.getDefiningOp<arith::TruncFOp>())
    acc = trunc.getIn();
  // Bucketing never changes what a sum or average computes; any such
  // collective after the final region may join a bucket. Only accumulators
  // that come straight out of the regions can also live in it.
  if (!regions.back()->isBeforeInBlock(allReduce))
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(acc.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  BucketMember member;
  member.allReduce = allReduce;
  member.accumulator = acc;
  member.firstInit = findFirstInit(acc, regions);
  member.numElements = type.getNumElements();
  return member;
}

/// Returns, for each result of `finalRegion`, the position in its body of
/// the op that finishes it (the last write of an accumulator). Values not
/// in the map come after all of them.
static DenseMap<Value, int64_t> getFinishOrder(gacc::MicroBatchOp finalRegion) {
  Block &body = finalRegion.getBody().front();
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : body)
    position[&op] = static_cast<int64_t>(position.size());
  auto yield = cast<gacc::YieldOp>(body.getTerminator());
  DenseMap<Value, int64_t> order;
  for (OpResult result : finalRegion->getResults()) {
    Operation *def = yield.getOperand(result.getResultNumber()).getDefiningOp();
    if (Operation *inBody = def ? body.findAncestorOpInBlock(*def) : nullptr)
      order[result] = position.lookup(inBody);
  }
  return order;
}

/// Makes the first-region init of `member` a view of `bucket`.
static void placeInBucket(RewriterBase &builder, BucketMember &member,
                          Value bucket) {
  OpOperand *init = member.firstInit;
  if (!init)
    return;
  auto type = cast<RankedTensorType>(member.accumulator.getType());
  // The init is an identity fill of an empty tensor (or the empty tensor
  // itself): fill the bucket's view instead.
  Value target = init->get();
  auto fill = target.getDefiningOp<linalg::FillOp>();
  Value storage = fill ? fill.getOutputs()[0] : target;
  if (!storage.getDefiningOp<tensor::EmptyOp>())
    return;
  Location loc = member.allReduce.getLoc();
  Value flatView =
      extractFlatSlice(builder, loc, bucket, member.offset, member.numElements);
  Value view = unflattenTensor(builder, loc, flatView, type);
  if (fill) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(init->getOwner());
    auto newFill = linalg::FillOp::create(builder, fill.getLoc(),
                                          fill.getInputs()[0], view);
    builder.modifyOpInPlace(init->getOwner(),
                            [&] { init->set(newFill.getResult(0)); });
    if (fill->use_empty())
      builder.eraseOp(fill);
  } else {
    builder.modifyOpInPlace(init->getOwner(), [&] { init->set(view); });
  }
}

/// Bytes of cache line alignment of the members whose size allows it.
constexpr int64_t kMemberAlignment = 64;

/// Sets the offsets of `bucket`'s members, in their order, the members whose
/// bytes are a multiple of kMemberAlignment first: the bucket is allocated
/// aligned, so each of those starts on a cache line, and no gap is reduced.
/// (A weight gradient placed after a 10-float bias straddled two cache lines
/// in every vector load and store of the GEMM that accumulates it.)
static void layOutBucket(Bucket &bucket) {
  int64_t elemBytes =
      llvm::divideCeil(bucket.key.elementType.getIntOrFloatBitWidth(), 8);
  int64_t offset = 0;
  for (bool aligned : {true, false})
    for (BucketMember &member : bucket.members)
      if ((member.numElements * elemBytes % kMemberAlignment == 0) == aligned) {
        member.offset = offset;
        offset += member.numElements;
      }
}

namespace {
struct SinkAllReducePass
    : public gacc::impl::SinkAllReducePassBase<SinkAllReducePass> {
  using SinkAllReducePassBase::SinkAllReducePassBase;

  void runOnOperation() override {
    ChangedOps changes;
    GACC_VERIFY_PASS_CHANGES(changes);
    if (bucketBytes < 1) {
      getOperation().emitError() << "expected a positive bucket-bytes, got "
                                 << static_cast<int64_t>(bucketBytes);
      return signalPassFailure();
    }
    ChangeTrackingRewriter rewriter(&getContext(), changes);
    getOperation().walk(
        [&](func::FuncOp func) { runOnFunction(func, rewriter); });
  }

  void runOnFunction(func::FuncOp func, RewriterBase &builder) {
    SmallVector<gacc::MicroBatchOp> regions(
        func.getBody().getOps<gacc::MicroBatchOp>());
    if (regions.empty())
      return;
    SmallVector<BucketMember> candidates;
    for (auto allReduce : func.getBody().getOps<shard::AllReduceOp>())
      if (std::optional<BucketMember> member = matchMember(allReduce, regions))
        candidates.push_back(*member);
    // An all-reduce of another one's result (a hierarchical all-reduce over
    // two grid axes) keeps its place: the inner one becomes a bucket view
    // and is erased, and the outer one could not be packed before it.
    DenseSet<Operation *> reducing;
    for (const BucketMember &member : candidates)
      reducing.insert(member.allReduce);
    llvm::erase_if(candidates, [&](const BucketMember &member) {
      Operation *def = member.accumulator.getDefiningOp();
      return def && reducing.contains(def);
    });
    // Overlap: the accumulators the final region finishes first share the
    // first buckets, so that those can start while it still runs.
    if (overlap) {
      DenseMap<Value, int64_t> order = getFinishOrder(regions.back());
      auto finish = [&](const BucketMember &m) {
        auto it = order.find(m.accumulator);
        return it == order.end() ? std::numeric_limits<int64_t>::max()
                                 : it->second;
      };
      llvm::stable_sort(candidates,
                        [&](const BucketMember &a, const BucketMember &b) {
                          return finish(a) < finish(b);
                        });
    }
    SmallVector<Bucket> buckets;
    for (BucketMember &candidate : candidates) {
      std::optional<BucketMember> member = candidate;
      shard::AllReduceOp allReduce = member->allReduce;
      auto accType = cast<RankedTensorType>(member->accumulator.getType());
      BucketKey key{allReduce.getGridAttr(), allReduce.getGridAxes(),
                    allReduce.getReduction(), accType.getElementType()};
      int64_t bytes = member->numElements *
                      llvm::divideCeil(accType.getElementTypeBitWidth(), 8);
      int64_t elemBytes = llvm::divideCeil(accType.getElementTypeBitWidth(), 8);
      // The open bucket with the same key, if the member still fits.
      Bucket *open = nullptr;
      for (Bucket &bucket : llvm::reverse(buckets))
        if (bucket.key == key) {
          open = &bucket;
          break;
        }
      // The bucket is packed before its first collective: every member's
      // input must already be computed there.
      if (open) {
        Operation *first = member->allReduce;
        for (BucketMember &other : open->members)
          if (other.allReduce->isBeforeInBlock(first))
            first = other.allReduce;
        auto computedBefore = [&](const BucketMember &m) {
          Operation *def = m.accumulator.getDefiningOp();
          return !def || def->getBlock() != first->getBlock() ||
                 def->isBeforeInBlock(first);
        };
        if (!computedBefore(*member) ||
            !llvm::all_of(open->members, computedBefore))
          open = nullptr;
      }
      if (!open || (open->numElements * elemBytes + bytes > bucketBytes &&
                    !open->members.empty())) {
        buckets.push_back(Bucket{key, {}, 0});
        open = &buckets.back();
      }
      open->numElements += member->numElements;
      open->members.push_back(*member);
    }
    for (Bucket &bucket : buckets)
      layOutBucket(bucket);

    for (auto [b, bucket] : llvm::enumerate(buckets)) {
      Location loc = bucket.members.front().allReduce.getLoc();
      auto bucketType =
          RankedTensorType::get({bucket.numElements}, bucket.key.elementType);
      // The bucket storage, before the first region.
      builder.setInsertionPoint(regions.front());
      Value storage = tensor::EmptyOp::create(
          builder, loc, bucketType.getShape(), bucketType.getElementType());
      storage.getDefiningOp()->setAttr(GaccDialect::kBucketAttrName,
                                       builder.getI64IntegerAttr(b));
      for (BucketMember &member : bucket.members)
        placeInBucket(builder, member, storage);

      // After the final region: pack, reduce once, read the views back.
      Operation *firstUse = bucket.members.front().allReduce;
      for (BucketMember &member : bucket.members)
        if (member.allReduce->isBeforeInBlock(firstUse))
          firstUse = member.allReduce;
      builder.setInsertionPoint(firstUse);
      Value packed = storage;
      for (BucketMember &member : bucket.members) {
        Value flat = flattenTensor(builder, loc, member.accumulator);
        packed = insertFlatSlice(builder, loc, flat, packed, member.offset);
      }
      shard::AllReduceOp first = bucket.members.front().allReduce;
      auto reduced = shard::AllReduceOp::create(
          builder, loc, bucketType, first.getGridAttr(),
          first.getGridAxesAttr(), packed, first.getReductionAttr());
      reduced->setAttr(GaccDialect::kBucketAttrName,
                       builder.getI64IntegerAttr(b));
      if (overlap)
        reduced->setAttr(GaccDialect::kOverlapAttrName, builder.getUnitAttr());
      builder.setInsertionPointAfter(reduced);
      for (BucketMember &member : bucket.members) {
        auto accType = cast<RankedTensorType>(member.accumulator.getType());
        Value flat = extractFlatSlice(builder, loc, reduced, member.offset,
                                      member.numElements);
        Value result = unflattenTensor(builder, loc, flat, accType);
        Type resultType = member.allReduce.getResult().getType();
        if (result.getType() != resultType)
          result = arith::TruncFOp::create(builder, loc, resultType, result);
        builder.replaceAllUsesWith(member.allReduce.getResult(), result);
      }
      for (BucketMember &member : bucket.members)
        builder.eraseOp(member.allReduce);
    }
    eraseDeadOps(func.getBody().front(), &builder);
  }
};
} // namespace

//===- ShardOptimizerState.cpp - ZeRO-1/2 after the final region -*- C++
//-*-===//
//
// The gacc-shard-optimizer-state pass. After gacc-sink-all-reduce each
// bucket is reduced with one all-reduce and every rank runs the same
// optimizer update on the whole gradient. This pass reduce-scatters each
// bucket instead, runs the epilogue (clipping, the update) on the rank's
// shard of every gradient, parameter and optimizer state, keeps the state
// sharded between steps and all-gathers the updated parameters.
//
// Sharding is positional: a tensor of n elements is flattened, padded with
// zeros to N s elements (s = ceil(n / N), N ranks) and rank r holds elements
// [r s, r s + s). Two values of the same element count are sharded alike,
// so elementwise ops (whatever gradient, parameter or state they combine)
// run on the shards unchanged; reshapes keep the shard. A bucket is laid out
// rank-major: rank r's chunk holds the r-th shard of each member in turn, so
// the reduce-scatter hands each rank its shards, and one all-gather returns
// every rank's updated parameter shards.
//
//===----------------------------------------------------------------------===//

#include "gacc/Dialect/Gacc/IR/StepRoles.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "gacc-shard-optimizer-state"

namespace mlir::gacc {
#define GEN_PASS_DEF_SHARDOPTIMIZERSTATEPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// The rank's shard of a value of the epilogue.
struct ShardInfo {
  /// tensor<s x elt>: the rank's elements.
  Value shard;
  /// Elements of the full value.
  int64_t numElements = 0;
  /// The bucket whose reduce-scatter the value derives from.
  int64_t bucket = 0;
};

/// A member of a bucket as gacc-sink-all-reduce packed it.
struct PackedMember {
  /// The flat accumulator inserted into the bucket.
  Value flat;
  int64_t offset = 0;
  int64_t numElements = 0;
  /// Offset of its shard in a rank's chunk.
  int64_t chunkOffset = 0;
};

/// Rewrites one function's epilogue onto shards.
class EpilogueSharder {
public:
  EpilogueSharder(func::FuncOp func, RewriterBase &builder, int64_t ranks)
      : func(func), builder(builder), ranks(ranks) {}

  LogicalResult run();

private:
  int64_t shardSize(int64_t numElements) const {
    return llvm::divideCeil(std::max<int64_t>(numElements, 1), ranks);
  }
  RankedTensorType shardType(int64_t numElements, Type elementType) const {
    return RankedTensorType::get({shardSize(numElements)}, elementType);
  }
  Value getRank(Location loc);
  Value getIndex(Location loc, int64_t value) {
    return arith::ConstantIndexOp::create(builder, loc, value);
  }
  Value padFlat(Location loc, Value flat, int64_t numElements);
  Value sliceOf(Location loc, Value full);
  LogicalResult shardBucket(shard::AllReduceOp allReduce);
  LogicalResult shardOp(Operation *op);
  LogicalResult shardElementwise(Operation *op);
  LogicalResult shardLinalg(linalg::LinalgOp op);
  LogicalResult shardReturn(func::ReturnOp ret);
  Value foldScalarSums(arith::AddFOp add);
  std::optional<ShardInfo> lookup(Value value) const {
    auto it = sharded.find(value);
    if (it == sharded.end())
      return std::nullopt;
    return it->second;
  }
  /// An error at `op`, with a note at the collective that sharded the
  /// gradient it reads.
  InFlightDiagnostic refuse(Operation *op, const Twine &why) {
    InFlightDiagnostic diag = op->emitOpError(why);
    std::optional<ShardInfo> info;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (!info)
          info = lookup(operand);
    });
    if (info)
      if (auto it = bucketLocs.find(info->bucket); it != bucketLocs.end())
        diag.attachNote(it->second)
            << "the gradient is sharded by the reduce-scatter of bucket "
            << info->bucket << " here";
    return diag;
  }

  func::FuncOp func;
  RewriterBase &builder;
  int64_t ranks;
  /// The data-parallel grid and axes (of the first bucket).
  FlatSymbolRefAttr grid;
  DenseI16ArrayAttr gridAxes;
  Value rank;
  SymbolTableCollection symbolTables;
  llvm::MapVector<Value, ShardInfo> sharded;
  /// Slices of full values, and the ops that compute each.
  DenseMap<Value, Value> slices;
  DenseMap<Value, SmallVector<Operation *>> sliceOps;
  /// Ops whose results the shards replace (dead once the results are).
  DenseSet<Operation *> replaced;
  /// The all-reduces of one scalar that combine the ranks' reductions.
  DenseSet<Operation *> scalarSums;
  int64_t numBuckets = 0;
  /// Where each bucket's all-reduce was (its reduce-scatter is).
  DenseMap<int64_t, Location> bucketLocs;
};
} // namespace

Value EpilogueSharder::getRank(Location loc) {
  if (rank)
    return rank;
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(&func.getBody().front());
  rank = shard::ProcessLinearIndexOp::create(builder, loc, grid);
  return rank;
}

/// Pads the 1-D `flat` of `numElements` elements with zeros to N s.
Value EpilogueSharder::padFlat(Location loc, Value flat, int64_t numElements) {
  int64_t padded = shardSize(numElements) * ranks;
  if (padded == numElements)
    return flat;
  auto type = cast<RankedTensorType>(flat.getType());
  Type elementType = type.getElementType();
  Value zero = arith::ConstantOp::create(builder, loc, elementType,
                                         builder.getZeroAttr(elementType));
  auto paddedType = RankedTensorType::get({padded}, elementType);
  return tensor::PadOp::create(
      builder, loc, paddedType, flat,
      ArrayRef<OpFoldResult>{builder.getIndexAttr(0)},
      ArrayRef<OpFoldResult>{builder.getIndexAttr(padded - numElements)}, zero);
}

/// Returns the rank's shard of the full-size value `full`, computed once.
Value EpilogueSharder::sliceOf(Location loc, Value full) {
  if (Value known = slices.lookup(full))
    return known;
  auto type = cast<RankedTensorType>(full.getType());
  int64_t n = type.getNumElements(), s = shardSize(n);
  Value rankIndex = getRank(loc);
  SmallVector<Operation *> created;
  // The slice's ops are recorded, to find state arguments read only
  // through them (the rewriter of this pass has no listener).
  OpBuilder::Listener *previous = builder.getListener();
  struct Collect : public OpBuilder::Listener {
    SmallVector<Operation *> &ops;
    explicit Collect(SmallVector<Operation *> &ops) : ops(ops) {}
    void notifyOperationInserted(Operation *op,
                                 OpBuilder::InsertPoint) override {
      ops.push_back(op);
    }
  } collect(created);
  builder.setListener(&collect);
  Value flat = flattenTensor(builder, loc, full);
  Value padded = padFlat(loc, flat, n);
  Value offset =
      arith::MulIOp::create(builder, loc, rankIndex, getIndex(loc, s));
  Value slice = tensor::ExtractSliceOp::create(
      builder, loc, RankedTensorType::get({s}, type.getElementType()), padded,
      ArrayRef<OpFoldResult>{offset},
      ArrayRef<OpFoldResult>{builder.getIndexAttr(s)},
      ArrayRef<OpFoldResult>{builder.getIndexAttr(1)});
  builder.setListener(previous);
  slices[full] = slice;
  sliceOps[full] = std::move(created);
  return slice;
}

LogicalResult EpilogueSharder::shardBucket(shard::AllReduceOp allReduce) {
  auto kind = allReduce.getReduction();
  if (kind != shard::ReductionKind::Sum &&
      kind != shard::ReductionKind::Average)
    return refuse(allReduce, "expected a sum or average bucket all-reduce "
                             "with shard-optimizer-state");
  auto gridOp =
      shard::getGridOrNull(allReduce, allReduce.getGridAttr(), symbolTables);
  if (!gridOp || gridOp.getRank() != 1 || allReduce.getGridAxes().size() != 1)
    return refuse(allReduce,
                  "expected a bucket all-reduce over a one-axis grid with "
                  "shard-optimizer-state (the rank's shard is a slice "
                  "along that axis)");
  if (!grid) {
    grid = allReduce.getGridAttr();
    gridAxes = allReduce.getGridAxesAttr();
  } else if (grid != allReduce.getGridAttr() ||
             gridAxes != allReduce.getGridAxesAttr()) {
    return refuse(allReduce, "expected every bucket all-reduce on one grid "
                             "axis with shard-optimizer-state");
  }
  // The packing chain: insert_slices of flat accumulators into the bucket.
  SmallVector<PackedMember> members;
  Value packed = allReduce.getInput();
  while (auto insert = packed.getDefiningOp<tensor::InsertSliceOp>()) {
    auto sourceType = cast<RankedTensorType>(insert.getSourceType());
    std::optional<int64_t> offset =
        getConstantIntValue(insert.getMixedOffsets()[0]);
    if (sourceType.getRank() != 1 || !offset || !insert->hasOneUse())
      break;
    members.push_back(
        {insert.getSource(), *offset, sourceType.getNumElements(), 0});
    packed = insert.getDest();
  }
  auto storage = packed.getDefiningOp<tensor::EmptyOp>();
  if (!storage || members.empty())
    return refuse(allReduce, "expected a bucket packed by "
                             "gacc-sink-all-reduce with shard-optimizer-state");
  llvm::sort(members, [](const PackedMember &a, const PackedMember &b) {
    return a.offset < b.offset;
  });
  int64_t chunk = 0;
  for (PackedMember &member : members) {
    member.chunkOffset = chunk;
    chunk += shardSize(member.numElements);
  }
  // Every use of the reduced bucket must be a member's view.
  DenseMap<int64_t, PackedMember *> byOffset;
  for (PackedMember &member : members)
    byOffset[member.offset] = &member;
  for (Operation *user : allReduce->getUsers()) {
    auto view = dyn_cast<tensor::ExtractSliceOp>(user);
    std::optional<int64_t> offset =
        view ? getConstantIntValue(view.getMixedOffsets()[0]) : std::nullopt;
    PackedMember *member = offset ? byOffset.lookup(*offset) : nullptr;
    if (!member || view.getResultType().getNumElements() != member->numElements)
      return refuse(user, "expected only views of the members of the "
                          "reduced bucket with shard-optimizer-state");
  }

  Location loc = allReduce.getLoc();
  Type elementType =
      cast<ShapedType>(allReduce.getResult().getType()).getElementType();
  int64_t bucket = numBuckets++;
  if (auto attr =
          allReduce->getAttrOfType<IntegerAttr>(GaccDialect::kBucketAttrName))
    bucket = attr.getInt();

  // The accumulators no longer live in the old bucket: their first-region
  // views become tensors of their own, packed after the final region.
  for (OpOperand &use : llvm::make_early_inc_range(storage->getUses())) {
    auto view = dyn_cast<tensor::ExtractSliceOp>(use.getOwner());
    if (!view)
      continue;
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(view);
    Value fresh = tensor::EmptyOp::create(
        builder, view.getLoc(), view.getResultType().getShape(), elementType);
    builder.replaceOp(view, fresh);
  }

  bucketLocs.try_emplace(bucket, loc);
  builder.setInsertionPoint(allReduce);
  // Rank-major layout: [N, chunk], member k at column chunkOffset.
  auto layoutType = RankedTensorType::get({ranks, chunk}, elementType);
  Value layout =
      tensor::EmptyOp::create(builder, loc, layoutType.getShape(), elementType);
  layout.getDefiningOp()->setAttr(GaccDialect::kBucketAttrName,
                                  builder.getI64IntegerAttr(bucket));
  for (PackedMember &member : members) {
    int64_t s = shardSize(member.numElements);
    Value padded = padFlat(loc, member.flat, member.numElements);
    Value rows = tensor::ExpandShapeOp::create(
        builder, loc, RankedTensorType::get({ranks, s}, elementType), padded,
        ArrayRef<ReassociationIndices>{{0, 1}});
    layout = tensor::InsertSliceOp::create(
        builder, loc, rows, layout,
        ArrayRef<OpFoldResult>{builder.getIndexAttr(0),
                               builder.getIndexAttr(member.chunkOffset)},
        ArrayRef<OpFoldResult>{builder.getIndexAttr(ranks),
                               builder.getIndexAttr(s)},
        ArrayRef<OpFoldResult>{builder.getIndexAttr(1),
                               builder.getIndexAttr(1)});
  }
  Value flatLayout = tensor::CollapseShapeOp::create(
      builder, loc, RankedTensorType::get({ranks * chunk}, elementType), layout,
      ArrayRef<ReassociationIndices>{{0, 1}});
  auto scatter = shard::ReduceScatterOp::create(
      builder, loc, RankedTensorType::get({chunk}, elementType), grid, gridAxes,
      flatLayout, allReduce.getReductionAttr(), builder.getIndexAttr(0));
  scatter->setAttr(GaccDialect::kBucketAttrName,
                   builder.getI64IntegerAttr(bucket));
  if (allReduce->hasAttr(GaccDialect::kOverlapAttrName))
    scatter->setAttr(GaccDialect::kOverlapAttrName, builder.getUnitAttr());
  for (Operation *user : allReduce->getUsers()) {
    auto view = cast<tensor::ExtractSliceOp>(user);
    PackedMember *member =
        byOffset.lookup(*getConstantIntValue(view.getMixedOffsets()[0]));
    Value shard = extractFlatSlice(builder, loc, scatter, member->chunkOffset,
                                   shardSize(member->numElements));
    sharded[view.getResult()] = {shard, member->numElements, bucket};
    replaced.insert(view);
  }
  replaced.insert(allReduce);
  return success();
}

/// Whether `op` reads or writes its operands element by element (arith and
/// math ops on tensors, `arith.select`).
static bool isElementwiseOnTensors(Operation *op) {
  if (!op->hasTrait<OpTrait::Elementwise>() || op->getNumRegions() != 0)
    return false;
  return llvm::all_of(op->getResultTypes(),
                      [](Type type) { return isa<RankedTensorType>(type); });
}

LogicalResult EpilogueSharder::shardElementwise(Operation *op) {
  std::optional<ShardInfo> first;
  for (Value operand : op->getOperands())
    if ((first = lookup(operand)))
      break;
  SmallVector<Value> operands;
  for (Value operand : op->getOperands()) {
    if (std::optional<ShardInfo> info = lookup(operand)) {
      operands.push_back(info->shard);
      continue;
    }
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!type) {
      operands.push_back(operand); // a scalar condition or operand
      continue;
    }
    if (!type.hasStaticShape() || type.getNumElements() != first->numElements)
      return refuse(op, "expected operands of one shape with "
                        "shard-optimizer-state");
    operands.push_back(sliceOf(op->getLoc(), operand));
  }
  SmallVector<Type> resultTypes;
  for (Type type : op->getResultTypes())
    resultTypes.push_back(shardType(
        first->numElements, cast<RankedTensorType>(type).getElementType()));
  OperationState state(op->getLoc(), op->getName(), operands, resultTypes,
                       op->getAttrs());
  Operation *clone = builder.create(state);
  for (auto [result, shard] : llvm::zip(op->getResults(), clone->getResults()))
    sharded[result] = {shard, first->numElements, first->bucket};
  replaced.insert(op);
  return success();
}

/// The combiner of a reduction body and the identity it starts from.
static std::optional<shard::ReductionKind>
getReductionKind(linalg::LinalgOp op) {
  Block &body = op->getRegion(0).front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return std::nullopt;
  Operation *combine = yield.getOperand(0).getDefiningOp();
  BlockArgument out = body.getArguments().back();
  if (!combine || combine->getNumOperands() != 2 ||
      !llvm::is_contained(combine->getOperands(), Value(out)))
    return std::nullopt;
  if (isa<arith::AddFOp, arith::AddIOp>(combine))
    return shard::ReductionKind::Sum;
  if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MaxSIOp>(combine))
    return shard::ReductionKind::Max;
  if (isa<arith::MinimumFOp, arith::MinNumFOp, arith::MinSIOp>(combine))
    return shard::ReductionKind::Min;
  return std::nullopt;
}

/// The constant c of a reduction body `out = cond ? c : out` (loss
/// scaling's found-inf flag: c once any element matches), if it is one.
static FloatAttr getSetConstant(linalg::LinalgOp op) {
  Block &body = op->getRegion(0).front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return {};
  auto select = yield.getOperand(0).getDefiningOp<arith::SelectOp>();
  FloatAttr value;
  if (!select || select.getFalseValue() != body.getArguments().back() ||
      !matchPattern(select.getTrueValue(), m_Constant(&value)))
    return {};
  return value;
}

static TypedAttr getIdentity(OpBuilder &builder, shard::ReductionKind kind,
                             Type elementType) {
  auto floatType = dyn_cast<FloatType>(elementType);
  switch (kind) {
  case shard::ReductionKind::Max:
    if (floatType)
      return builder.getFloatAttr(
          floatType,
          APFloat::getInf(floatType.getFloatSemantics(), /*Negative=*/true));
    return builder.getIntegerAttr(
        elementType,
        APInt::getSignedMinValue(elementType.getIntOrFloatBitWidth()));
  case shard::ReductionKind::Min:
    if (floatType)
      return builder.getFloatAttr(
          floatType, APFloat::getInf(floatType.getFloatSemantics()));
    return builder.getIntegerAttr(
        elementType,
        APInt::getSignedMaxValue(elementType.getIntOrFloatBitWidth()));
  default:
    return builder.getZeroAttr(elementType);
  }
}

/// Whether `init` is a fill (or a splat constant) of `identity`.
static bool isFilledWith(Value init, TypedAttr identity) {
  Attribute value;
  if (auto fill = init.getDefiningOp<linalg::FillOp>()) {
    if (!matchPattern(fill.getInputs()[0], m_Constant(&value)))
      return false;
  } else if (matchPattern(init, m_Constant(&value))) {
    if (auto splat = dyn_cast<SplatElementsAttr>(value))
      value = splat.getSplatValue<Attribute>();
  } else {
    return false;
  }
  return value == identity;
}

LogicalResult EpilogueSharder::shardLinalg(linalg::LinalgOp op) {
  auto refuseMixing = [&] {
    return refuse(op, "reads a sharded gradient other than element by "
                      "element or by a reduction over all its elements; "
                      "with shard-optimizer-state each rank holds only a "
                      "slice of it (run the step without the option)");
  };
  // The body's arguments are the inputs' and the inits' elements (a
  // linalg.generic or a named op; not linalg.map or linalg.reduce).
  if (!op.hasPureTensorSemantics() || op->getNumRegions() != 1 ||
      op->getRegion(0).empty() ||
      op->getRegion(0).front().getNumArguments() != op->getNumOperands())
    return refuseMixing();
  if (!op->getRegion(0).front().getOps<linalg::IndexOp>().empty())
    return refuse(op, "reads the positions of a sharded gradient "
                      "(linalg.index); with shard-optimizer-state each rank "
                      "sees only its slice");
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  bool parallel = llvm::all_of(iterators, [](utils::IteratorType t) {
    return t == utils::IteratorType::parallel;
  });
  bool reduction =
      !iterators.empty() && llvm::all_of(iterators, [](utils::IteratorType t) {
        return t == utils::IteratorType::reduction;
      });
  // Without loops (a sharded rank-0 value), an op that updates an init
  // that is not sharded (a found-inf flag) reduces the one element.
  if (iterators.empty() && op.getNumDpsInits() == 1 &&
      !lookup(op.getDpsInitOperand(0)->get()) &&
      op.payloadUsesValueFromOperand(op.getDpsInitOperand(0))) {
    parallel = false;
    reduction = true;
  }
  if (!parallel && !reduction)
    return refuseMixing();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t numElements = 1;
  for (int64_t range : ranges) {
    if (ShapedType::isDynamic(range))
      return refuseMixing();
    numElements *= range;
  }
  std::optional<ShardInfo> first;
  for (OpOperand &operand : op->getOpOperands())
    if ((first = lookup(operand.get()))) {
      // A sharded operand must be read element by element.
      if (!op.getMatchingIndexingMap(&operand).isIdentity() ||
          first->numElements != numElements)
        return refuseMixing();
      break;
    }
  for (OpOperand &operand : op->getOpOperands())
    if (std::optional<ShardInfo> info = lookup(operand.get()))
      if (!op.getMatchingIndexingMap(&operand).isIdentity() ||
          info->numElements != numElements)
        return refuseMixing();

  Location loc = op.getLoc();
  MLIRContext *context = op->getContext();
  AffineMap elementMap = AffineMap::getMultiDimIdentityMap(1, context);
  AffineMap scalarMap = AffineMap::get(1, 0, context);
  // Inputs (and inits the body reads) of the sharded op.
  auto shardOperand = [&](OpOperand &operand, SmallVector<Value> &values,
                          SmallVector<AffineMap> &maps) {
    Value value = operand.get();
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (std::optional<ShardInfo> info = lookup(value)) {
      values.push_back(info->shard);
      maps.push_back(elementMap);
      return;
    }
    if (map.getNumResults() == 0) {
      values.push_back(value); // a scalar, the same for every element
      maps.push_back(scalarMap);
      return;
    }
    if (!map.isIdentity()) {
      // A broadcast operand (a bias over rows): materialize it at the
      // iteration shape, then slice it like any full-size operand.
      auto type = cast<RankedTensorType>(value.getType());
      Value empty =
          tensor::EmptyOp::create(builder, loc, ranges, type.getElementType());
      auto broadcast = linalg::GenericOp::create(
          builder, loc, TypeRange{empty.getType()}, ValueRange{value},
          ValueRange{empty},
          ArrayRef<AffineMap>{
              map, AffineMap::getMultiDimIdentityMap(ranges.size(), context)},
          SmallVector<utils::IteratorType>(ranges.size(),
                                           utils::IteratorType::parallel),
          [](OpBuilder &b, Location l, ValueRange args) {
            linalg::YieldOp::create(b, l, args[0]);
          });
      value = broadcast.getResult(0);
    }
    values.push_back(sliceOf(loc, value));
    maps.push_back(elementMap);
  };

  SmallVector<Value> inputs, inits;
  SmallVector<AffineMap> inputMaps, initMaps;
  for (OpOperand *operand : op.getDpsInputOperands())
    shardOperand(*operand, inputs, inputMaps);

  if (parallel) {
    SmallVector<Type> resultTypes;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      if (!op.getMatchingIndexingMap(&init).isIdentity())
        return refuseMixing();
      auto type = cast<RankedTensorType>(init.get().getType());
      resultTypes.push_back(shardType(numElements, type.getElementType()));
      if (op.payloadUsesValueFromOperand(&init) || lookup(init.get())) {
        shardOperand(init, inits, initMaps);
      } else {
        inits.push_back(tensor::EmptyOp::create(
            builder, loc, cast<ShapedType>(resultTypes.back()).getShape(),
            type.getElementType()));
        initMaps.push_back(elementMap);
      }
    }
    SmallVector<AffineMap> maps(inputMaps);
    maps.append(initMaps);
    auto generic = linalg::GenericOp::create(
        builder, loc, resultTypes, inputs, inits, maps,
        SmallVector<utils::IteratorType>{utils::IteratorType::parallel});
    builder.cloneRegionBefore(op->getRegion(0), generic.getRegion(),
                              generic.getRegion().end());
    for (auto [result, shard] :
         llvm::zip(op->getResults(), generic->getResults()))
      sharded[result] = {shard, numElements, first->bucket};
    replaced.insert(op);
    return success();
  }

  // A reduction over all elements: the rank reduces its shard (padding
  // masked), then one all-reduce of the scalar combines the ranks.
  if (op.getNumDpsInits() != 1 ||
      op.getMatchingIndexingMap(op.getDpsInitOperand(0)).getNumResults() != 0)
    return refuseMixing();
  std::optional<shard::ReductionKind> kind = getReductionKind(op);
  // `out = cond ? c : out`: the ranks' results (c or the start, -inf) are
  // combined by a max; the result is c when any rank set it, else the init.
  FloatAttr setValue = kind ? FloatAttr() : getSetConstant(op);
  if (setValue)
    kind = shard::ReductionKind::Max;
  if (!kind)
    return refuse(op, "reduces a sharded gradient with a combiner other than "
                      "a sum, max, min or a flag set to a constant; with "
                      "shard-optimizer-state the ranks' partial results "
                      "could not be combined");
  OpOperand *init = op.getDpsInitOperand(0);
  auto initType = cast<RankedTensorType>(init->get().getType());
  Type elementType = initType.getElementType();
  TypedAttr identity = getIdentity(builder, *kind, elementType);
  Value identityValue =
      arith::ConstantOp::create(builder, loc, elementType, identity);
  Value start = linalg::FillOp::create(
                    builder, loc, identityValue,
                    Value(tensor::EmptyOp::create(
                        builder, loc, ArrayRef<int64_t>{}, elementType)))
                    .getResult(0);
  // valid = clamp(n - r s, 0, s): the rank's elements that are data.
  int64_t s = shardSize(numElements);
  Value valid;
  if (s * ranks != numElements) {
    Value rankIndex = getRank(loc);
    Value begin =
        arith::MulIOp::create(builder, loc, rankIndex, getIndex(loc, s));
    Value rest =
        arith::SubIOp::create(builder, loc, getIndex(loc, numElements), begin);
    valid = arith::MaxSIOp::create(
        builder, loc,
        arith::MinSIOp::create(builder, loc, rest, getIndex(loc, s)),
        getIndex(loc, 0));
  }
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(scalarMap);
  auto local = linalg::GenericOp::create(
      builder, loc, TypeRange{initType}, inputs, ValueRange{start}, maps,
      SmallVector<utils::IteratorType>{utils::IteratorType::reduction});
  builder.cloneRegionBefore(op->getRegion(0), local.getRegion(),
                            local.getRegion().end());
  if (valid) {
    Block &newBody = local.getRegion().front();
    auto yield = cast<linalg::YieldOp>(newBody.getTerminator());
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(yield);
    Value index = linalg::IndexOp::create(builder, loc, 0);
    Value inside = arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::ult, index, valid);
    Value kept =
        arith::SelectOp::create(builder, loc, inside, yield.getOperand(0),
                                newBody.getArguments().back());
    builder.modifyOpInPlace(yield, [&] { yield->setOperand(0, kept); });
  }
  auto reduced = shard::AllReduceOp::create(
      builder, loc, initType, grid, gridAxes, local.getResult(0),
      shard::ReductionKindAttr::get(op->getContext(), *kind));
  if (*kind == shard::ReductionKind::Sum && !setValue)
    scalarSums.insert(reduced);
  Value result = reduced.getResult();
  if (setValue) {
    Value value = arith::ConstantOp::create(
        builder, loc, initType,
        DenseElementsAttr::get(initType, ArrayRef<Attribute>{setValue}));
    Value hit = arith::CmpFOp::create(builder, loc, arith::CmpFPredicate::OEQ,
                                      result, value);
    result = arith::SelectOp::create(builder, loc, hit, value, init->get());
  } else if (!isFilledWith(init->get(), identity)) {
    // The ranks reduced from the identity; the init joins once.
    switch (*kind) {
    case shard::ReductionKind::Max:
      result =
          isa<FloatType>(elementType)
              ? arith::MaximumFOp::create(builder, loc, init->get(), result)
                    .getResult()
              : arith::MaxSIOp::create(builder, loc, init->get(), result)
                    .getResult();
      break;
    case shard::ReductionKind::Min:
      result =
          isa<FloatType>(elementType)
              ? arith::MinimumFOp::create(builder, loc, init->get(), result)
                    .getResult()
              : arith::MinSIOp::create(builder, loc, init->get(), result)
                    .getResult();
      break;
    default:
      if (isa<FloatType>(elementType)) {
        auto add = arith::AddFOp::create(builder, loc, init->get(), result);
        // A chain of sums over the gradients: one all-reduce for all.
        Value folded = foldScalarSums(add);
        result = folded ? folded : add.getResult();
      } else {
        result = arith::AddIOp::create(builder, loc, init->get(), result)
                     .getResult();
      }
    }
  }
  builder.replaceAllUsesWith(op->getResult(0), result);
  replaced.insert(op);
  return success();
}

LogicalResult EpilogueSharder::shardOp(Operation *op) {
  builder.setInsertionPoint(op);
  // A reshape keeps the flat order, hence the shard.
  if (isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op)) {
    std::optional<ShardInfo> info = lookup(op->getOperand(0));
    sharded[op->getResult(0)] = *info;
    replaced.insert(op);
    return success();
  }
  if (isElementwiseOnTensors(op))
    return shardElementwise(op);
  if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op))
    return shardLinalg(linalgOp);
  return refuse(op, "reads a sharded gradient; with shard-optimizer-state "
                    "only elementwise ops, reshapes and reductions over all "
                    "elements may (run the step without the option)");
}

LogicalResult EpilogueSharder::shardReturn(func::ReturnOp ret) {
  builder.setInsertionPoint(ret);
  Location loc = ret.getLoc();
  // State arguments that stay sharded: read only through their slices (and
  // by the ops the shards replace) and returned sharded as their own state.
  DenseMap<unsigned, unsigned> stateOutOf; // argument -> result
  for (unsigned j = 0; j < func.getNumResults(); ++j)
    if (auto attr = func.getResultAttrOfType<IntegerAttr>(
            j, getRoleAttrName(Role::StateOut)))
      stateOutOf[attr.getInt()] = j;
  llvm::SmallDenseSet<unsigned> shardedArgs;
  for (BlockArgument arg : func.getArguments()) {
    if (!func.getArgAttr(arg.getArgNumber(), getRoleAttrName(Role::State)))
      continue;
    auto it = stateOutOf.find(arg.getArgNumber());
    if (it == stateOutOf.end() || !slices.count(arg))
      continue;
    std::optional<ShardInfo> out = lookup(ret.getOperand(it->second));
    auto type = cast<RankedTensorType>(arg.getType());
    if (!out || out->numElements != type.getNumElements() ||
        cast<RankedTensorType>(out->shard.getType()).getElementType() !=
            type.getElementType())
      continue;
    const SmallVector<Operation *> &chain = sliceOps[arg];
    if (llvm::all_of(arg.getUsers(), [&](Operation *user) {
          return replaced.contains(user) || llvm::is_contained(chain, user);
        }))
      shardedArgs.insert(arg.getArgNumber());
  }

  // The other sharded results are all-gathered, one gather per bucket and
  // element type.
  struct Gathered {
    unsigned result;
    ShardInfo info;
    int64_t offset;
  };
  llvm::MapVector<std::pair<int64_t, Type>, SmallVector<Gathered>> gathers;
  SmallVector<Value> results(ret.getOperands());
  for (auto [j, value] : llvm::enumerate(ret.getOperands())) {
    std::optional<ShardInfo> info = lookup(value);
    if (!info)
      continue;
    auto stateOut = func.getResultAttrOfType<IntegerAttr>(
        j, getRoleAttrName(Role::StateOut));
    if (stateOut && shardedArgs.contains(stateOut.getInt())) {
      results[j] = info->shard;
      continue;
    }
    Type elementType =
        cast<RankedTensorType>(info->shard.getType()).getElementType();
    gathers[{info->bucket, elementType}].push_back(
        {static_cast<unsigned>(j), *info, 0});
  }
  // The all-gathers start as soon as their shards are final, as the
  // reduce-scatters do (gacc-overlap-all-reduce), when those are overlapped.
  bool overlap = false;
  func.walk([&](shard::ReduceScatterOp scatter) {
    overlap |= scatter->hasAttr(GaccDialect::kOverlapAttrName);
  });
  for (auto &[key, members] : gathers) {
    Type elementType = key.second;
    int64_t chunk = 0;
    for (Gathered &member : members) {
      member.offset = chunk;
      chunk += shardSize(member.info.numElements);
    }
    Value packed = tensor::EmptyOp::create(
        builder, loc, ArrayRef<int64_t>{chunk}, elementType);
    for (Gathered &member : members)
      packed = insertFlatSlice(builder, loc, member.info.shard, packed,
                               member.offset);
    auto gather = shard::AllGatherOp::create(
        builder, loc, RankedTensorType::get({ranks * chunk}, elementType), grid,
        gridAxes, packed, builder.getIndexAttr(0));
    gather->setAttr(GaccDialect::kBucketAttrName,
                    builder.getI64IntegerAttr(key.first));
    if (overlap)
      gather->setAttr(GaccDialect::kOverlapAttrName, builder.getUnitAttr());
    Value rows = tensor::ExpandShapeOp::create(
        builder, loc, RankedTensorType::get({ranks, chunk}, elementType),
        gather, ArrayRef<ReassociationIndices>{{0, 1}});
    for (Gathered &member : members) {
      int64_t s = shardSize(member.info.numElements);
      Value part = tensor::ExtractSliceOp::create(
          builder, loc, RankedTensorType::get({ranks, s}, elementType), rows,
          ArrayRef<OpFoldResult>{builder.getIndexAttr(0),
                                 builder.getIndexAttr(member.offset)},
          ArrayRef<OpFoldResult>{builder.getIndexAttr(ranks),
                                 builder.getIndexAttr(s)},
          ArrayRef<OpFoldResult>{builder.getIndexAttr(1),
                                 builder.getIndexAttr(1)});
      Value flat = tensor::CollapseShapeOp::create(
          builder, loc, RankedTensorType::get({ranks * s}, elementType), part,
          ArrayRef<ReassociationIndices>{{0, 1}});
      if (ranks * s != member.info.numElements)
        flat = extractFlatSlice(builder, loc, flat, 0, member.info.numElements);
      auto type =
          cast<RankedTensorType>(ret.getOperand(member.result).getType());
      results[member.result] = unflattenTensor(builder, loc, flat, type);
    }
  }
  builder.modifyOpInPlace(ret, [&] { ret->setOperands(results); });

  // The sharded state arguments become their shards.
  eraseDeadOps(func.getBody().front(), &builder);
  for (unsigned i : shardedArgs) {
    BlockArgument arg = func.getArgument(i);
    auto type = cast<RankedTensorType>(arg.getType());
    Value slice = slices.lookup(arg);
    auto shardTy = cast<RankedTensorType>(slice.getType());
    builder.modifyOpInPlace(func, [&] {
      arg.setType(shardTy);
      func.setArgAttr(i, kShardOfAttrName,
                      builder.getDenseI64ArrayAttr(type.getShape()));
      func.setResultAttr(stateOutOf[i], kShardOfAttrName,
                         builder.getDenseI64ArrayAttr(type.getShape()));
    });
    builder.replaceAllUsesWith(slice, arg);
  }
  eraseDeadOps(func.getBody().front(), &builder);
  SmallVector<Type> argTypes(func.getArgumentTypes());
  for (unsigned i : shardedArgs)
    argTypes[i] = func.getArgument(i).getType();
  builder.modifyOpInPlace(func, [&] {
    func.setType(
        FunctionType::get(func.getContext(), argTypes, ret.getOperandTypes()));
  });
  return success();
}

/// all_reduce(a) + all_reduce(b) -> all_reduce(a + b) for the scalar sums
/// of the rank's reductions (the squared norms of the gradients of a global
/// clip), so that the step all-reduces one scalar however many gradients
/// the norm covers.
Value EpilogueSharder::foldScalarSums(arith::AddFOp add) {
  auto lhs = add.getLhs().getDefiningOp<shard::AllReduceOp>();
  auto rhs = add.getRhs().getDefiningOp<shard::AllReduceOp>();
  // Read by nothing else (but the ops the shards replace, which go).
  auto onlyFor = [&](Operation *reduce) {
    return llvm::all_of(reduce->getUsers(), [&](Operation *user) {
      return user == add.getOperation() || replaced.contains(user);
    });
  };
  if (!lhs || !rhs || lhs == rhs || !scalarSums.contains(lhs) ||
      !scalarSums.contains(rhs) || !onlyFor(lhs) || !onlyFor(rhs) ||
      add.getType() != lhs.getType())
    return {};
  builder.setInsertionPoint(add);
  Value sum = arith::AddFOp::create(builder, add.getLoc(), lhs.getInput(),
                                    rhs.getInput());
  auto reduced =
      shard::AllReduceOp::create(builder, add.getLoc(), add.getType(), grid,
                                 gridAxes, sum, lhs.getReductionAttr());
  scalarSums.insert(reduced);
  scalarSums.erase(lhs);
  scalarSums.erase(rhs);
  builder.replaceOp(add, reduced.getResult());
  builder.setInsertionPointAfter(reduced);
  // The two all-reduces are dead once the replaced ops are erased.
  return reduced.getResult();
}

LogicalResult EpilogueSharder::run() {
  Block &block = func.getBody().front();
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto allReduce = dyn_cast<shard::AllReduceOp>(&op)) {
      if (allReduce->hasAttr(GaccDialect::kBucketAttrName)) {
        if (failed(shardBucket(allReduce)))
          return failure();
        continue;
      }
    }
    if (auto add = dyn_cast<arith::AddFOp>(&op))
      if (foldScalarSums(add))
        continue;
    if (auto ret = dyn_cast<func::ReturnOp>(&op)) {
      if (sharded.empty())
        return success();
      return shardReturn(ret);
    }
    if (!llvm::any_of(op.getOperands(),
                      [&](Value v) { return sharded.count(v); })) {
      // A shard read from inside a region (a captured value).
      WalkResult inner = op.walk([&](Operation *nested) {
        if (nested != &op && llvm::any_of(nested->getOperands(), [&](Value v) {
              return sharded.count(v);
            }))
          return WalkResult::interrupt();
        return WalkResult::advance();
      });
      if (inner.wasInterrupted())
        return refuse(&op, "reads a sharded gradient inside its region; with "
                           "shard-optimizer-state each rank holds only a "
                           "slice of it");
      continue;
    }
    if (failed(shardOp(&op)))
      return failure();
  }
  return success();
}

namespace {
struct ShardOptimizerStatePass
    : public gacc::impl::ShardOptimizerStatePassBase<ShardOptimizerStatePass> {
  using ShardOptimizerStatePassBase::ShardOptimizerStatePassBase;

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    if (dataParallelSize < 0) {
      module.emitError() << "expected a non-negative data-parallel-size, got "
                         << static_cast<int64_t>(dataParallelSize);
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> steps;
    module.walk([&](func::FuncOp func) {
      if (!func.isExternal() &&
          !func.getBody().getOps<gacc::MicroBatchOp>().empty())
        steps.push_back(func);
    });
    IRRewriter rewriter(&getContext());
    for (func::FuncOp func : steps) {
      // The grid of the buckets: its data-parallel axis needs a size.
      shard::AllReduceOp first;
      for (auto op : func.getBody().getOps<shard::AllReduceOp>())
        if (op->hasAttr(GaccDialect::kBucketAttrName)) {
          first = op;
          break;
        }
      if (!first)
        continue;
      SymbolTableCollection symbolTables;
      auto grid =
          shard::getGridOrNull(first, first.getGridAttr(), symbolTables);
      if (!grid || grid.getRank() != 1) {
        first.emitOpError("expected a bucket all-reduce over a one-axis grid "
                          "with shard-optimizer-state");
        return signalPassFailure();
      }
      int64_t size = grid.getShape()[0];
      if (ShapedType::isDynamic(size)) {
        if (dataParallelSize == 0) {
          InFlightDiagnostic diag = first.emitOpError()
                                    << "expected a static size of grid @"
                                    << grid.getSymName()
                                    << " to shard the optimizer state; set "
                                       "data-parallel-size (gacc-run and "
                                       "gacc-check set it to the number of "
                                       "ranks)";
          diag.attachNote(grid.getLoc()) << "the grid";
          return signalPassFailure();
        }
        size = dataParallelSize;
        grid.setShapeAttr(rewriter.getDenseI64ArrayAttr({size}));
      } else if (dataParallelSize != 0 && dataParallelSize != size) {
        first.emitOpError()
            << "expected data-parallel-size "
            << static_cast<int64_t>(dataParallelSize) << " to equal the size "
            << size << " of grid @" << grid.getSymName();
        return signalPassFailure();
      }
      EpilogueSharder sharder(func, rewriter, size);
      if (failed(sharder.run()))
        return signalPassFailure();
    }
  }
};
} // namespace

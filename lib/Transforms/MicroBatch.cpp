//===- MicroBatch.cpp - split a training step into micro-batches -*- C++ -*-=//
//
// The gacc-micro-batch pass: rebuilds the training step as
//   invariants and prologue statistics (once, on the whole batch),
//   m `gacc.micro_batch` regions (per-sample work on each slice, partials),
//   the combination of the partials (`gacc.combine`),
//   the epilogue (once, on the combined partials).
// Sample counts used as values keep their global value (loss ÷ m); shapes and
// `linalg.index` of the sample dimension follow the region's slice.
//
//===----------------------------------------------------------------------===//

#include "gacc/Transforms/MicroBatch.h"
#include "AnalyzeStep.h"
#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/Passes.h"
#include "gacc/Transforms/RegionForms.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "gacc-micro-batch"

namespace mlir::gacc {
#define GEN_PASS_DEF_MICROBATCHPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

FailureOr<SmallVector<int64_t>> mlir::gacc::getMicroBatchSizes(
    int64_t batchSize, int64_t m, ArrayRef<int64_t> explicitSizes,
    llvm::function_ref<InFlightDiagnostic()> emitError) {
  if (!explicitSizes.empty()) {
    int64_t sum = 0;
    for (int64_t size : explicitSizes) {
      if (size < 1) {
        emitError() << "expected positive micro-batch-sizes, got " << size;
        return failure();
      }
      sum += size;
    }
    if (sum != batchSize) {
      emitError() << "micro-batch-sizes sum to " << sum << " but the batch has "
                  << batchSize << " samples";
      return failure();
    }
    if (m != 1 && m != static_cast<int64_t>(explicitSizes.size())) {
      emitError() << "micro-batches=" << m << " disagrees with the "
                  << explicitSizes.size() << " entries of micro-batch-sizes";
      return failure();
    }
    return SmallVector<int64_t>(explicitSizes);
  }
  if (m < 1 || m > batchSize) {
    emitError() << "expected micro-batches between 1 and the batch size "
                << batchSize << ", got " << m;
    return failure();
  }
  SmallVector<int64_t> sizes(m, batchSize / m);
  for (int64_t k = 0; k < batchSize % m; ++k)
    ++sizes[k];
  return sizes;
}

namespace {
/// Rebuilds one training step in micro-batched form.
class MicroBatchBuilder {
public:
  MicroBatchBuilder(func::FuncOp func, const BatchAnalysis &analysis,
                    bool skipGlobalNormalizer)
      : func(func), analysis(analysis), batchSize(analysis.getBatchSize()),
        builder(func.getContext()), skipGlobalNormalizer(skipGlobalNormalizer) {
  }

  LogicalResult build(ArrayRef<int64_t> sizes);
  /// Builds the step for `size` samples as a new function `name`.
  FailureOr<func::FuncOp> buildForBatchSize(int64_t size, StringRef name);

private:
  BatchClass kindOf(Value v) const { return analysis.getClass(v); }
  BatchClass kindOf(Operation *op) const { return analysis.getClass(op); }

  /// Returns the value standing for `v` inside the current region.
  Value lookupInRegion(Value v);
  /// Returns `v` (not per-sample) restricted to the current region's samples
  /// along `dim`, where `dim` of `v` has `factor` elements per sample.
  Value sliceInvariant(Value v, int64_t dim, int64_t factor);
  /// Clones a per-sample or micro-batch-statistic op into the current region.
  Operation *cloneIntoRegion(Operation *op);
  /// Clones a partial-producing reduction into region `k`.
  LogicalResult clonePartial(Operation *op, int64_t k);
  /// Replaces sample-count constants used by `clone` (B and 1/B) with the
  /// region's count (b and 1/b).
  void rescaleSampleCounts(Operation *clone);
  /// Scales the sums of a micro-batch statistic by B / b so that the graph's
  /// global normalizer (1/B) yields the micro-batch's own mean.
  void rescaleStatistic(Operation *op, Operation *clone,
                        const BatchOpInfo &opInfo);
  /// Offsets `linalg.index` of the sample loop inside `clone`, except where
  /// it indexes the sample dimension of a per-sample tensor the body
  /// captures (`regionSamples`: region value -> its sample dimension), which
  /// holds only the region's samples.
  void offsetSampleIndex(linalg::LinalgOp clone, int64_t loopDim,
                         int64_t factor,
                         const DenseMap<Value, int64_t> &regionSamples);

  func::FuncOp func;
  const BatchAnalysis &analysis;
  int64_t batchSize;
  OpBuilder builder;
  bool skipGlobalNormalizer;

  /// Old value -> value outside the regions (invariant, prologue, combined
  /// partials, epilogue).
  IRMapping outer;
  /// Old value -> value inside the current region.
  IRMapping inner;
  /// Slices of values that are not per-sample, per region: (value, dim).
  DenseMap<std::pair<Value, int64_t>, Value> slices;
  int64_t offset = 0, size = 0;
  /// buildForBatchSize: the whole step runs at the new size.
  bool wholeStepAtSize = false;
};
} // namespace

Value MicroBatchBuilder::sliceInvariant(Value v, int64_t dim, int64_t factor) {
  auto key = std::make_pair(v, dim);
  if (Value cached = slices.lookup(key))
    return cached;
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape[dim] = size * factor;
  auto newType = RankedTensorType::get(shape, type.getElementType());
  Location loc = v.getLoc();
  Value result;
  Operation *def = v.getDefiningOp();
  // Shape-only producers are rebuilt at the region's size; everything else is
  // sliced out of the value computed before the regions.
  if (isa_and_nonnull<tensor::EmptyOp>(def)) {
    result =
        tensor::EmptyOp::create(builder, loc, shape, type.getElementType());
  } else if (auto fill = dyn_cast_or_null<linalg::FillOp>(def);
             fill && fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>()) {
    Value empty =
        tensor::EmptyOp::create(builder, loc, shape, type.getElementType());
    Value scalar = lookupInRegion(fill.getInputs()[0]);
    result = linalg::FillOp::create(builder, loc, scalar, empty).getResult(0);
  } else if (auto cst = dyn_cast_or_null<arith::ConstantOp>(def);
             cst && isa<SplatElementsAttr>(cst.getValue())) {
    auto splat = cast<SplatElementsAttr>(cst.getValue());
    result = arith::ConstantOp::create(builder, loc, newType,
                                       splat.resizeSplat(newType));
  } else {
    // Batch arguments are sliced from the argument itself; other values
    // from their copy outside (or, for statistics, inside) the region.
    Value source = kindOf(v) == BatchClass::PerSample ? outer.lookupOrDefault(v)
                                                      : lookupInRegion(v);
    SmallVector<OpFoldResult> offsets(type.getRank(), builder.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes,
        strides(type.getRank(), builder.getIndexAttr(1));
    for (int64_t d : shape)
      sizes.push_back(builder.getIndexAttr(d));
    offsets[dim] = builder.getIndexAttr(offset * factor);
    result = tensor::ExtractSliceOp::create(builder, loc, newType, source,
                                            offsets, sizes, strides);
  }
  slices[key] = result;
  return result;
}

Value MicroBatchBuilder::lookupInRegion(Value v) {
  if (Value mapped = inner.lookupOrNull(v))
    return mapped;
  const BatchValueInfo &vi = analysis.getInfo(v);
  if (vi.kind == BatchClass::PerSample) {
    // Only batch arguments reach here: everything else was cloned before.
    assert(isa<BlockArgument>(v) && "per-sample value not cloned yet");
    Value slice = sliceInvariant(v, vi.dim, vi.factor);
    inner.map(v, slice);
    return slice;
  }
  return outer.lookupOrDefault(v);
}

void MicroBatchBuilder::rescaleSampleCounts(Operation *clone) {
  double local = size;
  auto rewrite = [&](arith::ConstantOp cst) -> Attribute {
    std::optional<SampleCountForm> form = matchSampleCount(cst, batchSize);
    if (!form)
      return {};
    double value = *form == SampleCountForm::Count ? local : 1.0 / local;
    Attribute attr = cst.getValue();
    if (auto f = dyn_cast<FloatAttr>(attr))
      return FloatAttr::get(f.getType(), value);
    auto splat = cast<SplatElementsAttr>(attr);
    return SplatElementsAttr::get(
        splat.getType(),
        FloatAttr::get(splat.getElementType(), value).getValue());
  };
  clone->walk([&](Operation *nested) {
    if (auto cst = dyn_cast<arith::ConstantOp>(nested)) {
      if (Attribute attr = rewrite(cst))
        cst.setValueAttr(cast<TypedAttr>(attr));
      return;
    }
    for (OpOperand &operand : nested->getOpOperands()) {
      auto cst = operand.get().getDefiningOp<arith::ConstantOp>();
      if (!cst || clone->isAncestor(cst))
        continue;
      if (Attribute attr = rewrite(cst)) {
        OpBuilder::InsertionGuard guard(builder);
        builder.setInsertionPoint(clone);
        operand.set(arith::ConstantOp::create(builder, cst.getLoc(),
                                              cast<TypedAttr>(attr)));
      }
    }
  });
}

void MicroBatchBuilder::offsetSampleIndex(
    linalg::LinalgOp clone, int64_t loopDim, int64_t factor,
    const DenseMap<Value, int64_t> &regionSamples) {
  if (offset == 0)
    return;
  // Reads of a captured per-sample tensor along its sample dimension keep the
  // region-local index (the analysis proved they are exactly the loop).
  auto isLocalRead = [&](OpOperand &use) {
    auto extract = dyn_cast<tensor::ExtractOp>(use.getOwner());
    if (!extract)
      return false;
    auto it = regionSamples.find(extract.getTensor());
    return it != regionSamples.end() &&
           use.getOperandNumber() == 1 + it->second;
  };
  SmallVector<linalg::IndexOp> indices;
  clone->walk([&](linalg::IndexOp index) {
    if (static_cast<int64_t>(index.getDim()) == loopDim)
      indices.push_back(index);
  });
  for (linalg::IndexOp index : indices) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointAfter(index);
    Value shift = arith::ConstantIndexOp::create(builder, index.getLoc(),
                                                 offset * factor);
    auto shifted = arith::AddIOp::create(builder, index.getLoc(), index, shift);
    index.getResult().replaceUsesWithIf(shifted, [&](OpOperand &use) {
      return use.getOwner() != shifted && !isLocalRead(use);
    });
  }
}

void MicroBatchBuilder::rescaleStatistic(Operation *op, Operation *clone,
                                         const BatchOpInfo &opInfo) {
  if (size == batchSize)
    return;
  for (auto [oldResult, result, combiner] :
       llvm::zip(op->getResults(), clone->getResults(), opInfo.combiners)) {
    if (combiner != Combiner::AddF)
      continue;
    auto type = cast<RankedTensorType>(result.getType());
    double scale = static_cast<double>(batchSize) / size;
    Value factor = arith::ConstantOp::create(
        builder, clone->getLoc(), type,
        SplatElementsAttr::get(
            type, FloatAttr::get(type.getElementType(), scale).getValue()));
    auto scaled =
        arith::MulFOp::create(builder, clone->getLoc(), result, factor);
    // Region users of the statistic see the rescaled sum.
    inner.map(oldResult, scaled.getResult());
  }
}

/// Returns the region operand for `operand` of a per-sample linalg op: the
/// sample loop `loopDim` indexes it at dimension `dim`, or nowhere (-1).
static int64_t sampleDimOfOperand(linalg::LinalgOp op, OpOperand &operand,
                                  int64_t loopDim) {
  AffineMap map = op.getMatchingIndexingMap(&operand);
  std::optional<unsigned> pos =
      map.getResultPosition(getAffineDimExpr(loopDim, op->getContext()));
  return pos ? static_cast<int64_t>(*pos) : -1;
}

Operation *MicroBatchBuilder::cloneIntoRegion(Operation *op) {
  const BatchOpInfo &opInfo = analysis.getInfo(op);
  IRMapping mapping;
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  DenseMap<Value, int64_t> regionSamples;
  for (Value v : captured) {
    Value local = lookupInRegion(v);
    mapping.map(v, local);
    if (kindOf(v) == BatchClass::PerSample)
      regionSamples[local] = analysis.getInfo(v).dim;
  }

  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  for (OpOperand &operand : op->getOpOperands()) {
    Value v = operand.get();
    BatchClass kind = kindOf(v);
    if (kind == BatchClass::PerSample ||
        kind == BatchClass::MicroBatchStatistic || !linalgOp ||
        opInfo.loopDim < 0) {
      mapping.map(v, lookupInRegion(v));
      continue;
    }
    int64_t dim = sampleDimOfOperand(linalgOp, operand, opInfo.loopDim);
    mapping.map(v, dim < 0 ? lookupInRegion(v)
                           : sliceInvariant(v, dim, opInfo.factor));
  }
  // Ops whose tensor operands are aligned with the result (elementwise ops,
  // concat, insert_slice): operands that are not per-sample but have the
  // batch shape are sliced like the per-sample ones.
  if (!linalgOp && kindOf(op) == BatchClass::PerSample) {
    SmallVector<Value> aligned;
    if (op->hasTrait<OpTrait::Elementwise>())
      aligned.assign(op->operand_begin(), op->operand_end());
    else if (auto concat = dyn_cast<tensor::ConcatOp>(op))
      aligned.assign(concat.getInputs().begin(), concat.getInputs().end());
    else if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
      aligned = {insert.getSource(), insert.getDest()};
    const BatchValueInfo &out = analysis.getInfo(op->getResult(0));
    for (Value v : aligned) {
      if (kindOf(v) == BatchClass::PerSample)
        continue;
      auto type = dyn_cast<RankedTensorType>(v.getType());
      if (type && type.getRank() > out.dim)
        mapping.map(v, sliceInvariant(v, out.dim, out.factor));
    }
  }

  Operation *clone = builder.clone(*op, mapping);
  // Per-sample results take the region's sample count.
  for (auto [oldResult, newResult] :
       llvm::zip(op->getResults(), clone->getResults())) {
    const BatchValueInfo &vi = analysis.getInfo(oldResult);
    if (vi.kind == BatchClass::PerSample) {
      auto type = cast<RankedTensorType>(oldResult.getType());
      SmallVector<int64_t> shape(type.getShape());
      shape[vi.dim] = size * vi.factor;
      newResult.setType(RankedTensorType::get(shape, type.getElementType()));
    }
    inner.map(oldResult, newResult);
  }
  // Static sizes stored as attributes follow the new shapes (only where the
  // sliced value carries samples: a step rebuilt for another batch size
  // clones invariant slices too, e.g. tosa.concat's insert_slices of
  // reductions over the samples).
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(clone)) {
    const BatchValueInfo &src =
        analysis.getInfo(cast<tensor::ExtractSliceOp>(op).getSource());
    if (src.kind == BatchClass::PerSample) {
      SmallVector<int64_t> staticSizes(slice.getStaticSizes());
      staticSizes[src.dim] = size * src.factor;
      slice.setStaticSizes(staticSizes);
    }
  } else if (auto insert = dyn_cast<tensor::InsertSliceOp>(clone)) {
    const BatchValueInfo &res = analysis.getInfo(op->getResult(0));
    if (res.kind == BatchClass::PerSample) {
      SmallVector<int64_t> staticSizes(insert.getStaticSizes());
      staticSizes[res.dim] = size * res.factor;
      insert.setStaticSizes(staticSizes);
    }
  } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(clone)) {
    expand.setStaticOutputShape(expand.getResultType().getShape());
  }
  if (auto linalgClone = dyn_cast<linalg::LinalgOp>(clone);
      linalgClone && opInfo.loopDim >= 0)
    offsetSampleIndex(linalgClone, opInfo.loopDim, opInfo.factor,
                      regionSamples);
  if (skipGlobalNormalizer)
    rescaleSampleCounts(clone);
  if (kindOf(op) == BatchClass::MicroBatchStatistic &&
      !opInfo.combiners.empty() && !wholeStepAtSize)
    rescaleStatistic(op, clone, opInfo);
  return clone;
}

/// Returns the identity of `combiner` as an attribute of `type`.
static TypedAttr getCombinerIdentity(Combiner combiner, Type type) {
  switch (combiner) {
  case Combiner::AddF:
    return FloatAttr::get(type, 0.0);
  case Combiner::AddI:
    return IntegerAttr::get(type, 0);
  case Combiner::MaxF:
    return FloatAttr::get(
        type, APFloat::getInf(cast<FloatType>(type).getFloatSemantics(),
                              /*Negative=*/true));
  case Combiner::MinF:
    return FloatAttr::get(
        type, APFloat::getInf(cast<FloatType>(type).getFloatSemantics()));
  case Combiner::MaxNumF:
  case Combiner::MinNumF:
    // maxnumf(NaN, x) = x for every x: -inf would turn a region whose
    // values are all NaN into -inf where the step's own init is NaN.
    return FloatAttr::get(
        type, APFloat::getQNaN(cast<FloatType>(type).getFloatSemantics()));
  case Combiner::None:
    break;
  }
  llvm_unreachable("no identity without a combiner");
}

LogicalResult MicroBatchBuilder::clonePartial(Operation *op, int64_t k) {
  // A linalg reduction or a gacc.scatter_add: the init is the accumulator.
  auto clone = cast<DestinationStyleOpInterface>(cloneIntoRegion(op));
  clone->setAttr(kPartialAttrName, builder.getUnitAttr());
  if (k == 0)
    return success();
  // Later regions start from the combiner's identity; the partials are
  // combined (or, after gacc-fuse-accumulation, chained) after the regions.
  const BatchOpInfo &opInfo = analysis.getInfo(op);
  for (OpOperand &init : clone.getDpsInitsMutable()) {
    unsigned i = clone.getTiedOpResult(&init).getResultNumber();
    Combiner combiner = opInfo.combiners[i];
    auto type = cast<RankedTensorType>(init.get().getType());
    TypedAttr identity = getCombinerIdentity(combiner, type.getElementType());
    if (isFillOf(init.get(), identity))
      continue;
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(clone);
    Location loc = clone->getLoc();
    Value empty = tensor::EmptyOp::create(builder, loc, type.getShape(),
                                          type.getElementType());
    Value scalar = arith::ConstantOp::create(builder, loc, identity);
    init.set(linalg::FillOp::create(builder, loc, scalar, empty).getResult(0));
  }
  return success();
}

LogicalResult MicroBatchBuilder::build(ArrayRef<int64_t> sizes) {
  Block &body = func.getBody().front();
  auto oldReturn = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Operation *> oldOps;
  for (Operation &op : body.without_terminator())
    oldOps.push_back(&op);

  // Per-sample ops that prologue statistics need, computed on the whole batch.
  DenseSet<Operation *> prologueSlice;
  {
    SmallVector<Operation *> worklist;
    for (Operation *op : oldOps)
      if (kindOf(op) == BatchClass::Prologue)
        worklist.push_back(op);
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      if (!prologueSlice.insert(op).second)
        continue;
      SetVector<Value> used(op->getOperands().begin(), op->getOperands().end());
      getUsedValuesDefinedAbove(op->getRegions(), used);
      for (Value v : used)
        if (Operation *def = v.getDefiningOp())
          if (def->getBlock() == &body)
            worklist.push_back(def);
    }
  }

  for (Operation *op : oldOps) {
    BatchClass kind = kindOf(op);
    if (kind == BatchClass::MicroBatchStatistic)
      for (Operation *user : op->getUsers())
        if (isa<func::ReturnOp>(user) || kindOf(user) == BatchClass::Epilogue)
          return op->emitOpError(
              "computes a micro-batch statistic that is also used after the "
              "regions; not supported");
  }

  // 1. Invariants and prologue statistics, once.
  builder.setInsertionPoint(oldOps.empty() ? oldReturn.getOperation()
                                           : oldOps.front());
  for (Operation *op : oldOps) {
    BatchClass kind = kindOf(op);
    if (kind == BatchClass::Invariant || prologueSlice.contains(op))
      builder.clone(*op, outer);
  }

  // 2. The regions.
  SmallVector<Value> partials, perSampleResults;
  for (Operation *op : oldOps)
    if (kindOf(op) == BatchClass::Partial)
      llvm::append_range(partials, op->getResults());
  for (Value v : oldReturn.getOperands())
    if (kindOf(v) == BatchClass::PerSample &&
        !llvm::is_contained(perSampleResults, v))
      perSampleResults.push_back(v);

  SmallVector<gacc::MicroBatchOp> regions;
  Location loc = func.getLoc();
  for (auto [k, regionSize] : llvm::enumerate(sizes)) {
    size = regionSize;
    inner.clear();
    slices.clear();
    auto *block = new Block();
    OpBuilder::InsertPoint outerPoint = builder.saveInsertionPoint();
    builder.setInsertionPointToStart(block);
    for (Operation *op : oldOps) {
      BatchClass kind = kindOf(op);
      LogicalResult status = success();
      if (kind == BatchClass::PerSample ||
          kind == BatchClass::MicroBatchStatistic)
        cloneIntoRegion(op);
      else if (kind == BatchClass::Partial)
        status = clonePartial(op, k);
      if (failed(status)) {
        delete block;
        return failure();
      }
    }
    SmallVector<Value> yielded;
    for (Value v : partials)
      yielded.push_back(inner.lookup(v));
    for (Value v : perSampleResults)
      yielded.push_back(lookupInRegion(v));
    gacc::YieldOp::create(builder, loc, yielded);
    eraseDeadOps(*block);

    builder.restoreInsertionPoint(outerPoint);
    auto region =
        gacc::MicroBatchOp::create(builder, loc, ValueRange(yielded).getTypes(),
                                   static_cast<int64_t>(k), offset, size);
    region.getBody().push_back(block);
    regions.push_back(region);
    offset += size;
  }

  // 3. Combine the partials of the regions.
  for (auto [i, partial] : llvm::enumerate(partials)) {
    auto result = cast<OpResult>(partial);
    Combiner combiner =
        analysis.getInfo(result.getOwner()).combiners[result.getResultNumber()];
    Value combined = regions.front().getResult(i);
    for (gacc::MicroBatchOp region : ArrayRef(regions).drop_front())
      combined = createCombine(builder, partial.getLoc(), combiner, combined,
                               region.getResult(i));
    outer.map(partial, combined);
  }
  // Per-sample results are assembled from the regions' slices.
  for (auto [i, v] : llvm::enumerate(perSampleResults)) {
    const BatchValueInfo &vi = analysis.getInfo(v);
    auto type = cast<RankedTensorType>(v.getType());
    Value full = tensor::EmptyOp::create(builder, v.getLoc(), type.getShape(),
                                         type.getElementType());
    for (gacc::MicroBatchOp region : regions) {
      Value part = region.getResult(partials.size() + i);
      auto partType = cast<RankedTensorType>(part.getType());
      SmallVector<OpFoldResult> offsets(type.getRank(),
                                        builder.getIndexAttr(0));
      SmallVector<OpFoldResult> partSizes,
          strides(type.getRank(), builder.getIndexAttr(1));
      for (int64_t d : partType.getShape())
        partSizes.push_back(builder.getIndexAttr(d));
      offsets[vi.dim] = builder.getIndexAttr(region.getOffset() * vi.factor);
      full = tensor::InsertSliceOp::create(builder, v.getLoc(), part, full,
                                           offsets, partSizes, strides);
    }
    outer.map(v, full);
  }

  // 4. The epilogue, once.
  for (Operation *op : oldOps)
    if (kindOf(op) == BatchClass::Epilogue)
      builder.clone(*op, outer);

  SmallVector<Value> results;
  for (Value v : oldReturn.getOperands())
    results.push_back(outer.lookupOrDefault(v));
  func::ReturnOp::create(builder, oldReturn.getLoc(), results);

  // Drop the original body. Every use of an old value must be gone by now.
  DenseSet<Operation *> oldSet(oldOps.begin(), oldOps.end());
  oldSet.insert(oldReturn);
  auto isOld = [&](Operation *user) {
    for (Operation *p = user; p; p = p->getParentOp())
      if (oldSet.contains(p))
        return true;
    return false;
  };
  for (Operation *op : oldOps)
    for (Operation *user : op->getUsers())
      if (!isOld(user))
        return op->emitOpError(
            "internal error: a rebuilt op still uses this op's result");
  oldReturn.erase();
  for (Operation *op : llvm::reverse(oldOps)) {
    op->dropAllUses();
    op->erase();
  }
  eraseDeadOps(body);
  return success();
}

FailureOr<func::FuncOp> MicroBatchBuilder::buildForBatchSize(int64_t newSize,
                                                             StringRef name) {
  wholeStepAtSize = true;
  size = newSize;
  offset = 0;
  auto retype = [&](Value v, Type type) -> Type {
    const BatchValueInfo &vi = analysis.getInfo(v);
    if (vi.kind != BatchClass::PerSample)
      return type;
    auto tensor = cast<RankedTensorType>(type);
    SmallVector<int64_t> shape(tensor.getShape());
    shape[vi.dim] = newSize * vi.factor;
    return RankedTensorType::get(shape, tensor.getElementType());
  };
  SmallVector<Type> argTypes, resultTypes;
  for (BlockArgument arg : func.getArguments())
    argTypes.push_back(retype(arg, arg.getType()));
  auto oldReturn = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (Value v : oldReturn.getOperands())
    resultTypes.push_back(retype(v, v.getType()));

  OpBuilder moduleBuilder(func);
  moduleBuilder.setInsertionPointAfter(func);
  auto newFunc = func::FuncOp::create(
      moduleBuilder, func.getLoc(), name,
      moduleBuilder.getFunctionType(argTypes, resultTypes));
  newFunc.setAllArgAttrs(func.getAllArgAttrs());
  newFunc.setAllResultAttrs(func.getAllResultAttrs());
  Block *entry = newFunc.addEntryBlock();
  for (auto [oldArg, newArg] :
       llvm::zip(func.getArguments(), entry->getArguments())) {
    inner.map(oldArg, newArg);
    outer.map(oldArg, newArg);
  }
  builder.setInsertionPointToStart(entry);
  for (Operation &op : func.getBody().front().without_terminator())
    cloneIntoRegion(&op);
  SmallVector<Value> results;
  for (Value v : oldReturn.getOperands())
    results.push_back(lookupInRegion(v));
  func::ReturnOp::create(builder, oldReturn.getLoc(), results);
  // A user's step for b samples normalizes by b: sample counts follow.
  rescaleSampleCounts(newFunc);
  eraseDeadOps(*entry);
  return newFunc;
}

FailureOr<func::FuncOp>
mlir::gacc::buildStepForBatchSize(func::FuncOp func,
                                  const BatchAnalysis &analysis, int64_t size,
                                  StringRef name) {
  if (size < 1 || size > analysis.getBatchSize()) {
    func.emitOpError() << "expected a batch size between 1 and "
                       << analysis.getBatchSize() << ", got " << size;
    return failure();
  }
  MicroBatchBuilder builder(func, analysis, /*skipGlobalNormalizer=*/false);
  return builder.buildForBatchSize(size, name);
}

namespace {
struct MicroBatchPass : public gacc::impl::MicroBatchPassBase<MicroBatchPass> {
  using MicroBatchPassBase::MicroBatchPassBase;

  void runOnOperation() override {
    // Verifying m regions op by op would cost more than building them.
    GACC_VERIFY_PASS_RESULT_WITH(verifyByRegionForm);
    auto step = analyzeStep(getOperation(), entry, allowMicroBatchStatistics,
                            /*foldDims=*/true);
    if (!step)
      return signalPassFailure();
    func::FuncOp func = step->first;
    const BatchAnalysis &analysis = step->second;
    FailureOr<SmallVector<int64_t>> sizes =
        getMicroBatchSizes(analysis.getBatchSize(), microBatches,
                           microBatchSizes, [&] { return func.emitOpError(); });
    if (failed(sizes))
      return signalPassFailure();
    MicroBatchBuilder builder(func, analysis, testSkipGlobalNormalizer);
    if (failed(builder.build(*sizes)))
      return signalPassFailure();
  }
};
} // namespace

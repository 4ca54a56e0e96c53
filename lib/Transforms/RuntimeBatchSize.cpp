//===- RuntimeBatchSize.cpp - steps that run any batch size up to B -------===//
//
// The gacc-runtime-batch-size pass: rewrites a training step written for B
// samples so that it runs B' <= B real samples, given at run time by a new
// `gacc.sample_count` argument. The batch arguments keep B samples; the first
// B' are real, the rest padding, which no result may depend on:
//   - every reduction over the sample dimension skips padded samples;
//   - sample counts used as values (B, 1/B) become B' and 1/B'.
// Everything else is per-sample, so padded samples only produce padded rows
// of per-sample values. The pass runs before gacc-micro-batch: the regions
// keep their compile-time sizes, and `linalg.index` of the sample loop is
// offset to global positions there, which is what the masks compare.
//
//===----------------------------------------------------------------------===//

#include "AnalyzeStep.h"
#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

namespace mlir::gacc {
#define GEN_PASS_DEF_RUNTIMEBATCHSIZEPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// Rewrites one training step; see the file comment.
class RuntimeBatchSizeRewriter {
public:
  RuntimeBatchSizeRewriter(func::FuncOp func, const BatchAnalysis &analysis)
      : func(func), analysis(analysis), rewriter(func.getContext()) {}

  LogicalResult run();

private:
  /// B' * factor as an index, computed at the start of the function.
  Value getLimit(int64_t factor);
  /// B' (or 1/B') as a scalar of `type`, computed at the start.
  Value getCount(FloatType type, SampleCountForm form);
  /// `v` with the elements of padded samples along `dim` set to zero.
  Value zeroPadding(Value v, int64_t dim, int64_t factor);
  /// Makes the reduction `op` over the sample loop skip padded samples.
  LogicalResult maskReduction(linalg::LinalgOp op);
  /// Replaces the sample counts used as values with B' and 1/B'.
  void replaceSampleCounts();

  func::FuncOp func;
  const BatchAnalysis &analysis;
  IRRewriter rewriter;
  /// The `tensor<i64>` argument and B' as i64, at the start.
  Value countArg, count;
  Operation *lastPrologueOp = nullptr;
  DenseMap<int64_t, Value> limits;
  DenseMap<std::pair<Type, int>, Value> counts;
  DenseMap<std::pair<Value, int64_t>, Value> zeroed;
};
} // namespace

/// Sets the insertion point right after the values computed at the start.
static void setInsertionPointAfterPrologue(OpBuilder &builder, Block &entry,
                                           Operation *last) {
  if (last)
    builder.setInsertionPointAfter(last);
  else
    builder.setInsertionPointToStart(&entry);
}

Value RuntimeBatchSizeRewriter::getLimit(int64_t factor) {
  if (Value cached = limits.lookup(factor))
    return cached;
  OpBuilder::InsertionGuard guard(rewriter);
  setInsertionPointAfterPrologue(rewriter, func.getBody().front(),
                                 lastPrologueOp);
  Location loc = func.getLoc();
  Value limit =
      arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(), count);
  if (factor != 1)
    limit = arith::MulIOp::create(
        rewriter, loc, limit,
        arith::ConstantIndexOp::create(rewriter, loc, factor));
  lastPrologueOp = limit.getDefiningOp();
  limits[factor] = limit;
  return limit;
}

Value RuntimeBatchSizeRewriter::getCount(FloatType type, SampleCountForm form) {
  auto key = std::make_pair(Type(type), static_cast<int>(form));
  if (Value cached = counts.lookup(key))
    return cached;
  OpBuilder::InsertionGuard guard(rewriter);
  setInsertionPointAfterPrologue(rewriter, func.getBody().front(),
                                 lastPrologueOp);
  Location loc = func.getLoc();
  Value value = arith::SIToFPOp::create(rewriter, loc, type, count);
  if (form == SampleCountForm::Reciprocal) {
    Value one = arith::ConstantOp::create(rewriter, loc, type,
                                          rewriter.getFloatAttr(type, 1.0));
    value = arith::DivFOp::create(rewriter, loc, one, value);
  }
  lastPrologueOp = value.getDefiningOp();
  counts[key] = value;
  return value;
}

Value RuntimeBatchSizeRewriter::zeroPadding(Value v, int64_t dim,
                                            int64_t factor) {
  auto key = std::make_pair(v, dim);
  if (Value cached = zeroed.lookup(key))
    return cached;
  Value limit = getLimit(factor);
  OpBuilder::InsertionGuard guard(rewriter);
  if (Operation *def = v.getDefiningOp())
    rewriter.setInsertionPointAfter(def);
  else
    setInsertionPointAfterPrologue(rewriter, func.getBody().front(),
                                   lastPrologueOp);
  Location loc = v.getLoc();
  auto type = cast<RankedTensorType>(v.getType());
  Value empty = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                        type.getElementType());
  AffineMap id = rewriter.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      rewriter, loc, type, ValueRange{v}, ValueRange{empty},
      ArrayRef<AffineMap>{id, id}, iterators,
      [&](OpBuilder &b, Location nestedLoc, ValueRange args) {
        Value index = linalg::IndexOp::create(b, nestedLoc, dim);
        Value real = arith::CmpIOp::create(
            b, nestedLoc, arith::CmpIPredicate::ult, index, limit);
        Value zero =
            arith::ConstantOp::create(b, nestedLoc, type.getElementType(),
                                      b.getZeroAttr(type.getElementType()));
        Value kept = arith::SelectOp::create(b, nestedLoc, real, args[0], zero);
        linalg::YieldOp::create(b, nestedLoc, kept);
      });
  zeroed[key] = generic.getResult(0);
  return generic.getResult(0);
}

/// Returns the identity of `combiner` as an attribute of `type`.
static TypedAttr getIdentity(Operation *combiner, Type type) {
  if (isa<arith::AddFOp>(combiner))
    return FloatAttr::get(type, 0.0);
  if (isa<arith::AddIOp>(combiner))
    return IntegerAttr::get(type, 0);
  auto floatType = cast<FloatType>(type);
  // maxnumf(NaN, x) = x for every x (see MicroBatch.cpp's identities).
  if (isa<arith::MaxNumFOp, arith::MinNumFOp>(combiner))
    return FloatAttr::get(type,
                          APFloat::getQNaN(floatType.getFloatSemantics()));
  bool negative = isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner);
  return FloatAttr::get(
      type, APFloat::getInf(floatType.getFloatSemantics(), negative));
}

LogicalResult RuntimeBatchSizeRewriter::maskReduction(linalg::LinalgOp op) {
  const BatchOpInfo &info = analysis.getInfo(op);
  int64_t loopDim = info.loopDim;
  AffineExpr loop = rewriter.getAffineDimExpr(loopDim);

  // A weight gradient (named contraction, every input indexed by the sample
  // loop) keeps its form for BLAS: zero both inputs' padded samples, so that
  // each padded product is 0 * 0 whatever the padding computed.
  if (!isa<linalg::GenericOp>(op) && linalg::isaContractionOpInterface(op)) {
    SmallVector<std::pair<OpOperand *, int64_t>> inputs;
    for (OpOperand *input : op.getDpsInputOperands()) {
      std::optional<unsigned> pos =
          op.getMatchingIndexingMap(input).getResultPosition(loop);
      if (!pos)
        break;
      inputs.push_back({input, *pos});
    }
    if (inputs.size() == static_cast<size_t>(op.getNumDpsInputs())) {
      for (auto [input, dim] : inputs)
        input->set(zeroPadding(input->get(), dim, info.factor));
      return success();
    }
  }

  linalg::GenericOp generic = dyn_cast<linalg::GenericOp>(op.getOperation());
  if (!generic) {
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::GenericOp> generalized =
        linalg::generalizeNamedOp(rewriter, op);
    if (failed(generalized))
      return op->emitOpError(
          "reduces over the sample dimension but cannot be generalized to "
          "skip padded samples (runtime-batch-size)");
    generic = *generalized;
  }
  // Each combiner adds its identity instead of a padded sample's
  // contribution: out = combine(out, real ? x : identity).
  Value limit = getLimit(info.factor);
  Block *body = generic.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  rewriter.setInsertionPointToStart(body);
  Value index = linalg::IndexOp::create(rewriter, generic.getLoc(), loopDim);
  Value real = arith::CmpIOp::create(rewriter, generic.getLoc(),
                                     arith::CmpIPredicate::ult, index, limit);
  for (OpOperand &init : generic.getDpsInitsMutable()) {
    BlockArgument out = generic.getMatchingBlockArgument(&init);
    unsigned i = generic.getTiedOpResult(&init).getResultNumber();
    Operation *combiner = yield.getOperand(i).getDefiningOp();
    if (!combiner || combiner->getNumOperands() != 2 ||
        !llvm::is_contained(combiner->getOperands(), out))
      return generic.emitOpError()
             << "reduces over the sample dimension into result #" << i
             << " without a combiner of the output; cannot skip padded "
                "samples (runtime-batch-size)";
    unsigned contribution = combiner->getOperand(0) == out ? 1 : 0;
    rewriter.setInsertionPoint(combiner);
    Value identity = arith::ConstantOp::create(
        rewriter, combiner->getLoc(), getIdentity(combiner, out.getType()));
    Value masked =
        arith::SelectOp::create(rewriter, combiner->getLoc(), real,
                                combiner->getOperand(contribution), identity);
    combiner->setOperand(contribution, masked);
  }
  return success();
}

void RuntimeBatchSizeRewriter::replaceSampleCounts() {
  // A step written with a dynamic sample dimension reads its sample counts
  // from shapes (gacc-prepare-step rewrote those); its constants are
  // constants, as when LibTorch runs the graph on B' samples.
  if (func->hasAttr(kDynamicBatchAttrName))
    return;
  int64_t batchSize = analysis.getBatchSize();
  SmallVector<arith::ConstantOp> constants;
  func.walk([&](arith::ConstantOp cst) { constants.push_back(cst); });
  for (arith::ConstantOp cst : constants) {
    std::optional<SampleCountForm> form = matchSampleCount(cst, batchSize);
    if (!form)
      continue;
    // Recognized by value alone: say so where it happens, since a constant
    // equal to B or 1/B by coincidence (a mean over B features) would be
    // rescaled too.
    cst.emitRemark() << "taken as the sample count "
                     << (*form == SampleCountForm::Count ? "B = " : "1/B, B = ")
                     << batchSize
                     << " (runtime-batch-size: B' at run time); a constant "
                        "that only equals it must not be, see "
                        "docs/TailSteps.md";
    auto type = cst.getType();
    Value scalar = getCount(cast<FloatType>(getElementTypeOrSelf(type)), *form);
    Value replacement = scalar;
    if (auto tensorType = dyn_cast<RankedTensorType>(type)) {
      OpBuilder::InsertionGuard guard(rewriter);
      setInsertionPointAfterPrologue(rewriter, func.getBody().front(),
                                     lastPrologueOp);
      Value empty =
          tensor::EmptyOp::create(rewriter, cst.getLoc(), tensorType.getShape(),
                                  tensorType.getElementType());
      replacement =
          linalg::FillOp::create(rewriter, cst.getLoc(), scalar, empty)
              .getResult(0);
      lastPrologueOp = replacement.getDefiningOp();
    }
    rewriter.replaceAllUsesWith(cst.getResult(), replacement);
    rewriter.eraseOp(cst);
  }
}

LogicalResult RuntimeBatchSizeRewriter::run() {
  int64_t batchSize = analysis.getBatchSize();
  if (batchSize < 3)
    return func.emitOpError()
           << "runtime-batch-size needs a batch of at least 3 samples, got "
           << batchSize
           << " (sample counts are recognized by value, and 1 and 1/2 are "
              "too common to be one)";

  // Collect first: the rewrites below create ops the analysis never saw.
  SmallVector<linalg::LinalgOp> reductions;
  for (Operation &op : func.getBody().front()) {
    const BatchOpInfo &info = analysis.getInfo(&op);
    if (info.kind == BatchClass::MicroBatchStatistic)
      return op.emitOpError(
          "computes a per-micro-batch statistic; runtime-batch-size does not "
          "support allow-micro-batch-statistics");
    // The rows of padded samples would be added too (and their ids need
    // not name a row).
    if (isa<gacc::ScatterAddOp>(op) && info.kind == BatchClass::Partial)
      return op.emitOpError(
          "sums over the samples by scatter-add; runtime-batch-size does not "
          "support it");
    auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
    if (!linalgOp || info.loopDim < 0)
      continue;
    if (linalgOp.getIteratorTypesArray()[info.loopDim] ==
        utils::IteratorType::reduction)
      reductions.push_back(linalgOp);
  }

  Location loc = func.getLoc();
  countArg = getOrAddSampleCountArgument(func);
  rewriter.setInsertionPointToStart(&func.getBody().front());
  count = tensor::ExtractOp::create(rewriter, loc, countArg, ValueRange{});
  lastPrologueOp = count.getDefiningOp();

  replaceSampleCounts();
  for (linalg::LinalgOp op : reductions)
    if (failed(maskReduction(op)))
      return failure();
  return success();
}

namespace {
struct RuntimeBatchSizePass
    : public gacc::impl::RuntimeBatchSizePassBase<RuntimeBatchSizePass> {
  using RuntimeBatchSizePassBase::RuntimeBatchSizePassBase;

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    // Micro-batch statistics are analyzed (with their warning) to be
    // rejected by name.
    auto step = analyzeStep(getOperation(), entry, /*allowStatistics=*/true,
                            /*foldDims=*/true);
    if (!step)
      return signalPassFailure();
    RuntimeBatchSizeRewriter rewriter(step->first, step->second);
    if (failed(rewriter.run()))
      return signalPassFailure();
  }
};
} // namespace

//===- PrepareStep.cpp - prepare frontend output ----------------*- C++ -*-===//
//
// The gacc-prepare-step pass: inlines the functions the training step calls
// and makes its scalar arguments and results rank-0 tensors (StepBoundary.cpp),
// specializes batch arguments whose sample dimension is dynamic to the
// `batch-size` option, canonicalizes and CSEs the training step (frontends emit
// `tensor.empty` of `?` sizes with casts, dead ops and `tensor.dim` chains that
// the batch analysis should not have to read), and returns results with the
// static types canonicalization found.
//
//===----------------------------------------------------------------------===//

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Analysis/UndefinedReads.h"
#include "gacc/Dialect/Gacc/IR/StepRoles.h"
#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#define DEBUG_TYPE "gacc-prepare-step"

namespace mlir::gacc {
#define GEN_PASS_DEF_PREPARESTEPPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Gives every batch argument of `func` whose sample dimension is dynamic
/// `batchSize` samples; its uses see the old type through a `tensor.cast`.
static LogicalResult specializeBatchSize(func::FuncOp func, int64_t batchSize) {
  if (func.isExternal())
    return success();
  Block &entry = func.getBody().front();
  OpBuilder builder = OpBuilder::atBlockBegin(&entry);
  bool changed = false;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    RoleInfo role = getArgumentRole(func, i);
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (role.role != Role::Batch || !type || role.index < 0 ||
        role.index >= type.getRank())
      continue; // The role verifier reports these.
    int64_t d = role.index;
    if (!type.isDynamicDim(d)) {
      if (batchSize > 0 && type.getDimSize(d) != batchSize)
        return func.emitOpError()
               << "batch-size=" << batchSize << " disagrees with the "
               << type.getDimSize(d) << " samples of batch argument #" << i;
      continue;
    }
    if (batchSize <= 0)
      return func.emitOpError()
             << "batch argument #" << i << " has a dynamic sample dimension ("
             << type << "); pass batch-size=N to specialize the step to N "
             << "samples";
    SmallVector<int64_t> shape(type.getShape());
    shape[d] = batchSize;
    auto staticType =
        RankedTensorType::get(shape, type.getElementType(), type.getEncoding());
    BlockArgument arg = func.getArgument(i);
    arg.setType(staticType);
    auto cast = tensor::CastOp::create(builder, arg.getLoc(), type, arg);
    arg.replaceAllUsesExcept(cast, cast);
    changed = true;
  }
  if (changed) {
    func.setFunctionType(FunctionType::get(
        func.getContext(), entry.getArgumentTypes(), func.getResultTypes()));
    func->setAttr(kDynamicBatchAttrName, builder.getUnitAttr());
  }
  return success();
}

/// Returns values that canonicalization proved static with their static
/// type: a result `tensor.cast` to a less static type is dropped.
/// Whether `op` passes an integer sample count on to a value (sitofp).
static bool isIntegerArith(Operation *op) {
  return isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::MulIOp,
             arith::AddIOp, arith::SubIOp, arith::DivSIOp, arith::DivUIOp,
             arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp,
             arith::ExtSIOp, arith::ExtUIOp, arith::TruncIOp, arith::MaxSIOp,
             arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp>(op);
}

/// runtime-batch-size: a sample count the step reads from a shape and uses
/// as a value (`tensor.dim` -> index_cast -> ... -> sitofp, as TorchToLinalg
/// emits for means and nll_loss's total weight) is the run-time count B'.
/// Each such `tensor.dim` of a batch argument's sample dimension, or of any
/// dynamic dimension (B * T elements become B' * T), is replaced on the
/// paths into `arith.sitofp`/`uitofp` by `dim * B' / B`; shape uses keep B.
static LogicalResult useRuntimeSampleCount(func::FuncOp func,
                                           int64_t batchSize) {
  if (func.isExternal())
    return success();
  Block &entry = func.getBody().front();
  // B: the batch arguments' static sample count, or batch-size.
  int64_t staticCount = batchSize;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    RoleInfo role = getArgumentRole(func, i);
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (role.role == Role::Batch && type && role.index >= 0 &&
        role.index < type.getRank() && !type.isDynamicDim(role.index))
      staticCount = type.getDimSize(role.index);
  }
  if (staticCount <= 0)
    return success(); // specializeBatchSize reports the missing batch-size.

  // In a static step, the batch analysis tells which dimension of an
  // intermediate holds samples (a [B, T] batch collapsed to [B * T]); in a
  // dynamic one, the dynamic dimensions are the sample dimensions.
  bool dynamicStep = hasDynamicSampleDimension(func);
  std::optional<BatchAnalysis> analysis;
  if (!dynamicStep) {
    ScopedDiagnosticHandler quiet(func.getContext(),
                                  [](Diagnostic &) { return success(); });
    BatchAnalysisOptions options;
    options.allowMicroBatchStatistics = true;
    FailureOr<BatchAnalysis> result = BatchAnalysis::run(func, options);
    if (succeeded(result))
      analysis = std::move(*result);
  }
  // Whether `dim` reads a sample dimension: true, false, or unknown
  // (std::nullopt: a static step the analysis could not classify).
  auto isSampleDim = [&](tensor::DimOp dim) -> std::optional<bool> {
    std::optional<int64_t> index = dim.getConstantIndex();
    auto type = dyn_cast<RankedTensorType>(dim.getSource().getType());
    if (!index || !type || *index < 0 || *index >= type.getRank())
      return false;
    if (type.isDynamicDim(*index))
      return true;
    Value source = dim.getSource();
    while (auto cast = source.getDefiningOp<tensor::CastOp>())
      source = cast.getSource();
    if (auto arg = dyn_cast<BlockArgument>(source);
        arg && arg.getOwner() == &entry) {
      RoleInfo role = getArgumentRole(func, arg.getArgNumber());
      return role.role == Role::Batch && role.index == *index;
    }
    if (dynamicStep)
      return false;
    if (!analysis)
      return std::nullopt;
    const BatchValueInfo &info = analysis->getInfo(source);
    return info.kind == BatchClass::PerSample && info.dim == *index;
  };
  bool unknown = false;

  OpBuilder builder(func.getContext());
  Value countIndex;
  BlockArgument countArg = getOrAddSampleCountArgument(func);
  // A scaled sample count from an earlier run (the runner specializes the
  // step once more before the pipeline): `dim * index_cast(B')`.
  auto isScaled = [&](Operation *op) {
    auto mul = dyn_cast<arith::MulIOp>(op);
    if (!mul)
      return false;
    return llvm::any_of(mul->getOperands(), [&](Value v) {
      auto cast = v.getDefiningOp<arith::IndexCastOp>();
      auto extract =
          cast ? cast.getIn().getDefiningOp<tensor::ExtractOp>() : nullptr;
      return extract && extract.getTensor() == countArg;
    });
  };
  auto getCountIndex = [&]() {
    if (countIndex)
      return countIndex;
    BlockArgument arg = countArg;
    builder.setInsertionPointToStart(&entry);
    Value count =
        tensor::ExtractOp::create(builder, arg.getLoc(), arg, ValueRange{});
    countIndex = arith::IndexCastOp::create(builder, arg.getLoc(),
                                            builder.getIndexType(), count);
    return countIndex;
  };
  // The copy of an integer expression with the sample dimensions scaled.
  DenseMap<Value, Value> rebuilt;
  std::function<Value(Value)> rebuild = [&](Value v) -> Value {
    if (auto it = rebuilt.find(v); it != rebuilt.end())
      return it->second;
    Value result = v;
    Operation *def = v.getDefiningOp();
    auto dim = dyn_cast_or_null<tensor::DimOp>(def);
    std::optional<bool> sampleDim = dim ? isSampleDim(dim) : false;
    if (!sampleDim) {
      dim.emitOpError()
          << "reads a size that becomes a value (through arith.sitofp), and "
             "the batch analysis cannot tell whether it counts samples; "
             "runtime-batch-size needs it to (the step's first problem is "
             "reported without runtime-batch-size)";
      unknown = true;
    } else if (*sampleDim) {
      Value count = getCountIndex();
      builder.setInsertionPointAfter(dim);
      Location loc = dim.getLoc();
      Value scaled = arith::MulIOp::create(builder, loc, dim, count);
      result = arith::DivUIOp::create(
          builder, loc, scaled,
          arith::ConstantIndexOp::create(builder, loc, staticCount));
    } else if (def && isIntegerArith(def) && !isScaled(def)) {
      SmallVector<Value> operands;
      bool changed = false;
      for (Value operand : def->getOperands()) {
        operands.push_back(rebuild(operand));
        changed |= operands.back() != operand;
      }
      if (changed) {
        builder.setInsertionPointAfter(def);
        IRMapping mapping;
        mapping.map(def->getOperands(), operands);
        result = builder.clone(*def, mapping)->getResult(0);
      }
    }
    rebuilt[v] = result;
    return result;
  };
  SmallVector<Operation *> roots;
  func.walk([&](Operation *op) {
    if (isa<arith::SIToFPOp, arith::UIToFPOp>(op))
      roots.push_back(op);
  });
  for (Operation *root : roots)
    root->setOperand(0, rebuild(root->getOperand(0)));
  return failure(unknown);
}

static void refineResultTypes(func::FuncOp func) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return;
  auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
  if (!ret)
    return;
  bool changed = false;
  for (OpOperand &operand : ret->getOpOperands()) {
    auto cast = operand.get().getDefiningOp<tensor::CastOp>();
    if (!cast)
      continue;
    auto from = dyn_cast<RankedTensorType>(cast.getSource().getType());
    auto to = dyn_cast<RankedTensorType>(cast.getType());
    if (from && to && from.hasStaticShape() && !to.hasStaticShape()) {
      operand.set(cast.getSource());
      // A cast left without uses would still hold a dynamic type.
      if (cast->use_empty())
        cast->erase();
      changed = true;
    }
  }
  if (changed)
    func.setFunctionType(FunctionType::get(
        func.getContext(), func.getArgumentTypes(), ret.getOperandTypes()));
}

namespace {
/// The static type that `a` and `b` (same rank) both refine to: each
/// dimension static where either is. Null when they disagree.
RankedTensorType joinShapes(RankedTensorType a, RankedTensorType b) {
  if (a.getRank() != b.getRank())
    return {};
  SmallVector<int64_t> shape;
  for (auto [x, y] : llvm::zip(a.getShape(), b.getShape())) {
    if (!ShapedType::isDynamic(x) && !ShapedType::isDynamic(y) && x != y)
      return {};
    shape.push_back(ShapedType::isDynamic(x) ? y : x);
  }
  return RankedTensorType::get(shape, a.getElementType(), a.getEncoding());
}

/// An elementwise op on tensors (`arith.addf %a, %b : tensor<?x4xf32>`, as
/// TorchToLinalg leaves some adds) whose operands are casts from more static
/// types runs on those types; its result is cast back. After the batch
/// arguments are specialized, this carries the static sample count through
/// such ops, which upstream canonicalization does not.
struct FoldCastsIntoElementwiseOp
    : public OpTraitRewritePattern<OpTrait::Elementwise> {
  using OpTraitRewritePattern::OpTraitRewritePattern;

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (op->getNumResults() != 1 || op->getNumRegions() != 0 ||
        !(op->hasTrait<OpTrait::SameOperandsAndResultShape>() ||
          op->hasTrait<OpTrait::SameOperandsAndResultType>()))
      return failure();
    auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!resultType || resultType.hasStaticShape())
      return failure();
    RankedTensorType joined = resultType;
    bool anyCast = false;
    SmallVector<Value> operands;
    for (Value operand : op->getOperands()) {
      auto cast = operand.getDefiningOp<tensor::CastOp>();
      if (cast && tensor::canFoldIntoConsumerOp(cast)) {
        operand = cast.getSource();
        anyCast = true;
      }
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!type)
        return failure();
      joined = joinShapes(joined, type);
      if (!joined)
        return failure();
      operands.push_back(operand);
    }
    if (!anyCast || joined == resultType)
      return failure();
    for (Value &operand : operands) {
      auto type = cast<RankedTensorType>(operand.getType());
      auto want = RankedTensorType::get(
          joined.getShape(), type.getElementType(), type.getEncoding());
      if (type != want)
        operand = tensor::CastOp::create(rewriter, op->getLoc(), want, operand);
    }
    OperationState state(op->getLoc(), op->getName(), operands,
                         TypeRange{joined}, op->getAttrs(),
                         op->getSuccessors());
    Operation *refined = rewriter.create(state);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(op, resultType,
                                                refined->getResult(0));
    return success();
  }
};

/// `tensor.concat` of casts from more static types concatenates the sources;
/// upstream's InferConcatResultType then refines its result type.
struct FoldCastsIntoConcat : public OpRewritePattern<tensor::ConcatOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::ConcatOp concat,
                                PatternRewriter &rewriter) const override {
    SmallVector<Value> inputs;
    bool changed = false;
    for (Value input : concat.getInputs()) {
      auto cast = input.getDefiningOp<tensor::CastOp>();
      if (cast && tensor::canFoldIntoConsumerOp(cast)) {
        inputs.push_back(cast.getSource());
        changed = true;
      } else {
        inputs.push_back(input);
      }
    }
    if (!changed)
      return failure();
    SmallVector<Type> types = llvm::to_vector(
        llvm::map_range(inputs, [](Value v) { return v.getType(); }));
    if (!llvm::all_of(types, llvm::IsaPred<RankedTensorType>))
      return failure();
    RankedTensorType inferred =
        tensor::ConcatOp::inferResultType(concat.getDim(), types);
    RankedTensorType refined = joinShapes(inferred, concat.getResultType());
    if (!refined)
      return failure();
    auto folded = tensor::ConcatOp::create(rewriter, concat.getLoc(), refined,
                                           concat.getDim(), inputs);
    rewriter.replaceOpWithNewOp<tensor::CastOp>(concat, concat.getResultType(),
                                                folded);
    return success();
  }
};

/// `tensor.pad` whose amounts are constant SSA values (`low[%c0, %c0]
/// high[%c0, %c1]`, as upstream's tosa-to-tensor lowers `tosa.pad`) takes
/// them as static amounts, which upstream canonicalization does not do. The
/// analysis then sees statically that the sample dimension is not padded.
struct FoldConstantPadAmounts : public OpRewritePattern<tensor::PadOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(tensor::PadOp pad,
                                PatternRewriter &rewriter) const override {
    auto isConstant = [](Value v) {
      return getConstantIntValue(v).has_value();
    };
    if (!llvm::any_of(pad.getLow(), isConstant) &&
        !llvm::any_of(pad.getHigh(), isConstant))
      return failure();
    auto fold = [&](SmallVector<OpFoldResult> amounts) {
      for (OpFoldResult &amount : amounts)
        if (std::optional<int64_t> c = getConstantIntValue(amount))
          amount = rewriter.getIndexAttr(*c);
      return amounts;
    };
    SmallVector<OpFoldResult> low = fold(pad.getMixedLowPad());
    SmallVector<OpFoldResult> high = fold(pad.getMixedHighPad());
    auto folded =
        tensor::PadOp::create(rewriter, pad.getLoc(), pad.getResultType(),
                              pad.getSource(), low, high, pad.getNofold());
    rewriter.inlineRegionBefore(pad.getRegion(), folded.getRegion(),
                                folded.getRegion().end());
    rewriter.replaceOp(pad, folded.getResult());
    return success();
  }
};

struct PrepareStepPass
    : public gacc::impl::PrepareStepPassBase<PrepareStepPass> {
  using PrepareStepPassBase::PrepareStepPassBase;

  /// Upstream's canonicalization, plus the casts of the specialized
  /// arguments carried through the ops it does not refine, TOSA's
  /// single-batch GEMMs as matmuls and constant pad amounts; then CSE.
  LogicalResult canonicalizeStep(func::FuncOp func) {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldCastsIntoElementwiseOp, FoldCastsIntoConcat,
                 FoldConstantPadAmounts>(&getContext());
    populateUnitBatchMatmulPatterns(patterns);
    for (Dialect *dialect : getContext().getLoadedDialects())
      dialect->getCanonicalizationPatterns(patterns);
    for (RegisteredOperationName op : getContext().getRegisteredOperations())
      op.getCanonicalizationPatterns(patterns, &getContext());
    // As the canonicalizer pass: not converging within the iteration limit
    // is not an error.
    (void)applyPatternsGreedily(func, std::move(patterns));
    OpPassManager pm(func::FuncOp::getOperationName());
    pm.addPass(createCSEPass());
    return runPipeline(pm, func);
  }

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    if (batchSize < 0) {
      getOperation().emitError()
          << "option batch-size must be >= 0, got " << batchSize;
      return signalPassFailure();
    }
    func::FuncOp func = findTrainingStep(getOperation(), entry);
    if (!func)
      return signalPassFailure();
    // Every later pass sees one function whose boundary holds tensors only.
    if (failed(inlineStepCalls(func)) || failed(boxScalarBoundary(func)))
      return signalPassFailure();
    if (runtimeBatchSize && failed(useRuntimeSampleCount(func, batchSize)))
      return signalPassFailure();
    if (failed(specializeBatchSize(func, batchSize)))
      return signalPassFailure();
    // Loops over samples (and per-sample loops over other dimensions) become
    // the linalg ops they write out, for the batch analysis to split.
    raiseLoopNests(func);
    // Before canonicalization folds a generic that yields its tensor.empty
    // init into the empty itself: the error names the op as written.
    if (failed(verifyNoUndefinedReads(func)))
      return signalPassFailure();
    if (canonicalize && !func.isExternal()) {
      if (failed(canonicalizeStep(func)))
        return signalPassFailure();
      // Loops whose bounds became constants (a dynamic batch read with
      // tensor.dim, now specialized) are raised now, and the casts of their
      // results folded.
      if (raiseLoopNests(func) && failed(canonicalizeStep(func)))
        return signalPassFailure();
    }
    refineResultTypes(func);
  }
};
} // namespace

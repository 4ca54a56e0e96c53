//===- BatchAnalysis.cpp - batch dataflow analysis --------------*- C++ -*-===//
//
// Implements the batch dataflow analysis: one forward walk over the
// training-step function in program order that propagates the sample
// dimension through linalg indexing maps, elementwise ops and tensor reshapes,
// classifies each value, and reclassifies batch statistics that flow back into
// per-sample work (prologue statistics, or rejected micro-batch statistics).
//
//===----------------------------------------------------------------------===//

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Analysis/LoopNest.h"
#include "gacc/Analysis/UndefinedReads.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Support/IRUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"

#define DEBUG_TYPE "gacc-batch-analysis"

using namespace mlir;
using namespace mlir::gacc;

StringRef mlir::gacc::stringifyBatchClass(BatchClass kind) {
  switch (kind) {
  case BatchClass::Invariant:
    return "invariant";
  case BatchClass::PerSample:
    return "per-sample";
  case BatchClass::Partial:
    return "partial";
  case BatchClass::Epilogue:
    return "epilogue";
  case BatchClass::Prologue:
    return "prologue statistic";
  case BatchClass::MicroBatchStatistic:
    return "micro-batch statistic";
  }
  llvm_unreachable("unknown batch class");
}

LogicalResult mlir::gacc::verifyStepRoles(func::FuncOp func) {
  if (func.isExternal())
    return func.emitOpError("expected a training step with a body");
  int numLoss = 0;
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    if (getResultRole(func, i).role != Role::Loss)
      continue;
    ++numLoss;
    auto type = dyn_cast<RankedTensorType>(func.getResultTypes()[i]);
    if (!type || type.getRank() != 0)
      return func.emitOpError()
             << "expected the gacc.loss result #" << i
             << " to be a rank-0 tensor, got " << func.getResultTypes()[i]
             << (!func.getResultTypes()[i].isIntOrIndexOrFloat()
                     ? ""
                     : " (gacc-prepare-step, the first pass of "
                       "gacc-pipeline, makes a scalar loss a rank-0 tensor)");
  }
  if (numLoss == 0)
    return func.emitOpError("expected one result marked gacc.loss");
  if (numLoss > 1)
    return func.emitOpError("expected one result marked gacc.loss, got ")
           << numLoss;

  int64_t batchSize = -1, firstArg = -1;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    RoleInfo role = getArgumentRole(func, i);
    if (role.multiple)
      return func.emitOpError()
             << "argument #" << i << " has more than one role";
    if (role.role != Role::Batch)
      continue;
    auto type = cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (type.isDynamicDim(role.index))
      return func.emitOpError()
             << "batch argument #" << i << " has a dynamic sample dimension ("
             << type
             << "); specialize it with the batch-size option of gacc-pipeline "
                "(or gacc-prepare-step)";
    int64_t count = type.getDimSize(role.index);
    if (batchSize < 0) {
      batchSize = count;
      firstArg = i;
      continue;
    }
    if (count != batchSize)
      return func.emitOpError()
             << "batch argument #" << i << " has " << count
             << " samples but batch argument #" << firstArg << " has "
             << batchSize << "; all batch arguments must have one sample count";
  }
  if (batchSize < 0)
    return func.emitOpError("expected at least one argument marked gacc.batch");
  if (batchSize == 0)
    return func.emitOpError("expected a non-empty batch");
  return success();
}

namespace mlir::gacc {
/// Builds a BatchAnalysis; kept out of the header.
class BatchAnalysisBuilder {
public:
  BatchAnalysisBuilder(BatchAnalysis &result,
                       const BatchAnalysisOptions &options)
      : result(result), options(options) {}

  LogicalResult run(func::FuncOp func);

private:
  BatchValueInfo &info(Value v) { return result.values[v]; }
  LogicalResult visit(Operation *op);
  LogicalResult visitPerSample(Operation *op,
                               ArrayRef<Value> statisticOperands);
  LogicalResult visitLinalg(linalg::LinalgOp op);
  LogicalResult visitScatterAdd(gacc::ScatterAddOp op, bool dependsOnParam);
  LogicalResult visitCapturedSamples(linalg::LinalgOp op, int64_t &loopDim,
                                     int64_t &factor, int64_t &origin,
                                     Operation *&unitCapture);
  LogicalResult reclassifyStatistic(Operation *user, Value statistic);
  void setResults(Operation *op, BatchValueInfo info) {
    for (Value r : op->getResults())
      result.values[r] = info;
  }

  BatchAnalysis &result;
  const BatchAnalysisOptions &options;
};
} // namespace mlir::gacc

/// Returns the operands of `op` and the values its regions capture from
/// above (a linalg body may use a scalar computed outside).
static SmallVector<Value> getUsedValues(Operation *op) {
  SmallVector<Value> used(op->getOperands());
  if (op->getNumRegions() == 0)
    return used;
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  for (Value v : captured)
    if (!llvm::is_contained(used, v))
      used.push_back(v);
  return used;
}

Combiner mlir::gacc::getCombiner(Operation *op) {
  return TypeSwitch<Operation *, Combiner>(op)
      .Case<arith::AddFOp>([](auto) { return Combiner::AddF; })
      .Case<arith::AddIOp>([](auto) { return Combiner::AddI; })
      .Case<arith::MaximumFOp>([](auto) { return Combiner::MaxF; })
      .Case<arith::MinimumFOp>([](auto) { return Combiner::MinF; })
      .Case<arith::MaxNumFOp>([](auto) { return Combiner::MaxNumF; })
      .Case<arith::MinNumFOp>([](auto) { return Combiner::MinNumF; })
      .Default([](auto) { return Combiner::None; });
}

/// Whether `value` (in a reduction body) is computed from one of the body's
/// output arguments.
static bool readsRunningValue(Value value, linalg::LinalgOp op) {
  Block *body = op.getBlock();
  return isComputedFrom(value, op, [&](Value v) {
    auto arg = dyn_cast<BlockArgument>(v);
    return arg && arg.getOwner() == body &&
           arg.getArgNumber() >= static_cast<unsigned>(op.getNumDpsInputs());
  });
}

/// Returns the combiner of a reduction body that yields `yielded` with the
/// output block argument `outArg`.
static Combiner matchCombiner(Value yielded, BlockArgument outArg) {
  // The running value may only feed the combiner: `out + out * x` is a
  // recurrence, not a sum of per-sample contributions.
  if (!outArg.hasOneUse())
    return Combiner::None;
  Operation *def = yielded.getDefiningOp();
  if (!def || def->getNumOperands() != 2)
    return Combiner::None;
  Value lhs = def->getOperand(0), rhs = def->getOperand(1);
  if (lhs != outArg && rhs != outArg)
    return Combiner::None;
  Value other = lhs == outArg ? rhs : lhs;
  if (other == outArg)
    return Combiner::None;
  return getCombiner(def);
}

/// Returns the linalg op whose body `op` is nested in, or null.
static Operation *getEnclosingLinalg(Operation *op) {
  for (Operation *p = op->getParentOp(); p; p = p->getParentOp())
    if (isa<linalg::LinalgOp>(p))
      return p;
  return nullptr;
}

LogicalResult BatchAnalysisBuilder::visitCapturedSamples(
    linalg::LinalgOp op, int64_t &loopDim, int64_t &factor, int64_t &origin,
    Operation *&unitCapture) {
  // A per-sample tensor captured into the body exists inside a micro-batch
  // only for the micro-batch's samples, while `linalg.index` of the sample
  // loop counts global positions. The only exact read is therefore a
  // `tensor.extract` whose index along the sample dimension is the sample
  // loop itself (nll_loss, gathers of the current sample); micro-batching
  // reads it with the region-local index. Anything else reads other samples.
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(op->getRegions(), captured);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (Value v : captured) {
    const BatchValueInfo &vi = info(v);
    if (vi.kind != BatchClass::PerSample)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (!op->isProperAncestor(user))
        continue;
      auto extract = dyn_cast<tensor::ExtractOp>(user);
      linalg::IndexOp index;
      if (extract && extract.getTensor() == v) {
        Value sampleIndex = extract.getIndices()[vi.dim];
        // A batch of one sample: canonicalization folds the index of the
        // unit sample loop to the constant 0, which reads the only sample.
        if (result.batchSize * vi.factor == 1 &&
            matchPattern(sampleIndex, m_Zero())) {
          if (!unitCapture)
            unitCapture = extract;
          continue;
        }
        index = sampleIndex.getDefiningOp<linalg::IndexOp>();
      }
      if (!index || getEnclosingLinalg(index) != op.getOperation()) {
        InFlightDiagnostic diag =
            op.emitOpError()
            << "reads the per-sample tensor captured from above (samples of "
               "batch argument #"
            << vi.originArg
            << ") other than with tensor.extract indexed by the sample loop "
               "along its sample dimension "
            << vi.dim
            << "; a micro-batch holds only its own samples, so the read "
               "cannot be split";
        diag.attachNote(user->getLoc()) << "the read";
        return diag;
      }
      int64_t d = index.getDim();
      if ((loopDim >= 0 && (d != loopDim || vi.factor != factor)) ||
          ranges[d] != result.batchSize * vi.factor) {
        InFlightDiagnostic diag =
            op.emitOpError()
            << "reads the per-sample tensor captured from above with loop " << d
            << ", which does not run over the samples of the op"
            << (loopDim >= 0
                    ? " (its sample loop is " + std::to_string(loopDim) + ")"
                    : std::string());
        diag.attachNote(user->getLoc()) << "the read";
        return diag;
      }
      if (loopDim < 0) {
        loopDim = d;
        factor = vi.factor;
        origin = vi.originArg;
      }
    }
  }
  return success();
}

LogicalResult BatchAnalysisBuilder::visitLinalg(linalg::LinalgOp op) {
  if (!op.hasPureTensorSemantics())
    return op.emitOpError("expected tensor semantics in a training step");
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  int64_t loopDim = -1, factor = 1, origin = -1;
  bool dependsOnParam = false;
  OpOperand *unitOperand = nullptr;
  // Values captured into the body count too (an embedding table read by
  // tensor.extract).
  for (Value v : getUsedValues(op))
    dependsOnParam |= info(v).dependsOnParam;
  for (OpOperand &operand : op->getOpOperands()) {
    const BatchValueInfo &in = info(operand.get());
    if (in.kind != BatchClass::PerSample)
      continue;
    AffineMap map = maps[operand.getOperandNumber()];
    AffineExpr sampleExpr = map.getResult(in.dim);
    auto dimExpr = dyn_cast<AffineDimExpr>(sampleExpr);
    // A batch of one sample (B = 1, one element per sample) may be read with
    // the constant index 0, as frontends broadcast size-1 dimensions.
    if (auto cst = dyn_cast<AffineConstantExpr>(sampleExpr);
        cst && cst.getValue() == 0 && result.batchSize * in.factor == 1) {
      if (!unitOperand)
        unitOperand = &operand;
      continue;
    }
    if (!dimExpr) {
      std::string expr;
      llvm::raw_string_ostream os(expr);
      map.getResult(in.dim).print(os);
      return op.emitOpError() << "indexes the sample dimension of operand #"
                              << operand.getOperandNumber() << " with '" << expr
                              << "'; only a plain loop dimension is supported";
    }
    int64_t d = dimExpr.getPosition();
    if (loopDim < 0) {
      loopDim = d;
      factor = in.factor;
      origin = in.originArg;
      continue;
    }
    if (d != loopDim || in.factor != factor) {
      InFlightDiagnostic diag =
          op.emitOpError() << "combines samples of operand #"
                           << operand.getOperandNumber()
                           << " with other samples (sample dimension on loop "
                           << d << " and loop " << loopDim
                           << "); cross-sample ops are not supported";
      return diag;
    }
  }
  Operation *unitCapture = nullptr;
  if (failed(visitCapturedSamples(op, loopDim, factor, origin, unitCapture)))
    return failure();
  if (loopDim < 0 && (unitOperand || unitCapture)) {
    // B = 1 read through constant 0: the sample loop is a unit loop of the
    // first output (where an operand keeps its sample, at the same position).
    AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t position = unitOperand ? info(unitOperand->get()).dim : -1;
    for (auto [pos, expr] : llvm::enumerate(outMap.getResults())) {
      if (position >= 0 && static_cast<int64_t>(pos) != position)
        continue;
      if (auto d = dyn_cast<AffineDimExpr>(expr);
          d && ranges[d.getPosition()] == 1) {
        loopDim = d.getPosition();
        break;
      }
    }
    factor = 1;
    origin = unitOperand ? info(unitOperand->get()).originArg : -1;
    if (loopDim < 0) {
      InFlightDiagnostic diag =
          op.emitOpError()
          << "reads the single sample of a batch of one with the constant "
             "index 0 but no unit loop of the result carries it; index the "
             "sample dimension with a loop";
      if (unitCapture)
        diag.attachNote(unitCapture->getLoc()) << "the read";
      return diag;
    }
  }
  if (loopDim < 0)
    return op.emitOpError("uses a per-sample value without a loop over its "
                          "samples; a micro-batch holds only its own samples");
  // Inside a region the sample loop counts only the region's samples, and
  // every operand it indexes is sliced (or is per-sample) along the one
  // dimension it indexes. Any other use of the loop in a map (a second
  // dimension, `d0 + 1`, `d0 floordiv 2`) would read other samples.
  AffineExpr loopExpr = getAffineDimExpr(loopDim, op.getContext());
  for (OpOperand &operand : op->getOpOperands()) {
    const BatchValueInfo &in = info(operand.get());
    AffineMap map = maps[operand.getOperandNumber()];
    bool seen = false;
    for (auto [pos, expr] : llvm::enumerate(map.getResults())) {
      if (!expr.isFunctionOfDim(loopDim))
        continue;
      bool samplePos = in.kind != BatchClass::PerSample ||
                       static_cast<int64_t>(pos) == in.dim;
      if (expr == loopExpr && samplePos && !seen) {
        seen = true;
        continue;
      }
      std::string text;
      llvm::raw_string_ostream os(text);
      expr.print(os);
      return op.emitOpError()
             << "indexes dimension " << pos << " of operand #"
             << operand.getOperandNumber() << " with '" << text
             << "', which involves the sample loop d" << loopDim
             << "; the sample loop may index one dimension of each operand, "
                "as a plain loop index";
    }
  }
  BatchOpInfo &opInfo = result.ops[op];
  opInfo.loopDim = loopDim;
  opInfo.factor = factor;
  auto iterators = op.getIteratorTypesArray();
  if (iterators[loopDim] == utils::IteratorType::parallel) {
    opInfo.kind = BatchClass::PerSample;
    for (OpResult res : op->getResults()) {
      AffineMap map = op.getIndexingMapMatchingResult(res);
      std::optional<unsigned> pos =
          map.getResultPosition(getAffineDimExpr(loopDim, op.getContext()));
      if (!pos)
        return op.emitOpError()
               << "drops the sample dimension of result #"
               << res.getResultNumber() << " without reducing over it";
      BatchValueInfo out;
      out.kind = BatchClass::PerSample;
      out.dim = *pos;
      out.factor = factor;
      out.dependsOnParam = dependsOnParam;
      out.originArg = origin;
      result.values[res] = out;
    }
    return success();
  }

  // A reduction over the sample dimension: every result is a partial whose
  // combiner comes from the body. A result indexed by the "reduction" loop
  // (which linalg's verifier accepts) has no meaning to split.
  for (OpResult res : op->getResults()) {
    AffineMap map = op.getIndexingMapMatchingResult(res);
    if (std::optional<unsigned> pos = map.getResultPosition(loopExpr))
      return op.emitOpError()
             << "marks the sample loop d" << loopDim
             << " as a reduction, but result #" << res.getResultNumber()
             << " is indexed by it (dimension " << *pos
             << "); a loop that indexes a result must be 'parallel'";
  }
  opInfo.kind = BatchClass::Partial;
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  for (OpResult res : op->getResults()) {
    unsigned i = res.getResultNumber();
    OpOperand *init = op.getDpsInitOperand(i);
    if (info(init->get()).kind == BatchClass::PerSample)
      return op.emitOpError() << "reduces over the sample dimension into a "
                                 "per-sample init operand #"
                              << init->getOperandNumber();
    Combiner combiner =
        matchCombiner(yield.getOperand(i), op.getMatchingBlockArgument(init));
    // Each output's contribution must not read another output's running
    // value (`n1 = out1 + (out0 + w x)` is a recurrence over the samples).
    if (combiner != Combiner::None) {
      Operation *def = yield.getOperand(i).getDefiningOp();
      BlockArgument outArg = op.getMatchingBlockArgument(init);
      Value contribution = def->getOperand(0) == outArg ? def->getOperand(1)
                                                        : def->getOperand(0);
      if (readsRunningValue(contribution, op))
        combiner = Combiner::None;
    }
    if (combiner == Combiner::None)
      return op.emitOpError()
             << "reduces over the sample dimension with a combiner that does "
                "not split over micro-batches; expected addf, addi, "
                "maximumf or minimumf of the output (or maxnumf, minnumf), "
                "adding a term that reads no output";
    opInfo.combiners.push_back(combiner);
    BatchValueInfo out;
    out.kind = BatchClass::Partial;
    out.dependsOnParam = dependsOnParam;
    out.originArg = origin;
    result.values[res] = out;
  }
  return success();
}

LogicalResult BatchAnalysisBuilder::visitScatterAdd(gacc::ScatterAddOp op,
                                                    bool dependsOnParam) {
  // result[indices[p], j...] += updates[p, j...] sums over the positions p:
  // with the samples on the same position dimension of indices and updates
  // it is a sum over the samples, split exactly like a linalg reduction
  // (each micro-batch adds its own rows into the accumulator). A sample
  // dimension anywhere else would read or write other samples.
  const BatchValueInfo &indices = info(op.getIndices());
  const BatchValueInfo &updates = info(op.getUpdates());
  const BatchValueInfo &init = info(op.getInit());
  if (init.kind != BatchClass::Invariant && init.kind != BatchClass::Prologue)
    return op.emitOpError()
           << "accumulates into an init that is "
           << stringifyBatchClass(init.kind)
           << "; the accumulator of a sum over the samples must not depend "
              "on the batch";
  if (indices.kind != BatchClass::PerSample ||
      updates.kind != BatchClass::PerSample)
    return op.emitOpError()
           << "has the sample dimension only in its "
           << (indices.kind == BatchClass::PerSample ? "indices" : "updates")
           << " (the "
           << (indices.kind == BatchClass::PerSample ? "updates are "
                                                     : "indices are ")
           << stringifyBatchClass(indices.kind == BatchClass::PerSample
                                      ? updates.kind
                                      : indices.kind)
           << "); a micro-batch holds only its own samples, so indices and "
              "updates must both carry them";
  int64_t k = op.getNumPositionDims();
  if (updates.dim >= k)
    return op.emitOpError()
           << "has the sample dimension of its updates at dimension "
           << updates.dim << ", inside the row (the positions are dimensions 0 "
           << "to " << k - 1 << "); only a sum over the samples splits";
  if (indices.dim != updates.dim || indices.factor != updates.factor)
    return op.emitOpError()
           << "has the samples of its indices at dimension " << indices.dim
           << (indices.factor != 1 ? " x" + std::to_string(indices.factor)
                                   : std::string())
           << " but those of its updates at dimension " << updates.dim
           << (updates.factor != 1 ? " x" + std::to_string(updates.factor)
                                   : std::string())
           << "; they must be the same position dimension";
  BatchOpInfo &opInfo = result.ops[op];
  opInfo.kind = BatchClass::Partial;
  opInfo.loopDim = indices.dim;
  opInfo.factor = indices.factor;
  opInfo.combiners = {Combiner::AddF};
  BatchValueInfo out;
  out.kind = BatchClass::Partial;
  out.dependsOnParam = dependsOnParam;
  out.originArg = updates.originArg;
  setResults(op, out);
  return success();
}

/// Returns the reassociation group of `groups` that contains `dim`, and the
/// position of `dim` in it.
static std::pair<int64_t, int64_t>
findGroup(ArrayRef<ReassociationIndices> groups, int64_t dim) {
  for (auto [g, group] : llvm::enumerate(groups))
    for (auto [p, d] : llvm::enumerate(group))
      if (d == dim)
        return {g, p};
  return {-1, -1};
}

LogicalResult
BatchAnalysisBuilder::visitPerSample(Operation *op,
                                     ArrayRef<Value> statisticOperands) {
  // Find the per-sample operand that defines the sample dimension.
  const BatchValueInfo *in = nullptr;
  bool dependsOnParam = false;
  for (Value v : getUsedValues(op)) {
    dependsOnParam |= info(v).dependsOnParam;
    if (!in && info(v).kind == BatchClass::PerSample)
      in = &info(v);
  }
  BatchValueInfo out = *in;
  out.dependsOnParam = dependsOnParam;
  int64_t batch = result.batchSize;

  LogicalResult status =
      TypeSwitch<Operation *, LogicalResult>(op)
          .Case<linalg::LinalgOp>(
              [&](linalg::LinalgOp linalgOp) -> LogicalResult {
                return visitLinalg(linalgOp);
              })
          .Case<gacc::ScatterAddOp>([&](gacc::ScatterAddOp scatter) {
            return visitScatterAdd(scatter, dependsOnParam);
          })
          .Case<tensor::CastOp>([&](auto) -> LogicalResult {
            setResults(op, out);
            result.ops[op].kind = BatchClass::PerSample;
            return success();
          })
          .Case<tensor::DimOp>([&](auto) {
            // Shapes are static: the dimension is a constant.
            setResults(op, BatchValueInfo());
            return success();
          })
          .Case<tensor::CollapseShapeOp>([&](tensor::CollapseShapeOp c)
                                             -> LogicalResult {
            auto groups = c.getReassociationIndices();
            auto [g, pos] = findGroup(groups, in->dim);
            // Unit dimensions may precede the samples in their group.
            ArrayRef<int64_t> group = groups[g];
            for (int64_t d : group.take_front(pos))
              if (c.getSrcType().getDimSize(d) != 1)
                return c.emitOpError()
                       << "collapses the sample dimension " << in->dim
                       << " into an inner position of its group; the sample "
                          "dimension must be the outermost of its group";
            int64_t f = in->factor;
            for (int64_t d : group.drop_front(pos + 1))
              f *= c.getSrcType().getDimSize(d);
            out.dim = g;
            out.factor = f;
            setResults(op, out);
            result.ops[op].kind = BatchClass::PerSample;
            return success();
          })
          .Case<tensor::ExpandShapeOp>(
              [&](tensor::ExpandShapeOp e) -> LogicalResult {
                auto groups = e.getReassociationIndices();
                const ReassociationIndices &group = groups[in->dim];
                // Leading unit dimensions of the group carry no samples.
                auto leadIt = llvm::find_if(group, [&](int64_t d) {
                  return e.getResultType().getDimSize(d) != 1;
                });
                int64_t leadDim =
                    leadIt == group.end() ? group.back() : *leadIt;
                int64_t lead = e.getResultType().getDimSize(leadDim);
                if (lead % batch != 0 || in->factor % (lead / batch) != 0)
                  return e.emitOpError()
                         << "splits the sample dimension " << in->dim
                         << " so that its outermost part (" << lead
                         << ") is not a multiple of the " << batch
                         << " samples";
                out.dim = leadDim;
                out.factor = lead / batch;
                setResults(op, out);
                result.ops[op].kind = BatchClass::PerSample;
                return success();
              })
          .Case<tensor::ExtractSliceOp>([&](tensor::ExtractSliceOp s)
                                            -> LogicalResult {
            if (s.getSource() != op->getOperand(0) ||
                info(s.getSource()).kind != BatchClass::PerSample)
              return s.emitOpError("expected slice offsets and sizes that do "
                                   "not depend on the batch");
            int64_t d = in->dim;
            if (s.isDynamicOffset(d) || s.isDynamicSize(d) ||
                s.isDynamicStride(d) || s.getStaticOffset(d) != 0 ||
                s.getStaticStride(d) != 1 ||
                s.getStaticSize(d) != s.getSourceType().getDimSize(d))
              return s.emitOpError()
                     << "slices the sample dimension " << d
                     << "; only slices that keep every sample are supported";
            llvm::SmallBitVector dropped = s.getDroppedDims();
            int64_t newDim = d;
            for (int64_t i = 0; i < d; ++i)
              if (dropped.test(i))
                --newDim;
            out.dim = newDim;
            setResults(op, out);
            result.ops[op].kind = BatchClass::PerSample;
            return success();
          })
          .Case<tensor::PadOp>([&](tensor::PadOp p) -> LogicalResult {
            if (info(p.getSource()).kind != BatchClass::PerSample)
              return p.emitOpError("expected the padding value and sizes "
                                   "not to depend on the batch");
            int64_t d = in->dim;
            // A dynamic amount counts when it is a constant (tosa-to-tensor
            // pads by `arith.constant` index values).
            auto isZero = [](OpFoldResult amount) {
              return isConstantIntValue(amount, 0);
            };
            if (!isZero(p.getMixedLowPad()[d]) ||
                !isZero(p.getMixedHighPad()[d]))
              return p.emitOpError()
                     << "pads the sample dimension " << d
                     << "; only padding of the other dimensions keeps the "
                        "samples apart";
            // The body's index arguments count positions from the start of
            // the tensor: inside a micro-batch, the sample's position would
            // count from the micro-batch's first sample.
            if (!p.getRegion().empty() &&
                !p.getRegion().front().getArgument(d).use_empty())
              return p.emitOpError()
                     << "computes its padding value from the position along "
                        "the sample dimension "
                     << d << "; not supported";
            setResults(op, out);
            result.ops[op].kind = BatchClass::PerSample;
            return success();
          })
          .Case<tensor::ConcatOp>([&](tensor::ConcatOp c) -> LogicalResult {
            if (static_cast<int64_t>(c.getDim()) == in->dim)
              return c.emitOpError()
                     << "concatenates along the sample dimension " << in->dim
                     << "; only concatenation along other dimensions is "
                        "supported";
            for (Value v : c.getInputs())
              if (info(v).kind == BatchClass::PerSample &&
                  (info(v).dim != in->dim || info(v).factor != in->factor))
                return c.emitOpError(
                    "concatenates operands whose sample dimensions differ");
            setResults(op, out);
            result.ops[op].kind = BatchClass::PerSample;
            return success();
          })
          .Case<tensor::InsertSliceOp>([&](tensor::InsertSliceOp s)
                                           -> LogicalResult {
            const BatchValueInfo &src = info(s.getSource());
            const BatchValueInfo &dst = info(s.getDest());
            if (s.getSourceType().getRank() != s.getDestType().getRank())
              return s.emitOpError(
                  "inserts a per-sample value with a rank-reducing slice; "
                  "only slices of the same rank are supported");
            if (src.kind == BatchClass::PerSample &&
                dst.kind == BatchClass::PerSample &&
                (src.dim != dst.dim || src.factor != dst.factor))
              return s.emitOpError(
                  "inserts samples into a tensor whose sample dimension "
                  "differs");
            for (Value v : s.getOffsets())
              if (info(v).kind != BatchClass::Invariant)
                return s.emitOpError("expected slice offsets and sizes that "
                                     "do not depend on the batch");
            int64_t d = in->dim;
            int64_t extent = s.getDestType().getDimSize(d);
            if (s.isDynamicOffset(d) || s.isDynamicSize(d) ||
                s.isDynamicStride(d) || s.getStaticOffset(d) != 0 ||
                s.getStaticStride(d) != 1 || s.getStaticSize(d) != extent ||
                s.getSourceType().getDimSize(d) != extent)
              return s.emitOpError()
                     << "inserts into part of the sample dimension " << d
                     << "; only slices that keep every sample are supported";
            setResults(op, out);
            result.ops[op].kind = BatchClass::PerSample;
            return success();
          })
          .Default([&](Operation *) -> LogicalResult {
            if (op->hasTrait<OpTrait::Elementwise>() &&
                op->getNumResults() == 1 &&
                isa<RankedTensorType>(op->getResult(0).getType())) {
              for (Value v : op->getOperands()) {
                const BatchValueInfo &vi = info(v);
                if (vi.kind == BatchClass::PerSample &&
                    (vi.dim != in->dim || vi.factor != in->factor))
                  return op->emitOpError(
                      "combines operands whose sample dimensions differ");
              }
              setResults(op, out);
              result.ops[op].kind = BatchClass::PerSample;
              return success();
            }
            InFlightDiagnostic diag =
                op->emitOpError()
                << "is not supported on the per-sample path (its operand "
                   "carries the sample dimension of batch argument #"
                << in->originArg << ")";
            if (op->getDialect() && op->getDialect()->getNamespace() == "tosa")
              diag.attachNote() << "lower TOSA to linalg first: mlir-opt "
                                   "--tosa-to-linalg-pipeline --tosa-to-tensor "
                                   "--tosa-to-arith";
            return diag;
          });
  if (failed(status))
    return failure();
  for (Value stat : statisticOperands)
    if (failed(reclassifyStatistic(op, stat)))
      return failure();
  return success();
}

LogicalResult BatchAnalysisBuilder::reclassifyStatistic(Operation *user,
                                                        Value statistic) {
  // The backward cone of the statistic through partial and epilogue values.
  SetVector<Operation *> cone;
  SmallVector<Value> worklist{statistic};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    BatchClass kind = info(v).kind;
    if (kind != BatchClass::Partial && kind != BatchClass::Epilogue)
      continue;
    Operation *def = v.getDefiningOp();
    if (!def || !cone.insert(def))
      continue;
    if (kind == BatchClass::Partial &&
        result.ops[def].kind == BatchClass::Partial)
      continue; // A reduction: its inputs are per-sample.
    llvm::append_range(worklist, getUsedValues(def));
  }

  Operation *paramReduction = nullptr;
  for (Operation *def : cone)
    if (result.ops[def].kind == BatchClass::Partial &&
        llvm::any_of(def->getResults(),
                     [&](Value r) { return info(r).dependsOnParam; })) {
      paramReduction = def;
      break;
    }

  BatchClass newKind = BatchClass::Prologue;
  if (paramReduction) {
    if (!options.allowMicroBatchStatistics) {
      InFlightDiagnostic diag =
          paramReduction->emitOpError()
          << "computes a batch statistic that depends on parameters and "
             "flows back into per-sample work; micro-batching would change "
             "its value (pass allow-micro-batch-statistics to accept "
             "per-micro-batch statistics)";
      diag.attachNote(user->getLoc())
          << "the statistic flows into this per-sample op";
      return diag;
    }
    InFlightDiagnostic diag =
        paramReduction->emitWarning()
        << "batch statistic depends on parameters; it is computed per "
           "micro-batch (allow-micro-batch-statistics)";
    diag.attachNote(user->getLoc())
        << "the statistic flows into this per-sample op";
    newKind = BatchClass::MicroBatchStatistic;
  }
  for (Operation *def : cone) {
    result.ops[def].kind = newKind;
    for (Value r : def->getResults())
      info(r).kind = newKind;
  }
  return success();
}

LogicalResult BatchAnalysisBuilder::visit(Operation *op) {
  bool anyPerSample = false, anyPost = false, anyPrologue = false,
       anyPartial = false, anyStat = false;
  bool dependsOnParam = false;
  SmallVector<Value> statistics;
  for (Value v : getUsedValues(op)) {
    const BatchValueInfo &vi = info(v);
    dependsOnParam |= vi.dependsOnParam;
    switch (vi.kind) {
    case BatchClass::PerSample:
      anyPerSample = true;
      break;
    case BatchClass::Partial:
      anyPartial = true;
      [[fallthrough]];
    case BatchClass::Epilogue:
      anyPost = true;
      if (!llvm::is_contained(statistics, v))
        statistics.push_back(v);
      break;
    case BatchClass::Prologue:
      anyPrologue = true;
      break;
    case BatchClass::MicroBatchStatistic:
      anyStat = true;
      break;
    case BatchClass::Invariant:
      break;
    }
  }
  if (auto call = dyn_cast<func::CallOp>(op);
      call && (anyPerSample || anyPost || anyStat || anyPrologue))
    return call.emitOpError()
           << "calls '@" << call.getCallee()
           << "' on the batch-dependent path; run gacc-prepare-step (the "
              "first pass of gacc-pipeline), which inlines the functions a "
              "training step calls";
  // Control flow that reads only partials and values computed from them
  // (an optimizer loop over a gradient's elements) runs once, after the
  // regions, on the accumulated values: an epilogue op like any other.
  bool epilogueControlFlow = !anyPerSample && !anyStat &&
                             isa<scf::ForOp, scf::WhileOp, scf::IfOp,
                                 scf::IndexSwitchOp, scf::ExecuteRegionOp>(op);
  if (op->getNumRegions() != 0 && !isa<linalg::LinalgOp>(op) &&
      !epilogueControlFlow && (anyPerSample || anyPost || anyStat)) {
    // tensor.pad's body only computes the padding value.
    auto pad = dyn_cast<tensor::PadOp>(op);
    if (!pad || !llvm::all_of(getUsedValues(op), [&](Value v) {
          return v == pad.getSource() ||
                 info(v).kind == BatchClass::Invariant ||
                 info(v).kind == BatchClass::Prologue;
        })) {
      if (!isa<LoopLikeOpInterface>(op))
        return op->emitOpError("ops with regions are not supported on the "
                               "batch-dependent path");
      // A loop: name it and the batch-dependent value it reads.
      Value read;
      for (Value v : getUsedValues(op))
        if (info(v).kind != BatchClass::Invariant &&
            info(v).kind != BatchClass::Prologue) {
          read = v;
          break;
        }
      InFlightDiagnostic diag =
          op->emitOpError()
          << "is a loop on the per-sample path that gacc cannot split into "
             "micro-batches (a perfect scf.for nest is raised into a linalg "
             "op and split like one; a loop that reads only accumulated "
             "values runs after the regions)";
      if (read)
        diag.attachNote(read.getLoc())
            << "the loop reads this " << stringifyBatchClass(info(read).kind)
            << " value";
      if (auto loop = dyn_cast<scf::ForOp>(op)) {
        std::string whyNot;
        if (succeeded(matchLoopNest(loop, whyNot)))
          diag.attachNote() << "run gacc-prepare-step, which raises this "
                               "loop nest into a linalg.generic";
        else
          diag.attachNote() << "gacc-prepare-step raises a perfect loop nest "
                               "into a linalg.generic; not this one: "
                            << whyNot;
      }
      return diag;
    }
  }

  if (anyPerSample)
    return visitPerSample(op, statistics);

  BatchOpInfo &opInfo = result.ops[op];
  BatchValueInfo out;
  out.dependsOnParam = dependsOnParam;
  if (anyStat) {
    // Further work on a micro-batch statistic stays inside the regions.
    if (anyPost)
      return op->emitOpError("combines a micro-batch statistic with values "
                             "computed after the regions; not supported");
    out.kind = BatchClass::MicroBatchStatistic;
  } else if (anyPost) {
    out.kind = BatchClass::Epilogue;
    if (auto allReduce = dyn_cast<shard::AllReduceOp>(op)) {
      auto kind = allReduce.getReduction();
      if (anyPartial && kind != shard::ReductionKind::Sum &&
          kind != shard::ReductionKind::Average)
        return allReduce.emitOpError()
               << "applies the non-linear reduction '"
               << shard::stringifyReductionKind(kind)
               << "' to a partial; only sum and average commute with "
                  "gradient accumulation";
    }
  } else if (anyPrologue) {
    out.kind = BatchClass::Prologue;
  } else {
    out.kind = BatchClass::Invariant;
  }
  opInfo.kind = out.kind;
  setResults(op, out);
  return success();
}

LogicalResult BatchAnalysisBuilder::run(func::FuncOp func) {
  if (failed(verifyStepRoles(func)) || failed(verifyNoUndefinedReads(func)))
    return failure();
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    BlockArgument arg = func.getArgument(i);
    BatchValueInfo vi;
    RoleInfo role = getArgumentRole(func, i);
    if (role.role == Role::Batch) {
      vi.kind = BatchClass::PerSample;
      vi.dim = role.index;
      vi.originArg = i;
      result.batchSize =
          cast<RankedTensorType>(arg.getType()).getDimSize(vi.dim);
    } else if (role.role == Role::Param) {
      vi.dependsOnParam = true;
    }
    result.values[arg] = vi;
  }
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("expected a training step with a single block");
  for (Operation &op : func.getBody().front()) {
    if (isa<func::ReturnOp>(op))
      continue;
    for (Value v : getUsedValues(&op))
      if (!result.values.count(v))
        return op.emitOpError("uses a value defined in a nested region");
    for (Type t : op.getResultTypes())
      if (auto shaped = dyn_cast<ShapedType>(t))
        if (!shaped.hasStaticShape())
          return op.emitOpError() << "has the dynamically shaped result type "
                                  << t << "; only static shapes are supported";
    if (failed(visit(&op)))
      return failure();
    // Nested values (linalg bodies) are not classified on their own; values
    // a body captures from above act like operands of the op.
  }
  return success();
}

FailureOr<BatchAnalysis>
BatchAnalysis::run(func::FuncOp func, const BatchAnalysisOptions &options) {
  BatchAnalysis analysis;
  BatchAnalysisBuilder builder(analysis, options);
  if (failed(builder.run(func)))
    return failure();
  return analysis;
}

const BatchValueInfo &BatchAnalysis::getInfo(Value value) const {
  static const BatchValueInfo invariant;
  auto it = values.find(value);
  return it == values.end() ? invariant : it->second;
}

const BatchOpInfo &BatchAnalysis::getInfo(Operation *op) const {
  static const BatchOpInfo invariant;
  auto it = ops.find(op);
  return it == ops.end() ? invariant : it->second;
}

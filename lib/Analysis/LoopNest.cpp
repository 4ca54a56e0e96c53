//===- LoopNest.cpp - loop nests that are linalg ops ----------------------===//
//
// Matches the perfect scf.for nests that gacc-prepare-step raises into
// linalg.generic ops (see LoopNest.h for the rules).
//
//===----------------------------------------------------------------------===//

#include "gacc/Analysis/LoopNest.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::gacc;

/// Whether `type` is a scalar a linalg payload can carry.
static bool isScalar(Type type) { return type.isIntOrIndexOrFloat(); }

/// Returns a short description of `op` for a reason ("'tensor.insert'").
static std::string describe(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "'";
}

/// Checks an op of a loop body that becomes a payload op.
static LogicalResult checkPayloadOp(Operation *op, std::string &whyNot) {
  if (op->getNumRegions() != 0) {
    whyNot = "the loop body holds " + describe(op) +
             ", an op with regions that is not the next loop of a perfect "
             "nest";
    return failure();
  }
  if (!isMemoryEffectFree(op)) {
    whyNot = "the loop body holds " + describe(op) + ", which has side effects";
    return failure();
  }
  for (Type type : op->getResultTypes())
    if (!isScalar(type)) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << type;
      whyNot = "the loop body creates a value of type " + text + " with " +
               describe(op) + "; only scalars may be computed inside the nest";
      return failure();
    }
  return success();
}

FailureOr<LoopNest> mlir::gacc::matchLoopNest(scf::ForOp outer,
                                              std::string &whyNot) {
  LoopNest nest;
  if (outer.getNumRegionIterArgs() == 0) {
    whyNot = "the loop carries no values";
    return failure();
  }
  scf::ForOp loop = outer;
  while (true) {
    APInt lb, ub, step;
    if (!matchPattern(loop.getLowerBound(), m_ConstantInt(&lb)) ||
        !matchPattern(loop.getUpperBound(), m_ConstantInt(&ub)) ||
        !matchPattern(loop.getStep(), m_ConstantInt(&step))) {
      whyNot = "a loop of the nest has bounds or a step that are not "
               "constants";
      return failure();
    }
    if (loop.getUnsignedCmp() || step.getSExtValue() <= 0 ||
        ub.getSExtValue() <= lb.getSExtValue()) {
      whyNot = "a loop of the nest runs no iteration, compares unsigned or "
               "has a step that is not positive";
      return failure();
    }
    int64_t trips =
        (ub.getSExtValue() - lb.getSExtValue() - 1) / step.getSExtValue() + 1;
    nest.loops.push_back(loop);
    nest.lowerBounds.push_back(lb.getSExtValue());
    nest.steps.push_back(step.getSExtValue());
    nest.tripCounts.push_back(trips);

    // The next loop of a perfect nest: the last op before the yield, fed
    // the iter_args and yielding its results as they are.
    Block *body = loop.getBody();
    auto yield = cast<scf::YieldOp>(body->getTerminator());
    auto next = dyn_cast_or_null<scf::ForOp>(yield->getPrevNode());
    bool perfect = next && next.getInitArgs() == loop.getRegionIterArgs() &&
                   yield.getOperands() == next.getResults();
    if (!perfect)
      break;
    for (Operation &op : body->without_terminator()) {
      if (&op == next.getOperation())
        break;
      if (failed(checkPayloadOp(&op, whyNot)))
        return failure();
      for (Value v : op.getOperands())
        if (llvm::is_contained(loop.getRegionIterArgs(), v)) {
          whyNot = describe(&op) +
                   " reads a carried value between the loops of the nest";
          return failure();
        }
      nest.payload.push_back(&op);
    }
    loop = next;
  }

  // The innermost body.
  scf::ForOp inner = nest.loops.back();
  Block *body = inner.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  // The loop whose induction variable `v` is (or an index cast of it: a
  // loop over i32 indexes tensors through arith.index_cast).
  auto loopOf = [&](Value v) -> int64_t {
    if (auto cast = v.getDefiningOp<arith::IndexCastOp>())
      v = cast.getIn();
    for (auto [k, l] : llvm::enumerate(nest.loops))
      if (v == l.getInductionVar())
        return k;
    return -1;
  };
  DenseSet<Operation *> carriedOps;
  for (auto [j, arg] : llvm::enumerate(inner.getRegionIterArgs())) {
    Type type = arg.getType();
    if (isScalar(type)) {
      nest.outputLoops.emplace_back();
      nest.inserts.push_back(nullptr);
      nest.reads.emplace_back();
      nest.staticInits.emplace_back();
      continue;
    }
    // A dynamic carried type is read through the cast of a static init.
    Value init = outer.getInitArgs()[j];
    if (auto cast = init.getDefiningOp<tensor::CastOp>();
        cast && !cast.getType().hasStaticShape())
      init = cast.getSource();
    auto tensorType = dyn_cast<RankedTensorType>(init.getType());
    if (!tensorType || !tensorType.hasStaticShape()) {
      whyNot = "carried value #" + std::to_string(j) +
               " is neither a scalar nor a statically shaped tensor";
      return failure();
    }
    auto insert = yield.getOperand(j).getDefiningOp<tensor::InsertOp>();
    if (!insert || insert.getDest() != arg || !insert->hasOneUse() ||
        insert->getBlock() != body) {
      whyNot = "carried tensor #" + std::to_string(j) +
               " is not yielded as one tensor.insert into it in the "
               "innermost loop";
      return failure();
    }
    SmallVector<int64_t> dims;
    for (auto [d, index] : llvm::enumerate(insert.getIndices())) {
      // A unit dimension is written at the constant 0 (a keepdim output
      // whose unit loop canonicalization removed).
      if (tensorType.getDimSize(d) == 1 && matchPattern(index, m_Zero())) {
        dims.push_back(-1);
        continue;
      }
      int64_t k = loopOf(index);
      if (k < 0 || llvm::is_contained(dims, k)) {
        whyNot = "carried tensor #" + std::to_string(j) +
                 " is written at an index that is not a distinct induction "
                 "variable of the nest";
        return failure();
      }
      dims.push_back(k);
    }
    for (auto [d, k] : llvm::enumerate(dims))
      if (k >= 0 && (nest.lowerBounds[k] != 0 || nest.steps[k] != 1 ||
                     nest.tripCounts[k] != tensorType.getDimSize(d))) {
        whyNot = "carried tensor #" + std::to_string(j) +
                 " is written along dimension " + std::to_string(d) +
                 " by a loop that does not run from 0 to its size (" +
                 std::to_string(tensorType.getDimSize(d)) + ") with step 1";
        return failure();
      }
    SmallVector<tensor::ExtractOp> reads;
    for (OpOperand &use : arg.getUses()) {
      Operation *user = use.getOwner();
      if (user == insert.getOperation())
        continue;
      auto extract = dyn_cast<tensor::ExtractOp>(user);
      if (!extract || extract.getIndices() != insert.getIndices()) {
        whyNot = "carried tensor #" + std::to_string(j) + " is used by " +
                 describe(user) +
                 " other than a tensor.extract at the indices it is written "
                 "at (the element of another iteration)";
        return failure();
      }
      reads.push_back(extract);
      carriedOps.insert(extract);
    }
    carriedOps.insert(insert);
    nest.outputLoops.push_back(std::move(dims));
    nest.inserts.push_back(insert);
    nest.reads.push_back(std::move(reads));
    nest.staticInits.push_back(init);
  }
  for (Operation &op : body->without_terminator()) {
    if (carriedOps.contains(&op))
      continue;
    if (failed(checkPayloadOp(&op, whyNot)))
      return failure();
    nest.payload.push_back(&op);
  }
  return nest;
}

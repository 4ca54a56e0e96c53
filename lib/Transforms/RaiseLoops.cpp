//===- RaiseLoops.cpp - scf.for nests on the batch path to linalg ---------===//
//
// Part of gacc-prepare-step: a perfect scf.for nest of the training step
// that reads a value computed from a batch argument becomes the
// linalg.generic it writes out (the rules are in gacc/Analysis/LoopNest.h),
// so that the batch analysis splits or refuses it like any linalg op.
//
//===----------------------------------------------------------------------===//

#include "gacc/Analysis/LoopNest.h"
#include "gacc/Dialect/Gacc/IR/StepRoles.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

using namespace mlir;
using namespace mlir::gacc;

/// Replaces the nest with one linalg.generic whose loops are the nest's
/// loops in order.
static void raiseLoopNest(LoopNest &nest) {
  scf::ForOp outer = nest.loops.front();
  MLIRContext *ctx = outer.getContext();
  Location loc = outer.getLoc();
  OpBuilder builder(outer);
  int64_t numLoops = nest.loops.size();

  // Outputs: a carried tensor is indexed by its loops, a carried scalar is a
  // rank-0 tensor.
  SmallVector<Value> outputs;
  SmallVector<AffineMap> outputMaps;
  llvm::SmallBitVector indexed(numLoops);
  for (auto [j, init] : llvm::enumerate(outer.getInitArgs())) {
    ArrayRef<int64_t> dims = nest.outputLoops[j];
    SmallVector<AffineExpr> exprs;
    for (int64_t k : dims)
      exprs.push_back(k < 0 ? getAffineConstantExpr(0, ctx)
                            : getAffineDimExpr(k, ctx));
    if (nest.inserts[j]) {
      outputs.push_back(nest.staticInits[j]);
    } else {
      outputs.push_back(tensor::FromElementsOp::create(
          builder, loc, RankedTensorType::get({}, init.getType()), init));
    }
    outputMaps.push_back(AffineMap::get(numLoops, 0, exprs, ctx));
  }
  // Every loop indexes some output, or the one shape input that gives the
  // others their sizes (its contents are never read).
  for (int64_t k = 0; k < numLoops; ++k)
    for (AffineMap map : outputMaps)
      if (map.isFunctionOfDim(k))
        indexed.set(k);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  if (!indexed.all()) {
    SmallVector<int64_t> shape;
    SmallVector<AffineExpr> exprs;
    for (int64_t k = 0; k < numLoops; ++k)
      if (!indexed.test(k)) {
        shape.push_back(nest.tripCounts[k]);
        exprs.push_back(getAffineDimExpr(k, ctx));
      }
    inputs.push_back(tensor::EmptyOp::create(builder, loc, shape,
                                             builder.getIntegerType(8)));
    maps.push_back(AffineMap::get(numLoops, 0, exprs, ctx));
  }
  llvm::append_range(maps, outputMaps);
  SmallVector<utils::IteratorType> iterators;
  for (int64_t k = 0; k < numLoops; ++k)
    iterators.push_back(
        llvm::all_of(outputMaps,
                     [&](AffineMap map) { return map.isFunctionOfDim(k); })
            ? utils::IteratorType::parallel
            : utils::IteratorType::reduction);

  auto yield = cast<scf::YieldOp>(nest.loops.back().getBody()->getTerminator());
  auto generic = linalg::GenericOp::create(
      builder, loc, TypeRange(ValueRange(outputs)), inputs, outputs, maps,
      iterators, [&](OpBuilder &b, Location bodyLoc, ValueRange args) {
        IRMapping mapping;
        for (auto [k, loop] : llvm::enumerate(nest.loops)) {
          Value iv = linalg::IndexOp::create(b, bodyLoc, k);
          if (nest.lowerBounds[k] != 0 || nest.steps[k] != 1) {
            Value step =
                arith::ConstantIndexOp::create(b, bodyLoc, nest.steps[k]);
            Value lb =
                arith::ConstantIndexOp::create(b, bodyLoc, nest.lowerBounds[k]);
            iv = arith::AddIOp::create(
                b, bodyLoc, lb, arith::MulIOp::create(b, bodyLoc, iv, step));
          }
          Value mapped = iv;
          Type ivType = loop.getInductionVar().getType();
          if (ivType != iv.getType())
            mapped = arith::IndexCastOp::create(b, bodyLoc, ivType, iv);
          mapping.map(loop.getInductionVar(), mapped);
        }
        ValueRange outArgs = args.drop_front(inputs.size());
        auto carried = nest.loops.back().getRegionIterArgs();
        for (auto [j, arg] : llvm::enumerate(carried)) {
          if (!nest.inserts[j]) {
            mapping.map(arg, outArgs[j]);
            continue;
          }
          for (tensor::ExtractOp read : nest.reads[j])
            mapping.map(read.getResult(), outArgs[j]);
        }
        for (Operation *op : nest.payload)
          b.clone(*op, mapping);
        SmallVector<Value> yielded;
        for (auto [j, value] : llvm::enumerate(yield.getOperands()))
          yielded.push_back(mapping.lookupOrDefault(
              nest.inserts[j] ? nest.inserts[j].getScalar() : value));
        linalg::YieldOp::create(b, bodyLoc, yielded);
      });

  SmallVector<Value> replacements;
  for (auto [j, result] : llvm::enumerate(generic->getResults())) {
    Type type = outer.getResult(j).getType();
    if (nest.inserts[j] && result.getType() != type)
      replacements.push_back(
          tensor::CastOp::create(builder, loc, type, result));
    else if (nest.inserts[j])
      replacements.push_back(result);
    else
      replacements.push_back(
          tensor::ExtractOp::create(builder, loc, result, ValueRange()));
  }
  outer.replaceAllUsesWith(replacements);
  outer.erase();
}

bool mlir::gacc::raiseLoopNests(func::FuncOp func) {
  if (func.isExternal())
    return false;
  // The values computed from a batch argument (loops that read none of
  // them, e.g. over constants, are left as they are).
  DenseSet<Value> fromBatch;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (getArgumentRole(func, i).role == Role::Batch)
      fromBatch.insert(func.getArgument(i));
  SmallVector<scf::ForOp> candidates;
  for (Operation &op : func.getBody().front()) {
    SmallVector<Value> used(op.getOperands());
    if (op.getNumRegions() != 0) {
      SetVector<Value> captured;
      getUsedValuesDefinedAbove(op.getRegions(), captured);
      llvm::append_range(used, captured);
    }
    if (llvm::none_of(used, [&](Value v) { return fromBatch.contains(v); }))
      continue;
    for (Value r : op.getResults())
      fromBatch.insert(r);
    if (auto loop = dyn_cast<scf::ForOp>(op))
      candidates.push_back(loop);
  }
  bool raised = false;
  for (scf::ForOp loop : candidates) {
    std::string whyNot;
    FailureOr<LoopNest> nest = matchLoopNest(loop, whyNot);
    if (failed(nest))
      continue;
    raiseLoopNest(*nest);
    raised = true;
  }
  return raised;
}

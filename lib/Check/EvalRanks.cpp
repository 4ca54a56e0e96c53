//===- EvalRanks.cpp - several ranks in lockstep with LibTorch ------------===//
//
// evaluateWithTorchOnRanks: one evaluator per data-parallel rank, all run in
// lockstep over the function's ops, so that a shard.all_reduce combines the
// ranks' operands (sum, average, max, min, product) as the data-parallel run
// does; calls of functions that reach a collective run in lockstep too.
//
//===----------------------------------------------------------------------===//

#include "gacc/Check/TorchEvaluator.h"

#include "EvaluatorImpl.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

#include <exception>
#include <memory>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace mlir::gacc::torch_eval;

/// Whether `func` runs a collective, directly or in a function it calls.
static bool reachesCollective(func::FuncOp func,
                              llvm::DenseMap<Operation *, bool> &memo) {
  auto [it, inserted] = memo.try_emplace(func, false);
  if (!inserted)
    return it->second; // a recursive call: whatever the outer walk finds
  bool found = false;
  func.walk([&](Operation *op) {
    if (isa<shard::AllReduceOp>(op)) {
      found = true;
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      found |=
          callee && !callee.isExternal() && reachesCollective(callee, memo);
    }
    return found ? WalkResult::interrupt() : WalkResult::advance();
  });
  memo[func] = found;
  return found;
}

/// The ranks' values of the all-reduce `op`: each rank's operand combined
/// across the ranks.
static LogicalResult
combineAcrossRanks(shard::AllReduceOp op,
                   ArrayRef<std::unique_ptr<Evaluator>> ranks) {
  try {
    std::vector<torch::Tensor> inputs;
    for (auto &rank : ranks)
      inputs.push_back(rank->valueOf(op.getInput()));
    torch::Tensor stacked = torch::stack(inputs);
    torch::Tensor combined;
    switch (op.getReduction()) {
    case shard::ReductionKind::Sum:
      combined = stacked.sum(0);
      break;
    case shard::ReductionKind::Average:
      combined = stacked.mean(0);
      break;
    case shard::ReductionKind::Max:
      combined = std::get<0>(stacked.max(0));
      break;
    case shard::ReductionKind::Min:
      combined = std::get<0>(stacked.min(0));
      break;
    case shard::ReductionKind::Product:
      combined = stacked.prod(0);
      break;
    default:
      return emitFail(op) << "reduction '"
                          << shard::stringifyReductionKind(op.getReduction())
                          << "' across ranks is not supported";
    }
    for (auto &rank : ranks)
      rank->setValue(op.getResult(),
                     combined.to(rank->dtypeOfType(op.getResult().getType())));
  } catch (const std::exception &e) {
    return emitFail(op) << e.what();
  }
  return success();
}

/// Evaluates `func` on the bound evaluators of all ranks in lockstep: its
/// all-reduces combine the ranks' values, and calls of functions that run
/// collectives are evaluated in lockstep too. Returns each rank's results.
static FailureOr<SmallVector<SmallVector<torch::Tensor>>>
runInLockstep(func::FuncOp func, ArrayRef<std::unique_ptr<Evaluator>> ranks) {
  llvm::DenseMap<Operation *, bool> collectiveMemo;
  llvm::DenseSet<Operation *> live = getLiveOps(func.front());
  for (Operation &op : func.front()) {
    if (!live.contains(&op))
      continue;
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      SmallVector<SmallVector<torch::Tensor>> results;
      for (auto &rank : ranks) {
        SmallVector<torch::Tensor> values;
        for (Value v : ret.getOperands())
          values.push_back(rank->valueOf(v));
        results.push_back(std::move(values));
      }
      return results;
    }
    if (auto allReduce = dyn_cast<shard::AllReduceOp>(op)) {
      if (failed(combineAcrossRanks(allReduce, ranks)))
        return failure();
      continue;
    }
    auto call = dyn_cast<func::CallOp>(op);
    func::FuncOp callee;
    if (call)
      callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
    if (!callee || callee.isExternal() ||
        !reachesCollective(callee, collectiveMemo)) {
      for (auto &rank : ranks)
        if (failed(rank->step(&op)))
          return failure();
      continue;
    }
    std::vector<std::unique_ptr<Evaluator>> nested;
    try {
      for (auto &rank : ranks) {
        nested.push_back(rank->makeCallee());
        SmallVector<torch::Tensor> args = llvm::map_to_vector(
            call.getOperands(), [&](Value v) { return rank->valueOf(v); });
        if (failed(nested.back()->bind(callee, args)))
          return failure();
      }
    } catch (const std::exception &e) {
      return emitFail(call) << e.what();
    }
    auto results = runInLockstep(callee, nested);
    if (failed(results))
      return failure();
    for (auto [rank, values] : llvm::zip_equal(ranks, *results))
      for (auto [result, t] : llvm::zip_equal(call.getResults(), values))
        rank->setValue(result, t);
  }
  return emitFail(func) << "the function does not end with func.return";
}

FailureOr<SmallVector<SmallVector<torch::Tensor>>>
mlir::gacc::evaluateWithTorchOnRanks(
    func::FuncOp func, ArrayRef<SmallVector<torch::Tensor>> rankArgs,
    torch::ScalarType computeType) {
  if (computeType != torch::kFloat32 && computeType != torch::kFloat64)
    return emitFail(func) << "the compute type must be kFloat32 or kFloat64";
  if (rankArgs.empty())
    return emitFail(func) << "expected the arguments of at least one rank";
  // One evaluator per rank, in lockstep over the function's ops; a
  // collective combines the ranks' operands like the data-parallel run does.
  std::vector<std::unique_ptr<Evaluator>> ranks;
  for (ArrayRef<torch::Tensor> args : rankArgs) {
    ranks.push_back(std::make_unique<Evaluator>(computeType, 0));
    ranks.back()->setAcrossRanks();
    if (failed(ranks.back()->bind(func, args)))
      return failure();
  }
  return runInLockstep(func, ranks);
}

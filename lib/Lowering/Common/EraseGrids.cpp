//===- EraseGrids.cpp - drop the device grids -------------------*- C++ -*-===//
//
// The gacc-erase-grids pass: once the collectives are runtime calls the
// shard.grid declarations are dead; one that is still used means a sharding
// op other than the lowered collectives survived, which no lowering handles.
// First, `shard.process_linear_index` of a one-axis grid (the rank's shard
// offset of gacc-shard-optimizer-state) becomes `gaccrt_rank()`.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Lowering/Common/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "gacc-erase-grids"

namespace mlir::gacc {
#define GEN_PASS_DEF_ERASEGRIDSPASS
#include "gacc/Lowering/Common/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct EraseGridsPass : public gacc::impl::EraseGridsPassBase<EraseGridsPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    SmallVector<shard::ProcessLinearIndexOp> ranks;
    module.walk([&](shard::ProcessLinearIndexOp op) { ranks.push_back(op); });
    SymbolTableCollection symbolTables;
    for (shard::ProcessLinearIndexOp op : ranks) {
      auto grid = shard::getGridOrNull(op, op.getGridAttr(), symbolTables);
      if (!grid || grid.getRank() != 1) {
        op.emitOpError("expected a one-axis grid (the data-parallel ranks)");
        return signalPassFailure();
      }
      OpBuilder builder(op);
      Type i32 = builder.getI32Type();
      func::FuncOp callee = getOrDeclareRuntimeFunction(
          op, "gaccrt_rank", builder.getFunctionType({}, {i32}));
      auto call = func::CallOp::create(builder, op.getLoc(), callee,
                                       ValueRange{});
      Value index = arith::IndexCastOp::create(
          builder, op.getLoc(), builder.getIndexType(), call.getResult(0));
      op.replaceAllUsesWith(index);
      op.erase();
    }
    for (auto grid :
         llvm::make_early_inc_range(module.getOps<shard::GridOp>())) {
      if (!SymbolTable::symbolKnownUseEmpty(grid, module)) {
        grid.emitOpError("is still used after bufferization; only "
                         "shard.all_reduce, reduce_scatter, all_gather and "
                         "process_linear_index lower to the gacc runtime");
        return signalPassFailure();
      }
      grid.erase();
    }
  }
};
} // namespace

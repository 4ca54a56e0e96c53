//===- EraseGrids.cpp - drop the device grids -------------------*- C++ -*-===//
//
// The gacc-erase-grids pass: once the collectives are runtime calls the
// shard.grid declarations are dead; one that is still used means a sharding
// op other than shard.all_reduce survived, which no lowering handles.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "gacc-erase-grids"

namespace mlir::gacc {
#define GEN_PASS_DEF_ERASEGRIDSPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct EraseGridsPass : public gacc::impl::EraseGridsPassBase<EraseGridsPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    for (auto grid :
         llvm::make_early_inc_range(module.getOps<shard::GridOp>())) {
      if (!SymbolTable::symbolKnownUseEmpty(grid, module)) {
        grid.emitOpError("is still used after bufferization; only "
                         "shard.all_reduce lowers to the gacc runtime");
        return signalPassFailure();
      }
      grid.erase();
    }
  }
};
} // namespace

//===- InlineMicroBatches.cpp - drop the region markers ---------*- C++ -*-===//
//
// The gacc-inline-micro-batches pass: inlines each gacc.micro_batch region
// into the enclosing block, in order, so that later lowering sees upstream IR
// only.
//
//===----------------------------------------------------------------------===//

#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#define DEBUG_TYPE "gacc-inline-micro-batches"

namespace mlir::gacc {
#define GEN_PASS_DEF_INLINEMICROBATCHESPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// Returns the private runtime function `name` taking one i64.
static func::FuncOp getTraceFunction(ModuleOp module, StringRef name) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
  auto type = builder.getFunctionType({builder.getI64Type()}, {});
  auto decl = func::FuncOp::create(builder, module.getLoc(), name, type);
  decl.setPrivate();
  return decl;
}

struct InlineMicroBatchesPass
    : public gacc::impl::InlineMicroBatchesPassBase<InlineMicroBatchesPass> {
  using InlineMicroBatchesPassBase::InlineMicroBatchesPassBase;

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<gacc::MicroBatchOp> regions;
    getOperation().walk(
        [&](gacc::MicroBatchOp region) { regions.push_back(region); });
    for (gacc::MicroBatchOp region : regions) {
      Block &body = region.getBody().front();
      auto yield = cast<gacc::YieldOp>(body.getTerminator());
      if (traceRegions) {
        ModuleOp module = getOperation();
        OpBuilder builder(region);
        Value index = arith::ConstantIntOp::create(
            builder, region.getLoc(), builder.getI64Type(),
            static_cast<int64_t>(region.getIndex()));
        func::CallOp::create(
            builder, region.getLoc(),
            getTraceFunction(module, "gaccrt_trace_region_begin"), index);
        builder.setInsertionPoint(yield);
        func::CallOp::create(
            builder, region.getLoc(),
            getTraceFunction(module, "gaccrt_trace_region_end"), index);
      }
      region.getResults().replaceAllUsesWith(yield.getOperands());
      yield.erase();
      region->getBlock()->getOperations().splice(region->getIterator(),
                                                 body.getOperations());
      region.erase();
    }
  }
};
} // namespace

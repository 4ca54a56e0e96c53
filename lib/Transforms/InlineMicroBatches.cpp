//===- InlineMicroBatches.cpp - drop the region markers ---------*- C++ -*-===//
//
// The gacc-inline-micro-batches pass: inlines each gacc.micro_batch region
// into the enclosing block, in order, so that later lowering sees upstream IR
// only.
//
//===----------------------------------------------------------------------===//

#include "gacc/Transforms/Passes.h"

#define DEBUG_TYPE "gacc-inline-micro-batches"

namespace mlir::gacc {
#define GEN_PASS_DEF_INLINEMICROBATCHESPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct InlineMicroBatchesPass
    : public gacc::impl::InlineMicroBatchesPassBase<InlineMicroBatchesPass> {
  void runOnOperation() override {
    SmallVector<gacc::MicroBatchOp> regions;
    getOperation().walk(
        [&](gacc::MicroBatchOp region) { regions.push_back(region); });
    for (gacc::MicroBatchOp region : regions) {
      Block &body = region.getBody().front();
      auto yield = cast<gacc::YieldOp>(body.getTerminator());
      region.getResults().replaceAllUsesWith(yield.getOperands());
      yield.erase();
      region->getBlock()->getOperations().splice(region->getIterator(),
                                                 body.getOperations());
      region.erase();
    }
  }
};
} // namespace

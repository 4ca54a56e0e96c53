//===- ExpandDivisions.cpp - ceil/floor divisions as arithmetic -----------===//
//
// The gacc-expand-divisions pass of the CPU and CUDA lowerings: upstream's ceil/floor
// division expansion, without arith-expand-ops' rewrite of maximumf/minimumf
// into cmpf + select, which loses IEEE maximum's -0 < +0.
//
//===----------------------------------------------------------------------===//

#include "gacc/Conversion/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "gacc-expand-divisions"

namespace mlir::gacc {
#define GEN_PASS_DEF_EXPANDDIVISIONSPASS
#include "gacc/Conversion/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;

namespace {
struct ExpandDivisionsPass
    : public mlir::gacc::impl::ExpandDivisionsPassBase<ExpandDivisionsPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    RewritePatternSet patterns(&getContext());
    arith::populateCeilFloorDivExpandOpsPatterns(patterns);
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      return signalPassFailure();
  }
};
} // namespace

//===- FuseElementwise.cpp - fusion that spares GEMMs -----------*- C++ -*-===//
//
// The gacc-fuse-elementwise pass: upstream's elementwise fusion without its
// reshape propagation, so the GEMMs that gacc-contraction-to-matmul formed
// stay linalg.matmul and reach BLAS / cuBLAS.
//
//===----------------------------------------------------------------------===//

#include "gacc/Conversion/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#define DEBUG_TYPE "gacc-fuse-elementwise"

namespace mlir::gacc {
#define GEN_PASS_DEF_FUSEELEMENTWISEPASS
#include "gacc/Conversion/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct FuseElementwisePass
    : public gacc::impl::FuseElementwisePassBase<FuseElementwisePass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    RewritePatternSet patterns(&getContext());
    // Fuse only into consumers whose producer has a single use: work is
    // never duplicated.
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *operand) {
          Operation *producer = operand->get().getDefiningOp();
          return producer && producer->hasOneUse();
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace

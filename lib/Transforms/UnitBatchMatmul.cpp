//===- UnitBatchMatmul.cpp - TOSA's GEMMs as matmuls ----------*- C++ -*-===//
//
// tosa.matmul works on rank-3 tensors, so upstream's tosa-to-linalg turns a
// layer's GEMM into `linalg.batch_matmul` on [1, M, K] x [1, K, N] views
// (tensor.expand_shape of the 2-D values) and its transposes into
// `linalg.transpose` [0, 2, 1] of [1, ., .] tensors. With one batch these
// are a `linalg.matmul` and a 2-D transpose between reshapes that fold with
// the views: the form the rest of gacc (accumulator fusion, buckets, the
// BLAS calls and their transpose flags) handles as torch-mlir's.
//
//===----------------------------------------------------------------------===//

#include "gacc/Support/IRUtils.h"
#include "gacc/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;

/// Whether `type` is a static rank-3 tensor with a unit leading dimension.
static bool isUnitBatch(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 3 && tensor.hasStaticShape() &&
         tensor.getDimSize(0) == 1;
}

/// [1, a, b] -> [a, b].
static Value dropUnitBatch(PatternRewriter &rewriter, Location loc,
                           Value value) {
  return tensor::CollapseShapeOp::create(
      rewriter, loc, value, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

/// [a, b] -> [1, a, b] of `type`.
static Value addUnitBatch(PatternRewriter &rewriter, Location loc, Value value,
                          Type type) {
  return tensor::ExpandShapeOp::create(
      rewriter, loc, type, value, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
}

namespace {
/// `linalg.batch_matmul` of one batch (TOSA's GEMM) as a `linalg.matmul`.
struct UnitBatchMatmulToMatmul
    : public OpRewritePattern<linalg::BatchMatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::BatchMatmulOp op,
                                PatternRewriter &rewriter) const override {
    // The matmul is built with the default (signed) cast: an unsigned
    // integer batch_matmul keeps its form.
    if (!op.hasPureTensorSemantics() || op.hasUserDefinedMaps() ||
        op.getCast() != linalg::TypeFn::cast_signed ||
        !llvm::all_of(op->getOperandTypes(), isUnitBatch))
      return failure();
    Location loc = op.getLoc();
    Value a = dropUnitBatch(rewriter, loc, op.getDpsInputs()[0]);
    Value b = dropUnitBatch(rewriter, loc, op.getDpsInputs()[1]);
    Value c = dropUnitBatch(rewriter, loc, op.getDpsInits()[0]);
    auto matmul = linalg::MatmulOp::create(
        rewriter, loc, TypeRange{c.getType()}, ValueRange{a, b}, ValueRange{c});
    matmul->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    rewriter.replaceOp(op, addUnitBatch(rewriter, loc, matmul->getResult(0),
                                        op->getResult(0).getType()));
    return success();
  }
};

/// `linalg.transpose` [0, 2, 1] of a [1, a, b] tensor as a 2-D transpose,
/// which gacc-matmul-to-blas folds into the GEMMs that read it.
struct UnitBatchTransposeTo2D : public OpRewritePattern<linalg::TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.hasPureTensorSemantics() ||
        op.getPermutation() != ArrayRef<int64_t>{0, 2, 1} ||
        !isUnitBatch(op.getInput().getType()))
      return failure();
    Location loc = op.getLoc();
    Value matrix = dropUnitBatch(rewriter, loc, op.getInput());
    rewriter.replaceOp(
        op, addUnitBatch(rewriter, loc,
                         gacc::transposeMatrix(rewriter, loc, matrix),
                         op->getResult(0).getType()));
    return success();
  }
};

} // namespace

void mlir::gacc::populateUnitBatchMatmulPatterns(RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<UnitBatchMatmulToMatmul, UnitBatchTransposeTo2D>(context);
  // The reshapes of the views fold with TOSA's own (tosa.reshape's
  // expand/collapse) and with the fills and empties they reshape.
  tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
  tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
  linalg::FillOp::getCanonicalizationPatterns(patterns, context);
  tensor::populateFoldTensorEmptyPatterns(patterns);
}

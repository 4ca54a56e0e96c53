//===- ContractionToMatmul.cpp - generic contractions as GEMMs --*- C++ -*-===//
//
// The gacc-contraction-to-matmul pass: weight-gradient contractions
// written as linalg.generic (C[m, n] += sum_K A * B) become linalg.matmul on
// reshaped operands, so that both lowerings send them to BLAS / cuBLAS with
// beta = 1 accumulation instead of generated loops. (TOSA's single-batch
// batch_matmuls are matmuls already: gacc-prepare-step.)
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#define DEBUG_TYPE "gacc-contraction-to-matmul"

namespace mlir::gacc {
#define GEN_PASS_DEF_CONTRACTIONTOMATMULPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Returns true when the body of `op` is `yield out + in0 * in1` (f32).
static bool isMulAddBody(linalg::GenericOp op) {
  Block *body = op.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add || body->getOperations().size() != 3)
    return false;
  Value out = body->getArgument(2);
  Value other = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if (add.getLhs() != out && add.getRhs() != out)
    return false;
  auto mul = other.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return false;
  Value a = body->getArgument(0), b = body->getArgument(1);
  return (mul.getLhs() == a && mul.getRhs() == b) ||
         (mul.getLhs() == b && mul.getRhs() == a);
}

/// The loop dims of `map`'s results.
static SmallVector<unsigned> getDims(AffineMap map) {
  SmallVector<unsigned> dims;
  for (AffineExpr e : map.getResults())
    dims.push_back(cast<AffineDimExpr>(e).getPosition());
  return dims;
}

/// Reshapes `operand` (loop dims `dims`: one free dim and the reduction
/// block `red`) to a matrix [free, k] (or [k, free] when `kFirst`); returns
/// null when the block is not contiguous.
static Value toMatrix(OpBuilder &builder, Location loc, Value operand,
                      ArrayRef<unsigned> dims, ArrayRef<unsigned> red,
                      unsigned freeDim, bool &kFirst) {
  auto it = llvm::find(dims, red.front());
  if (it == dims.end())
    return {};
  size_t start = it - dims.begin();
  if (start + red.size() > dims.size() ||
      ArrayRef<unsigned>(dims).slice(start, red.size()) != red)
    return {};
  size_t freePos = llvm::find(dims, freeDim) - dims.begin();
  if (freePos >= dims.size() || dims.size() != red.size() + 1)
    return {};
  kFirst = freePos > start;
  if (red.size() == 1)
    return operand;
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices block;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i >= start && i < start + red.size()) {
      block.push_back(i);
      if (i + 1 == start + red.size())
        groups.push_back(block);
      continue;
    }
    groups.push_back({static_cast<int64_t>(i)});
  }
  return tensor::CollapseShapeOp::create(builder, loc, operand, groups);
}

namespace {
struct ContractionToMatmulPass
    : public gacc::impl::ContractionToMatmulPassBase<ContractionToMatmulPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op.hasPureTensorSemantics() && op.getNumDpsInputs() == 2 &&
          op.getNumDpsInits() == 1 && isMulAddBody(op) &&
          llvm::all_of(op.getIndexingMapsArray(),
                       [](AffineMap m) { return m.isProjectedPermutation(); }))
        candidates.push_back(op);
    });
    for (linalg::GenericOp op : candidates) {
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      SmallVector<unsigned> aDims = getDims(maps[0]), bDims = getDims(maps[1]),
                            cDims = getDims(maps[2]);
      auto iterators = op.getIteratorTypesArray();
      if (cDims.size() != 2 || !llvm::all_of(cDims, [&](unsigned d) {
            return iterators[d] == utils::IteratorType::parallel;
          }))
        continue;
      SmallVector<unsigned> red;
      for (unsigned d : aDims)
        if (iterators[d] == utils::IteratorType::reduction)
          red.push_back(d);
      if (red.empty() || op.getNumParallelLoops() != 2 ||
          op.getNumReductionLoops() != red.size() ||
          !cast<RankedTensorType>(op.getDpsInits()[0].getType())
               .getElementType()
               .isF32())
        continue;
      unsigned m = cDims[0], n = cDims[1];
      Value a = op.getDpsInputs()[0], b = op.getDpsInputs()[1];
      // The operand that carries m is the left one.
      if (!llvm::is_contained(aDims, m)) {
        std::swap(a, b);
        std::swap(aDims, bDims);
      }
      if (!llvm::is_contained(aDims, m) || !llvm::is_contained(bDims, n))
        continue;
      SmallVector<unsigned> bRed;
      for (unsigned d : bDims)
        if (iterators[d] == utils::IteratorType::reduction)
          bRed.push_back(d);
      if (bRed != red)
        continue;
      OpBuilder builder(op);
      Location loc = op.getLoc();
      bool aKFirst = false, bKFirst = false;
      Value am = toMatrix(builder, loc, a, aDims, red, m, aKFirst);
      Value bm =
          am ? toMatrix(builder, loc, b, bDims, red, n, bKFirst) : Value();
      if (!am || !bm)
        continue;
      // matmul wants A [m, k] and B [k, n].
      if (aKFirst)
        am = transposeMatrix(builder, loc, am);
      if (!bKFirst)
        bm = transposeMatrix(builder, loc, bm);
      auto matmul = linalg::MatmulOp::create(
          builder, loc, TypeRange{op.getResultTypes()[0]}, ValueRange{am, bm},
          ValueRange{op.getDpsInits()[0]});
      matmul->setDiscardableAttrs(op->getDiscardableAttrDictionary());
      op->replaceAllUsesWith(matmul->getResults());
      op.erase();
    }
  }
};
} // namespace

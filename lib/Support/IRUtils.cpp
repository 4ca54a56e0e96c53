//===- IRUtils.cpp - IR helpers that know nothing of gacc -------*- C++ -*-===//
//
// Implements the helpers of IRUtils.h.
//
//===----------------------------------------------------------------------===//

#include "gacc/Support/IRUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::gacc;

void mlir::gacc::eraseDeadOps(Block &block, RewriterBase *rewriter) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
      if (isOpTriviallyDead(&op)) {
        if (rewriter)
          rewriter->eraseOp(&op);
        else
          op.erase();
        changed = true;
      }
  }
}

Value mlir::gacc::getViewRoot(Value view) {
  while (auto op = view.getDefiningOp<ViewLikeOpInterface>()) {
    // extract_strided_metadata's first result is its source's buffer (the
    // others are sizes and strides).
    bool base = isa<memref::ExtractStridedMetadataOp>(op.getOperation()) &&
                cast<OpResult>(view).getResultNumber() == 0;
    if ((op->getNumResults() != 1 && !base) || op.getViewSource() == view)
      break;
    view = op.getViewSource();
  }
  return view;
}

bool mlir::gacc::isComputedFrom(Value value, Operation *scope,
                                function_ref<bool(Value)> isSource) {
  SmallVector<Value> work{value};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (isSource(v))
      return true;
    Operation *def = v.getDefiningOp();
    if (def && scope->isProperAncestor(def))
      llvm::append_range(work, def->getOperands());
  }
  return false;
}

bool mlir::gacc::isFillOf(Value value, TypedAttr scalar) {
  auto fill = value.getDefiningOp<linalg::FillOp>();
  if (!fill)
    return false;
  Attribute attr;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&attr)))
    return false;
  return attr == scalar;
}

Value mlir::gacc::transposeMatrix(OpBuilder &builder, Location loc,
                                  Value matrix) {
  auto type = cast<RankedTensorType>(matrix.getType());
  Value init = tensor::EmptyOp::create(
      builder, loc, ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(0)},
      type.getElementType());
  return linalg::TransposeOp::create(builder, loc, matrix, init,
                                     ArrayRef<int64_t>{1, 0})
      ->getResult(0);
}

void mlir::gacc::foldStaticDims(func::FuncOp func) {
  SmallVector<tensor::DimOp> dims;
  func.walk([&](tensor::DimOp dim) { dims.push_back(dim); });
  for (tensor::DimOp dim : dims) {
    std::optional<int64_t> index = dim.getConstantIndex();
    auto type = dyn_cast<RankedTensorType>(dim.getSource().getType());
    if (!index || !type || *index < 0 || *index >= type.getRank() ||
        type.isDynamicDim(*index))
      continue;
    OpBuilder builder(dim);
    Value cst = arith::ConstantIndexOp::create(builder, dim.getLoc(),
                                               type.getDimSize(*index));
    dim.replaceAllUsesWith(cst);
    dim.erase();
  }
}

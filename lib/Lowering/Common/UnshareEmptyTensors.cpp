//===- UnshareEmptyTensors.cpp - one tensor.empty per use -------*- C++ -*-===//
//
// The gacc-unshare-empty-tensors pass: gives every use of a `tensor.empty`
// its own `tensor.empty`, created right before the user. Canonicalization and
// CSE merge identical empties, so in a deep step one empty can be the
// destination of hundreds of ops (every transpose of a 64x64 weight, every
// elementwise op of one shape). One-shot bufferization puts all those
// in-place writes into one alias set and checks each pair of them for
// conflicts: quadratic in the depth of the model (72 % of the lowering at 200
// layers). An empty has no contents, so separate empties change nothing but
// the analysis' work.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#define DEBUG_TYPE "gacc-unshare-empty-tensors"

namespace mlir::gacc {
#define GEN_PASS_DEF_UNSHAREEMPTYTENSORSPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct UnshareEmptyTensorsPass
    : public gacc::impl::UnshareEmptyTensorsPassBase<UnshareEmptyTensorsPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<tensor::EmptyOp> shared;
    getOperation()->walk([&](tensor::EmptyOp empty) {
      if (!empty->hasOneUse() && !empty->use_empty())
        shared.push_back(empty);
    });
    OpBuilder builder(&getContext());
    for (tensor::EmptyOp empty : shared) {
      // Each use gets a clone placed right before its user (the sizes
      // dominate the original, which dominates the user).
      SmallVector<OpOperand *> uses = llvm::map_to_vector(
          empty->getUses(), [](OpOperand &use) { return &use; });
      for (OpOperand *use : uses) {
        builder.setInsertionPoint(use->getOwner());
        use->set(builder.clone(*empty)->getResult(0));
      }
      empty->erase();
    }
  }
};
} // namespace

//===- CopyRepeatedResults.cpp - one buffer per returned result -*- C++ -*-===//
//
// The gacc-copy-repeated-results pass: a step may return one value twice
// (the loss also as a gacc.metric, or a generic that yields its own `outs`
// and folds to it). After bufferization both results would be the same
// buffer, which buffer-results-to-out-params cannot turn into two
// out-parameters. Each repeated result becomes a copy of the value (a
// `linalg.copy` into a fresh tensor), so every result has its own buffer.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#define DEBUG_TYPE "gacc-copy-repeated-results"

namespace mlir::gacc {
#define GEN_PASS_DEF_COPYREPEATEDRESULTSPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct CopyRepeatedResultsPass
    : public gacc::impl::CopyRepeatedResultsPassBase<CopyRepeatedResultsPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    getOperation().walk([&](func::ReturnOp ret) {
      llvm::SmallPtrSet<Value, 8> seen;
      OpBuilder builder(ret);
      for (OpOperand &operand : ret->getOpOperands()) {
        Value value = operand.get();
        if (seen.insert(value).second)
          continue;
        auto type = dyn_cast<RankedTensorType>(value.getType());
        if (!type)
          continue;
        Location loc = value.getLoc();
        SmallVector<OpFoldResult> sizes =
            tensor::getMixedSizes(builder, loc, value);
        Value empty =
            tensor::EmptyOp::create(builder, loc, sizes, type.getElementType());
        auto copy = linalg::CopyOp::create(builder, loc, value, empty);
        operand.set(copy->getResult(0));
      }
    });
  }
};
} // namespace

//===- TestBreakIR.cpp - a pass that leaves invalid IR ----------*- C++ -*-===//
//
// Test only: the gacc-test-break-ir pass leaves IR the verifier rejects, so
// that the "produced invalid IR" internal error of PassResultVerifier is
// tested, with the full verifier and with each local verification (ChangedOps
// and verifyByRegionForm) that gacc passes use in its place.
//
//===----------------------------------------------------------------------===//

#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/Passes.h"
#include "gacc/Transforms/RegionForms.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::gacc {
#define GEN_PASS_DEF_TESTBREAKIRPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;

namespace {
struct TestBreakIRPass
    : public gacc::impl::TestBreakIRPassBase<TestBreakIRPass> {
  using TestBreakIRPassBase::TestBreakIRPassBase;

  void runOnOperation() override {
    if (mode == "plain") {
      GACC_VERIFY_PASS_RESULT();
      getOperation().walk([](func::ReturnOp ret) { ret->setOperands({}); });
    } else if (mode == "changed-return" || mode == "changed-dominance" ||
               mode == "changed-symbol") {
      gacc::ChangedOps changes;
      GACC_VERIFY_PASS_CHANGES(changes);
      gacc::ChangeTrackingRewriter rewriter(&getContext(), changes);
      if (mode == "changed-return")
        getOperation().walk([&](func::ReturnOp ret) {
          rewriter.modifyOpInPlace(ret, [&] { ret->setOperands({}); });
        });
      else if (mode == "changed-dominance")
        getOperation().walk(
            [&](func::FuncOp func) { useLaterValue(func, rewriter); });
      else
        getOperation().walk([&](func::FuncOp func) {
          rewriter.setInsertionPointToStart(&func.getBody().front());
          func::CallOp::create(rewriter, func.getLoc(), "gacc_test_missing",
                               TypeRange{}, ValueRange{});
        });
    } else if (mode == "region-site" || mode == "region-body") {
      GACC_VERIFY_PASS_RESULT_WITH(gacc::verifyByRegionForm);
      breakThirdRegion();
    } else {
      getOperation().emitError() << "unknown mode '" << mode << "'";
      signalPassFailure();
    }
  }

  /// Makes the first op of `func` with operands use a value of the same type
  /// that the block defines after it.
  static void useLaterValue(func::FuncOp func, RewriterBase &rewriter) {
    Block &block = func.getBody().front();
    for (Operation &op : block) {
      if (op.getNumOperands() == 0)
        continue;
      Type type = op.getOperand(0).getType();
      for (Operation &later :
           llvm::make_range(std::next(op.getIterator()), block.end()))
        for (Value result : later.getResults())
          if (result.getType() == type) {
            rewriter.modifyOpInPlace(&op, [&] { op.setOperand(0, result); });
            return;
          }
    }
  }

  void breakThirdRegion() {
    SmallVector<gacc::MicroBatchOp> regions;
    getOperation().walk([&](gacc::MicroBatchOp r) { regions.push_back(r); });
    if (regions.size() < 3)
      return;
    WalkResult done = regions[2].walk([&](Operation *op) {
      if (mode == "region-site") {
        auto slice = dyn_cast<tensor::ExtractSliceOp>(op);
        if (!slice || slice.getStaticOffsets().empty() ||
            ShapedType::isDynamic(slice.getStaticOffsets().front()))
          return WalkResult::advance();
        SmallVector<int64_t> offsets(slice.getStaticOffsets());
        offsets.front() = 1000;
        slice.setStaticOffsets(offsets);
        return WalkResult::interrupt();
      }
      auto empty = dyn_cast<tensor::EmptyOp>(op);
      if (!empty || empty.getType().getRank() == 0)
        return WalkResult::advance();
      // The same shape in another element type: its users no longer accept
      // it.
      empty.getResult().setType(
          empty.getType().clone(IndexType::get(op->getContext())));
      return WalkResult::interrupt();
    });
    (void)done;
  }
};
} // namespace

//===- ConvertStepToLLVM.cpp - one conversion to the LLVM dialect ---------===//
//
// The gacc-convert-step-to-llvm pass: the arith, memref, func, cf and index
// conversions of the CPU lowering as one dialect conversion (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/CPU/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Analysis/DataLayoutAnalysis.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"

#define DEBUG_TYPE "gacc-convert-step-to-llvm"

namespace mlir::gacc {
#define GEN_PASS_DEF_CONVERTSTEPTOLLVMPASS
#include "gacc/Lowering/CPU/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Replaces `arith.maxnumf` / `arith.minnumf` without `nnan` by compares
/// and selects with their semantics (a NaN operand yields the other): LLVM
/// 22's loop vectorizer miscompiles a reduction through `llvm.maxnum` /
/// `llvm.minnum` without fast-math flags whose trip count is not a
/// multiple of its vector factor (it skips the scalar remainder when the
/// vector part saw no NaN; llvm/llvm-project#209159). With compares and
/// selects the reduction is not vectorized.
static void expandNumMinMax(ModuleOp module) {
  module.walk([](Operation *op) {
    bool isMax = isa<arith::MaxNumFOp>(op);
    if (!isMax && !isa<arith::MinNumFOp>(op))
      return;
    auto fastMath = cast<arith::ArithFastMathInterface>(op);
    if (arith::bitEnumContainsAll(fastMath.getFastMathFlagsAttr().getValue(),
                                  arith::FastMathFlags::nnan))
      return;
    OpBuilder builder(op);
    Location loc = op->getLoc();
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    // maxnum(a, b) = isnan(a) ? b : (a > b or isnan(b)) ? a : b.
    Value lhsIsNaN = arith::CmpFOp::create(builder, loc,
                                           arith::CmpFPredicate::UNO, lhs, lhs);
    Value pickLhs = arith::CmpFOp::create(builder, loc,
                                          isMax ? arith::CmpFPredicate::UGT
                                                : arith::CmpFPredicate::ULT,
                                          lhs, rhs);
    Value ordered = arith::SelectOp::create(builder, loc, pickLhs, lhs, rhs);
    Value result =
        arith::SelectOp::create(builder, loc, lhsIsNaN, rhs, ordered);
    op->getResult(0).replaceAllUsesWith(result);
    op->erase();
  });
}

namespace {
struct ConvertStepToLLVMPass
    : public gacc::impl::ConvertStepToLLVMPassBase<ConvertStepToLLVMPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    expandNumMinMax(module);
    const auto &dataLayoutAnalysis = getAnalysis<DataLayoutAnalysis>();
    LowerToLLVMOptions options(ctx, dataLayoutAnalysis.getAtOrAbove(module));
    options.useGenericFunctions = true;
    LLVMTypeConverter converter(ctx, options, &dataLayoutAnalysis);

    // One symbol table collection for every pattern that looks up or
    // declares a function (the allocation functions, abort for cf.assert,
    // callees): O(calls) lookups, not O(calls x functions). The patterns
    // declare functions through it, so it stays in sync.
    SymbolTableCollection symbolTables;
    RewritePatternSet patterns(ctx);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    populateFinalizeMemRefToLLVMConversionPatterns(converter, patterns,
                                                   &symbolTables);
    populateFuncToLLVMConversionPatterns(converter, patterns, &symbolTables);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    cf::populateAssertToLLVMConversionPattern(
        converter, patterns, /*abortOnFailure=*/true, &symbolTables);
    index::populateIndexToLLVMConversionPatterns(converter, patterns);
    // The stand-ins of gacc-outline-copies for buffers a call does not use.
    ub::populateUBToLLVMConversionPatterns(converter, patterns);

    LLVMConversionTarget target(*ctx);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    SmallVector<UnrealizedConversionCastOp> casts;
    module.walk([&](UnrealizedConversionCastOp op) { casts.push_back(op); });
    SmallVector<UnrealizedConversionCastOp> remaining;
    reconcileUnrealizedCasts(casts, &remaining);
    if (remaining.empty())
      return;
    remaining.front().emitError()
        << "a value of type " << remaining.front().getOperandTypes()
        << " is still used as " << remaining.front().getResultTypes()
        << " after the conversion to the LLVM dialect";
    signalPassFailure();
  }
};
} // namespace

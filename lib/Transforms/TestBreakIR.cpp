//===- TestBreakIR.cpp - a pass that leaves invalid IR ----------*- C++ -*-===//
//
// Test only: the gacc-test-break-ir pass leaves IR the verifier rejects
// (every func.return loses its operands), so that the "produced invalid IR"
// internal error of PassResultVerifier is tested.
//
//===----------------------------------------------------------------------===//

#include "gacc/Transforms/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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
    GACC_VERIFY_PASS_RESULT();
    getOperation().walk([](func::ReturnOp ret) { ret->setOperands({}); });
  }
};
} // namespace

//===- RequireLibdevice.cpp - no PTX with unresolved libdevice calls -*- C++
//-*-//
//
// The gacc-require-libdevice pass of the CUDA lowering: kernels whose math
// ops became calls of libdevice functions (`__nv_expf`, ...) need the
// libdevice bitcode linked; without it the PTX would carry unresolved calls
// that fail only when the driver loads the module. This turns that into a
// compile-time error naming the function and the path searched.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

#define DEBUG_TYPE "gacc-require-libdevice"

namespace mlir::gacc {
#define GEN_PASS_DEF_REQUIRELIBDEVICEPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct RequireLibdevicePass
    : public gacc::impl::RequireLibdevicePassBase<RequireLibdevicePass> {
  using Base::Base;
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    if (!libdevice.empty())
      return;
    getOperation().walk([&](gpu::GPUModuleOp module) {
      for (auto func : module.getOps<LLVM::LLVMFuncOp>()) {
        if (!func.isExternal() || !func.getSymName().starts_with("__nv_"))
          continue;
        module.emitError("kernels call the libdevice function '")
            << func.getSymName() << "' but libdevice was not found at '"
            << searched
            << "'; set the cuda-path option (or CUDA_HOME) to a CUDA toolkit";
        signalPassFailure();
        return;
      }
    });
  }
};
} // namespace

//===- RuntimeCalls.h - declarations of gaccrt functions --------*- C++ -*-===//
//
// Helpers that declare the gaccrt_* runtime functions that lowered code calls
// and build the calls.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LIB_CONVERSION_RUNTIMECALLS_H
#define GACC_LIB_CONVERSION_RUNTIMECALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace mlir::gacc {

/// Returns the private declaration of runtime function `name` with `type` in
/// the module around `from`, creating it at the module's start if needed.
func::FuncOp getOrDeclareRuntimeFunction(Operation *from, StringRef name,
                                         FunctionType type);

/// The runtime's element type codes (gaccrt_all_reduce's `dtype`).
enum class RuntimeDType : int32_t {
  F32 = 0,
  F64 = 1,
  BF16 = 2,
  F16 = 3,
  I32 = 4,
  I64 = 5
};

/// Returns the runtime code of `type`, if the runtime reduces it.
std::optional<RuntimeDType> getRuntimeDType(Type type);

} // namespace mlir::gacc

#endif // GACC_LIB_CONVERSION_RUNTIMECALLS_H

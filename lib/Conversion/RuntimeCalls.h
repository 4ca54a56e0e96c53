//===- RuntimeCalls.h - declarations of gaccrt functions --------*- C++ -*-===//
//
// Helpers that declare the gaccrt_* runtime functions that lowered code calls
// and build the calls.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LIB_CONVERSION_RUNTIMECALLS_H
#define GACC_LIB_CONVERSION_RUNTIMECALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"

#include <cstdint>
#include <optional>

namespace mlir::gacc {

/// Returns the private declaration of runtime function `name` with `type` in
/// the module around `from`, creating it at the module's start if needed.
func::FuncOp getOrDeclareRuntimeFunction(Operation *from, StringRef name,
                                         FunctionType type);

/// Returns the runtime's element type code of `type` (gaccrt_all_reduce's
/// `dtype`: GACCRT_F32, ... from gaccrt.h), if the runtime reduces it.
std::optional<int32_t> getRuntimeDType(Type type);

/// Returns the runtime's reduction kind code of `kind` (gaccrt_all_reduce's
/// `kind`: GACCRT_SUM, ... from gaccrt.h), if the runtime has it.
std::optional<int32_t> getRuntimeReductionKind(shard::ReductionKind kind);

/// `op` when it is a gaccrt_sgemm call (transA, transB, alpha, beta, A, B,
/// C: gacc-matmul-to-blas), else null.
func::CallOp getSgemmCall(Operation *op);

} // namespace mlir::gacc

#endif // GACC_LIB_CONVERSION_RUNTIMECALLS_H

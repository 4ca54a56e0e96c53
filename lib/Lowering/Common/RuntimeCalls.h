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
#include "mlir/IR/SymbolTable.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::gacc {

/// Returns the private declaration of runtime function `name` with `type` in
/// the module around `from`, creating it at the module's start if needed.
func::FuncOp getOrDeclareRuntimeFunction(Operation *from, StringRef name,
                                         FunctionType type);

/// Returns the declaration of the runtime's
/// `gaccrt_index_error(value, bound, site)` (three i64: a gather or
/// scatter-add index out of range, a division that would trap) in the module
/// around `from`.
func::FuncOp getOrDeclareIndexError(Operation *from);

/// Creates at `builder`'s insertion point a call of runtime function `name`
/// (no results) with `operands`, declaring the function with their types if
/// needed.
func::CallOp createRuntimeCall(OpBuilder &builder, Location loc, StringRef name,
                               ValueRange operands);

/// Creates, right after `func`, a private function named `func`'s name
/// plus `suffix` (made unique in `symbols`) of `type` with an entry block,
/// with internal linkage: not exported from a compiled step's library.
func::FuncOp createInternalFunction(func::FuncOp func, StringRef suffix,
                                    FunctionType type, SymbolTable &symbols);

/// "file:line:col" of `loc` (its first FileLineColLoc), or the printed
/// location: where a runtime check's site is (gacc.gather_sites).
std::string formatSiteLocation(Location loc);

/// Returns the runtime's element type code of `type` (gaccrt_all_reduce's
/// `dtype`: GACCRT_F32, ... from gaccrt.h), if the runtime reduces it.
std::optional<int32_t> getRuntimeDType(Type type);

/// Returns the runtime's reduction kind code of `kind` (gaccrt_all_reduce's
/// `kind`: GACCRT_SUM, ... from gaccrt.h), if the runtime has it.
std::optional<int32_t> getRuntimeReductionKind(shard::ReductionKind kind);

/// Marks the `scf.execute_region` of a gaccrt_sgemm call and the
/// elementwise loop that runs on its C's final tiles
/// (gacc-fuse-gemm-epilogues; gacc-parallel-loops-to-runtime lowers it to
/// gaccrt_sgemm_epilogue).
constexpr llvm::StringLiteral kGemmEpilogueAttr = "gacc.gemm_epilogue";

/// `op` when it is a gaccrt_sgemm call (transA, transB, alpha, beta, A, B,
/// C: gacc-matmul-to-blas), else null.
func::CallOp getSgemmCall(Operation *op);

/// The operands that `op` writes when it is a call of the runtime's GEMM
/// family (gaccrt_sgemm: C; gaccrt_sgemm_pair (..., A1, B1, A2, B2, C) and
/// gaccrt_sgemm_quad (..., A1, B1, ..., A4, B4, C): C, which they also read;
/// gaccrt_sgemm_rows_pair (..., A1, B, C1, A2, C2): C1 and C2, also read);
/// their other memref operands they only read. Nothing for any other op.
std::optional<SmallVector<unsigned, 2>> getGemmWrittenOperands(Operation *op);

} // namespace mlir::gacc

#endif // GACC_LIB_CONVERSION_RUNTIMECALLS_H

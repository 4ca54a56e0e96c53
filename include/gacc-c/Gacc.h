/*===-- gacc-c/Gacc.h - C API of gacc ------------------------------*- C -*-===*\
|*                                                                            *|
|* The C API of gacc, in MLIR's C API style: the dialect handle, pass and     *|
|* pipeline registration, and a call that runs gacc-pipeline on a module.     *|
|* The library libgacc-c.so also carries MLIR's own C API (IR, passes,        *|
|* RegisterEverything), so a C program links only it plus libMLIR/libLLVM.    *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/

#ifndef GACC_C_GACC_H
#define GACC_C_GACC_H

#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/Support.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The gacc dialect: mlirGetDialectHandle__gacc__().
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(Gacc, gacc);

/// Inserts into `registry` every dialect a training step and its lowerings
/// use (gacc, func, arith, math, linalg, tensor, shard and the bufferization
/// models).
MLIR_CAPI_EXPORTED void gaccRegisterDialects(MlirDialectRegistry registry);

/// Registers every gacc pass and the pipelines `gacc-pipeline`,
/// `gacc-lower-to-cpu` and `gacc-lower-to-cuda`, so that
/// mlirParsePassPipeline finds them by name.
MLIR_CAPI_EXPORTED void gaccRegisterAllPasses(void);

/// Runs `gacc-pipeline{options}` (e.g. "micro-batch-sizes=3,1") on `module`.
/// Diagnostics go to the context's handlers; returns failure on an error.
MLIR_CAPI_EXPORTED MlirLogicalResult gaccRunPipeline(MlirModule module,
                                                     MlirStringRef options);

/// gacc-inline-micro-batches under the names it had as a transformation
/// pass: the same as mlirCreateGaccConversionInlineMicroBatchesPass and
/// mlirRegisterGaccConversionInlineMicroBatchesPass (a lowering pass now,
/// registered by mlirRegisterGaccConversionPasses).
MLIR_CAPI_EXPORTED MlirPass mlirCreateGaccInlineMicroBatchesPass(void);
MLIR_CAPI_EXPORTED void mlirRegisterGaccInlineMicroBatchesPass(void);

#ifdef __cplusplus
}
#endif

#include "gacc/Lowering/Passes.capi.h.inc"
#include "gacc/Transforms/Passes.capi.h.inc"

#endif // GACC_C_GACC_H

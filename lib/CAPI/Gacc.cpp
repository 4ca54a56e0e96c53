//===- Gacc.cpp - C API of gacc ---------------------------------*- C++ -*-===//
//
// Implements include/gacc-c/Gacc.h: the dialect handle, the generated pass
// registration of the transformation and conversion passes, and running
// gacc-pipeline on a module.
//
//===----------------------------------------------------------------------===//

#include "gacc-c/Gacc.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/InitAll.h"
#include "gacc/Lowering/Passes.h"
#include "gacc/Pipelines/Pipelines.h"
#include "gacc/Transforms/Passes.h"

#include "mlir/CAPI/IR.h"
#include "mlir/CAPI/Pass.h"
#include "mlir/CAPI/Registration.h"
#include "mlir/CAPI/Support.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace mlir::gacc;

MLIR_DEFINE_CAPI_DIALECT_REGISTRATION(Gacc, gacc, mlir::gacc::GaccDialect)

void gaccRegisterDialects(MlirDialectRegistry registry) {
  registerGaccDialects(*unwrap(registry));
  registerGaccLoweringExternalModels(*unwrap(registry));
}

void gaccRegisterAllPasses(void) { registerAllGaccPasses(); }

MlirLogicalResult gaccRunPipeline(MlirModule module, MlirStringRef options) {
  ModuleOp op = unwrap(module);
  PassManager pm(op->getName());
  GaccPipelineOptions pipelineOptions;
  if (failed(pipelineOptions.parseFromString(unwrap(options)))) {
    op.emitError() << "invalid gacc-pipeline options '" << unwrap(options)
                   << "'";
    return mlirLogicalResultFailure();
  }
  buildGaccPipeline(pm, pipelineOptions);
  return wrap(pm.run(op));
}

MlirPass mlirCreateGaccInlineMicroBatchesPass(void) {
  return mlirCreateGaccConversionInlineMicroBatchesPass();
}

void mlirRegisterGaccInlineMicroBatchesPass(void) {
  mlirRegisterGaccConversionInlineMicroBatchesPass();
}

#include "gacc/Lowering/Passes.capi.cpp.inc"
#include "gacc/Transforms/Passes.capi.cpp.inc"

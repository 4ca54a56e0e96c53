//===- InitAll.cpp - register everything gacc provides ----------*- C++ -*-===//
//
// Registration entry points shared by gacc-opt and embedders (library
// GaccInitAll, above GaccPipelines and the libraries it is built from).
//
//===----------------------------------------------------------------------===//

#include "gacc/InitAll.h"
#include "gacc/Lowering/Passes.h"
#include "gacc/Pipelines/Pipelines.h"
#include "gacc/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

void mlir::gacc::registerAllGaccPasses() {
  registerGaccPasses();
  registerGaccConversionPasses();
  registerGaccPipelines();
}

void mlir::gacc::registerAllGacc(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  // gpu-module-to-binary translates kernels to LLVM IR in-process.
  registerAllToLLVMIRTranslations(registry);
  registerAllPasses();
  registerGaccDialects(registry);
  registerGaccLoweringExternalModels(registry);
  registerAllGaccPasses();
}

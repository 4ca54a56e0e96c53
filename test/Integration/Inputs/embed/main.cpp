//===- main.cpp - an embedder of the gacc pipeline --------------*- C++ -*-===//
//
// Parses a training step, runs gacc-pipeline with micro-batches=2 through the
// C++ API (no command-line registration) and prints the result.
//
//===----------------------------------------------------------------------===//

#include "gacc/InitAll.h"
#include "gacc/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    llvm::errs() << "usage: gacc-embed STEP.mlir\n";
    return 2;
  }
  mlir::DialectRegistry registry;
  mlir::gacc::registerGaccDialects(registry);
  mlir::MLIRContext context(registry);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(argv[1], &context);
  if (!module)
    return 1;
  mlir::PassManager pm(&context);
  mlir::gacc::GaccPipelineOptions options;
  options.microBatches = 2;
  mlir::gacc::buildGaccPipeline(pm, options);
  if (mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  return 0;
}

//===- gacc-opt.cpp - mlir-opt with gacc's dialect and passes ---*- C++ -*-===//
//
// The gacc driver for lit tests and command-line use: every upstream dialect
// and pass plus the gacc dialect, passes and gacc-pipeline.
//
//===----------------------------------------------------------------------===//

#include "gacc/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::gacc::registerAllGacc(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "gacc optimizer driver: gradient accumulation for training "
      "steps\n",
      registry));
}

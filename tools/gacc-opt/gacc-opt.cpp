//===- gacc-opt.cpp - mlir-opt with gacc's dialect and passes ---*- C++ -*-===//
//
// The gacc driver for lit tests and command-line use: every upstream dialect
// and pass plus the gacc dialect, passes and gacc-pipeline.
//
//===----------------------------------------------------------------------===//

#include "gacc/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#include <vector>

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::gacc::registerAllGacc(registry);
  // Diagnostics carry locations; by default a note must not print the whole
  // op (a function of megabytes for a large step). A later
  // --mlir-print-op-on-diagnostic=true on the command line still wins.
  std::vector<char *> args(argv, argv + argc);
  static char quiet[] = "--mlir-print-op-on-diagnostic=false";
  args.insert(args.begin() + 1, quiet);
  args.push_back(nullptr);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      static_cast<int>(args.size()) - 1, args.data(),
      "gacc optimizer driver: gradient accumulation for training "
      "steps\n",
      registry));
}

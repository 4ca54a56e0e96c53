//===- main.cpp - an embedder of the gacc runner ----------------*- C++ -*-===//
//
// Compiles a training step with micro-batches=2 for the CPU through the
// installed runner library, runs three steps on seeded random inputs (the
// inputs of gacc-run --seed=0) with buffers that stay alive between steps and
// prints each step's loss as gacc-run does. Fails when a loss is not finite,
// or when the library registered a command-line flag of the tools (the
// embedder's command line is its own).
//
//===----------------------------------------------------------------------===//

#include "gacc/Runner/StepRunner.h"
#include "gaccrt/gaccrt.h"

#include "llvm/Support/CommandLine.h"

#include <cmath>
#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gacc-runner-embed STEP.mlir\n");
    return 2;
  }
  for (const char *flag : {"micro-batches", "device", "no-blas"})
    if (llvm::cl::getRegisteredOptions().count(flag)) {
      std::fprintf(stderr, "error: the runner library registers --%s\n",
                   flag);
      return 1;
    }
  if (gaccrt_init() != 0)
    return 1;
  mlir::gacc::StepOptions options;
  options.microBatches = 2;
  options.traceRegions = false; // as gacc-run without --trace
  std::string error;
  std::unique_ptr<mlir::gacc::CompiledStep> step =
      mlir::gacc::CompiledStep::compile(argv[1], options, error);
  if (!step) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  int lossIndex = -1;
  for (size_t j = 0; j < step->getResults().size(); ++j)
    if (step->getResults()[j].role == mlir::gacc::Role::Loss)
      lossIndex = static_cast<int>(j);
  std::vector<mlir::gacc::NpyArray> inputs =
      mlir::gacc::makeRandomInputs(*step, /*seed=*/0, /*rank=*/0);
  if (lossIndex < 0 || !step->setInputs(inputs, error)) {
    std::fprintf(stderr, "error: %s\n",
                 lossIndex < 0 ? "the step has no loss" : error.c_str());
    return 1;
  }
  for (int k = 0; k < 3; ++k) {
    if (!step->runSteps(1, error)) {
      std::fprintf(stderr, "error: %s\n", error.c_str());
      return 1;
    }
    mlir::gacc::NpyArray loss = mlir::gacc::convertToDType(
        step->getOutput(lossIndex), mlir::gacc::DType::F64);
    double value = *reinterpret_cast<const double *>(loss.data.data());
    if (!std::isfinite(value)) {
      std::fprintf(stderr, "error: step %d: the loss is %g\n", k + 1, value);
      return 1;
    }
    std::printf("step %d: loss = %.6g\n", k + 1, value);
  }
  step.reset();
  mlir::gacc::finalizeRuntime();
  return 0;
}

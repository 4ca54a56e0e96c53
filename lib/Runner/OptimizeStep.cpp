//===- OptimizeStep.cpp - LLVM's optimization of a lowered step -----------===//
//
// optimizeStepModule (gacc/Runner/OptimizeStep.h): the new pass manager's
// default O3 module pipeline for the target machine, with the pipeline
// tuning options that leave loop unrolling out.
//
//===----------------------------------------------------------------------===//

#include "gacc/Runner/OptimizeStep.h"

#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Target/TargetMachine.h"

void mlir::gacc::optimizeStepModule(llvm::Module &module,
                                    llvm::TargetMachine &targetMachine) {
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.LoopInterleaving = true;
  tuning.SLPVectorization = true;
  // Full and partial unrolling both (see the header); loops with an unroll
  // pragma would still be unrolled, and the lowering emits none.
  tuning.LoopUnrolling = false;

  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager sccs;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder(&targetMachine, tuning);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);

  llvm::ModulePassManager pipeline =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  pipeline.run(module, modules);
}

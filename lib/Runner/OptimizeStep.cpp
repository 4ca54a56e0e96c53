//===- OptimizeStep.cpp - LLVM's optimization of a lowered step -----------===//
//
// optimizeStepModule (gacc/Runner/OptimizeStep.h): the new pass manager's
// default O3 module pipeline for the target machine, with the pipeline
// tuning options that leave loop unrolling out; generateObjects: code
// generation split over threads.
//
//===----------------------------------------------------------------------===//

#include "gacc/Runner/OptimizeStep.h"

#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"
#include "llvm/Transforms/Utils/SplitModule.h"

#include <algorithm>
#include <string>
#include <system_error>
#include <thread>

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
  // LLVM's -time-passes (a cl::opt of the tools) reports these passes too.
  llvm::PassInstrumentationCallbacks callbacks;
  llvm::StandardInstrumentations instrumentations(module.getContext(),
                                                  /*DebugLogging=*/false);
  instrumentations.registerCallbacks(callbacks, &modules);
  llvm::PassBuilder builder(&targetMachine, tuning, std::nullopt, &callbacks);
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(sccs);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, sccs, modules);

  llvm::ModulePassManager pipeline =
      builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  pipeline.run(module, modules);
}

void mlir::gacc::mergeIdenticalFunctions(llvm::Module &module) {
  // The step's own functions are called, or passed to the runtime as loop
  // bodies, never compared: their addresses do not matter, so a duplicate
  // is replaced by the original outright rather than by a thunk.
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && function.hasLocalLinkage())
      function.setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
  llvm::MergeFunctionsPass::runOnModule(module);
}

void mlir::gacc::setCheapToCompile(llvm::Function &function) {
  function.addFnAttr(llvm::Attribute::OptimizeNone);
  function.addFnAttr(llvm::Attribute::NoInline);
}

unsigned mlir::gacc::getDefaultCodegenThreads() {
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
}

llvm::Expected<std::vector<llvm::SmallString<0>>> mlir::gacc::generateObjects(
    std::unique_ptr<llvm::Module> module, unsigned parts,
    const std::function<llvm::Expected<std::unique_ptr<llvm::TargetMachine>>()>
        &createMachine,
    bool optimize, std::vector<std::string> *optimizedIr) {
  // A deep step repeats its loop bodies (one per layer, region and copy
  // form at the same shapes): 656 functions, 81 distinct, in a 100 x 512 MLP
  // at m = 8. Each is optimized and compiled once.
  mergeIdenticalFunctions(*module);
  unsigned functions = llvm::count_if(
      *module, [](const llvm::Function &f) { return !f.isDeclaration(); });
  parts = std::max(1u, std::min(parts, functions));
  // Each part through bitcode into a context of its own: contexts are not
  // shared between threads.
  llvm::SmallVector<llvm::SmallString<0>> bitcodes;
  if (parts == 1) {
    llvm::raw_svector_ostream os(bitcodes.emplace_back());
    llvm::WriteBitcodeToFile(*module, os);
  } else {
    // A linkonce definition (MLIR's __mlir_math_fpowi_* helpers) lands in
    // one part; optimized there alone, it would be inlined and dropped while
    // the other parts still call it. weak_odr keeps it (one definition).
    for (llvm::GlobalValue &global : module->global_values())
      if (!global.isDeclaration() && global.hasLinkOnceLinkage())
        global.setLinkage(global.hasLinkOnceODRLinkage()
                              ? llvm::GlobalValue::WeakODRLinkage
                              : llvm::GlobalValue::WeakAnyLinkage);
    llvm::SplitModule(*module, parts, [&](std::unique_ptr<llvm::Module> part) {
      llvm::raw_svector_ostream os(bitcodes.emplace_back());
      llvm::WriteBitcodeToFile(*part, os);
    });
  }
  module.reset();

  std::vector<llvm::SmallString<0>> objects(bitcodes.size());
  std::vector<std::string> errors(bitcodes.size());
  if (optimizedIr)
    optimizedIr->assign(bitcodes.size(), std::string());
  auto generate = [&](size_t index) {
    llvm::LLVMContext context;
    auto part = llvm::parseBitcodeFile(
        llvm::MemoryBufferRef(bitcodes[index].str(), "step-part"), context);
    if (!part) {
      errors[index] = llvm::toString(part.takeError());
      return;
    }
    auto machine = createMachine();
    if (!machine) {
      errors[index] = llvm::toString(machine.takeError());
      return;
    }
    if (optimize)
      optimizeStepModule(**part, **machine);
    if (optimizedIr) {
      llvm::raw_string_ostream ir((*optimizedIr)[index]);
      (*part)->print(ir, nullptr);
    }
    llvm::raw_svector_ostream os(objects[index]);
    llvm::legacy::PassManager codegen;
    if ((*machine)->addPassesToEmitFile(codegen, os, nullptr,
                                        llvm::CodeGenFileType::ObjectFile)) {
      errors[index] = "the target machine cannot emit an object file";
      return;
    }
    codegen.run(**part);
  };
  std::vector<std::thread> workers;
  for (size_t index = 1; index < bitcodes.size(); ++index) {
    try {
      workers.emplace_back(generate, index);
    } catch (const std::system_error &) {
      // No thread to be had (a process limit): this part on this thread.
      generate(index);
    }
  }
  generate(0);
  for (std::thread &worker : workers)
    worker.join();
  for (const std::string &error : errors)
    if (!error.empty())
      return llvm::createStringError("code generation failed: " + error);
  return objects;
}

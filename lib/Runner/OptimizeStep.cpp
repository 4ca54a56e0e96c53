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
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <algorithm>
#include <atomic>
#include <queue>
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

/// Cuts `module` into `parts` linkable modules of whole functions, as
/// llvm::SplitModule does (local symbols become hidden external ones, so
/// that a part may refer to another's), but balanced by size: the functions,
/// largest first, each go to the part with the fewest instructions so far
/// (llvm::SplitModule places a function by a hash of its name, which left
/// one part of a 200-layer step twice the other's code generation time).
/// Global variables go to the part with the fewest instructions too; an
/// alias or ifunc goes with what it names, and the members of a comdat stay
/// together.
static void
splitModule(llvm::Module &module, unsigned parts,
            llvm::function_ref<void(std::unique_ptr<llvm::Module>)> callback) {
  for (llvm::GlobalValue &global : module.global_values()) {
    if (global.hasLocalLinkage()) {
      global.setLinkage(llvm::GlobalValue::ExternalLinkage);
      global.setVisibility(llvm::GlobalValue::HiddenVisibility);
    }
    if (!global.hasName())
      global.setName("__gacc_split_unnamed");
  }
  std::vector<std::pair<uint64_t, llvm::GlobalObject *>> objects;
  for (llvm::Function &function : module)
    if (!function.isDeclaration())
      objects.push_back({function.getInstructionCount() + 1, &function});
  for (llvm::GlobalVariable &variable : module.globals())
    if (!variable.isDeclaration())
      objects.push_back({1, &variable});
  // Largest first; by name among equals, so that the parts are the same in
  // every run.
  std::stable_sort(objects.begin(), objects.end(),
                   [](const auto &a, const auto &b) {
                     if (a.first != b.first)
                       return a.first > b.first;
                     return a.second->getName() < b.second->getName();
                   });
  using Load = std::pair<uint64_t, unsigned>; // (instructions, part)
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> loads;
  for (unsigned part = 0; part < parts; ++part)
    loads.push({0, part});
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> partOf;
  llvm::DenseMap<const llvm::Comdat *, unsigned> comdatPart;
  for (auto [weight, object] : objects) {
    unsigned part;
    auto comdat = object->getComdat() ? comdatPart.find(object->getComdat())
                                      : comdatPart.end();
    if (comdat != comdatPart.end()) {
      part = comdat->second;
    } else {
      Load least = loads.top();
      loads.pop();
      part = least.second;
      loads.push({least.first + weight, part});
      if (object->getComdat())
        comdatPart[object->getComdat()] = part;
    }
    partOf[object] = part;
  }
  auto getPart = [&](const llvm::GlobalValue *global) -> unsigned {
    const llvm::GlobalObject *root = global->getAliaseeObject();
    if (const auto *ifunc = llvm::dyn_cast_or_null<llvm::GlobalIFunc>(root))
      root = ifunc->getResolverFunction();
    auto it = partOf.find(root ? root : global);
    return it == partOf.end() ? 0 : it->second;
  };
  for (unsigned part = 0; part < parts; ++part) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> clone =
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue *global) {
          return getPart(global) == part;
        });
    if (part != 0)
      clone->setModuleInlineAsm("");
    callback(std::move(clone));
  }
}

llvm::Expected<std::vector<llvm::SmallString<0>>> mlir::gacc::generateObjects(
    std::unique_ptr<llvm::Module> module, unsigned threads,
    const std::function<llvm::Expected<std::unique_ptr<llvm::TargetMachine>>()>
        &createMachine,
    bool optimize, std::vector<std::string> *optimizedIr) {
  // A deep step repeats its loop bodies (one per layer, region and copy
  // form at the same shapes): 656 functions, 81 distinct, in a 100 x 512 MLP
  // at m = 8. Each is optimized and compiled once.
  mergeIdenticalFunctions(*module);
  unsigned functions = llvm::count_if(
      *module, [](const llvm::Function &f) { return !f.isDeclaration(); });
  threads = std::max(1u, std::min(threads, functions));
  // Four parts per thread, taken by the threads as they finish one: an
  // instruction count predicts a part's optimization and code generation
  // time only roughly (a loop body grows when vectorized, a chunk of calls
  // does not), and the threads even out what it mispredicts. 100 and 200
  // layers of width 512 at m = 8 on 2 threads of a Zen 5 VM: 3.29-3.52 s
  // and 6.4-9.3 s until the first step, against 3.44-3.65 s and 7.6-10.2 s
  // with two parts placed by a hash of their names (llvm::SplitModule),
  // alternating in one run (bench/README.md).
  constexpr unsigned kPartsPerThread = 4;
  unsigned parts =
      threads == 1 ? 1 : std::min(functions, threads * kPartsPerThread);
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
    splitModule(*module, parts, [&](std::unique_ptr<llvm::Module> part) {
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
  // Each thread takes the next part when it is done with one.
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t index; (index = next++) < bitcodes.size();)
      generate(index);
  };
  std::vector<std::thread> workers;
  for (unsigned thread = 1; thread < threads; ++thread) {
    try {
      workers.emplace_back(work);
    } catch (const std::system_error &) {
      // No thread to be had (a process limit): fewer threads.
      break;
    }
  }
  work();
  for (std::thread &worker : workers)
    worker.join();
  for (const std::string &error : errors)
    if (!error.empty())
      return llvm::createStringError("code generation failed: " + error);
  return objects;
}

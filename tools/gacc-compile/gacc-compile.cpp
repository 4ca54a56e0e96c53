//===- gacc-compile.cpp - compile a training step ahead of time -*- C++ -*-===//
//
// gacc-compile STEP.mlir [pipeline options] [--device=cpu|cuda] -o step.so
//
// Runs the pipeline and the device's lowering exactly as gacc-run does
// (CompiledStep::lower), translates the result to LLVM IR, adds the packed
// entry `void gacc_step(void **args)` and the signature text
// `gacc_step_signature` (StepIO.h), emits an object for the host (or
// --mcpu) and links a shared library that needs only libgaccrt (and
// libgaccrt_cuda for CUDA steps) at run time. gacc-run-aot runs it. An
// output ending in .o is the object alone, .ll the LLVM IR.
//
//===----------------------------------------------------------------------===//

#include "PipelineFlags.h"
#include "gacc/Runner/AtomicFile.h"
#include "gacc/Runner/OptimizeStep.h"
#include "gacc/Runner/StepRunner.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

using namespace mlir::gacc;
namespace cl = llvm::cl;

static cl::OptionCategory &category = getToolFlagCategory();
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<step.mlir>"),
                                      cl::Required, cl::cat(category));
static cl::opt<std::string>
    outputFile("o",
               cl::desc("Output: a shared library (.so), an object (.o) or "
                        "LLVM IR (.ll)"),
               cl::value_desc("file"), cl::Required, cl::cat(category));
static cl::opt<std::string>
    targetCpu("mcpu",
              cl::desc("Host CPU the code is compiled for: 'host' (this "
                       "machine's CPU and features) or an LLVM CPU name such "
                       "as x86-64 or x86-64-v3 (to run elsewhere)"),
              cl::init("host"), cl::cat(category));
static cl::opt<unsigned> compileThreads(
    "compile-threads",
    cl::desc("Threads of LLVM's code generation, the step's functions cut "
             "into as many object files (0: one per hardware thread, at most "
             "8)"),
    cl::init(0), cl::cat(category));
static cl::opt<std::string> runtimeDir(
    "runtime-dir",
    cl::desc("Folder of libgaccrt.so (default: ../lib next to gacc-compile)"),
    cl::init(""), cl::cat(category));
static cl::list<std::string>
    rpaths("rpath",
           cl::desc("Run-time search path of the library (repeatable; "
                    "default: $ORIGIN and the runtime folder)"),
           cl::cat(category));
static cl::opt<std::string>
    linker("linker", cl::desc("C++ compiler driver that links the library"),
           cl::init("c++"), cl::cat(category));

/// Prints an error and returns exit code 1.
static int fail(const llvm::Twine &message) {
  llvm::errs() << "gacc-compile: error: " << message << "\n";
  return 1;
}

/// runtime-batch-size on the CPU: the caller's sample count B' (the memref
/// whose fields start at `args[field]`) is checked before the step runs.
/// Outside [1, B] it is recorded with gaccrt_index_error(B', B + 1, -1)
/// (read back by gaccrt_index_errors, like an out-of-range gather) and the
/// step runs with B' clamped into [1, B], from a local copy (the caller's
/// buffer is not written), so no count makes the step read or write out of
/// bounds.
static void checkSampleCount(llvm::IRBuilder<> &builder,
                             llvm::SmallVectorImpl<llvm::Value *> &args,
                             unsigned field, int64_t batchSize) {
  llvm::Module &module = *builder.GetInsertBlock()->getModule();
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *i64 = builder.getInt64Ty();
  llvm::Function *function = builder.GetInsertBlock()->getParent();
  llvm::Value *aligned = args[field + 1], *offset = args[field + 2];
  llvm::Value *count =
      builder.CreateLoad(i64, builder.CreateGEP(i64, aligned, offset));
  llvm::Value *low = builder.getInt64(1), *high = builder.getInt64(batchSize);
  llvm::Value *bad = builder.CreateOr(builder.CreateICmpSLT(count, low),
                                      builder.CreateICmpSGT(count, high));
  auto *report = llvm::BasicBlock::Create(ctx, "bad_sample_count", function);
  auto *next = llvm::BasicBlock::Create(ctx, "step", function);
  builder.CreateCondBr(bad, report, next);
  builder.SetInsertPoint(report);
  llvm::FunctionCallee error = module.getOrInsertFunction(
      "gaccrt_index_error", builder.getVoidTy(), i64, i64, i64);
  builder.CreateCall(error, {count, builder.getInt64(batchSize + 1),
                             builder.getInt64(kSampleCountSite)});
  builder.CreateBr(next);
  builder.SetInsertPoint(next);
  llvm::Value *clamped = builder.CreateBinaryIntrinsic(
      llvm::Intrinsic::smax,
      builder.CreateBinaryIntrinsic(llvm::Intrinsic::smin, count, high), low);
  llvm::IRBuilder<> entry(&function->getEntryBlock(),
                          function->getEntryBlock().begin());
  llvm::Value *local = entry.CreateAlloca(i64, nullptr, "sample_count");
  builder.CreateStore(clamped, local);
  args[field] = local;
  args[field + 1] = local;
  args[field + 2] = builder.getInt64(0);
}

/// Adds `void gacc_step(void **args)`, which loads each argument of `step`
/// from the pointer in `args` and calls it (the packed convention of
/// MLIR's ExecutionEngine), and the signature text as
/// `gacc_step_signature`.
static bool addEntryPoints(llvm::Module &module, llvm::Function *step,
                           const StepSignature &info,
                           const std::string &signature, std::string &error) {
  llvm::LLVMContext &ctx = module.getContext();
  if (!step->getReturnType()->isVoidTy()) {
    error = "the lowered step '" + step->getName().str() +
            "' returns a value; expected results passed as arguments";
    return false;
  }
  if (module.getNamedValue("gacc_step") ||
      module.getNamedValue("gacc_step_signature")) {
    error = "the step's module already defines gacc_step or "
            "gacc_step_signature; rename that function";
    return false;
  }
  auto *ptrTy = llvm::PointerType::get(ctx, 0);
  auto *wrapperTy =
      llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptrTy}, false);
  auto *wrapper = llvm::Function::Create(
      wrapperTy, llvm::GlobalValue::ExternalLinkage, "gacc_step", module);
  setCheapToCompile(*wrapper);
  llvm::IRBuilder<> builder(llvm::BasicBlock::Create(ctx, "entry", wrapper));
  llvm::Value *packed = wrapper->getArg(0);
  llvm::SmallVector<llvm::Value *> args;
  for (auto [index, arg] : llvm::enumerate(step->args())) {
    llvm::Value *slot = builder.CreateConstGEP1_64(ptrTy, packed, index);
    llvm::Value *pointer = builder.CreateLoad(ptrTy, slot);
    args.push_back(builder.CreateLoad(arg.getType(), pointer));
  }
  // Each memref is its allocated and aligned pointers, offset, sizes and
  // strides; the arguments' come first.
  int countArg = info.getSampleCountArgument();
  if (countArg >= 0 && info.device == Device::CPU) {
    unsigned field = 0, fields = 0;
    for (auto [i, arg] : llvm::enumerate(info.args)) {
      if (static_cast<int>(i) == countArg)
        field = fields;
      fields += 3 + 2 * arg.shape.size();
    }
    for (const TensorInfo &result : info.results)
      fields += 3 + 2 * result.shape.size();
    if (fields != args.size() || !args[field]->getType()->isPointerTy() ||
        !args[field + 2]->getType()->isIntegerTy(64)) {
      error = "internal error: the lowered step's " +
              std::to_string(args.size()) +
              " parameters are not the signature's memrefs (" +
              std::to_string(fields) + " fields)";
      return false;
    }
    checkSampleCount(builder, args, field, info.batchSize);
  }
  builder.CreateCall(step, args);
  builder.CreateRetVoid();

  llvm::Constant *text = llvm::ConstantDataArray::getString(ctx, signature);
  auto *global = new llvm::GlobalVariable(
      module, text->getType(), /*isConstant=*/true,
      llvm::GlobalValue::ExternalLinkage, text, "gacc_step_signature");
  global->setAlignment(llvm::Align(1));
  return true;
}

/// The folder of libgaccrt.so: --runtime-dir, else ../lib next to this tool.
static std::string getRuntimeDir(const char *argv0) {
  if (!runtimeDir.empty())
    return runtimeDir;
  std::string exe = llvm::sys::fs::getMainExecutable(
      argv0, reinterpret_cast<void *>(&getRuntimeDir));
  llvm::SmallString<256> dir(llvm::sys::path::parent_path(exe));
  llvm::sys::path::append(dir, "..", "lib");
  llvm::sys::path::remove_dots(dir, /*remove_dot_dot=*/true);
  return dir.str().str();
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  PipelineFlags pipelineFlags;
  cl::HideUnrelatedOptions(category);
  // A flag of the tools that run steps; this one runs nothing.
  pipelineFlags.hideRunBatchSize();
  cl::ParseCommandLineOptions(
      argc, argv,
      "gacc-compile: compile a training step with gradient accumulation "
      "ahead of time into a shared library for gacc-run-aot\n");
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  if (pipelineFlags.getRunBatchSize() != 0)
    return fail("--run-batch-size runs a tail step; gacc-compile runs "
                "nothing (gacc-run and gacc-check take it)");
  StepOptions options;
  std::string error;
  if (!pipelineFlags.getStepOptions(options, error))
    return fail(error);
  // Region trace events cost a call each; gacc-run only asks for them with
  // --trace. A compiled step keeps them: they are no-ops until a trace is
  // enabled.
  options.traceRegions = true;
  llvm::StringRef ext = llvm::sys::path::extension(outputFile);
  bool emitObject = ext == ".o", emitIR = ext == ".ll";

  std::unique_ptr<CompiledStep> step =
      CompiledStep::lower(inputFile, options, error);
  if (!step)
    return fail(error);

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> module =
      ::mlir::translateModuleToLLVMIR(step->getLoweredModule(), llvmContext);
  if (!module)
    return fail("cannot translate the lowered step to LLVM IR (see the "
                "message above)");

  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return fail("no LLVM target for " + triple.str() + ": " + lookupError);
  std::string cpu = targetCpu, features;
  if (cpu == "host") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures subtarget;
    for (auto &feature : llvm::sys::getHostCPUFeatures())
      subtarget.AddFeature(feature.first(), feature.second);
    features = subtarget.getString();
  }
  std::unique_ptr<llvm::MCSubtargetInfo> subtargetInfo(
      target->createMCSubtargetInfo(triple, cpu, ""));
  if (!subtargetInfo || !subtargetInfo->isCPUStringValid(cpu))
    return fail("--mcpu='" + targetCpu + "' is not a CPU of " + triple.str() +
                " (try host, x86-64 or x86-64-v3)");
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return fail("cannot create a target machine for " + triple.str());
  module->setTargetTriple(triple);
  module->setDataLayout(machine->createDataLayout());

  llvm::Function *entry = module->getFunction(step->getName());
  if (!entry || entry->isDeclaration())
    return fail("the lowered module has no function '" + step->getName() + "'");
  if (!addEntryPoints(*module, entry, step->getSignature(),
                      serializeSignature(step->getSignature()), error))
    return fail(error);
  if (llvm::verifyModule(*module, &llvm::errs()))
    return fail("the step's LLVM IR does not verify");

  // Every output goes through writeFileAtomically: a failure leaves a
  // previous file untouched.
  if (emitIR) {
    optimizeStepModule(*module, *machine);
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os, nullptr);
    if (!writeFileAtomically(outputFile, text, error))
      return fail("cannot write " + error);
    return 0;
  }

  // One object file (-o x.o: the step's local functions stay local), or one
  // per part of the step's functions, optimized and generated on threads
  // (generateObjects), for the linker. A module with global constructors (a
  // CUDA step's module loads) is one part.
  unsigned threads = 1;
  if (!emitObject && !module->getGlobalVariable("llvm.global_ctors") &&
      !module->getGlobalVariable("llvm.global_dtors"))
    threads = compileThreads ? compileThreads : getDefaultCodegenThreads();
  auto objects = generateObjects(
      std::move(module), threads,
      [&]() -> llvm::Expected<std::unique_ptr<llvm::TargetMachine>> {
        std::unique_ptr<llvm::TargetMachine> partMachine(
            target->createTargetMachine(
                triple, cpu, features, llvm::TargetOptions(), llvm::Reloc::PIC_,
                std::nullopt, llvm::CodeGenOptLevel::Aggressive));
        if (!partMachine)
          return llvm::createStringError("cannot create a target machine for " +
                                         triple.str());
        return partMachine;
      },
      /*optimize=*/true);
  if (!objects)
    return fail(llvm::toString(objects.takeError()));
  if (emitObject) {
    const llvm::SmallString<0> &object = objects->front();
    if (!writeFileAtomically(outputFile, object.data(), object.size(), error))
      return fail("cannot write " + error);
    return 0;
  }
  // The linker reads the objects from and writes the library to temporary
  // files; the library then goes into place whole.
  std::vector<std::string> objectPaths;
  std::vector<llvm::FileRemover> removeObjects(objects->size());
  for (auto [index, object] : llvm::enumerate(*objects)) {
    llvm::SmallString<256> objectPath;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("gacc-step", "o", objectPath))
      return fail("cannot create a temporary object file: " + ec.message());
    removeObjects[index].setFile(objectPath);
    if (!writeFileAtomically(objectPath.str().str(), object.data(),
                             object.size(), error))
      return fail("cannot write " + error);
    objectPaths.push_back(objectPath.str().str());
  }
  llvm::SmallString<256> libraryPath;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("gacc-step", "so", libraryPath))
    return fail("cannot create a temporary library file: " + ec.message());
  llvm::FileRemover removeLibrary(libraryPath);

  auto program = llvm::sys::findProgramByName(linker);
  if (!program)
    return fail("cannot find the linker '" + linker +
                "' (set --linker to a C++ compiler driver)");
  std::string rtDir = getRuntimeDir(argv[0]);
  llvm::SmallString<256> runtimeLib(rtDir);
  llvm::sys::path::append(runtimeLib, "libgaccrt.so");
  if (!llvm::sys::fs::exists(runtimeLib))
    return fail("no libgaccrt.so in '" + rtDir + "' (set --runtime-dir)");
  std::vector<std::string> command = {*program, "-shared", "-o",
                                      libraryPath.str().str()};
  command.insert(command.end(), objectPaths.begin(), objectPaths.end());
  command.insert(command.end(), {"-L" + rtDir, "-lgaccrt"});
  if (options.device == Device::CUDA)
    command.push_back("-lgaccrt_cuda");
  command.insert(command.end(), {"-lm", "-Wl,--no-undefined"});
  std::vector<std::string> paths(rpaths.begin(), rpaths.end());
  if (paths.empty())
    paths = {"$ORIGIN", rtDir};
  for (const std::string &path : paths)
    command.push_back("-Wl,-rpath," + path);
  std::vector<llvm::StringRef> commandRefs(command.begin(), command.end());
  std::string linkError;
  int rc = llvm::sys::ExecuteAndWait(*program, commandRefs, std::nullopt, {},
                                     /*SecondsToWait=*/0, /*MemoryLimit=*/0,
                                     &linkError);
  if (rc != 0)
    return fail(
        "linking '" + outputFile + "' failed (" +
        (linkError.empty() ? "exit code " + std::to_string(rc) : linkError) +
        "): " + llvm::join(command, " "));
  auto library = llvm::MemoryBuffer::getFile(libraryPath, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
  if (!library)
    return fail("cannot read the linked library '" + libraryPath +
                "': " + library.getError().message());
  if (!writeFileAtomically(outputFile, (*library)->getBufferStart(),
                           (*library)->getBufferSize(), error, 0777))
    return fail("cannot write " + error);
  return 0;
}

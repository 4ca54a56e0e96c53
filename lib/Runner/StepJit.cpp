//===- StepJit.cpp - the machine code of a compiled step ------------------===//
//
// StepJit (StepJit.h): MLIR's translation to LLVM IR, then the module cut
// into parts of whole functions of about equal size, each optimized
// (optimizeStepModule) and compiled to an object file by a thread of its
// own (its own LLVMContext and target machine): optimization and code
// generation are most of LLVM's time for a deep step (StepJit::compile). The
// objects, compiled here or read from the step cache (StepCache.h), are linked
// by LLVM's ORC JIT (StepJit::link: LLJIT with RuntimeDyld and the JIT's
// default code model, as MLIR's ExecutionEngine sets it up); the global
// constructors and destructors are run by name.
//
//===----------------------------------------------------------------------===//

#include "StepJit.h"

#include "gacc/Runner/AtomicFile.h"
#include "gacc/Runner/OptimizeStep.h"
#include "gaccrt/gaccrt.h"

#include "mlir/IR/Operation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/RTDyldObjectLinkingLayer.h"
#include "llvm/ExecutionEngine/SectionMemoryManager.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Target/TargetMachine.h"

#include <algorithm>
#include <cstring>

using namespace mlir;
using namespace mlir::gacc;

/// The packed entry of `name`, as MLIR's ExecutionEngine names it.
static std::string getPackedName(llvm::StringRef name) {
  return ("_mlir_" + name).str();
}

/// Adds `_mlir_<f>(ptr)` calling `func` with the values its argument points
/// to (one pointer per argument, then one to the result), as MLIR's
/// ExecutionEngine does for every function (here for the step only).
static void addPackedEntry(llvm::Function &func) {
  llvm::Module &module = *func.getParent();
  llvm::LLVMContext &context = module.getContext();
  llvm::IRBuilder<> builder(context);
  auto *type = llvm::FunctionType::get(builder.getVoidTy(), builder.getPtrTy(),
                                       /*isVarArg=*/false);
  auto *packed =
      llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage,
                             getPackedName(func.getName()), module);
  setCheapToCompile(*packed);
  builder.SetInsertPoint(llvm::BasicBlock::Create(context, "entry", packed));
  llvm::Value *pointers = packed->getArg(0);
  auto loadPointer = [&](uint64_t index) {
    llvm::Value *slot = builder.CreateGEP(builder.getPtrTy(), pointers,
                                          builder.getInt64(index));
    return builder.CreateLoad(builder.getPtrTy(), slot);
  };
  llvm::SmallVector<llvm::Value *> args;
  for (llvm::Argument &arg : func.args())
    args.push_back(
        builder.CreateLoad(arg.getType(), loadPointer(arg.getArgNo())));
  llvm::Value *result = builder.CreateCall(&func, args);
  if (!result->getType()->isVoidTy())
    builder.CreateStore(result, loadPointer(func.arg_size()));
  builder.CreateRetVoid();
}

namespace {
/// The operating system's pages for the JIT's sections, as
/// SectionMemoryManager's default mapper takes them, with huge pages asked
/// for the large writable ones: a deep step's arena (gacc-plan-arena) is a
/// zero-initialized global of hundreds of MiB, which RuntimeDyld clears
/// page by page when it loads the object.
class HugeDataMapper final : public llvm::SectionMemoryManager::MemoryMapper {
public:
  llvm::sys::MemoryBlock
  allocateMappedMemory(llvm::SectionMemoryManager::AllocationPurpose purpose,
                       size_t bytes, const llvm::sys::MemoryBlock *const near,
                       unsigned flags, std::error_code &ec) override {
    llvm::sys::MemoryBlock block =
        llvm::sys::Memory::allocateMappedMemory(bytes, near, flags, ec);
    if (!ec && purpose == llvm::SectionMemoryManager::AllocationPurpose::RWData)
      gaccrt_prefer_huge_pages(block.base(),
                               static_cast<int64_t>(block.allocatedSize()));
    return block;
  }
  std::error_code protectMappedMemory(const llvm::sys::MemoryBlock &block,
                                      unsigned flags) override {
    return llvm::sys::Memory::protectMappedMemory(block, flags);
  }
  std::error_code releaseMappedMemory(llvm::sys::MemoryBlock &block) override {
    return llvm::sys::Memory::releaseMappedMemory(block);
  }
};
} // namespace

StepJit::StepJit() = default;

StepJit::~StepJit() {
  // The global destructors, as MLIR's ExecutionEngine runs them.
  if (initialized)
    for (const Structor &structor : llvm::reverse(destructors))
      structor.function();
}

/// Removes the global constructor or destructor list `name` from `module`
/// and returns its functions in the order they run (by priority), each made
/// external under a name of its own so that it survives the split and can
/// be looked up.
static std::vector<std::string> takeStructors(llvm::Module &module,
                                              llvm::StringRef name) {
  std::vector<std::string> structors;
  llvm::GlobalVariable *list = module.getGlobalVariable(name);
  if (!list)
    return structors;
  std::vector<std::pair<uint64_t, llvm::Function *>> entries;
  if (auto *array =
          llvm::dyn_cast_or_null<llvm::ConstantArray>(list->getInitializer()))
    for (llvm::Value *element : array->operands()) {
      auto *fields = llvm::dyn_cast<llvm::ConstantStruct>(element);
      if (!fields || fields->getNumOperands() < 2)
        continue;
      auto *priority = llvm::dyn_cast<llvm::ConstantInt>(fields->getOperand(0));
      auto *function = llvm::dyn_cast<llvm::Function>(
          fields->getOperand(1)->stripPointerCasts());
      if (priority && function)
        entries.emplace_back(priority->getZExtValue(), function);
    }
  list->eraseFromParent();
  std::stable_sort(
      entries.begin(), entries.end(),
      [](const auto &a, const auto &b) { return a.first < b.first; });
  for (auto [index, entry] : llvm::enumerate(entries)) {
    llvm::Function *function = entry.second;
    std::string unique = ("__gacc_" + name.drop_front(strlen("llvm.")) + "_" +
                          llvm::Twine(index))
                             .str();
    function->setName(unique);
    function->setLinkage(llvm::GlobalValue::ExternalLinkage);
    function->setVisibility(llvm::GlobalValue::DefaultVisibility);
    structors.push_back(unique);
  }
  return structors;
}

/// The host's target machine builder, at -O3 code generation.
static std::optional<llvm::orc::JITTargetMachineBuilder>
getHostMachineBuilder(std::string &error) {
  auto machineBuilder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machineBuilder) {
    error = "cannot target the host CPU: " +
            llvm::toString(machineBuilder.takeError());
    return std::nullopt;
  }
  machineBuilder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  return std::move(*machineBuilder);
}

bool StepJit::compile(Operation *module, llvm::StringRef entry,
                      const StepJitOptions &options, StepObjects &result,
                      std::string &error) {
  auto context = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, *context);
  if (!llvmModule) {
    error = "cannot translate the lowered step to LLVM IR";
    return false;
  }
  if (options.onTranslated)
    options.onTranslated();

  auto machineBuilder = getHostMachineBuilder(error);
  if (!machineBuilder)
    return false;
  auto machine = machineBuilder->createTargetMachine();
  if (!machine) {
    error =
        "cannot target the host CPU: " + llvm::toString(machine.takeError());
    return false;
  }
  llvmModule->setTargetTriple((*machine)->getTargetTriple());
  llvmModule->setDataLayout((*machine)->createDataLayout());
  llvm::Function *step = llvmModule->getFunction(entry);
  if (!step || step->isDeclaration()) {
    error = "the lowered module has no function '" + entry.str() + "'";
    return false;
  }
  addPackedEntry(*step);

  // The module is optimized and compiled in parts, on threads
  // (generateObjects).
  unsigned threads =
      options.threads ? options.threads : getDefaultCodegenThreads();

  // The global constructors and destructors (a CUDA step's module loads
  // and unloads) are run by name (initializers): the objects the parts
  // compile to are linked without them.
  result.constructors = takeStructors(*llvmModule, "llvm.global_ctors");
  result.destructors = takeStructors(*llvmModule, "llvm.global_dtors");

  std::vector<std::string> optimizedIr;
  auto objects = generateObjects(
      std::move(llvmModule), threads,
      [&]() { return machineBuilder->createTargetMachine(); },
      /*optimize=*/true,
      options.optimizedIrFile.empty() ? nullptr : &optimizedIr);
  context.reset();
  if (!objects) {
    error = llvm::toString(objects.takeError());
    return false;
  }
  result.objects = std::move(*objects);
  if (!options.optimizedIrFile.empty()) {
    // The parts one after the other, as code generation got them.
    std::string text;
    for (auto [index, ir] : llvm::enumerate(optimizedIr))
      text += "; part " + std::to_string(index + 1) + " of " +
              std::to_string(optimizedIr.size()) + "\n" + ir;
    if (!writeFileAtomically(options.optimizedIrFile, text, error)) {
      error = "cannot write the LLVM IR: " + error;
      return false;
    }
  }
  return true;
}

std::unique_ptr<StepJit> StepJit::link(const StepObjects &objects,
                                       llvm::StringRef entry,
                                       const llvm::StringMap<void *> &symbols,
                                       std::string &error) {
  auto machineBuilder = getHostMachineBuilder(error);
  if (!machineBuilder)
    return nullptr;
  // RuntimeDyld with the JIT's default (large) code model, as MLIR's
  // ExecutionEngine links.
  std::unique_ptr<StepJit> result(new StepJit());
  llvm::orc::LLJITBuilder jitBuilder;
  jitBuilder.setJITTargetMachineBuilder(std::move(*machineBuilder));
  jitBuilder.setObjectLinkingLayerCreator(
      [](llvm::orc::ExecutionSession &session)
          -> llvm::Expected<std::unique_ptr<llvm::orc::ObjectLayer>> {
        return std::make_unique<llvm::orc::RTDyldObjectLinkingLayer>(
            session, [](const llvm::MemoryBuffer &) {
              static HugeDataMapper mapper;
              return std::make_unique<llvm::SectionMemoryManager>(&mapper);
            });
      });
  auto jit = jitBuilder.create();
  if (!jit) {
    error = "cannot create the JIT: " + llvm::toString(jit.takeError());
    return nullptr;
  }
  result->jit = std::move(*jit);
  llvm::orc::LLJIT &lljit = *result->jit;
  llvm::orc::JITDylib &library = lljit.getMainJITDylib();
  llvm::orc::MangleAndInterner mangle(lljit.getExecutionSession(),
                                      lljit.getDataLayout());
  llvm::orc::SymbolMap runtime;
  for (const auto &symbol : symbols)
    runtime[mangle(symbol.getKey())] = {
        llvm::orc::ExecutorAddr::fromPtr(symbol.getValue()),
        llvm::JITSymbolFlags::Exported};
  if (llvm::Error err =
          library.define(llvm::orc::absoluteSymbols(std::move(runtime)))) {
    error = "cannot define the runtime's symbols: " +
            llvm::toString(std::move(err));
    return nullptr;
  }
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      lljit.getDataLayout().getGlobalPrefix());
  if (!process) {
    error = "cannot search the process's symbols: " +
            llvm::toString(process.takeError());
    return nullptr;
  }
  library.addGenerator(std::move(*process));
  for (const llvm::SmallString<0> &object : objects.objects)
    if (llvm::Error err = lljit.addObjectFile(
            llvm::MemoryBuffer::getMemBufferCopy(object.str(), "step-part"))) {
      error = "JIT compilation failed: " + llvm::toString(std::move(err));
      return nullptr;
    }
  auto packed = lljit.lookup(getPackedName(entry));
  if (!packed) {
    error = "JIT compilation failed: " + llvm::toString(packed.takeError());
    return nullptr;
  }
  result->entry = packed->toPtr<void (*)(void **)>();
  for (auto [names, list] :
       {std::pair(&objects.constructors, &result->constructors),
        std::pair(&objects.destructors, &result->destructors)})
    for (const std::string &name : *names) {
      auto address = lljit.lookup(name);
      if (!address) {
        error =
            "JIT compilation failed: " + llvm::toString(address.takeError());
        return nullptr;
      }
      list->push_back({name, address->toPtr<void (*)()>()});
    }
  return result;
}

void StepJit::invoke(void **packedArgs) {
  if (!initialized) {
    for (const Structor &structor : constructors)
      structor.function();
    initialized = true;
  }
  entry(packedArgs);
}

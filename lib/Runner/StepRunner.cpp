//===- StepRunner.cpp - compile and run a training step ---------*- C++ -*-===//
//
// Implements StepRunner.h: the MLIR side (parse, pipeline, lowering, JIT) and
// the calling convention of the lowered step. After gacc-lower-to-cpu the
// step is `void name(args..., results...)` with every memref expanded into
// (allocated, aligned, offset, sizes..., strides...); its packed entry
// (StepJit) takes a pointer to each of those fields.
//
//===----------------------------------------------------------------------===//

#include "gacc/Runner/StepRunner.h"

#include "StepCache.h"
#include "StepJit.h"

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Dialect/Gacc/IR/StepRoles.h"
#include "gacc/InitAll.h"
#include "gacc/Lowering/Passes.h"
#include "gacc/Pipelines/Pipelines.h"
#include "gacc/Transforms/LossScaleMode.h"
#include "gacc/Transforms/Passes.h"
#include "gacc/Transforms/Utils.h"
#include "gaccrt/gaccrt.h"
#include <dlfcn.h>
#include <malloc.h>
#include <sys/mman.h>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace mlir;

namespace mlir::gacc {

namespace {
/// The functions lowered CUDA host code calls (gaccrt_cuda_symbols.def).
const char *const kCudaSymbols[] = {
#define GACCRT_CUDA_HOST_SYMBOL(NAME) #NAME,
#include "gaccrt/gaccrt_cuda_symbols.def"
};
} // namespace

struct CompiledStep::Impl {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  /// The step's machine code (compile()).
  std::unique_ptr<StepJit> jit;
  /// The argument and result buffers, kept across steps (setInputs).
  std::unique_ptr<PackedStep> io;
  /// The diagnostics the compile emitted (lower()): a step whose compile
  /// warned is not kept in the step cache, whose hits would not warn.
  unsigned diagnostics = 0;

  explicit Impl(DialectRegistry &registry) : context(registry) {}
};

CompiledStep::CompiledStep() = default;
CompiledStep::~CompiledStep() = default;

/// Returns the DType of an MLIR element type.
static std::optional<DType> getDType(Type type) {
  if (type.isF32())
    return DType::F32;
  if (type.isF64())
    return DType::F64;
  if (type.isBF16())
    return DType::BF16;
  if (type.isF16())
    return DType::F16;
  if (type.isInteger(64))
    return DType::I64;
  if (type.isInteger(32))
    return DType::I32;
  if (type.isInteger(8))
    return DType::I8;
  if (type.isInteger(1))
    return DType::Bool;
  return std::nullopt;
}

/// Looks through integer casts to the op that produced `v`.
static Value stripCasts(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!isa<arith::IndexCastOp, arith::ExtSIOp, arith::ExtUIOp,
             arith::TruncIOp, arith::IndexCastUIOp>(def))
      break;
    v = def->getOperand(0);
  }
  return v;
}

/// For an integer input compared with a loop index inside a linalg body
/// (one-hot encodings), or used as an index of a `tensor.extract` there
/// (gathers: embeddings, nll_loss), or as the indices of a gacc.scatter_add
/// (an embedding's gradient), returns the smallest such range.
static int64_t inferIndexBound(Value arg) {
  int64_t bound = 0;
  auto tighten = [&](int64_t range) {
    if (range > 0 && (bound == 0 || range < bound))
      bound = range;
  };
  // The ids reach a scatter_add directly or through reshapes.
  SmallVector<Value> views{arg};
  for (size_t i = 0; i < views.size(); ++i)
    for (Operation *user : views[i].getUsers()) {
      if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user))
        views.push_back(user->getResult(0));
      auto scatter = dyn_cast<mlir::gacc::ScatterAddOp>(user);
      if (scatter && scatter.getIndices() == views[i])
        tighten(cast<ShapedType>(scatter.getInit().getType()).getDimSize(0));
    }
  for (OpOperand &use : arg.getUses()) {
    auto op = dyn_cast<linalg::LinalgOp>(use.getOwner());
    if (!op || !op.isDpsInput(&use))
      continue;
    BlockArgument inBody = op.getMatchingBlockArgument(&use);
    SmallVector<Value> values{inBody};
    for (Operation *user : inBody.getUsers())
      if (isa<arith::IndexCastOp, arith::ExtSIOp, arith::TruncIOp>(user))
        values.push_back(user->getResult(0));
    for (Value v : values)
      for (OpOperand &vuse : v.getUses()) {
        Operation *user = vuse.getOwner();
        if (auto extract = dyn_cast<tensor::ExtractOp>(user)) {
          unsigned pos = vuse.getOperandNumber();
          if (pos >= 1)
            tighten(extract.getTensor().getType().getDimSize(pos - 1));
          continue;
        }
        auto cmp = dyn_cast<arith::CmpIOp>(user);
        if (!cmp)
          continue;
        for (Value side : cmp->getOperands()) {
          auto index = stripCasts(side).getDefiningOp<linalg::IndexOp>();
          if (index)
            tighten(op.getStaticLoopRanges()[index.getDim()]);
        }
      }
  }
  return bound;
}

/// Returns true when every use of the float input `arg` only scales values
/// or is summed (a padding mask).
static bool inferIsMask(Value arg) {
  bool any = false;
  for (OpOperand &use : arg.getUses()) {
    Operation *owner = use.getOwner();
    if (isa<arith::MulFOp>(owner)) {
      any = true;
      continue;
    }
    auto op = dyn_cast<linalg::LinalgOp>(owner);
    if (!op || !op.isDpsInput(&use))
      return false;
    BlockArgument inBody = op.getMatchingBlockArgument(&use);
    for (Operation *user : inBody.getUsers()) {
      if (isa<arith::MulFOp>(user))
        continue;
      // A sum of the mask (the token count): addf with the output.
      if (isa<arith::AddFOp>(user) &&
          llvm::any_of(user->getOperands(), [&](Value v) {
            auto b = dyn_cast<BlockArgument>(v);
            return b && b.getOwner() == inBody.getOwner() &&
                   op.isDpsInit(op.getMatchingOpOperand(b));
          }))
        continue;
      return false;
    }
    any = true;
  }
  return any;
}

/// Records the signature of `func`.
static bool readSignature(func::FuncOp func, std::vector<TensorInfo> &args,
                          std::vector<TensorInfo> &results,
                          std::string &error) {
  auto describe = [&](Type type, TensorInfo &info, const std::string &what) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    std::optional<DType> dtype =
        tensor ? getDType(tensor.getElementType()) : std::nullopt;
    if (!tensor || !tensor.hasStaticShape() || !dtype) {
      llvm::raw_string_ostream os(error);
      os << what << " has type " << type
         << "; gacc-run supports statically shaped tensors and scalars of "
            "f32, f64, bf16, f16, i64, i32, i8 and i1 (and index scalars)";
      return false;
    }
    info.dtype = *dtype;
    info.shape.assign(tensor.getShape().begin(), tensor.getShape().end());
    return true;
  };
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    TensorInfo info;
    if (!describe(func.getArgumentTypes()[i], info,
                  "argument #" + std::to_string(i)))
      return false;
    mlir::gacc::RoleInfo role = mlir::gacc::getArgumentRole(func, i);
    info.role = role.role;
    info.index = role.index;
    if (info.role == Role::Batch) {
      if (isFloatDType(info.dtype))
        info.isMask = inferIsMask(func.getArgument(i));
      else
        info.indexBound = inferIndexBound(func.getArgument(i));
    }
    args.push_back(info);
  }
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i) {
    TensorInfo info;
    if (!describe(func.getResultTypes()[i], info,
                  "result #" + std::to_string(i)))
      return false;
    mlir::gacc::RoleInfo role = mlir::gacc::getResultRole(func, i);
    info.role = role.role;
    info.index = role.index;
    results.push_back(info);
  }
  return true;
}

std::unique_ptr<CompiledStep> CompiledStep::lower(const std::string &path,
                                                  const StepOptions &options,
                                                  std::string &error) {
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  mlir::gacc::registerGaccDialects(registry);
  mlir::gacc::registerGaccLoweringExternalModels(registry);

  std::unique_ptr<CompiledStep> step(new CompiledStep());
  step->impl = std::make_unique<Impl>(registry);
  MLIRContext &context = step->impl->context;
  // Diagnostics name their location; a note must not print the whole step
  // (megabytes for a large graph).
  context.printOpOnDiagnostic(false);

  std::string fileError;
  auto file = openInputFile(path, &fileError);
  if (!file) {
    error = "cannot open '" + path + "': " + fileError;
    return nullptr;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  // Counted, then printed by the handler above (registered earlier, so
  // called after this one).
  context.getDiagEngine().registerHandler(
      [impl = step->impl.get()](Diagnostic &) {
        ++impl->diagnostics;
        return failure();
      });
  step->impl->module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!step->impl->module) {
    error = "cannot parse '" + path + "'";
    return nullptr;
  }
  ModuleOp module = *step->impl->module;
  func::FuncOp func = mlir::gacc::findTrainingStep(module, options.entry);
  if (!func) {
    error = options.entry.empty()
                ? "no training step in '" + path + "'"
                : "no function named '" + options.entry + "' in '" + path + "'";
    return nullptr;
  }
  step->signature.name = func.getSymName().str();
  step->signature.device = options.device;
  // gacc-prepare-step makes scalar arguments and results rank-0 tensors;
  // the signature remembers what the step declared.
  auto scalarName = [](Type type) {
    std::string name;
    if (type.isIntOrIndexOrFloat())
      llvm::raw_string_ostream(name) << type;
    return name;
  };
  SmallVector<std::string> scalarArgs, scalarResults;
  for (Type type : func.getArgumentTypes())
    scalarArgs.push_back(scalarName(type));
  for (Type type : func.getResultTypes())
    scalarResults.push_back(scalarName(type));
  {
    // A dynamic sample dimension takes --batch-size (or is diagnosed) before
    // the signature is read; canonicalization gives per-sample results
    // (metrics) their specialized static types. A static step is
    // canonicalized once, by the pipeline's gacc-prepare-step.
    PassManager specialize(&context);
    mlir::gacc::PrepareStepPassOptions prepare =
        mlir::gacc::getPrepareStepOptions(options);
    prepare.canonicalize = mlir::gacc::hasDynamicSampleDimension(func);
    specialize.addPass(mlir::gacc::createPrepareStepPass(prepare));
    if (failed(specialize.run(module))) {
      // Diagnosed above: a dynamic batch without --batch-size, a read of a
      // tensor.empty's contents.
      error = "compiling '" + path + "' failed";
      return nullptr;
    }
  }
  StepSignature &signature = step->signature;
  if (!readSignature(func, signature.args, signature.results, error))
    return nullptr;
  for (auto [info, scalar] : llvm::zip(signature.args, scalarArgs))
    info.scalarType = scalar;
  for (auto [info, scalar] : llvm::zip(signature.results, scalarResults))
    info.scalarType = scalar;
  for (const TensorInfo &arg : signature.args)
    if (arg.role == Role::Batch) {
      signature.batchSize = arg.shape[arg.index];
      break;
    }
  // runtime-batch-size: the sample count defaults to the whole batch.
  for (TensorInfo &arg : signature.args)
    if (arg.role == Role::SampleCount) {
      arg.hasFill = true;
      arg.fill = static_cast<double>(signature.batchSize);
    }
  if (!options.microBatchSizes.empty()) {
    signature.split = "micro-batch sizes ";
    for (size_t k = 0; k < options.microBatchSizes.size(); ++k)
      signature.split +=
          (k ? "," : "") + std::to_string(options.microBatchSizes[k]);
  } else {
    signature.split = std::to_string(options.microBatches) + " micro-batches";
  }

  // Anchored on the module with implicit nesting, as gacc-opt runs a
  // textual pipeline: buildLowerToCUDAPipeline adds function passes
  // (gpu-map-parallel-loops) at the top level.
  PassManager pm(&context, ModuleOp::getOperationName(),
                 OpPassManager::Nesting::Implicit);
  mlir::gacc::buildGaccPipeline(pm, options);
  std::string lossScaleError;
  std::optional<LossScaleMode> lossScale = parseLossScaleMode(
      options.lossScale, options.lossScaleInit, lossScaleError);
  if (lossScale && lossScale->kind == LossScaleKind::Dynamic) {
    // gacc-loss-scale appends the scale (f32) and its growth tracker (i64)
    // as state arguments and their updates as state_out results.
    int64_t first = step->signature.args.size();
    for (int k = 0; k < 2; ++k) {
      TensorInfo arg;
      arg.role = Role::State;
      arg.dtype = k ? DType::I64 : DType::F32;
      arg.hasFill = true;
      arg.fill = k ? 0.0 : options.lossScaleInit;
      step->signature.args.push_back(arg);
      TensorInfo result;
      result.role = Role::StateOut;
      result.index = first + k;
      result.dtype = arg.dtype;
      step->signature.results.push_back(result);
    }
  }
  if (options.onArguments && !options.shardOptimizerState)
    options.onArguments(signature.args);
  if (options.shardOptimizerState) {
    // The state that stays sharded is known once the pipeline ran: its
    // arguments and results become the rank's shards.
    if (failed(pm.run(module))) {
      error = "compiling '" + path + "' failed";
      return nullptr;
    }
    pm.clear();
    int64_t ranks = 0;
    for (auto grid : module.getOps<shard::GridOp>())
      if (grid.getRank() == 1 && !ShapedType::isDynamic(grid.getShape()[0]))
        ranks = grid.getShape()[0];
    auto shardInfo = [&](TensorInfo &info, DictionaryAttr attrs, Type type) {
      auto full = attrs ? attrs.getAs<DenseI64ArrayAttr>(
                              mlir::gacc::kShardOfAttrName)
                        : DenseI64ArrayAttr();
      if (!full)
        return;
      info.shardOf.assign(full.asArrayRef().begin(), full.asArrayRef().end());
      info.shardRanks = ranks;
      auto shape = cast<RankedTensorType>(type).getShape();
      info.shape.assign(shape.begin(), shape.end());
    };
    for (auto [i, info] : llvm::enumerate(signature.args))
      if (i < func.getNumArguments())
        shardInfo(info, func.getArgAttrDict(i), func.getArgumentTypes()[i]);
    for (auto [j, info] : llvm::enumerate(signature.results))
      if (j < func.getNumResults())
        shardInfo(info, func.getResultAttrDict(j), func.getResultTypes()[j]);
  }
  if (options.device == Device::CUDA) {
#ifdef GACC_HAVE_CUDA
    step->cuda = true;
    LowerToCUDAConfig lowering;
    lowering.traceRegions = options.traceRegions;
    buildLowerToCUDAPipeline(pm, lowering);
#else
    error = "--device=cuda is not available: gacc was built without CUDA";
    return nullptr;
#endif
  } else {
    buildLowerToCPUPipeline(pm, options);
  }
  if (failed(pm.run(module))) {
    error = "compiling '" + path + "' failed";
    return nullptr;
  }
  if (auto sites =
          module->getAttrOfType<ArrayAttr>(mlir::gacc::kGatherSitesAttrName))
    for (auto site : sites.getAsValueRange<StringAttr>())
      signature.gatherSites.push_back(site.str());
  return step;
}

mlir::Operation *CompiledStep::getLoweredModule() const {
  return impl->module ? impl->module->getOperation() : nullptr;
}

/// The addresses of the runtime functions a lowered step calls (the CUDA
/// runtime's too for a CUDA step: libgaccrt_cuda was opened with
/// RTLD_GLOBAL by initCudaRuntime).
static llvm::StringMap<void *> getRuntimeSymbols(bool cuda) {
  llvm::StringMap<void *> symbols;
  auto add = [&](const char *name, void *address) { symbols[name] = address; };
  add("gaccrt_all_reduce", reinterpret_cast<void *>(&gaccrt_all_reduce));
  add("gaccrt_sgemm", reinterpret_cast<void *>(&gaccrt_sgemm));
  add("gaccrt_sgemm_pair", reinterpret_cast<void *>(&gaccrt_sgemm_pair));
  add("gaccrt_index_error", reinterpret_cast<void *>(&gaccrt_index_error));
  add("gaccrt_trace_region_begin",
      reinterpret_cast<void *>(&gaccrt_trace_region_begin));
  add("gaccrt_trace_region_end",
      reinterpret_cast<void *>(&gaccrt_trace_region_end));
  add("_mlir_memref_to_llvm_alloc",
      reinterpret_cast<void *>(&_mlir_memref_to_llvm_alloc));
  add("_mlir_memref_to_llvm_aligned_alloc",
      reinterpret_cast<void *>(&_mlir_memref_to_llvm_aligned_alloc));
  add("_mlir_memref_to_llvm_free",
      reinterpret_cast<void *>(&_mlir_memref_to_llvm_free));
  if (cuda)
    for (const char *name : kCudaSymbols)
      if (void *address = dlsym(RTLD_DEFAULT, name))
        add(name, address);
  return symbols;
}

std::string getDefaultStepCacheDir() {
  if (const char *env = std::getenv("GACC_STEP_CACHE"))
    return !*env || std::strcmp(env, "off") == 0 ? "" : env;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/gacc/steps";
  if (const char *home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/gacc/steps";
  return "";
}

std::unique_ptr<CompiledStep> CompiledStep::compile(const std::string &path,
                                                    const StepOptions &options,
                                                    std::string &error) {
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  // Fail before the (slow) compilation when there is no device.
  if (options.device == Device::CUDA) {
#ifdef GACC_HAVE_CUDA
    if (!initCudaRuntime(error))
      return nullptr;
#else
    error = "--device=cuda is not available: gacc was built without CUDA";
    return nullptr;
#endif
  }
  // A CPU step compiled before (same file, options, CPU and build) is
  // linked from the step cache. --dump-llvm-ir needs the compile.
  std::string cacheKey;
  bool useCache = !options.stepCacheDir.empty() &&
                  options.device == Device::CPU &&
                  options.optimizedIrFile.empty();
  if (useCache) {
    if (auto input = llvm::MemoryBuffer::getFile(path))
      cacheKey = getStepCacheKey(path, (*input)->getBuffer(), options);
  }
  if (!cacheKey.empty()) {
    CachedStep cached;
    std::unique_ptr<CompiledStep> step(new CompiledStep());
    std::string ignored;
    if (loadCachedStep(options.stepCacheDir, cacheKey, cached) &&
        parseSignature(cached.signature, step->signature, ignored)) {
      DialectRegistry empty;
      step->impl = std::make_unique<Impl>(empty);
      // Objects that do not link (an entry of another build that kept its
      // files' sizes and times) are a miss too: the step is compiled and
      // its entry written again.
      std::string linkError;
      step->impl->jit =
          StepJit::link(cached.objects, step->signature.name,
                        getRuntimeSymbols(/*cuda=*/false), linkError);
      if (step->impl->jit) {
        step->fromStepCache = true;
        if (options.onArguments && !options.shardOptimizerState)
          options.onArguments(step->signature.args);
        // The JIT's linker paged in code of libLLVM too.
        if (options.releaseCompilerCode)
          step->releasedCompilerBytes += releaseCompilerCode();
        return step;
      }
    }
  }

  std::unique_ptr<CompiledStep> step = lower(path, options, error);
  if (!step)
    return nullptr;
  ModuleOp module = cast<ModuleOp>(step->getLoweredModule());
  bool cuda = step->cuda;
  StepJitOptions jitOptions;
  jitOptions.optimizedIrFile = options.optimizedIrFile;
  jitOptions.threads = options.compileThreads;
  // The step is LLVM IR then: MLIR's code is done.
  if (options.releaseCompilerCode)
    jitOptions.onTranslated = [&] {
      step->releasedCompilerBytes += releaseCompilerCode();
    };
  // LLVM's optimization and code generation run here, so that "compiled
  // in" includes them and the first step does not.
  StepObjects objects;
  if (!StepJit::compile(module, step->signature.name, jitOptions, objects,
                        error))
    return nullptr;
  // Other functions in the file (helpers, test mains) are compiled too but
  // only the step is called.
  step->impl->jit = StepJit::link(objects, step->signature.name,
                                  getRuntimeSymbols(cuda), error);
  if (!step->impl->jit)
    return nullptr;
  if (!cacheKey.empty() && step->impl->diagnostics == 0) {
    CachedStep cached;
    cached.signature = serializeSignature(step->signature);
    cached.objects = std::move(objects);
    std::string warning;
    if (!storeCachedStep(options.stepCacheDir, cacheKey, cached,
                         options.stepCacheMaxBytes, warning))
      step->stepCacheWarning = "not kept in the step cache: " + warning;
  }
  // The JIT holds the machine code; the lowered module is no longer needed.
  // Freed (and the heap trimmed) before the step's buffers exist, so that
  // the compiler's memory and the step's do not add up in the process's
  // peak.
  step->impl->module = nullptr;
  malloc_trim(0);
  if (options.releaseCompilerCode)
    step->releasedCompilerBytes += releaseCompilerCode();
  return step;
}

bool CompiledStep::prepareInputs(std::vector<NpyArray> &inputs,
                                 std::string &error) const {
  return prepareStepInputs(signature.args, inputs, error);
}

bool CompiledStep::setInputs(const std::vector<NpyArray> &inputs,
                             std::string &error) {
  if (!impl->io)
    impl->io = std::make_unique<PackedStep>(signature, cuda);
  return impl->io->setInputs(inputs, error);
}

bool CompiledStep::runSteps(int64_t count, std::string &error) {
  if (!impl->io) {
    error = "no inputs: call setInputs before running '" + signature.name + "'";
    return false;
  }
  auto invoke = [&](void **packed, size_t, std::string &) {
    impl->jit->invoke(packed);
    return true;
  };
  for (int64_t k = 0; k < count; ++k)
    if (!impl->io->run(invoke, error))
      return false;
  return true;
}

NpyArray CompiledStep::getOutput(size_t j) const {
  assert(impl->io && "getOutput before setInputs");
  return impl->io->getOutput(j);
}

std::string CompiledStep::describeNonFiniteOutput(size_t j) const {
  assert(impl->io && "describeNonFiniteOutput before setInputs");
  return impl->io->describeNonFiniteOutput(j);
}

std::vector<NpyArray> CompiledStep::getOutputs() const {
  assert(impl->io && "getOutputs before setInputs");
  return impl->io->getOutputs();
}

int64_t CompiledStep::getBufferBytes() const {
  return impl->io ? impl->io->getBufferBytes() : 0;
}

bool CompiledStep::run(const std::vector<NpyArray> &inputs,
                       std::vector<NpyArray> &outputs, std::string &error) {
  if (!setInputs(inputs, error) || !runSteps(1, error))
    return false;
  outputs = getOutputs();
  return true;
}

int64_t CompiledStep::currentBytes() const { return deviceCurrentBytes(cuda); }

int64_t CompiledStep::peakBytes() const { return devicePeakBytes(cuda); }

void CompiledStep::resetPeak() const { deviceResetPeak(cuda); }

std::optional<gaccrt_cuda_counts> CompiledStep::takeDeviceCounts() const {
  gaccrt_cuda_counts counts;
  if (!cuda || !mlir::gacc::takeDeviceCounts(counts))
    return std::nullopt;
  return counts;
}

bool readStepInputs(const CompiledStep &step, const std::string &inputDir,
                    int rank, int world, std::vector<NpyArray> &inputs,
                    std::string &error) {
  return readStepInputs(step.getArgs(), inputDir, rank, world, inputs, error);
}

std::vector<NpyArray> makeRandomInputs(const CompiledStep &step, uint64_t seed,
                                       int rank) {
  return makeRandomInputs(step.getArgs(), seed, rank);
}

int64_t releaseCompilerCode() {
  // The files of libMLIR and libLLVM, from a function each defines.
  llvm::SmallVector<std::string, 2> files;
  void (*inMlir)(DialectRegistry &) = &mlir::registerAllDialects;
  llvm::StringRef (*inLlvm)() = &llvm::sys::getHostCPUName;
  for (void *address :
       {reinterpret_cast<void *>(inMlir), reinterpret_cast<void *>(inLlvm)}) {
    Dl_info info;
    llvm::SmallString<128> real;
    if (dladdr(address, &info) && info.dli_fname &&
        !llvm::sys::fs::real_path(info.dli_fname, real))
      files.push_back(real.str().str());
  }
  auto smaps = llvm::MemoryBuffer::getFileAsStream("/proc/self/smaps");
  if (files.empty() || !smaps)
    return 0;
  // Each mapping: "start-end perms offset dev inode path", then fields.
  struct Mapping {
    uintptr_t start = 0, end = 0;
    bool candidate = false;
    int64_t rssKb = 0, anonymousKb = 0;
  };
  llvm::SmallVector<Mapping> mappings;
  llvm::SmallVector<llvm::StringRef> lines;
  (*smaps)->getBuffer().split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef, 6> fields;
    llvm::SplitString(line, fields);
    if (fields.empty())
      continue;
    auto [range, rest] = fields.front().split('-');
    uintptr_t start, end;
    if (fields.size() >= 5 && !range.getAsInteger(16, start) &&
        !rest.getAsInteger(16, end)) {
      Mapping mapping;
      mapping.start = start;
      mapping.end = end;
      llvm::StringRef perms = fields[1];
      llvm::StringRef path = fields.size() >= 6 ? fields[5] : "";
      mapping.candidate = perms.size() == 4 && perms[1] != 'w' &&
                          perms[3] == 'p' && llvm::is_contained(files, path);
      mappings.push_back(mapping);
      continue;
    }
    if (mappings.empty() || fields.size() < 2)
      continue;
    int64_t kb = 0;
    if (fields[1].getAsInteger(10, kb))
      continue;
    if (fields[0] == "Rss:")
      mappings.back().rssKb = kb;
    else if (fields[0] == "Anonymous:")
      mappings.back().anonymousKb = kb;
  }
  int64_t released = 0;
  for (const Mapping &mapping : mappings) {
    // Only mappings the process never wrote to: their pages are the file's.
    if (!mapping.candidate || mapping.anonymousKb != 0 || mapping.rssKb == 0)
      continue;
    if (madvise(reinterpret_cast<void *>(mapping.start),
                mapping.end - mapping.start, MADV_DONTNEED) == 0)
      released += mapping.rssKb * 1024;
  }
  return released;
}

} // namespace mlir::gacc

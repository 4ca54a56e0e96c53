//===- StepRunner.cpp - compile and run a training step ---------*- C++ -*-===//
//
// Implements StepRunner.h: the MLIR side (parse, pipeline, lowering, JIT) and
// the calling convention of the lowered step. After gacc-lower-to-cpu the
// step is `void name(args..., results...)` with every memref expanded into
// (allocated, aligned, offset, sizes..., strides...); the ExecutionEngine's
// packed wrapper takes a pointer to each of those fields.
//
//===----------------------------------------------------------------------===//

#include "StepRunner.h"

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Conversion/Passes.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/InitAll.h"
#include "gacc/Transforms/Passes.h"
#include "gaccrt/gaccrt.h"
#include <dlfcn.h>

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>

using namespace mlir;

namespace gacc {

namespace {
/// libgaccrt_cuda, opened only for --device=cuda so that CPU runs do not
/// load cuBLAS and NCCL.
struct CudaApi {
  void *handle = nullptr;
  int (*init)(int) = nullptr;
  int (*available)() = nullptr;
  void (*finalize)() = nullptr;
  void *(*alloc)(int64_t) = nullptr;
  void (*free)(void *) = nullptr;
  void (*h2d)(void *, const void *, int64_t) = nullptr;
  void (*d2h)(void *, const void *, int64_t) = nullptr;
  int64_t (*current)() = nullptr;
  int64_t (*peak)() = nullptr;
  void (*resetPeak)() = nullptr;
};
CudaApi cudaApi;

/// Opens libgaccrt_cuda (next to the other gacc libraries) once.
bool loadCudaApi(std::string &error) {
  if (cudaApi.handle)
    return true;
  void *handle = dlopen("libgaccrt_cuda.so", RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char *why = dlerror();
    error = std::string("cannot load libgaccrt_cuda.so: ") +
            (why ? why : "unknown error");
    return false;
  }
  auto get = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(handle, name));
    if (!fn)
      error = std::string("libgaccrt_cuda.so lacks ") + name;
    return fn != nullptr;
  };
  CudaApi api;
  api.handle = handle;
  if (!get(api.init, "gaccrt_cuda_init") ||
      !get(api.available, "gaccrt_cuda_available") ||
      !get(api.finalize, "gaccrt_cuda_finalize") ||
      !get(api.alloc, "gaccrt_cuda_alloc") ||
      !get(api.free, "gaccrt_cuda_free") ||
      !get(api.h2d, "gaccrt_cuda_memcpy_h2d") ||
      !get(api.d2h, "gaccrt_cuda_memcpy_d2h") ||
      !get(api.current, "gaccrt_cuda_current_bytes") ||
      !get(api.peak, "gaccrt_cuda_peak_bytes") ||
      !get(api.resetPeak, "gaccrt_cuda_reset_peak"))
    return false;
  cudaApi = api;
  return true;
}

/// The functions lowered CUDA host code calls.
const char *const kCudaSymbols[] = {
    "gaccrt_cuda_sgemm",   "gaccrt_cuda_all_reduce",
    "mgpuModuleLoad",      "mgpuModuleLoadJIT",
    "mgpuModuleUnload",    "mgpuModuleGetFunction",
    "mgpuLaunchKernel",    "mgpuStreamCreate",
    "mgpuStreamDestroy",   "mgpuStreamSynchronize",
    "mgpuStreamWaitEvent", "mgpuEventCreate",
    "mgpuEventDestroy",    "mgpuEventSynchronize",
    "mgpuEventRecord",     "mgpuMemAlloc",
    "mgpuMemFree",         "mgpuMemcpy",
    "mgpuMemset32",        "mgpuMemset16",
    "mgpuSetDefaultDevice"};
} // namespace

void finalizeRuntime() {
  if (cudaApi.handle && cudaApi.available())
    cudaApi.finalize();
  gaccrt_finalize();
}

const char *roleName(Role role) {
  switch (role) {
  case Role::None:
    return "-";
  case Role::Param:
    return "param";
  case Role::Batch:
    return "batch";
  case Role::State:
    return "state";
  case Role::Loss:
    return "loss";
  case Role::Grad:
    return "grad";
  case Role::ParamOut:
    return "param_out";
  case Role::StateOut:
    return "state_out";
  case Role::Metric:
    return "metric";
  }
  return "?";
}

namespace {
/// Host memory for one memref argument, aligned for vector code.
struct Buffer {
  void *data = nullptr;
  int64_t bytes = 0;
  std::vector<int64_t> shape;
  ~Buffer() { std::free(data); }
};
} // namespace

struct CompiledStep::Impl {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<ExecutionEngine> engine;

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
/// (gathers: embeddings, nll_loss), returns the smallest such range.
static int64_t inferIndexBound(Value arg) {
  int64_t bound = 0;
  auto tighten = [&](int64_t range) {
    if (range > 0 && (bound == 0 || range < bound))
      bound = range;
  };
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
         << "; gacc-run supports statically shaped tensors of f32, f64, "
            "bf16, f16, i64, i32, i8 and i1";
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
    if (func.getArgAttr(i, mlir::gacc::GaccDialect::kParamAttrName))
      info.role = Role::Param;
    else if (func.getArgAttr(i, mlir::gacc::GaccDialect::kStateAttrName))
      info.role = Role::State;
    else if (auto dim = func.getArgAttrOfType<IntegerAttr>(
                 i, mlir::gacc::GaccDialect::kBatchAttrName)) {
      info.role = Role::Batch;
      info.index = dim.getInt();
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
    auto indexOf = [&](StringRef name) -> int64_t {
      auto attr = func.getResultAttrOfType<IntegerAttr>(i, name);
      return attr ? attr.getInt() : -1;
    };
    if (func.getResultAttr(i, mlir::gacc::GaccDialect::kLossAttrName))
      info.role = Role::Loss;
    else if (func.getResultAttr(i, mlir::gacc::GaccDialect::kMetricAttrName))
      info.role = Role::Metric;
    else if ((info.index = indexOf(mlir::gacc::GaccDialect::kGradAttrName)) >=
             0)
      info.role = Role::Grad;
    else if ((info.index =
                  indexOf(mlir::gacc::GaccDialect::kParamOutAttrName)) >= 0)
      info.role = Role::ParamOut;
    else if ((info.index =
                  indexOf(mlir::gacc::GaccDialect::kStateOutAttrName)) >= 0)
      info.role = Role::StateOut;
    results.push_back(info);
  }
  return true;
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

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  mlir::gacc::registerGaccDialects(registry);

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
  step->name = func.getSymName().str();
  {
    // A dynamic sample dimension takes --batch-size (or is diagnosed) before
    // the signature is read.
    PassManager specialize(&context);
    mlir::gacc::PrepareStepPassOptions prepare;
    prepare.entry = options.entry;
    prepare.batchSize = options.batchSize;
    prepare.canonicalize = false;
    specialize.addPass(mlir::gacc::createPrepareStepPass(prepare));
    if (failed(specialize.run(module))) {
      error = "cannot specialize the batch size of '" + path + "'";
      return nullptr;
    }
  }
  if (!readSignature(func, step->args, step->results, error))
    return nullptr;
  for (const TensorInfo &arg : step->args)
    if (arg.role == Role::Batch) {
      step->batchSize = arg.shape[arg.index];
      break;
    }

  PassManager pm(&context);
  mlir::gacc::GaccPipelineOptions pipeline;
  pipeline.entry = options.entry;
  pipeline.batchSize = options.batchSize;
  pipeline.microBatches = options.microBatches;
  pipeline.microBatchSizes = options.microBatchSizes;
  pipeline.allowMicroBatchStatistics = options.allowMicroBatchStatistics;
  pipeline.accumulateType = options.accumulateType;
  pipeline.bucketBytes = options.bucketBytes;
  pipeline.testSkipGlobalNormalizer = options.testSkipGlobalNormalizer;
  pipeline.lossScale = options.lossScale;
  pipeline.lossScaleInit = options.lossScaleInit;
  pipeline.lossScaleGrowthFactor = options.lossScaleGrowthFactor;
  pipeline.lossScaleBackoffFactor = options.lossScaleBackoffFactor;
  pipeline.lossScaleGrowthInterval = options.lossScaleGrowthInterval;
  mlir::gacc::buildGaccPipeline(pm, pipeline);
  if (options.lossScale == "dynamic") {
    // gacc-loss-scale appends the scale (f32) and its growth tracker (i64)
    // as state arguments and their updates as state_out results.
    int64_t first = step->args.size();
    for (int k = 0; k < 2; ++k) {
      TensorInfo arg;
      arg.role = Role::State;
      arg.dtype = k ? DType::I64 : DType::F32;
      arg.hasFill = true;
      arg.fill = k ? 0.0 : options.lossScaleInit;
      step->args.push_back(arg);
      TensorInfo result;
      result.role = Role::StateOut;
      result.index = first + k;
      result.dtype = arg.dtype;
      step->results.push_back(result);
    }
  }
  if (options.device == "cuda") {
#ifdef GACC_HAVE_CUDA
    if (!loadCudaApi(error))
      return nullptr;
    if (cudaApi.init(-1) != 0) {
      error = "--device=cuda: no usable CUDA device (see the message above)";
      return nullptr;
    }
    step->cuda = true;
    mlir::gacc::LowerToCUDAOptions lowering;
    lowering.traceRegions = options.traceRegions;
    mlir::gacc::buildLowerToCUDAPipeline(pm, lowering);
#else
    error = "--device=cuda is not available: gacc was built without CUDA";
    return nullptr;
#endif
  } else if (options.device == "cpu") {
    mlir::gacc::LowerToCPUOptions lowering;
    lowering.blas = options.blas;
    lowering.traceRegions = options.traceRegions;
    mlir::gacc::buildLowerToCPUPipeline(pm, lowering);
  } else {
    error = "unknown device '" + options.device + "' (expected cpu or cuda)";
    return nullptr;
  }
  if (failed(pm.run(module))) {
    error = "compiling '" + path + "' failed";
    return nullptr;
  }
  if (auto sites = module->getAttrOfType<ArrayAttr>("gacc.gather_sites"))
    for (auto site : sites.getAsValueRange<StringAttr>())
      step->gatherSites.push_back(site.str());
  // Other functions in the file (helpers, test mains) are compiled too but
  // only the step is called.
  ExecutionEngineOptions engineOptions;
  engineOptions.transformer = makeOptimizingTransformer(
      /*optLevel=*/3, /*sizeLevel=*/0, /*targetMachine=*/nullptr);
  engineOptions.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Aggressive;
  auto engine = ExecutionEngine::create(module, engineOptions);
  if (!engine) {
    error = "JIT compilation failed: " + llvm::toString(engine.takeError());
    return nullptr;
  }
  step->impl->engine = std::move(*engine);
  step->impl->engine->registerSymbols(
      [](llvm::orc::MangleAndInterner interner) {
        llvm::orc::SymbolMap symbols;
        auto add = [&](const char *name, void *address) {
          symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                     llvm::JITSymbolFlags::Exported};
        };
        add("gaccrt_all_reduce", reinterpret_cast<void *>(&gaccrt_all_reduce));
        add("gaccrt_sgemm", reinterpret_cast<void *>(&gaccrt_sgemm));
        add("gaccrt_index_error",
            reinterpret_cast<void *>(&gaccrt_index_error));
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
        if (cudaApi.handle)
          for (const char *name : kCudaSymbols)
            if (void *address = dlsym(cudaApi.handle, name))
              add(name, address);
        return symbols;
      });
  return step;
}

/// Formats a shape as [a, b, c].
static std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool CompiledStep::prepareInputs(std::vector<NpyArray> &inputs,
                                 std::string &error) const {
  if (inputs.size() != args.size()) {
    error = "expected " + std::to_string(args.size()) + " inputs, got " +
            std::to_string(inputs.size());
    return false;
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorInfo &arg = args[i];
    NpyArray &in = inputs[i];
    if (in.shape != arg.shape) {
      error = "argument #" + std::to_string(i) + " (" + roleName(arg.role) +
              ") expects shape " + formatShape(arg.shape) + " of " +
              dtypeName(arg.dtype) + ", got shape " + formatShape(in.shape) +
              " of " + dtypeName(in.dtype);
      return false;
    }
    if (in.dtype == arg.dtype)
      continue;
    bool bothFloat = isFloatDType(in.dtype) && isFloatDType(arg.dtype);
    bool bothInt = !isFloatDType(in.dtype) && !isFloatDType(arg.dtype);
    if (!bothFloat && !bothInt) {
      error = "argument #" + std::to_string(i) + " (" + roleName(arg.role) +
              ") expects " + dtypeName(arg.dtype) + " data, got " +
              dtypeName(in.dtype);
      return false;
    }
    in = convertToDType(in, arg.dtype);
  }
  return true;
}

bool CompiledStep::run(const std::vector<NpyArray> &inputs,
                       std::vector<NpyArray> &outputs, std::string &error) {
  // Copies of the inputs (the step may update them in place) and the result
  // buffers, each with its descriptor fields.
  std::vector<std::unique_ptr<Buffer>> buffers;
  auto addBuffer = [&](const std::vector<int64_t> &shape, int64_t elemBytes,
                       const void *init) {
    auto buffer = std::make_unique<Buffer>();
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    buffer->bytes = count * elemBytes;
    buffer->shape = shape;
    buffer->data = std::aligned_alloc(
        64, std::max<int64_t>(64, (buffer->bytes + 63) / 64 * 64));
    if (init)
      std::memcpy(buffer->data, init, buffer->bytes);
    buffers.push_back(std::move(buffer));
  };
  for (size_t i = 0; i < args.size(); ++i)
    addBuffer(args[i].shape, dtypeSize(args[i].dtype), inputs[i].data.data());
  for (const TensorInfo &result : results)
    addBuffer(result.shape, dtypeSize(result.dtype), nullptr);
  // On the GPU the step takes device buffers: copy the host ones over.
  std::vector<void *> hostData;
  if (cuda)
    for (auto &buffer : buffers) {
      hostData.push_back(buffer->data);
      void *device = cudaApi.alloc(std::max<int64_t>(buffer->bytes, 1));
      cudaApi.h2d(device, buffer->data, buffer->bytes);
      buffer->data = device;
    }

  // Descriptor fields: allocated, aligned, offset, sizes, strides.
  std::vector<int64_t> fields;
  std::vector<void *> pointers;
  fields.reserve(buffers.size() * 16);
  for (auto &buffer : buffers) {
    pointers.push_back(&buffer->data);
    pointers.push_back(&buffer->data);
    fields.push_back(0);
    for (int64_t d : buffer->shape)
      fields.push_back(d);
    int64_t stride = 1;
    std::vector<int64_t> strides(buffer->shape.size());
    for (size_t d = buffer->shape.size(); d-- > 0;) {
      strides[d] = stride;
      stride *= buffer->shape[d];
    }
    for (int64_t s : strides)
      fields.push_back(s);
  }
  // Point at the fields now that the vector no longer grows.
  std::vector<void *> packed;
  size_t next = 0, p = 0;
  for (auto &buffer : buffers) {
    packed.push_back(pointers[p++]);
    packed.push_back(pointers[p++]);
    size_t n = 1 + 2 * buffer->shape.size();
    for (size_t k = 0; k < n; ++k)
      packed.push_back(&fields[next++]);
  }
  gaccrt_index_errors_reset();
  llvm::Error status = impl->engine->invokePacked(name, packed);
  if (status) {
    error =
        "running '" + name + "' failed: " + llvm::toString(std::move(status));
    return false;
  }
  int64_t badIndex = 0, bound = 0, site = 0;
  if (int64_t count = gaccrt_index_errors(&badIndex, &bound, &site)) {
    error = "index " + std::to_string(badIndex) + " out of range [0, " +
            std::to_string(bound) + ") in gather at " +
            (site >= 0 && site < static_cast<int64_t>(gatherSites.size())
                 ? gatherSites[site]
                 : "site #" + std::to_string(site)) +
            " (" + std::to_string(count) +
            " out-of-range reads in this step; they read a clamped index)";
    return false;
  }
  outputs.clear();
  for (size_t j = 0; j < results.size(); ++j) {
    const Buffer &buffer = *buffers[args.size() + j];
    NpyArray out = makeArray(results[j].dtype, results[j].shape);
    if (cuda) {
      cudaApi.d2h(out.data.data(), buffer.data, buffer.bytes);
      outputs.push_back(std::move(out));
      continue;
    }
    std::memcpy(out.data.data(), buffer.data, buffer.bytes);
    outputs.push_back(std::move(out));
  }
  if (cuda)
    for (auto [buffer, host] : llvm::zip(buffers, hostData)) {
      cudaApi.free(buffer->data);
      buffer->data = host;
    }
  return true;
}

int64_t CompiledStep::currentBytes() const {
  return cuda ? cudaApi.current() : gaccrt_current_bytes();
}

int64_t CompiledStep::peakBytes() const {
  return cuda ? cudaApi.peak() : gaccrt_peak_bytes();
}

void CompiledStep::resetPeak() const {
  if (cuda)
    cudaApi.resetPeak();
  else
    gaccrt_reset_peak();
}

bool readStepInputs(const CompiledStep &step, const std::string &inputDir,
                    int rank, int world, std::vector<NpyArray> &inputs,
                    std::string &error) {
  std::string dir = inputDir;
  if (!llvm::sys::fs::is_directory(dir)) {
    error = "--input-dir='" + dir + "' is not a directory";
    return false;
  }
  // Per-rank folders (rank<r>), when present, must be rank0..rank<N-1> for
  // N ranks; report the folders by their names.
  std::vector<std::pair<long long, std::string>> rankDirs;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    long long r;
    if (name.starts_with("rank") && !name.drop_front(4).empty() &&
        !name.drop_front(4).getAsInteger(10, r) &&
        llvm::sys::fs::is_directory(it->path()))
      rankDirs.emplace_back(r, name.str());
  }
  std::sort(rankDirs.begin(), rankDirs.end());
  if (!rankDirs.empty()) {
    bool match = static_cast<int>(rankDirs.size()) == world;
    for (size_t k = 0; match && k < rankDirs.size(); ++k)
      match = rankDirs[k].first == static_cast<long long>(k) &&
              rankDirs[k].second == "rank" + std::to_string(k);
    if (!match) {
      std::string names;
      for (size_t k = 0; k < rankDirs.size(); ++k)
        names += (k ? ", " : "") + rankDirs[k].second;
      error = "'" + dir + "' has per-rank folders " + names + " (" +
              std::to_string(rankDirs.size()) + ") but gacc-run runs with " +
              std::to_string(world) + " rank" + (world == 1 ? "" : "s") +
              ", which reads " +
              (world == 1 ? std::string("rank0")
                          : "rank0..rank" + std::to_string(world - 1));
      return false;
    }
    dir += "/rank" + std::to_string(rank);
  }
  inputs.clear();
  for (size_t i = 0; i < step.getArgs().size(); ++i) {
    std::string path = dir + "/arg" + std::to_string(i) + ".npy";
    std::string shared = inputDir + "/arg" + std::to_string(i) + ".npy";
    // A file missing from the rank folder may be shared by all ranks.
    if (!llvm::sys::fs::exists(path) && llvm::sys::fs::exists(shared))
      path = shared;
    const TensorInfo &info = step.getArgs()[i];
    if (!llvm::sys::fs::exists(path) && info.hasFill) {
      NpyArray f64 = makeArray(DType::F64, info.shape);
      auto *values = reinterpret_cast<double *>(f64.data.data());
      std::fill(values, values + f64.numElements(), info.fill);
      inputs.push_back(convertToDType(f64, info.dtype));
      continue;
    }
    if (!llvm::sys::fs::exists(path)) {
      error = "missing input file '" + path + "' for argument #" +
              std::to_string(i) + " (" + roleName(step.getArgs()[i].role) + ")";
      return false;
    }
    NpyArray array;
    if (!readNpy(path, array, error))
      return false;
    inputs.push_back(std::move(array));
  }
  return step.prepareInputs(inputs, error);
}

std::vector<NpyArray> makeRandomInputs(const CompiledStep &step, uint64_t seed,
                                       int rank) {
  std::vector<NpyArray> inputs;
  std::mt19937_64 paramRng(seed);
  std::mt19937_64 batchRng(seed * 7919 + 104729 * (rank + 1));
  for (const TensorInfo &arg : step.getArgs()) {
    NpyArray f64 = makeArray(DType::F64, arg.shape);
    auto *values = reinterpret_cast<double *>(f64.data.data());
    int64_t n = f64.numElements();
    std::mt19937_64 &rng = arg.role == Role::Batch ? batchRng : paramRng;
    std::normal_distribution<double> normal(0.0, 1.0);
    int64_t fanIn = arg.shape.empty() ? 1 : arg.shape.front();
    for (int64_t k = 0; k < n; ++k) {
      if (arg.hasFill) {
        values[k] = arg.fill;
        continue;
      }
      switch (arg.role) {
      case Role::Param:
        values[k] = normal(rng) / std::sqrt(static_cast<double>(fanIn));
        break;
      case Role::State:
        values[k] = arg.shape.empty() && isFloatDType(arg.dtype) ? 0.1 : 0.0;
        break;
      default:
        if (!isFloatDType(arg.dtype)) {
          int64_t bound = arg.indexBound > 0 ? arg.indexBound : 2;
          values[k] = static_cast<double>(
              std::uniform_int_distribution<int64_t>(0, bound - 1)(rng));
        } else if (arg.isMask) {
          values[k] = std::uniform_real_distribution<double>(0, 1)(rng) < 0.75;
        } else {
          values[k] = normal(rng);
        }
      }
    }
    // A mask keeps at least one token.
    if (arg.isMask && n > 0)
      values[0] = 1.0;
    if (isFloatDType(arg.dtype)) {
      inputs.push_back(convertToDType(f64, arg.dtype));
    } else {
      NpyArray ints = makeArray(DType::I64, arg.shape);
      auto *dst = reinterpret_cast<int64_t *>(ints.data.data());
      for (int64_t k = 0; k < n; ++k)
        dst[k] = static_cast<int64_t>(values[k]);
      inputs.push_back(convertToDType(ints, arg.dtype));
    }
  }
  return inputs;
}

} // namespace gacc

//===- gacc-check.cpp - compare compiled steps with LibTorch ----*- C++ -*-===//
//
// gacc-check STEP.mlir [--micro-batches=M | --micro-batch-sizes=a,b,...]
//   [pipeline options] [--ranks=N] [--device=cpu|cuda] [--input-dir=DIR]
//   [--seed=S]
//
// Evaluates the original (untransformed) step with LibTorch on the full batch
// in float64 and float32 (the float32 run measures the graph's own rounding
// error and sets the tolerance), checks the graph's gacc.grad results against
// LibTorch autograd of its loss (a wrong backward is the input's fault),
// evaluates the eager "loss ÷ m" recipe per micro-batch for contrast, runs
// the compiled step (in process, or with --ranks=N as N MPI ranks of
// gacc-run on disjoint shards) and prints a table. Exit status: 0 when every
// compiled result is within tolerance, 1 when one is not, 2 when the compiled
// results pass but the input graph's backward is wrong, 3 on other errors.
//
//===----------------------------------------------------------------------===//

#include "gacc/Check/TorchEvaluator.h"
#include "gacc/Runner/PipelineFlags.h"
#include "gacc/Runner/StepRunner.h"

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/InitAll.h"
#include "gacc/Transforms/MicroBatchSizes.h"
#include "gacc/Transforms/Utils.h"
#include "gaccrt/gaccrt.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

using namespace mlir;
namespace cl = llvm::cl;
using ::gacc::DType;
using ::gacc::NpyArray;
using ::gacc::Role;

static cl::OptionCategory &category = ::gacc::getToolFlagCategory();
static cl::opt<std::string> inputFile(cl::Positional, cl::desc("<step.mlir>"),
                                      cl::Required, cl::cat(category));
static cl::opt<int> ranks("ranks",
                          cl::desc("Run the compiled step on N MPI ranks"),
                          cl::init(1), cl::cat(category));
static cl::opt<std::string>
    inputDir("input-dir", cl::desc("Read arg<i>.npy (rank<r>/arg<i>.npy)"),
             cl::init(""), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("Seed of random inputs"),
                              cl::init(0), cl::cat(category));
static cl::opt<double> toleranceFactor(
    "tolerance-factor",
    cl::desc("Tolerance = factor x max(graph's float32 error, epsilon)"),
    cl::init(10.0), cl::cat(category));

static int fail(const std::string &message) {
  llvm::errs() << "gacc-check: error: " << message << "\n";
  return 3;
}

/// NumPy array <-> torch tensor.
static torch::ScalarType torchDType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return torch::kFloat32;
  case DType::F64:
    return torch::kFloat64;
  case DType::BF16:
    return torch::kBFloat16;
  case DType::F16:
    return torch::kFloat16;
  case DType::I32:
    return torch::kInt32;
  case DType::I64:
    return torch::kInt64;
  case DType::I8:
    return torch::kInt8;
  case DType::U8:
    return torch::kUInt8;
  case DType::Bool:
    return torch::kBool;
  }
  return torch::kFloat32;
}

static torch::Tensor toTensor(const NpyArray &array) {
  std::vector<int64_t> shape(array.shape.begin(), array.shape.end());
  return torch::from_blob(const_cast<char *>(array.data.data()), shape,
                          torchDType(array.dtype))
      .clone();
}

static torch::Tensor asDouble(const torch::Tensor &t) {
  return t.detach().to(torch::kFloat64).contiguous();
}

/// Normwise errors: max |a - b| and max |a - b| / max |b| over the elements
/// that are not NaN in both; equal values (infinities) differ by 0. NaN in
/// one and not the other makes the error NaN (a failure).
struct Error {
  double abs = 0, rel = 0;
  /// Elements that are NaN in both.
  int64_t bothNaN = 0;
  /// All elements are NaN in both.
  bool allNaN = false;
};
static Error compare(const torch::Tensor &value, const torch::Tensor &ref) {
  torch::Tensor a = asDouble(value).flatten(), b = asDouble(ref).flatten();
  Error error;
  if (a.numel() == 0)
    return error;
  torch::Tensor nanA = torch::isnan(a), nanB = torch::isnan(b);
  if (!torch::equal(nanA, nanB)) {
    error.abs = error.rel = NAN;
    return error;
  }
  error.bothNaN = nanA.sum().item<int64_t>();
  error.allNaN = error.bothNaN == a.numel();
  torch::Tensor keep = nanA.logical_not();
  a = a.masked_select(keep);
  b = b.masked_select(keep);
  if (a.numel() == 0)
    return error;
  torch::Tensor diffs =
      torch::where(a == b, torch::zeros_like(a), (a - b).abs());
  double diff = diffs.max().item<double>();
  double scale =
      b.abs().masked_select(torch::isfinite(b)).numel() > 0
          ? b.abs().masked_select(torch::isfinite(b)).max().item<double>()
          : 0.0;
  error.abs = diff;
  error.rel = diff / std::max(scale, 1e-30);
  return error;
}

/// The smallest relative step of the results' element type.
static double epsilonOf(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return 2.2e-16;
  case DType::F32:
    return 1.2e-7;
  case DType::F16:
    return 9.8e-4;
  case DType::BF16:
    return 7.8e-3;
  default:
    return 0;
  }
}

/// The first values of `t`, for the report.
static std::string preview(const torch::Tensor &t) {
  torch::Tensor flat = asDouble(t).flatten();
  std::string s = flat.numel() == 1 ? "" : "[";
  int64_t n = std::min<int64_t>(flat.numel(), 3);
  for (int64_t i = 0; i < n; ++i) {
    char buffer[32];
    std::snprintf(buffer, sizeof(buffer), "%.6g", flat[i].item<double>());
    s += (i ? ", " : "") + std::string(buffer);
  }
  if (flat.numel() > n)
    s += ", ...";
  return flat.numel() == 1 ? s : s + "]";
}

/// Runs the compiled step as `ranks` MPI ranks of gacc-run on `inputs`.
static bool runOnRanks(const char *argv0,
                       const std::vector<std::vector<NpyArray>> &inputs,
                       size_t numResults,
                       std::vector<std::vector<NpyArray>> &outputs,
                       std::string &error) {
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("gacc-check", dir)) {
    error = "cannot create a temporary folder";
    return false;
  }
  for (size_t r = 0; r < inputs.size(); ++r) {
    std::string rankDir = (dir + "/in/rank" + std::to_string(r)).str();
    llvm::sys::fs::create_directories(rankDir);
    for (size_t i = 0; i < inputs[r].size(); ++i)
      if (!::gacc::writeNpy(rankDir + "/arg" + std::to_string(i) + ".npy",
                            inputs[r][i], error))
        return false;
  }
  std::string self = llvm::sys::fs::getMainExecutable(argv0, (void *)&fail);
  std::string gaccRun =
      (llvm::sys::path::parent_path(self) + "/gacc-run").str();
  auto mpirun = llvm::sys::findProgramByName("mpirun");
  if (!mpirun) {
    error = "--ranks needs mpirun (OpenMPI) on the PATH";
    return false;
  }
  std::vector<std::string> args{*mpirun,
                                "--allow-run-as-root",
                                "--oversubscribe",
                                "-x",
                                "OPENBLAS_NUM_THREADS=1",
                                "-np",
                                std::to_string(inputs.size()),
                                gaccRun,
                                inputFile,
                                "--input-dir=" + (dir + "/in").str(),
                                "--output-dir=" + (dir + "/out").str(),
                                "--quiet"};
  for (const std::string &flag : ::gacc::getPipelineFlagArguments())
    args.push_back(flag);
  std::vector<llvm::StringRef> argRefs(args.begin(), args.end());
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*mpirun, argRefs, std::nullopt, {}, 0, 0,
                                     &message);
  if (rc != 0) {
    error = "mpirun of gacc-run failed (exit " + std::to_string(rc) + ")" +
            (message.empty() ? "" : ": " + message);
    return false;
  }
  outputs.assign(inputs.size(), {});
  for (size_t r = 0; r < inputs.size(); ++r)
    for (size_t j = 0; j < numResults; ++j) {
      NpyArray out;
      std::string path = (dir + "/out/rank" + std::to_string(r) + "/result" +
                          std::to_string(j) + ".npy")
                             .str();
      if (!::gacc::readNpy(path, out, error))
        return false;
      outputs[r].push_back(std::move(out));
    }
  llvm::sys::fs::remove_directories(dir);
  return true;
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "gacc-check: compare a compiled gradient-accumulated step with "
      "LibTorch\n");
  if (ranks < 1)
    return fail("--ranks must be at least 1");
  torch::set_num_threads(1);

  // The compiled step (single rank: in process).
  ::gacc::StepOptions options = ::gacc::getStepOptionsFromFlags();
  options.traceRegions = false;
  const std::string &device = options.device;
  if (device != "cpu" && device != "cuda")
    return fail("unknown --device='" + device + "' (expected cpu or cuda)");
  std::string error;
  std::unique_ptr<::gacc::CompiledStep> step =
      ::gacc::CompiledStep::compile(inputFile, options, error);
  if (!step)
    return fail(error);
  const auto &argInfo = step->getArgs();
  const auto &resultInfo = step->getResults();

  // The original graph, for LibTorch.
  DialectRegistry registry;
  registerAllDialects(registry);
  mlir::gacc::registerGaccDialects(registry);
  MLIRContext context(registry);
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  std::string fileError;
  auto file = openInputFile(inputFile, &fileError);
  if (!file)
    return fail("cannot open '" + inputFile + "': " + fileError);
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return fail("cannot parse '" + inputFile + "'");
  func::FuncOp func = mlir::gacc::findTrainingStep(*module, options.entry);
  if (!func)
    return fail("no training step");

  // Inputs, one set per rank.
  std::vector<std::vector<NpyArray>> inputs(ranks);
  for (int r = 0; r < ranks; ++r) {
    if (inputDir.empty()) {
      inputs[r] = ::gacc::makeRandomInputs(*step, seed, r);
      continue;
    }
    if (!::gacc::readStepInputs(*step, inputDir, r, ranks, inputs[r], error))
      return fail(error);
  }
  // Arguments the pipeline appended (the loss-scale state) are not the
  // original graph's.
  unsigned numGraphArgs = func.getNumArguments();
  unsigned numGraphResults = func.getNumResults();
  auto rankTensors = [&](torch::ScalarType floatType) {
    SmallVector<SmallVector<torch::Tensor>> all;
    for (auto &rankInputs : inputs) {
      SmallVector<torch::Tensor> args;
      for (const NpyArray &a : ArrayRef(rankInputs).take_front(numGraphArgs)) {
        torch::Tensor t = toTensor(a);
        if (t.is_floating_point() && floatType == torch::kFloat64)
          t = t.to(torch::kFloat64);
        args.push_back(t);
      }
      all.push_back(std::move(args));
    }
    return all;
  };

  // The compiled step, first: a runtime error in it (an out-of-range
  // gather index) is the clearer report.
  std::vector<std::vector<NpyArray>> compiled;
  if (ranks == 1) {
    std::vector<NpyArray> outputs;
    if (!step->run(inputs[0], outputs, error))
      return fail(error);
    compiled.push_back(std::move(outputs));
  } else if (!runOnRanks(argv[0], inputs, resultInfo.size(), compiled, error)) {
    return fail(error);
  }

  // References on the full batch (every rank's shard, collectives across
  // ranks): float64 and the graph's own float32.
  auto ref64 = mlir::gacc::evaluateWithTorchOnRanks(
      func, rankTensors(torch::kFloat64), torch::kFloat64);
  auto ref32 = mlir::gacc::evaluateWithTorchOnRanks(
      func, rankTensors(torch::kFloat32), torch::kFloat32);
  if (failed(ref64) || failed(ref32))
    return fail("LibTorch cannot evaluate the input graph");

  // Loss scaling: LibTorch's GradScaler recipe is the reference. Per rank,
  // the float32 graph's loss times S is back-propagated by autograd (the
  // scaled backward), the scaled gradients are all-reduced like the graph's
  // collectives (sum, or average), multiplied by 1/S once, and checked for
  // inf/NaN over all ranks; on overflow the step is skipped (parameters and
  // state keep their values) and the scale backs off, else the step's
  // results are the graph's own and the scale grows after growth-interval
  // clean steps.
  std::set<size_t> nonFiniteExpected;
  std::string recipeReport;
  if (options.lossScale != "none") {
    bool dynamic = options.lossScale == "dynamic";
    double scale = options.lossScaleInit;
    int64_t tracker = 0;
    if (StringRef(options.lossScale).starts_with("static="))
      StringRef(options.lossScale).drop_front(7).getAsDouble(scale);
    if (dynamic) {
      scale = toTensor(inputs[0][numGraphArgs]).item<double>();
      tracker = toTensor(inputs[0][numGraphArgs + 1]).item<int64_t>();
    }
    int lossResult = -1;
    std::set<int64_t> params;
    for (size_t j = 0; j < numGraphResults; ++j) {
      if (resultInfo[j].role == Role::Loss)
        lossResult = j;
      if (resultInfo[j].role == Role::Grad ||
          resultInfo[j].role == Role::ParamOut)
        params.insert(resultInfo[j].index);
    }
    bool average = false;
    func.walk([&](shard::AllReduceOp op) {
      average |= op.getReduction() == shard::ReductionKind::Average;
    });
    std::map<int64_t, torch::Tensor> total;
    auto all = rankTensors(torch::kFloat32);
    for (auto &args : all) {
      for (int64_t i : params)
        args[i] = args[i].detach().requires_grad_(true);
      ScopedDiagnosticHandler quiet(&context,
                                    [](Diagnostic &) { return success(); });
      auto results = mlir::gacc::evaluateWithTorch(func, args, torch::kFloat32);
      if (lossResult < 0 || failed(results) ||
          !(*results)[lossResult].requires_grad())
        return fail("loss-scale: the GradScaler reference needs LibTorch "
                    "autograd through the graph's loss");
      ((*results)[lossResult] * static_cast<float>(scale)).backward();
      for (int64_t i : params) {
        torch::Tensor g = args[i].grad();
        if (!g.defined())
          g = torch::zeros_like(args[i]);
        total[i] = total.count(i) ? total[i] + g : g.detach();
      }
    }
    bool found = false;
    float inverse = 1.0f / static_cast<float>(scale);
    for (auto &[i, g] : total) {
      if (average)
        g = g / static_cast<float>(ranks);
      g = g * inverse;
      found |= !torch::isfinite(g).all().item<bool>();
    }
    // GradScaler's update (torch._amp_update_scale_).
    double newScale = scale;
    int64_t newTracker = 0;
    if (found) {
      newScale = scale * options.lossScaleBackoffFactor;
    } else if (tracker + 1 >= options.lossScaleGrowthInterval) {
      double grown = scale * options.lossScaleGrowthFactor;
      newScale = std::isfinite(static_cast<float>(grown)) ? grown : scale;
    } else {
      newTracker = tracker + 1;
    }
    for (int r = 0; r < ranks; ++r) {
      for (size_t j = 0; j < numGraphResults; ++j) {
        if (!found)
          continue;
        Role role = resultInfo[j].role;
        if (role == Role::ParamOut || role == Role::StateOut) {
          torch::Tensor old =
              asDouble(toTensor(inputs[r][resultInfo[j].index]));
          (*ref64)[r][j] = old;
          (*ref32)[r][j] = old;
        } else if (role == Role::Grad) {
          nonFiniteExpected.insert(j);
        }
      }
      if (dynamic) {
        torch::Tensor s = torch::tensor(newScale, torch::kFloat64).reshape({});
        torch::Tensor t =
            torch::tensor(static_cast<double>(newTracker), torch::kFloat64)
                .reshape({});
        (*ref64)[r].push_back(s);
        (*ref64)[r].push_back(t);
        (*ref32)[r].push_back(s);
        (*ref32)[r].push_back(t);
      }
    }
    char buffer[256];
    std::snprintf(buffer, sizeof(buffer),
                  "loss scale: LibTorch GradScaler recipe, scale %g, found "
                  "inf/NaN after the all-reduce: %s -> step %s; next scale "
                  "%g, growth tracker %lld\n",
                  scale, found ? "yes" : "no", found ? "skipped" : "applied",
                  newScale, static_cast<long long>(newTracker));
    recipeReport = buffer;
  }

  // The eager recipe: the graph run per micro-batch (normalizing by b),
  // loss and gradients divided by m and summed.
  int64_t batch = step->getBatchSize();
  FailureOr<SmallVector<int64_t>> split = mlir::gacc::getMicroBatchSizes(
      batch, options.microBatches, options.microBatchSizes,
      [&] { return mlir::emitError(func.getLoc()); });
  if (failed(split))
    return fail("invalid micro-batch options");
  std::vector<int64_t> sizes(split->begin(), split->end());
  int64_t m = sizes.size();
  std::vector<std::vector<torch::Tensor>> eager(
      ranks, std::vector<torch::Tensor>(resultInfo.size()));
  bool haveEager = false;
  std::string eagerProblem;
  {
    mlir::gacc::BatchAnalysisOptions analysisOptions;
    analysisOptions.allowMicroBatchStatistics =
        options.allowMicroBatchStatistics;
    // Keep the first problem for the report instead of printing it.
    ScopedDiagnosticHandler quiet(&context, [&](Diagnostic &diag) {
      if (eagerProblem.empty() &&
          diag.getSeverity() == DiagnosticSeverity::Error)
        eagerProblem = diag.str();
      return success();
    });
    FailureOr<mlir::gacc::BatchAnalysis> analysis =
        mlir::gacc::BatchAnalysis::run(func, analysisOptions);
    if (succeeded(analysis)) {
      haveEager = true;
      auto all = rankTensors(torch::kFloat64);
      int64_t offset = 0;
      for (int64_t k = 0; k < m && haveEager; ++k) {
        std::string name = (func.getSymName() + "_eager_" + Twine(k)).str();
        FailureOr<func::FuncOp> part =
            mlir::gacc::buildStepForBatchSize(func, *analysis, sizes[k], name);
        if (failed(part)) {
          haveEager = false;
          break;
        }
        SmallVector<SmallVector<torch::Tensor>> sliced;
        for (auto &args : all) {
          SmallVector<torch::Tensor> s;
          for (auto [i, t] : llvm::enumerate(args))
            s.push_back(argInfo[i].role == Role::Batch
                            ? t.narrow(argInfo[i].index, offset, sizes[k])
                            : t);
          sliced.push_back(std::move(s));
        }
        auto results = mlir::gacc::evaluateWithTorchOnRanks(*part, sliced,
                                                            torch::kFloat64);
        part->erase();
        if (failed(results)) {
          haveEager = false;
          break;
        }
        for (int r = 0; r < ranks; ++r)
          for (size_t j = 0; j < resultInfo.size(); ++j) {
            if (resultInfo[j].role != Role::Loss &&
                resultInfo[j].role != Role::Grad)
              continue;
            torch::Tensor share = asDouble((*results)[r][j]) / m;
            eager[r][j] = eager[r][j].defined() ? eager[r][j] + share : share;
          }
        offset += sizes[k];
      }
    }
  }

  // The input graph's backward against autograd of its loss (rank 0 alone).
  int lossIndex = -1;
  std::vector<int> gradResults;
  for (size_t j = 0; j < resultInfo.size(); ++j) {
    if (resultInfo[j].role == Role::Loss)
      lossIndex = j;
    if (resultInfo[j].role == Role::Grad)
      gradResults.push_back(j);
  }
  std::string inputVerdict =
      "no gacc.grad results: the backward is checked through the results";
  bool inputWrong = false;
  if (lossIndex >= 0 && !gradResults.empty()) {
    SmallVector<torch::Tensor> args = rankTensors(torch::kFloat64)[0];
    for (size_t i = 0; i < args.size(); ++i)
      if (argInfo[i].role == Role::Param)
        args[i] = args[i].detach().requires_grad_(true);
    ScopedDiagnosticHandler quiet(&context,
                                  [](Diagnostic &) { return success(); });
    auto results = mlir::gacc::evaluateWithTorch(func, args, torch::kFloat64);
    if (failed(results) || !(*results)[lossIndex].requires_grad()) {
      inputVerdict = "autograd is not available through this graph's loss";
    } else {
      (*results)[lossIndex].backward();
      double worst = 0;
      for (int j : gradResults) {
        torch::Tensor grad = args[resultInfo[j].index].grad();
        if (!grad.defined())
          grad = torch::zeros_like(args[resultInfo[j].index]);
        worst = std::max(worst, compare((*results)[j], grad).rel);
      }
      char buffer[256];
      inputWrong = worst > 1e-6;
      std::snprintf(buffer, sizeof(buffer),
                    "gacc.grad results vs LibTorch autograd of the loss "
                    "(float64, rank 0): max relative error %.2e — %s",
                    worst,
                    inputWrong ? "WRONG: the input graph's backward does not "
                                 "match its forward (the input's fault, not a "
                                 "compiler bug)"
                               : "OK");
      inputVerdict = buffer;
    }
  }

  // The report.
  llvm::outs() << "gacc-check: " << func.getSymName() << " from " << inputFile
               << " on " << device << ", batch " << batch << " per rank, "
               << ranks << " rank" << (ranks == 1 ? "" : "s")
               << ", micro-batch sizes ";
  for (size_t k = 0; k < sizes.size(); ++k)
    llvm::outs() << (k ? "," : "") << sizes[k];
  llvm::outs() << "\nreference: LibTorch float64 on the full batch; errors "
                  "are normwise (max |x - ref|, and that / max |ref|)\n\n";
  llvm::outs() << llvm::format("%-4s %-10s %-5s %11s %11s %11s %11s %11s "
                               "%10s  %s\n",
                               "res", "role", "rank", "gacc abs", "gacc rel",
                               "eager abs", "eager rel", "f32 graph",
                               "tolerance", "status");
  bool anyFail = false;
  for (int r = 0; r < ranks; ++r)
    for (size_t j = 0; j < resultInfo.size(); ++j) {
      torch::Tensor ref = (*ref64)[r][j];
      torch::Tensor mine = toTensor(compiled[r][j]);
      if (nonFiniteExpected.count(j)) {
        // A skipped step's gradients are the overflowed ones: only their
        // non-finiteness is compared.
        bool pass = !torch::isfinite(asDouble(mine)).all().item<bool>();
        anyFail |= !pass;
        llvm::outs() << llvm::format(
            "%-4d %-10s %-5d %11s %11s %11s %11s %11s %10s  %s\n",
            static_cast<int>(j), ::gacc::roleName(resultInfo[j].role), r, "-",
            "-", "-", "-", "-", "-",
            pass ? "PASS (non-finite, step skipped)"
                 : "FAIL (finite, expected an overflow)");
        continue;
      }
      Error gaccErr = compare(mine, ref);
      Error graphErr = compare((*ref32)[r][j], ref);
      double tolerance = toleranceFactor *
                         std::max(graphErr.rel, epsilonOf(resultInfo[j].dtype));
      bool pass = gaccErr.rel <= tolerance;
      anyFail |= !pass;
      // NaN where the reference is NaN is agreement, and said so.
      std::string status =
          !pass            ? "FAIL"
          : gaccErr.allNaN ? "both NaN"
          : gaccErr.bothNaN
              ? "PASS (" + std::to_string(gaccErr.bothNaN) + " both NaN)"
              : "PASS";
      std::string eagerAbs = "-", eagerRel = "-";
      if (haveEager && eager[r][j].defined()) {
        Error e = compare(eager[r][j], ref);
        char a[32], b[32];
        std::snprintf(a, sizeof(a), "%.3e", e.abs);
        std::snprintf(b, sizeof(b), "%.3e", e.rel);
        eagerAbs = a;
        eagerRel = b;
      }
      llvm::outs() << llvm::format(
          "%-4d %-10s %-5d %11.3e %11.3e %11s %11s %11.3e %10.2e  %s\n",
          static_cast<int>(j),
          roleName(resultInfo[j].role), r, gaccErr.abs,
          gaccErr.rel, eagerAbs.c_str(), eagerRel.c_str(), graphErr.rel,
          tolerance, status.c_str());
    }
  llvm::outs() << "\nvalues (rank 0):\n";
  for (size_t j = 0; j < resultInfo.size(); ++j) {
    llvm::outs() << "  result " << j << " ("
                 << roleName(resultInfo[j].role)
                 << "): reference " << preview((*ref64)[0][j]) << ", gacc "
                 << preview(toTensor(compiled[0][j]));
    if (haveEager && eager[0][j].defined())
      llvm::outs() << ", eager ÷m " << preview(eager[0][j]);
    llvm::outs() << "\n";
  }
  llvm::outs() << "\ninput graph: " << inputVerdict << "\n";
  llvm::outs() << recipeReport;
  if (!haveEager)
    llvm::outs() << "eager recipe: not available for this graph"
                 << (eagerProblem.empty() ? "" : ": " + eagerProblem) << "\n";
  llvm::outs() << (anyFail
                       ? "FAIL: a compiled result is outside tolerance\n"
                       : "PASS: every compiled result is within tolerance\n");
  if (anyFail)
    return 1;
  return inputWrong ? 2 : 0;
}

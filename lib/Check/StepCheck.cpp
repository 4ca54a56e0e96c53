//===- StepCheck.cpp - reference computations of gacc-check ---------------===//
//
// The references gacc-check compares a compiled step with (StepCheck.h):
// LibTorch evaluations of the original graph, GradScaler's and the eager
// recipe, the autograd check of the graph's backward, and the MPI run of
// gacc-run.
//
//===----------------------------------------------------------------------===//

#include "gacc/Check/StepCheck.h"
#include "gacc/Check/TorchEvaluator.h"

#include "gacc/Analysis/BatchAnalysis.h"
#include "gacc/Dialect/Gacc/IR/RegisterDialects.h"
#include "gacc/Runner/AtomicFile.h"
#include "gacc/Transforms/LossScaleMode.h"
#include "gacc/Transforms/MicroBatch.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Program.h"

#include <torch/torch.h>

#include <cmath>
#include <functional>
#include <map>

using namespace mlir;
using namespace mlir::gacc;
using mlir::gacc::DType;
using mlir::gacc::NpyArray;
using mlir::gacc::TensorInfo;

InputGraph::InputGraph() = default;
InputGraph::~InputGraph() = default;

std::unique_ptr<InputGraph>
InputGraph::load(const std::string &path, StringRef entry, std::string &error) {
  std::unique_ptr<InputGraph> graph(new InputGraph());
  DialectRegistry registry;
  registerAllDialects(registry);
  registerGaccDialects(registry);
  graph->context = std::make_unique<MLIRContext>(registry);
  graph->context->printOpOnDiagnostic(false);
  std::string fileError;
  auto file = openInputFile(path, &fileError);
  if (!file) {
    error = "cannot open '" + path + "': " + fileError;
    return nullptr;
  }
  graph->sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  graph->diagnostics = std::make_unique<SourceMgrDiagnosticHandler>(
      graph->sourceMgr, graph->context.get());
  graph->module =
      parseSourceFile<ModuleOp>(graph->sourceMgr, graph->context.get());
  if (!graph->module) {
    error = "cannot parse '" + path + "'";
    return nullptr;
  }
  graph->func = findTrainingStep(*graph->module, entry);
  if (!graph->func) {
    error = "no training step";
    return nullptr;
  }
  // The reference evaluates the step at the boundary the pipeline compiles:
  // the functions it calls inlined (so an evaluation error in a helper names
  // the op and its call site) and scalars as rank-0 tensors (so the eager
  // recipe's analysis reads a scalar loss), as gacc-prepare-step does.
  if (failed(inlineStepCalls(graph->func)) ||
      failed(boxScalarBoundary(graph->func))) {
    error = "cannot inline the functions the training step calls";
    return nullptr;
  }
  return graph;
}

torch::ScalarType mlir::gacc::getTorchDType(DType dtype) {
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

torch::Tensor mlir::gacc::toTensor(const NpyArray &array) {
  std::vector<int64_t> shape(array.shape.begin(), array.shape.end());
  return torch::from_blob(const_cast<char *>(array.data.data()), shape,
                          getTorchDType(array.dtype))
      .clone();
}

torch::Tensor mlir::gacc::toDouble(const torch::Tensor &tensor) {
  return tensor.detach().to(torch::kFloat64).contiguous();
}

RankTensors mlir::gacc::getRankTensors(const RankInputs &inputs,
                                       unsigned numArgs,
                                       torch::ScalarType floatType) {
  RankTensors all;
  for (const auto &rankInputs : inputs) {
    SmallVector<torch::Tensor> args;
    for (const NpyArray &a : ArrayRef(rankInputs).take_front(numArgs)) {
      torch::Tensor t = toTensor(a);
      if (t.is_floating_point() && floatType == torch::kFloat64)
        t = t.to(torch::kFloat64);
      args.push_back(t);
    }
    all.push_back(std::move(args));
  }
  return all;
}

NormwiseError mlir::gacc::compareWithReference(const torch::Tensor &value,
                                               const torch::Tensor &reference) {
  torch::Tensor a = toDouble(value).flatten(),
                b = toDouble(reference).flatten();
  NormwiseError error;
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
  torch::Tensor finite = b.abs().masked_select(torch::isfinite(b));
  double scale = finite.numel() > 0 ? finite.max().item<double>() : 0.0;
  error.abs = diff;
  error.rel = diff / std::max(scale, 1e-30);
  return error;
}

double mlir::gacc::largestFinite(const torch::Tensor &t) {
  if (t.numel() == 0)
    return 0.0;
  return toDouble(t.detach()).abs().nan_to_num(0, 0, 0).max().item<double>();
}

double mlir::gacc::getRelativeEpsilon(DType dtype) {
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

FailureOr<StepReferences>
mlir::gacc::evaluateReferences(func::FuncOp func, const RankInputs &inputs) {
  unsigned numArgs = func.getNumArguments();
  auto f64 = evaluateWithTorchOnRanks(
      func, getRankTensors(inputs, numArgs, torch::kFloat64), torch::kFloat64);
  RankTensors f32Inputs = getRankTensors(inputs, numArgs, torch::kFloat32);
  auto f32 = evaluateWithTorchOnRanks(func, f32Inputs, torch::kFloat32);
  if (failed(f64) || failed(f32))
    return failure();
  // The same perturbation on every rank (parameters are replicated): a
  // fixed pattern of signs, x (1 +- 2^-23).
  for (SmallVector<torch::Tensor> &rankArgs : f32Inputs)
    for (unsigned i = 0; i < numArgs; ++i) {
      Role role = getArgumentRole(func, i).role;
      torch::Tensor &t = rankArgs[i];
      if ((role != Role::Param && role != Role::State) ||
          t.scalar_type() != torch::kFloat32 || t.numel() == 0)
        continue;
      torch::Tensor pattern =
          torch::arange(t.numel(), torch::kInt64).mul(7919).remainder(13);
      torch::Tensor sign =
          torch::where(pattern < 6, 1.0, -1.0).to(torch::kFloat32);
      t = t * (1.0f + sign.reshape(t.sizes()) * std::ldexp(1.0f, -23));
    }
  auto perturbed = evaluateWithTorchOnRanks(func, f32Inputs, torch::kFloat32);
  StepReferences refs{std::move(*f64), *f32, {}};
  refs.f32Perturbed = succeeded(perturbed) ? std::move(*perturbed) : *f32;
  return refs;
}

FailureOr<GradScalerOutcome> mlir::gacc::applyGradScalerRecipe(
    func::FuncOp func, const GaccPipelineConfig &options,
    const std::vector<TensorInfo> &results, const RankInputs &inputs,
    StepReferences &references, std::string &error) {
  unsigned numGraphArgs = func.getNumArguments();
  unsigned numGraphResults = func.getNumResults();
  int ranks = inputs.size();
  GradScalerOutcome outcome;
  std::optional<LossScaleMode> mode =
      parseLossScaleMode(options.lossScale, options.lossScaleInit, error);
  if (!mode)
    return failure();
  bool dynamic = mode->kind == LossScaleKind::Dynamic;
  double scale = mode->scale;
  int64_t tracker = 0;
  if (dynamic) {
    // After the graph's arguments: the sample count (runtime-batch-size),
    // then the scale and its growth tracker.
    unsigned first =
        inputs[0].size() == numGraphArgs + 3 ? numGraphArgs + 1 : numGraphArgs;
    scale = toTensor(inputs[0][first]).item<double>();
    tracker = toTensor(inputs[0][first + 1]).item<int64_t>();
  }
  int lossResult = -1;
  std::set<int64_t> params;
  for (size_t j = 0; j < numGraphResults; ++j) {
    if (results[j].role == Role::Loss)
      lossResult = j;
    if (results[j].role == Role::Grad || results[j].role == Role::ParamOut)
      params.insert(results[j].index);
  }
  // An average all-reduce in the step or in a function it calls.
  bool average = false;
  llvm::DenseSet<Operation *> visited;
  std::function<void(func::FuncOp)> visit = [&](func::FuncOp f) {
    if (!f || f.isExternal() || !visited.insert(f).second)
      return;
    f.walk([&](Operation *op) {
      if (auto allReduce = dyn_cast<shard::AllReduceOp>(op))
        average |= allReduce.getReduction() == shard::ReductionKind::Average;
      else if (auto call = dyn_cast<func::CallOp>(op))
        visit(SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
            call, call.getCalleeAttr()));
    });
  };
  visit(func);
  std::map<int64_t, torch::Tensor> total;
  RankTensors all = getRankTensors(inputs, numGraphArgs, torch::kFloat32);
  for (auto &args : all) {
    for (int64_t i : params)
      args[i] = args[i].detach().requires_grad_(true);
    ScopedDiagnosticHandler quiet(func.getContext(),
                                  [](Diagnostic &) { return success(); });
    auto values = evaluateWithTorch(func, args, torch::kFloat32);
    if (lossResult < 0 || failed(values) ||
        !(*values)[lossResult].requires_grad()) {
      error = "loss-scale: the GradScaler reference needs LibTorch "
              "autograd through the graph's loss";
      return failure();
    }
    ((*values)[lossResult] * static_cast<float>(scale)).backward();
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
      Role role = results[j].role;
      if (role == Role::ParamOut || role == Role::StateOut) {
        torch::Tensor old = toDouble(toTensor(inputs[r][results[j].index]));
        references.f64[r][j] = old;
        references.f32[r][j] = old;
        references.f32Perturbed[r][j] = old;
      } else if (role == Role::Grad) {
        outcome.nonFiniteResults.insert(j);
      }
    }
    if (dynamic) {
      torch::Tensor s = torch::tensor(newScale, torch::kFloat64).reshape({});
      torch::Tensor t =
          torch::tensor(static_cast<double>(newTracker), torch::kFloat64)
              .reshape({});
      references.f64[r].push_back(s);
      references.f64[r].push_back(t);
      references.f32[r].push_back(s);
      references.f32[r].push_back(t);
      references.f32Perturbed[r].push_back(s);
      references.f32Perturbed[r].push_back(t);
    }
  }
  outcome.scale = scale;
  outcome.foundNonFinite = found;
  outcome.nextScale = newScale;
  outcome.nextTracker = newTracker;
  return outcome;
}

/// A copy of `func` (inserted after it; the caller erases it) with its loop
/// nests raised into linalg ops as gacc-prepare-step does, for the batch
/// analysis; the reference itself evaluates the loops as written.
static func::FuncOp cloneWithRaisedLoops(func::FuncOp func) {
  OpBuilder builder(func);
  builder.setInsertionPointAfter(func);
  auto copy = cast<func::FuncOp>(builder.clone(*func));
  copy.setSymName((func.getSymName() + "_raised").str());
  copy.setPrivate();
  raiseLoopNests(copy);
  return copy;
}

EagerRecipe mlir::gacc::evaluateEagerRecipe(
    func::FuncOp func, ArrayRef<int64_t> sizes, bool allowMicroBatchStatistics,
    const std::vector<TensorInfo> &args, const std::vector<TensorInfo> &results,
    const RankInputs &inputs) {
  int ranks = inputs.size();
  int64_t m = sizes.size();
  EagerRecipe recipe;
  recipe.results.assign(ranks, std::vector<torch::Tensor>(results.size()));
  BatchAnalysisOptions analysisOptions;
  analysisOptions.allowMicroBatchStatistics = allowMicroBatchStatistics;
  // Keep the first problem for the report instead of printing it.
  ScopedDiagnosticHandler quiet(func.getContext(), [&](Diagnostic &diag) {
    if (recipe.problem.empty() &&
        diag.getSeverity() == DiagnosticSeverity::Error)
      recipe.problem = diag.str();
    return success();
  });
  // A graph with a dynamic sample dimension runs on any number of samples
  // as written, as an eager script would run it; a static one is rebuilt
  // for each micro-batch's size.
  bool dynamicBatch = hasDynamicSampleDimension(func);
  std::optional<BatchAnalysis> analysis;
  func::FuncOp raised;
  llvm::scope_exit eraseRaised([&] {
    if (raised)
      raised.erase();
  });
  if (!dynamicBatch) {
    raised = cloneWithRaisedLoops(func);
    FailureOr<BatchAnalysis> result =
        BatchAnalysis::run(raised, analysisOptions);
    if (failed(result))
      return recipe;
    analysis = std::move(*result);
  }
  RankTensors all =
      getRankTensors(inputs, func.getNumArguments(), torch::kFloat64);
  int64_t offset = 0;
  for (int64_t k = 0; k < m; ++k) {
    std::string name = (func.getSymName() + "_eager_" + Twine(k)).str();
    FailureOr<func::FuncOp> part =
        dynamicBatch ? FailureOr<func::FuncOp>(func)
                     : buildStepForBatchSize(raised, *analysis, sizes[k], name);
    if (failed(part))
      return recipe;
    RankTensors sliced;
    for (auto &rankArgs : all) {
      SmallVector<torch::Tensor> s;
      for (auto [i, t] : llvm::enumerate(rankArgs))
        s.push_back(args[i].role == Role::Batch
                        ? t.narrow(args[i].index, offset, sizes[k])
                        : t);
      sliced.push_back(std::move(s));
    }
    auto values = evaluateWithTorchOnRanks(*part, sliced, torch::kFloat64);
    if (!dynamicBatch)
      part->erase();
    if (failed(values))
      return recipe;
    for (int r = 0; r < ranks; ++r)
      for (size_t j = 0; j < results.size(); ++j) {
        if (results[j].role != Role::Loss && results[j].role != Role::Grad)
          continue;
        torch::Tensor share = toDouble((*values)[r][j]) / m;
        torch::Tensor &sum = recipe.results[r][j];
        sum = sum.defined() ? sum + share : share;
      }
    offset += sizes[k];
  }
  recipe.available = true;
  return recipe;
}

FailureOr<TailStep> mlir::gacc::prepareTailStep(
    func::FuncOp &func, const std::vector<TensorInfo> &args, int64_t batchSize,
    const RankInputs &inputs, std::string &error) {
  TailStep tail;
  tail.samples = batchSize;
  tail.referenceInputs = inputs;
  int countArg = mlir::gacc::getSampleCountArgument(args);
  if (countArg < 0)
    return tail;
  for (size_t r = 0; r < inputs.size(); ++r) {
    int64_t value = mlir::gacc::getSampleCount(inputs[r], countArg);
    if (r > 0 && value != tail.samples) {
      error = "the ranks run different sample counts (" +
              std::to_string(tail.samples) + " and " + std::to_string(value) +
              "); gacc-check compares one count on every rank";
      return failure();
    }
    tail.samples = value;
  }
  for (auto &rankInputs : tail.referenceInputs)
    if (!mlir::gacc::narrowBatchInputs(args, rankInputs, tail.samples, error))
      return failure();
  tail.isTail = tail.samples != batchSize;
  if (!tail.isTail)
    return tail;
  if (hasDynamicSampleDimension(func))
    return tail;
  func::FuncOp raised = cloneWithRaisedLoops(func);
  llvm::scope_exit eraseRaised([&] { raised.erase(); });
  FailureOr<BatchAnalysis> analysis = BatchAnalysis::run(raised, {});
  if (failed(analysis)) {
    error = "the batch analysis rejects the input graph";
    return failure();
  }
  FailureOr<func::FuncOp> rebuilt = buildStepForBatchSize(
      raised, *analysis, tail.samples, (func.getSymName() + "_tail").str());
  if (failed(rebuilt)) {
    error = "cannot build the input graph for " + std::to_string(tail.samples) +
            " samples";
    return failure();
  }
  func = *rebuilt;
  return tail;
}

BackwardCheck mlir::gacc::checkBackward(func::FuncOp func,
                                        const std::vector<TensorInfo> &args,
                                        const std::vector<TensorInfo> &results,
                                        const RankInputs &inputs,
                                        double gradRoundingError) {
  BackwardCheck check;
  check.allowance = std::max(1e-6, gradRoundingError);
  int lossIndex = -1;
  std::vector<int> gradResults;
  for (size_t j = 0; j < results.size(); ++j) {
    if (results[j].role == Role::Loss)
      lossIndex = j;
    if (results[j].role == Role::Grad)
      gradResults.push_back(j);
  }
  if (lossIndex < 0 || gradResults.empty())
    return check;
  SmallVector<torch::Tensor> values =
      getRankTensors(inputs, func.getNumArguments(), torch::kFloat64)[0];
  for (size_t i = 0; i < values.size(); ++i)
    if (args[i].role == Role::Param)
      values[i] = values[i].detach().requires_grad_(true);
  ScopedDiagnosticHandler quiet(func.getContext(),
                                [](Diagnostic &) { return success(); });
  auto outputs = evaluateWithTorch(func, values, torch::kFloat64);
  if (failed(outputs) || !(*outputs)[lossIndex].requires_grad()) {
    check.status = BackwardCheck::Status::NoAutograd;
    return check;
  }
  (*outputs)[lossIndex].backward();
  // The gradients are one vector: each one's error is relative to the
  // largest gradient. A gradient that is zero or tiny in exact arithmetic (a
  // bias before a softmax or a normalization over the dimension it is
  // broadcast along) is rounding noise, and the graph's float32 constants
  // (1/D of a mean is rounded) make its hand-written backward the exact
  // derivative only to about float32 precision of the whole gradient:
  // relative to its own size either is O(1) (a Conv1d bias before a layer
  // norm over 5 features: 1e-9 against autograd's 3e-9, differential test).
  SmallVector<std::pair<torch::Tensor, torch::Tensor>> pairs;
  double largest = 0;
  for (int j : gradResults) {
    torch::Tensor grad = values[results[j].index].grad();
    if (!grad.defined())
      grad = torch::zeros_like(values[results[j].index]);
    largest = std::max(largest, largestFinite(grad));
    pairs.emplace_back((*outputs)[j].detach(), grad.detach());
  }
  for (auto &[value, reference] : pairs) {
    NormwiseError error = compareWithReference(value, reference);
    double rel = error.abs / std::max(largest, 1e-30); // NaN: one side NaN
    check.maxRelError = std::isnan(rel) || std::isnan(check.maxRelError)
                            ? NAN
                            : std::max(check.maxRelError, rel);
  }
  check.status = BackwardCheck::Status::Checked;
  check.wrong = !(check.maxRelError <= check.allowance);
  return check;
}

bool mlir::gacc::runOnRanks(const std::string &gaccRun,
                            const std::string &stepFile,
                            const std::vector<std::string> &flags,
                            const RankInputs &inputs, size_t numResults,
                            RankInputs &outputs, std::string &error) {
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("gacc-check", dir)) {
    error = "cannot create a temporary folder";
    return false;
  }
  // The folder goes on every path, also when a write or the run fails.
  llvm::scope_exit removeDir([&] { llvm::sys::fs::remove_directories(dir); });
  for (size_t r = 0; r < inputs.size(); ++r) {
    std::string rankDir = (dir + "/in/rank" + std::to_string(r)).str();
    if (!mlir::gacc::writeNpySet(rankDir, "arg", inputs[r], error))
      return false;
  }
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
                                stepFile,
                                "--input-dir=" + (dir + "/in").str(),
                                "--output-dir=" + (dir + "/out").str(),
                                // Compiled here, as the one-rank check is.
                                "--step-cache=off",
                                "--quiet"};
  args.insert(args.end(), flags.begin(), flags.end());
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
  for (size_t r = 0; r < inputs.size(); ++r) {
    if (!mlir::gacc::checkResultSet(
            (dir + "/out/rank" + std::to_string(r)).str(), error))
      return false;
    for (size_t j = 0; j < numResults; ++j) {
      NpyArray out;
      std::string path = (dir + "/out/rank" + std::to_string(r) + "/result" +
                          std::to_string(j) + ".npy")
                             .str();
      if (!mlir::gacc::readNpy(path, out, error))
        return false;
      outputs[r].push_back(std::move(out));
    }
  }
  return true;
}

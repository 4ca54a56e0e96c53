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
// The computations are GaccCheck's (gacc/Check/StepCheck.h); this file parses
// the flags and prints the report.
//
//===----------------------------------------------------------------------===//

#include "gacc/Check/StepCheck.h"
#include "gacc/Runner/PipelineFlags.h"
#include "gacc/Runner/StepRunner.h"
#include "gacc/Transforms/LossScaleMode.h"

#include "gacc/Transforms/MicroBatch.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <torch/torch.h>

using namespace mlir;
using namespace mlir::gacc;
namespace cl = llvm::cl;
using mlir::gacc::NpyArray;
using mlir::gacc::Role;

static cl::OptionCategory &category = mlir::gacc::getToolFlagCategory();
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

/// A per-sample result of a tail step without its padded rows: `mine`
/// narrowed to `ref`'s size where only the sample dimension differs.
static torch::Tensor tailRows(torch::Tensor mine, const torch::Tensor &ref) {
  if (mine.dim() != ref.dim())
    return mine;
  for (int64_t d = 0; d < mine.dim(); ++d)
    if (mine.size(d) > ref.size(d))
      mine = mine.narrow(d, 0, ref.size(d));
  return mine;
}

/// The first values of `t`, for the report.
static std::string preview(const torch::Tensor &t) {
  torch::Tensor flat = toDouble(t).flatten();
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

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  mlir::gacc::PipelineFlags pipelineFlags;
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "gacc-check: compare a compiled gradient-accumulated step with "
      "LibTorch\n");
  if (ranks < 1)
    return fail("--ranks must be at least 1");
  torch::set_num_threads(1);

  // The compiled step (single rank: in process).
  mlir::gacc::StepOptions options;
  std::string error;
  if (!pipelineFlags.getStepOptions(options, error))
    return fail(error);
  // shard-optimizer-state: the shards are sized for --ranks (each mpirun'd
  // gacc-run sets it to its number of ranks).
  if (options.shardOptimizerState && options.dataParallelSize == 0)
    options.dataParallelSize = ranks;
  options.traceRegions = false;
  const char *device = mlir::gacc::getDeviceName(options.device);
  std::unique_ptr<mlir::gacc::CompiledStep> step =
      mlir::gacc::CompiledStep::compile(inputFile, options, error);
  if (!step)
    return fail(error);
  const auto &argInfo = step->getArgs();
  const auto &resultInfo = step->getResults();

  // The original graph, for LibTorch.
  std::unique_ptr<InputGraph> graph =
      InputGraph::load(inputFile, options.entry, error);
  if (!graph)
    return fail(error);
  func::FuncOp func = graph->getFunc();

  // Inputs, one set per rank.
  RankInputs inputs(ranks);
  for (int r = 0; r < ranks; ++r) {
    if (inputDir.empty()) {
      inputs[r] = mlir::gacc::makeRandomInputs(*step, seed, r);
      continue;
    }
    if (!mlir::gacc::readStepInputs(*step, inputDir, r, ranks, inputs[r],
                                    error))
      return fail(error);
  }
  // A tail step (runtime-batch-size): the compiled step gets the padded
  // batch and the count, LibTorch only the real samples.
  if (int64_t tailSamples = pipelineFlags.getRunBatchSize())
    for (auto &rankInputs : inputs)
      if (!mlir::gacc::runTailOfInputs(step->getSignature(), rankInputs,
                                       tailSamples, !inputDir.empty(), error))
        return fail(error);
  std::string stepName = func.getSymName().str();
  int64_t batch = step->getBatchSize();
  FailureOr<TailStep> tail =
      prepareTailStep(func, argInfo, batch, inputs, error);
  if (failed(tail))
    return fail(error);
  const RankInputs &refInputs = tail->referenceInputs;

  // The compiled step, first: a runtime error in it (an out-of-range
  // gather index) is the clearer report.
  RankInputs compiled;
  if (ranks == 1) {
    std::vector<NpyArray> outputs;
    if (!step->run(inputs[0], outputs, error))
      return fail(error);
    compiled.push_back(std::move(outputs));
  } else {
    std::string self = llvm::sys::fs::getMainExecutable(argv[0], (void *)&fail);
    std::string gaccRun =
        (llvm::sys::path::parent_path(self) + "/gacc-run").str();
    if (!runOnRanks(gaccRun, inputFile, pipelineFlags.getArguments(), inputs,
                    resultInfo.size(), compiled, error))
      return fail(error);
  }

  // shard-optimizer-state: each rank returns its shard of the sharded
  // state; the state compared with LibTorch's is the ranks' shards joined.
  for (size_t j = 0; j < resultInfo.size(); ++j) {
    if (resultInfo[j].shardRanks == 0)
      continue;
    std::vector<mlir::gacc::NpyArray> shards;
    for (int r = 0; r < ranks; ++r)
      shards.push_back(compiled[r][j]);
    mlir::gacc::NpyArray full =
        mlir::gacc::joinShards(shards, resultInfo[j].shardOf);
    for (int r = 0; r < ranks; ++r)
      compiled[r][j] = full;
  }

  FailureOr<StepReferences> refs = evaluateReferences(func, refInputs);
  if (failed(refs))
    return fail("LibTorch cannot evaluate the input graph");

  std::optional<GradScalerOutcome> scaler;
  if (std::optional<mlir::gacc::LossScaleMode> mode =
          mlir::gacc::parseLossScaleMode(options.lossScale,
                                         options.lossScaleInit, error);
      mode && mode->kind != mlir::gacc::LossScaleKind::None) {
    FailureOr<GradScalerOutcome> outcome = applyGradScalerRecipe(
        func, options, resultInfo, refInputs, *refs, error);
    if (failed(outcome))
      return fail(error);
    scaler = std::move(*outcome);
  }

  FailureOr<SmallVector<int64_t>> split =
      getMicroBatchSizes(batch, options.microBatches, options.microBatchSizes,
                         [&] { return mlir::emitError(func.getLoc()); });
  if (failed(split))
    return fail("invalid micro-batch options");
  ArrayRef<int64_t> sizes = *split;
  EagerRecipe eager;
  if (tail->isTail)
    eager.problem = "not computed for a tail step";
  else
    eager = evaluateEagerRecipe(func, sizes, options.allowMicroBatchStatistics,
                                argInfo, resultInfo, inputs);

  // The report.
  llvm::outs() << "gacc-check: " << stepName << " from " << inputFile << " on "
               << device << ", batch " << batch << " per rank"
               << (tail->isTail
                       ? " (tail step: " + std::to_string(tail->samples) +
                             " samples)"
                       : std::string())
               << ", " << ranks << " rank" << (ranks == 1 ? "" : "s")
               << ", micro-batch sizes ";
  for (size_t k = 0; k < sizes.size(); ++k)
    llvm::outs() << (k ? "," : "") << sizes[k];
  llvm::outs()
      << "\nreference: LibTorch float64 on "
      << (tail->isTail ? "the tail's samples" : "the full batch")
      << "; errors are normwise (max |x - ref|, and that / max "
         "|ref|; for gradients / the largest gradient's max |ref|)\n\n";
  llvm::outs() << llvm::format("%-4s %-10s %-5s %11s %11s %11s %11s %11s "
                               "%10s  %s\n",
                               "res", "role", "rank", "gacc abs", "gacc rel",
                               "eager abs", "eager rel", "f32 graph",
                               "tolerance", "status");
  bool anyFail = false;
  // Whether only optimizer results (updated parameters and state) failed,
  // and whether a gradient result is rounding noise (zero in exact
  // arithmetic: at most 1e-6 of the largest gradient).
  bool onlyOptimizerFailed = true, noiseGradient = false;
  // The largest float32 error of the graph's own gacc.grad results (rank
  // 0), which checkBackward allows the hand-written backward.
  double gradRoundingError = 0;
  for (int r = 0; r < ranks; ++r) {
    // The gradients are one vector: a gacc.grad result's error is relative
    // to the largest gradient magnitude. A gradient that cancels to about
    // zero (a bias before a softmax over the dimension it is broadcast
    // along) carries the float32 rounding noise of its terms, which are of
    // the scale of the whole gradient; relative to its own magnitude that
    // noise is unbounded.
    SmallVector<double> gradMagnitude;
    for (size_t j = 0; j < resultInfo.size(); ++j)
      if (resultInfo[j].role == mlir::gacc::Role::Grad)
        gradMagnitude.push_back(largestFinite(refs->f64[r][j]));
    double largestGrad = 0;
    for (double magnitude : gradMagnitude)
      largestGrad = std::max(largestGrad, magnitude);
    for (double magnitude : gradMagnitude)
      noiseGradient |= largestGrad > 0 && magnitude <= 1e-6 * largestGrad;
    auto scaled = [&](NormwiseError error, size_t j) {
      if (resultInfo[j].role == mlir::gacc::Role::Grad)
        error.rel = error.abs / std::max(largestGrad, 1e-30);
      return error;
    };
    for (size_t j = 0; j < resultInfo.size(); ++j) {
      torch::Tensor ref = refs->f64[r][j];
      torch::Tensor mine = tailRows(toTensor(compiled[r][j]), ref);
      if (scaler && scaler->nonFiniteResults.count(j)) {
        // A skipped step's gradients are the overflowed ones: only their
        // non-finiteness is compared.
        bool pass = !torch::isfinite(toDouble(mine)).all().item<bool>();
        anyFail |= !pass;
        llvm::outs() << llvm::format(
            "%-4d %-10s %-5d %11s %11s %11s %11s %11s %10s  %s\n",
            static_cast<int>(j), mlir::gacc::roleName(resultInfo[j].role), r,
            "-", "-", "-", "-", "-", "-",
            pass ? "PASS (non-finite, step skipped)"
                 : "FAIL (finite, expected an overflow)");
        continue;
      }
      NormwiseError gaccErr = scaled(compareWithReference(mine, ref), j);
      // The graph's own float32 error: the larger of its run on the inputs
      // and on the inputs with the weights moved by one float32 step.
      NormwiseError graphErr =
          scaled(compareWithReference(refs->f32[r][j], ref), j);
      NormwiseError perturbedErr =
          scaled(compareWithReference(refs->f32Perturbed[r][j], ref), j);
      if (perturbedErr.rel > graphErr.rel)
        graphErr = perturbedErr;
      if (r == 0 && resultInfo[j].role == mlir::gacc::Role::Grad)
        gradRoundingError = std::max(gradRoundingError, graphErr.rel);
      double tolerance =
          toleranceFactor *
          std::max(graphErr.rel, getRelativeEpsilon(resultInfo[j].dtype));
      bool pass = gaccErr.rel <= tolerance;
      anyFail |= !pass;
      onlyOptimizerFailed &= pass ||
                             resultInfo[j].role == mlir::gacc::Role::ParamOut ||
                             resultInfo[j].role == mlir::gacc::Role::StateOut;
      // NaN where the reference is NaN is agreement, and said so.
      std::string status =
          !pass            ? "FAIL"
          : gaccErr.allNaN ? "both NaN"
          : gaccErr.bothNaN
              ? "PASS (" + std::to_string(gaccErr.bothNaN) + " both NaN)"
              : "PASS";
      std::string eagerAbs = "-", eagerRel = "-";
      if (eager.available && eager.results[r][j].defined()) {
        NormwiseError e =
            scaled(compareWithReference(eager.results[r][j], ref), j);
        char a[32], b[32];
        std::snprintf(a, sizeof(a), "%.3e", e.abs);
        std::snprintf(b, sizeof(b), "%.3e", e.rel);
        eagerAbs = a;
        eagerRel = b;
      }
      llvm::outs() << llvm::format(
          "%-4d %-10s %-5d %11.3e %11.3e %11s %11s %11.3e %10.2e  %s\n",
          static_cast<int>(j), roleName(resultInfo[j].role), r, gaccErr.abs,
          gaccErr.rel, eagerAbs.c_str(), eagerRel.c_str(), graphErr.rel,
          tolerance, status.c_str());
    }
  }
  llvm::outs() << "\nvalues (rank 0):\n";
  for (size_t j = 0; j < resultInfo.size(); ++j) {
    llvm::outs() << "  result " << j << " (" << roleName(resultInfo[j].role)
                 << "): reference " << preview(refs->f64[0][j]) << ", gacc "
                 << preview(
                        tailRows(toTensor(compiled[0][j]), refs->f64[0][j]));
    if (eager.available && eager.results[0][j].defined())
      llvm::outs() << ", eager ÷m " << preview(eager.results[0][j]);
    llvm::outs() << "\n";
  }
  BackwardCheck backward =
      checkBackward(func, argInfo, resultInfo, refInputs, gradRoundingError);
  std::string inputVerdict =
      "no gacc.grad results: the backward is checked through the results";
  if (backward.status == BackwardCheck::Status::NoAutograd) {
    inputVerdict = "autograd is not available through this graph's loss";
  } else if (backward.status == BackwardCheck::Status::Checked) {
    char buffer[256];
    std::snprintf(buffer, sizeof(buffer),
                  "gacc.grad results vs LibTorch autograd of the loss "
                  "(float64, rank 0): max relative error %.2e (allowed "
                  "%.2e) — %s",
                  backward.maxRelError, backward.allowance,
                  backward.wrong
                      ? "WRONG: the input graph's backward does not "
                        "match its forward (the input's fault, not a "
                        "compiler bug)"
                      : "OK");
    inputVerdict = buffer;
  }
  llvm::outs() << "\ninput graph: " << inputVerdict << "\n";
  if (scaler) {
    char buffer[256];
    std::snprintf(buffer, sizeof(buffer),
                  "loss scale: LibTorch GradScaler recipe, scale %g, found "
                  "inf/NaN after the all-reduce: %s -> step %s; next scale "
                  "%g, growth tracker %lld\n",
                  scaler->scale, scaler->foundNonFinite ? "yes" : "no",
                  scaler->foundNonFinite ? "skipped" : "applied",
                  scaler->nextScale,
                  static_cast<long long>(scaler->nextTracker));
    llvm::outs() << buffer;
  }
  if (!eager.available)
    llvm::outs() << "eager recipe: not available for this graph"
                 << (eager.problem.empty() ? "" : ": " + eager.problem) << "\n";
  if (anyFail && onlyOptimizerFailed && noiseGradient)
    llvm::outs()
        << "note: every loss, gradient and metric is within tolerance and "
           "only optimizer results are not, and a gradient is zero in exact "
           "arithmetic (rounding noise): an Adam-like update amplifies that "
           "noise, and its result cannot be checked (docs/Tools.md, "
           "gacc-check)\n";
  llvm::outs() << (anyFail
                       ? "FAIL: a compiled result is outside tolerance\n"
                       : "PASS: every compiled result is within tolerance\n");
  if (anyFail)
    return 1;
  return backward.wrong ? 2 : 0;
}

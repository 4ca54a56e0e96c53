//===- StepCheck.h - reference computations of gacc-check -------*- C++ -*-===//
//
// What gacc-check computes to judge a compiled step, for embedders too: the
// original graph loaded for LibTorch, the float64 and float32 references on
// the full batch of every rank, PyTorch GradScaler's recipe (loss-scale), the
// eager "loss ÷ m" recipe, the graph's backward against LibTorch autograd of
// its loss, normwise errors, and the compiled step run as MPI ranks of
// gacc-run. gacc-check itself only parses flags and prints the report.
//
// Torch headers are slow to compile: include this header only where torch
// tensors are needed.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_CHECK_STEPCHECK_H
#define GACC_CHECK_STEPCHECK_H

#include "gacc/Runner/StepRunner.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/SourceMgr.h"

#include <memory>
#include <set>
#include <string>
#include <torch/types.h>
#include <vector>

namespace mlir::gacc {

/// The inputs of a step, one list of arrays per rank.
using RankInputs = std::vector<std::vector<mlir::gacc::NpyArray>>;
/// Torch tensors, one list per rank.
using RankTensors = SmallVector<SmallVector<torch::Tensor>>;

/// The original (untransformed) training step of a file, parsed in a context
/// of its own with every upstream and gacc dialect; diagnostics go to stderr
/// with the file's locations (the op is not printed).
class InputGraph {
public:
  /// Parses `path` and finds its training step (`entry`, or the only
  /// function with gacc attributes). Returns null with `error` set.
  static std::unique_ptr<InputGraph> load(const std::string &path,
                                          StringRef entry, std::string &error);
  ~InputGraph();

  func::FuncOp getFunc() const { return func; }
  MLIRContext &getContext() { return *context; }

private:
  InputGraph();
  std::unique_ptr<MLIRContext> context;
  llvm::SourceMgr sourceMgr;
  std::unique_ptr<SourceMgrDiagnosticHandler> diagnostics;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
};

/// The torch dtype of a NumPy dtype.
torch::ScalarType getTorchDType(mlir::gacc::DType dtype);

/// A copy of `array` as a torch tensor.
torch::Tensor toTensor(const mlir::gacc::NpyArray &array);

/// `tensor` detached, contiguous, in float64.
torch::Tensor toDouble(const torch::Tensor &tensor);

/// The first `numArgs` inputs of every rank as tensors (arguments the
/// pipeline appended, the loss-scale state, are not the original graph's);
/// with `floatType` kFloat64, floating-point inputs are converted to float64.
RankTensors getRankTensors(const RankInputs &inputs, unsigned numArgs,
                           torch::ScalarType floatType);

/// Normwise errors: max |a - b| and max |a - b| / max |b| over the elements
/// that are not NaN in both; equal values (infinities) differ by 0. NaN in
/// one and not the other makes the error NaN (a failure).
struct NormwiseError {
  double abs = 0, rel = 0;
  /// Elements that are NaN in both.
  int64_t bothNaN = 0;
  /// All elements are NaN in both.
  bool allNaN = false;
};
NormwiseError compareWithReference(const torch::Tensor &value,
                                   const torch::Tensor &reference);

/// The largest finite magnitude in `t` (0 when it has none).
double largestFinite(const torch::Tensor &t);

/// The smallest relative step of an element type (0 for integers).
double getRelativeEpsilon(mlir::gacc::DType dtype);

/// The references of the original graph on the full batch (every rank's
/// shard, collectives across ranks): every floating-point value in float64,
/// and in the graph's own types (its own float32 rounding error).
struct StepReferences {
  RankTensors f64, f32;
  /// float32 again, with every float32 parameter and state element moved by
  /// about one float32 step: how far a correct float32 computation may land
  /// from float64 where a result amplifies rounding (a gradient that cancels
  /// to about zero, a squared gradient in Adam's second moment), which one
  /// lucky float32 run can hide.
  RankTensors f32Perturbed;
};
/// Evaluates `func` on every rank's inputs. Failure (after diagnostics) when
/// LibTorch cannot evaluate the graph.
FailureOr<StepReferences> evaluateReferences(func::FuncOp func,
                                             const RankInputs &inputs);

/// The outcome of PyTorch GradScaler's recipe for one step.
struct GradScalerOutcome {
  /// The scale the step ran with.
  double scale = 1;
  /// Whether the unscaled, all-reduced gradients had an inf or NaN: the step
  /// is skipped.
  bool foundNonFinite = false;
  /// The scale and growth tracker after GradScaler's update.
  double nextScale = 1;
  int64_t nextTracker = 0;
  /// Results (gradients of a skipped step) of which only non-finiteness is
  /// compared.
  std::set<size_t> nonFiniteResults;
};

/// Loss scaling with LibTorch's GradScaler recipe as the reference: per
/// rank, the float32 graph's loss times S is back-propagated by autograd,
/// the scaled gradients are all-reduced like the graph's collectives (sum,
/// or average), multiplied by 1/S once and checked for inf/NaN over all
/// ranks; on overflow the step is skipped (parameters and state keep their
/// values in `references`) and the scale backs off, else the scale grows
/// after growth-interval clean steps. With dynamic loss scaling the scale
/// and tracker are the inputs after the graph's and the next ones are
/// appended to every rank's references. Returns failure with `error` set
/// when autograd cannot run through the loss.
FailureOr<GradScalerOutcome>
applyGradScalerRecipe(func::FuncOp func, const GaccPipelineConfig &options,
                      const std::vector<mlir::gacc::TensorInfo> &results,
                      const RankInputs &inputs, StepReferences &references,
                      std::string &error);

/// The eager recipe: the graph run per micro-batch (normalizing by b), loss
/// and gradients divided by m and summed, in float64.
struct EagerRecipe {
  /// Whether the graph could be evaluated that way.
  bool available = false;
  /// Why not: the batch analysis' first error, if any.
  std::string problem;
  /// Per rank, per result: the recipe's loss and gradients (other results
  /// are undefined tensors).
  std::vector<std::vector<torch::Tensor>> results;
};
EagerRecipe
evaluateEagerRecipe(func::FuncOp func, ArrayRef<int64_t> sizes,
                    bool allowMicroBatchStatistics,
                    const std::vector<mlir::gacc::TensorInfo> &args,
                    const std::vector<mlir::gacc::TensorInfo> &results,
                    const RankInputs &inputs);

/// The input graph's gacc.grad results against LibTorch autograd of its
/// loss, in float64 on rank 0's inputs.
struct BackwardCheck {
  enum class Status {
    /// The graph has no loss or no gacc.grad results.
    NoGradResults,
    /// Autograd cannot run through the graph's loss.
    NoAutograd,
    Checked,
  };
  Status status = Status::NoGradResults;
  /// The largest error of a gacc.grad result relative to the largest
  /// gradient magnitude (the gradients as one vector: a gradient that is
  /// zero or tiny in exact arithmetic is not judged by its rounding noise).
  /// NaN when one side is NaN and the other is not.
  double maxRelError = 0;
  /// What checkBackward allowed: 1e-6, or the graph's own float32 error of
  /// its gradients where that is larger.
  double allowance = 1e-6;
  /// maxRelError > allowance (or NaN): the input graph's backward does not
  /// match its forward.
  bool wrong = false;
};
/// A step compiled with runtime-batch-size runs `samples` real samples (its
/// sample count argument, the same on every rank): LibTorch evaluates the
/// graph on those samples alone.
struct TailStep {
  int64_t samples = 0;
  /// Whether `samples` is less than the compiled batch.
  bool isTail = false;
  /// The inputs with each batch argument narrowed to `samples`.
  RankInputs referenceInputs;
};
/// Reads the sample count of `inputs` (the full batch without a sample
/// count argument). For a tail, `func` becomes the graph for that many
/// samples: as written when its sample dimension is dynamic, else rebuilt
/// next to it (buildStepForBatchSize: sample counts B and 1/B, shapes).
FailureOr<TailStep> prepareTailStep(
    func::FuncOp &func, const std::vector<mlir::gacc::TensorInfo> &args,
    int64_t batchSize, const RankInputs &inputs, std::string &error);

/// `gradRoundingError`: the largest float32 error of the graph's own
/// gacc.grad results on rank 0 (normwise, relative to the largest
/// gradient): its float32 constants (a rounded 1/D) move its hand-written
/// backward from autograd's by as much (a layer norm of a few features
/// amplifies their rounding as it amplifies its inputs'), so the backward
/// is wrong above that or 1e-6, whichever is larger.
BackwardCheck checkBackward(func::FuncOp func,
                            const std::vector<mlir::gacc::TensorInfo> &args,
                            const std::vector<mlir::gacc::TensorInfo> &results,
                            const RankInputs &inputs,
                            double gradRoundingError = 0);

/// Runs the step of `stepFile` as `inputs.size()` MPI ranks of `gaccRun`
/// (mpirun from the PATH) with `flags`, rank r on `inputs[r]`, and reads
/// `numResults` results per rank into `outputs`. Returns false with `error`
/// set.
bool runOnRanks(const std::string &gaccRun, const std::string &stepFile,
                const std::vector<std::string> &flags, const RankInputs &inputs,
                size_t numResults, RankInputs &outputs, std::string &error);

} // namespace mlir::gacc

#endif // GACC_CHECK_STEPCHECK_H

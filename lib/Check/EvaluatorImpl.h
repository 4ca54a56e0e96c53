//===- EvaluatorImpl.h - the LibTorch evaluator's internals -----*- C++ -*-===//
//
// What the files of gacc-check's LibTorch evaluator share (private to
// lib/Check, not installed): the Evaluator class, which holds one torch tensor
// per SSA value and evaluates one op at a time, and the helpers that more than
// one op family uses. The evaluator is split by op family: TorchEvaluator.cpp
// (the driver: arguments, dispatch, dead ops, the public type helpers),
// EvalArithMath.cpp, EvalTensor.cpp, EvalLinalg.cpp, EvalControlFlow.cpp, and
// EvalRanks.cpp (several data-parallel ranks in lockstep).
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LIB_CHECK_EVALUATORIMPL_H
#define GACC_LIB_CHECK_EVALUATORIMPL_H

#include "gacc/Check/TorchEvaluator.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <ATen/ATen.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

// The evaluator's internals have external linkage, so that its files share
// them, but hidden visibility: libgacc-check.so exports only the public API.
#pragma GCC visibility push(hidden)

namespace mlir::gacc::torch_eval {

using at::Tensor;

/// Thrown by the evaluation helpers for anything they cannot evaluate; caught
/// in Evaluator::evalOp and turned into a diagnostic at the op.
struct Unsupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws Unsupported with `reason`.
[[noreturn]] inline void unsupported(const Twine &reason) {
  throw Unsupported(reason.str());
}

/// `value` as its printer writes it (a type, an attribute, an affine map).
template <typename T> std::string toString(const T &value) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << value;
  return s;
}

/// A torch shape as "[2, 3]".
inline std::string toString(at::IntArrayRef shape) {
  std::string s = "[";
  for (auto [i, size] : llvm::enumerate(shape))
    s += (i ? ", " : "") + std::to_string(size);
  return s + "]";
}

/// `values` as a torch size list (a view, not a copy).
inline at::IntArrayRef toAt(ArrayRef<int64_t> values) {
  return at::IntArrayRef(values.data(), values.size());
}

/// An error at `op` that starts "cannot evaluate 'OPNAME' with LibTorch: ";
/// the caller streams the reason.
inline InFlightDiagnostic emitFail(Operation *op) {
  return op->emitError() << "cannot evaluate '" << op->getName()
                         << "' with LibTorch: ";
}

/// The payload being evaluated: its iteration space, the block arguments of
/// reduced outputs (only their combiners may use them) and those combiners,
/// and which payload values may be poison (a bool mask over the iteration
/// space per value: a tensor.extract out of bounds yields poison, which the
/// payload may discard with a select, as torch-mlir's nll_loss does for
/// ignored targets; a poison value that reaches an output is an error).
struct Payload {
  SmallVector<int64_t> loopSizes;
  llvm::DenseSet<Value> reducedOutputs;
  llvm::DenseSet<Operation *> combiners;
  llvm::DenseMap<Value, Tensor> poison;
};

/// Evaluates the ops of one function on torch tensors (one per SSA value):
/// the driver in TorchEvaluator.cpp, the ops of each family in the Eval*.cpp
/// file of that family. Functions it calls get evaluators of their own.
class Evaluator {
public:
  Evaluator(at::ScalarType computeType, unsigned depth)
      : computeType(computeType), depth(depth) {}

  FailureOr<SmallVector<Tensor>> run(func::FuncOp func, ArrayRef<Tensor> args);
  /// Checks and records the arguments of `func` (the first half of run).
  LogicalResult bind(func::FuncOp func, ArrayRef<Tensor> args);
  /// Evaluates one top-level op.
  LogicalResult step(Operation *op) { return evalOp(op, nullptr); }
  /// The value computed for `value` (after bind/step).
  Tensor valueOf(Value value) const { return get(value); }
  void setValue(Value value, const Tensor &t) { set(value, t); }
  at::ScalarType dtypeOfType(Type type) const { return dtypeOf(type); }
  /// Marks this evaluator as one of several ranks evaluated in lockstep: a
  /// collective it reaches by itself (not through the lockstep driver) is
  /// an error instead of the one-rank identity.
  void setAcrossRanks() { acrossRanks = true; }
  /// A new evaluator for a function called from this one.
  std::unique_ptr<Evaluator> makeCallee() const {
    if (depth >= 64)
      unsupported("calls nested too deeply");
    auto callee = std::make_unique<Evaluator>(computeType, depth + 1);
    callee->acrossRanks = acrossRanks;
    return callee;
  }

private:
  /// Evaluates `op` (inside `payload` when not null) and records its results;
  /// emits the diagnostic on failure.
  LogicalResult evalOp(Operation *op, Payload *payload);
  /// Evaluates `op`. Throws Unsupported (or a torch error) for what it cannot
  /// evaluate; returns failure only when a nested op already emitted one.
  LogicalResult evalOpImpl(Operation *op, Payload *payload);

  void evalConstant(arith::ConstantOp op);
  void evalArithMath(Operation *op);
  void evalTensorOp(Operation *op, Payload *payload);
  LogicalResult evalLinalg(linalg::LinalgOp op);
  /// gacc.scatter_add as index_add along the rows (differentiable); an
  /// index outside the rows is an error, as in the compiled step.
  void evalScatterAdd(gacc::ScatterAddOp op);
  /// Evaluates `inner`, an op of a payload or tensor region evaluated on
  /// whole tensors, and propagates poison (see Payload).
  LogicalResult evalPayloadOp(Operation *inner, Payload &payload);
  /// Throws when `value` may be poison anywhere in the iteration space.
  void checkNotPoison(Value value, const Payload &payload, const Twine &what);
  LogicalResult evalCall(func::CallOp op);
  /// Evaluates the ops of `block` (outside payloads) up to its terminator,
  /// whose operands' values it returns in `yielded`.
  LogicalResult evalBlock(Block &block, SmallVectorImpl<Tensor> &yielded);
  /// scf.if and scf.for on scalars and whole tensors (a schedule on the
  /// step counter, a loop over state).
  LogicalResult evalIf(scf::IfOp op);
  LogicalResult evalFor(scf::ForOp op);
  LogicalResult evalWhile(scf::WhileOp op);
  LogicalResult evalIndexSwitch(scf::IndexSwitchOp op);
  LogicalResult evalExecuteRegion(scf::ExecuteRegionOp op);
  /// affine.apply/min/max, on index scalars or elementwise in payloads.
  void evalAffine(Operation *op);
  /// The arith/math ops of two results: sincos, mului/mulsi/addui_extended.
  void evalTwoResults(Operation *op);
  /// tensor.generate and tensor.pad: ops whose region computes elements.
  LogicalResult evalRegionTensorOp(Operation *op);
  /// Evaluates `body`, whose arguments are the indices of a tensor of shape
  /// `shape` and which yields one element, on all indices at once.
  FailureOr<Tensor> evalIndexRegion(Block &body, ArrayRef<int64_t> shape);
  /// ml_program.global_load_const and global_load of a global that is never
  /// stored: the global's initial value.
  void evalGlobalLoad(Operation *op);

  Tensor get(Value value) const {
    auto it = values.find(value);
    if (it == values.end())
      unsupported("internal error: an operand has no value");
    return it->second;
  }
  void set(Value value, const Tensor &t) { values[value] = t; }
  /// The torch dtype of (the elements of) `type`.
  at::ScalarType dtypeOf(Type type) const {
    std::optional<at::ScalarType> dtype =
        gacc::getTorchElementDType(type, computeType);
    if (!dtype)
      unsupported("type " + toString(type) + " has no LibTorch dtype");
    return *dtype;
  }
  int64_t resolve(OpFoldResult ofr) const {
    if (auto attr = dyn_cast<Attribute>(ofr))
      return cast<IntegerAttr>(attr).getInt();
    Tensor t = get(cast<Value>(ofr));
    if (t.dim() != 0)
      unsupported("an index operand is not a scalar");
    return t.item<int64_t>();
  }
  SmallVector<int64_t> resolve(ArrayRef<OpFoldResult> ofrs) const {
    return llvm::map_to_vector(ofrs,
                               [&](OpFoldResult ofr) { return resolve(ofr); });
  }
  /// The static shape of `type` with its dynamic sizes taken from `dynamic`.
  SmallVector<int64_t> shapeOf(ShapedType type, ValueRange dynamic) const {
    SmallVector<int64_t> shape(type.getShape());
    unsigned next = 0;
    for (int64_t &size : shape)
      if (ShapedType::isDynamic(size))
        size = resolve(OpFoldResult(dynamic[next++]));
    return shape;
  }

  llvm::DenseMap<Value, Tensor> values;
  at::ScalarType computeType;
  unsigned depth;
  bool acrossRanks = false;
};

//===----------------------------------------------------------------------===//
// Helpers of several op families.
//===----------------------------------------------------------------------===//

/// IEEE maximum (`max`) or minimum of `a` and `b`: NaN propagates and
/// -0 < +0 (at::maximum/at::minimum return either zero).
Tensor ieeeExtremum(const Tensor &a, const Tensor &b, bool max);

/// The product of `sizes`, or INT64_MAX when it overflows.
int64_t product(ArrayRef<int64_t> sizes);

/// The tensor (in `dtype`) of a constant's elements: dense (splat or not) or
/// dense_resource.
Tensor elementsToTensor(ElementsAttr attr, at::ScalarType dtype);

/// Reinterprets the bits of `t` (holding values of type `from`) as values of
/// type `to` (same element width), in `dtype`. Not differentiable.
Tensor bitcast(const Tensor &t, Type from, Type to, at::ScalarType dtype);

/// The ops of `block` whose evaluation matters: the terminator, ops that may
/// have side effects, and every op whose results (also through values captured
/// by regions) reach them. Dead ops without side effects are not evaluated.
llvm::DenseSet<Operation *> getLiveOps(Block &block);

} // namespace mlir::gacc::torch_eval

#pragma GCC visibility pop

#endif // GACC_LIB_CHECK_EVALUATORIMPL_H

//===- IRUtils.h - IR helpers that know nothing of gacc ---------*- C++ -*-===//
//
// Small helpers on upstream IR that gacc's analysis, transforms and lowering
// share and that do not depend on the gacc dialect or on what a training step
// is: dead-op cleanup, view roots of memrefs, use-def walks, fills, 2-D
// transposes, static tensor.dim folding.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_SUPPORT_IRUTILS_H
#define GACC_SUPPORT_IRUTILS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributeInterfaces.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Value.h"
#include "mlir/Support/LLVM.h"

namespace mlir::gacc {

/// Erases ops of `block` (not nested ones) that are trivially dead, through
/// `rewriter` when given (so that its listener sees the erasures).
void eraseDeadOps(Block &block, RewriterBase *rewriter = nullptr);

/// Returns the value that `view` is a view of, through any chain of
/// single-result view-like ops (`memref.subview`, `memref.view`,
/// `memref.cast`, reshapes, ...).
Value getViewRoot(Value view);

/// Whether `value` is computed, through ops nested in `scope`, from a value
/// for which `isSource` holds (values defined outside `scope` and block
/// arguments end the walk).
bool isComputedFrom(Value value, Operation *scope,
                    function_ref<bool(Value)> isSource);

/// Returns true when `value` is a `linalg.fill` of the constant `scalar`.
bool isFillOf(Value value, TypedAttr scalar);

/// The `linalg.transpose` [1, 0] of a 2-D tensor.
Value transposeMatrix(OpBuilder &builder, Location loc, Value matrix);

/// Replaces `tensor.dim` of static dimensions with constants.
void foldStaticDims(func::FuncOp func);

} // namespace mlir::gacc

#endif // GACC_SUPPORT_IRUTILS_H

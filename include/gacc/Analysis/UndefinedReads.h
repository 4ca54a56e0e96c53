//===- UndefinedReads.h - reads of tensor.empty's contents ------*- C++ -*-===//
//
// A `tensor.empty` has a shape and no contents: reading them is undefined
// (the compiled step reads whatever its buffer held, gacc-check's reference
// zeros). The batch analysis, and gacc-prepare-step before it
// canonicalizes (which folds a generic that yields its empty init into the
// empty), refuse a training step that reads them, so that no tool compares
// an undefined value.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_ANALYSIS_UNDEFINEDREADS_H
#define GACC_ANALYSIS_UNDEFINEDREADS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LLVM.h"

namespace mlir::gacc {

/// Checks that `func`, and the functions it calls, never read the contents
/// of a `tensor.empty` (or of a view of one: tensor.cast, extract_slice,
/// expand_shape, collapse_shape): not as the `outs` of a linalg op whose
/// body uses the init, as an `ins` the body uses, through `tensor.extract`,
/// as the operand of a `func.return`, nor as the tensor operand of a
/// `tensor.concat`, `tensor.pad`, the source of a `tensor.insert_slice`,
/// a `shard.all_reduce` or an arith or math op on tensors. Writing one
/// (`linalg.fill`, an `outs` the body does not read, the destination of an
/// `insert_slice` or `tensor.insert`) and reading its shape (`tensor.dim`)
/// are fine, as are tensors without elements. A tensor.empty reaches a read
/// through views, through an `scf.for` iter_arg it initializes (the first
/// iteration reads it), and through a call into the callee's argument (a
/// callee that only returns it reads nothing; the call's result is then
/// the tensor.empty for the caller). Emits an error at the
/// reading op with a note at the `tensor.empty` (and one at the call).
LogicalResult verifyNoUndefinedReads(func::FuncOp func);

} // namespace mlir::gacc

#endif // GACC_ANALYSIS_UNDEFINEDREADS_H

//===- LoopNest.h - loop nests that are linalg ops --------------*- C++ -*-===//
//
// A hand-written step computes per-sample work and sums over samples with
// `scf.for` loops: a running max over classes that carries a tensor of one
// element per sample (tensor.extract / tensor.insert at the sample), the sum
// of -log p over samples in an `f32` iter_arg. Such a loop nest is a linalg
// op written out: gacc-prepare-step raises it into a `linalg.generic` whose
// loops are the nest's loops in the same order, so that the batch analysis
// proves (or refuses) the split exactly as for a linalg op written by hand.
//
// A nest is raised when it is *perfect*: each loop has constant bounds, the
// body of each loop but the innermost holds only scalar ops that do not
// read the carried values, then the next loop (whose initial values are the
// loop's iter_args, its results yielded as they are). In the innermost body:
// - a carried tensor is read only with `tensor.extract` and written once
//   with `tensor.insert`, both at the same indices, which are distinct
//   induction variables of loops from 0 with step 1 that cover the tensor
//   (so each iteration touches one element, and the tensor is a linalg
//   output indexed by those loops), or the constant 0 along a unit
//   dimension;
// - a carried scalar (`f32`, `i64`, `index`, ...) is a rank-0 output that
//   every loop reduces into;
// - every other op is a region-free, side-effect-free op on scalars
//   (tensor.extract of any tensor, arith, math, index casts).
// The generic's loop k is `parallel` when every output is indexed by it,
// `reduction` otherwise; linalg's semantics is the loop nest in order, so the
// raise is exact. Whether the sample loop may be split is the batch
// analysis's question, asked of the raised op.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_ANALYSIS_LOOPNEST_H
#define GACC_ANALYSIS_LOOPNEST_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::gacc {

/// A perfect `scf.for` nest that is a linalg.generic written out.
struct LoopNest {
  /// The loops, outermost first.
  SmallVector<scf::ForOp> loops;
  /// Per loop: the constant lower bound, step and trip count.
  SmallVector<int64_t> lowerBounds, steps, tripCounts;
  /// Per carried value: for a tensor, the loop (position in `loops`) that
  /// indexes each of its dimensions, or -1 for a unit dimension written at
  /// the constant 0; empty for a scalar.
  SmallVector<SmallVector<int64_t>> outputLoops;
  /// Per carried value: the `tensor.insert` that writes it; null for a
  /// scalar.
  SmallVector<tensor::InsertOp> inserts;
  /// The scalar ops of all bodies, in order (outer bodies first), without
  /// the loops, their terminators, the carried writes and the carried reads.
  SmallVector<Operation *> payload;
  /// Per carried tensor: its `tensor.extract` reads in the innermost body.
  SmallVector<SmallVector<tensor::ExtractOp>> reads;
  /// Per carried tensor: its initial value, statically shaped. A carried
  /// tensor of dynamic type starts from a `tensor.cast` of a static one (a
  /// frontend's `tensor.empty(%n)` after gacc-prepare-step specialized `%n`);
  /// this is the cast's source. Null for a scalar.
  SmallVector<Value> staticInits;
};

/// Matches the perfect nest rooted at `outer`. On failure, `whyNot` says
/// which rule the nest breaks (a phrase that completes "not raised: ...").
FailureOr<LoopNest> matchLoopNest(scf::ForOp outer, std::string &whyNot);

} // namespace mlir::gacc

#endif // GACC_ANALYSIS_LOOPNEST_H

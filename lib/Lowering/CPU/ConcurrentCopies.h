//===- ConcurrentCopies.h - two micro-batches on two threads ----*- C++ -*-===//
//
// The copies of a loop body unrolled by two (gacc-pair-accumulating-gemms)
// run side by side: the work of the second copy that is independent of the
// first goes into one `scf.parallel` of two iterations with the first copy,
// marked with kConcurrentCopiesAttr, which gacc-plan-arena plans as two
// concurrent regions and gacc-parallel-loops-to-runtime lowers to
// gaccrt_parallel_copies.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LIB_CONVERSION_CONCURRENTCOPIES_H
#define GACC_LIB_CONVERSION_CONCURRENTCOPIES_H

#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/ADT/StringRef.h"

namespace mlir::gacc {

/// Marks the `scf.parallel` (two iterations) and its `scf.index_switch`
/// (one case per copy) of two concurrent copies.
constexpr llvm::StringLiteral kConcurrentCopiesAttr = "gacc.concurrent_copies";

/// Moves the first copy of `loop`'s body (its ops before `secondStart`)
/// and the ops of the second copy (from `secondStart` on) that provably
/// neither depend on nor interfere with the first copy, nor with the
/// second copy's ops that stay, into one `scf.parallel` (%copy) = (0) to
/// (2) whose body switches on %copy; the rest of the second copy (its
/// accumulations, which the first copy's also write, and whatever depends
/// on them) follows in order. Values the switch's cases define and the
/// rest uses (allocations, views, index arithmetic) are hoisted before it.
/// Returns false, with nothing changed, when an op of the first copy has
/// effects it cannot tell, or a value that must be hoisted cannot be, and
/// (unless `anySize`) when the second copy's buffers live at once take more
/// than half the paired accumulators' bytes.
/// With `lockstep`, the parallel loop goes into an scf.if on
/// gaccrt_copies_concurrent(2) whose else-branch runs the two copies in
/// lockstep, their GEMMs of one weight as gaccrt_sgemm_rows_pair.
bool runCopiesConcurrently(scf::ForOp loop, Operation *secondStart,
                           bool anySize = false, bool lockstep = true);

/// Creates, at `builder`'s insertion point, an `scf.if` (with an empty
/// else-branch) on `gaccrt_copies_concurrent(2) != 0`: whether the runtime
/// runs two copies side by side (one per thread) rather than in turn.
scf::IfOp createIfCopiesConcurrent(OpBuilder &builder, Location loc);

} // namespace mlir::gacc

#endif // GACC_LIB_CONVERSION_CONCURRENTCOPIES_H

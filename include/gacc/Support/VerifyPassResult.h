//===- VerifyPassResult.h - verify what a gacc pass produced ----*- C++ -*-===//
//
// Every gacc pass verifies its own result (GACC_VERIFY_PASS_RESULT and
// GACC_VERIFY_PASS_CHANGES at the top of runOnOperation), so that a gacc bug
// reaches the user as "internal error: pass 'gacc-x' produced invalid IR"
// instead of a raw upstream verifier message, and the pass manager need not
// verify the same IR a second time. ChangedOps and ChangeTrackingRewriter let
// a pass verify only what it changed; the pieces of mlir::verify they apply
// (verifyUse, verifyOpShallowly, ...) are used by verifyByRegionForm
// (gacc/Transforms/RegionForms.h) too.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_SUPPORT_VERIFYPASSRESULT_H
#define GACC_SUPPORT_VERIFYPASSRESULT_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace mlir::gacc {

//===----------------------------------------------------------------------===//
// Local verification: the pieces of mlir::verify that ChangedOps and
// verifyByRegionForm (RegionForms.h) apply to the ops they check.
//===----------------------------------------------------------------------===//

/// Checks that `user` may use `value` as mlir::verify requires: `value` is
/// defined inside the closest isolated-from-above ancestor of `user` and, when
/// `user` is in a block reachable from its region's entry, properly dominates
/// it. A failure is reported as `emitError()` followed by what is wrong.
LogicalResult verifyUse(Operation *user, Value value, DominanceInfo &dominance,
                        llvm::function_ref<InFlightDiagnostic()> emitError);

/// verifyUse for each operand of `op` ("operand #N ...").
LogicalResult verifyOperandUses(Operation *op, DominanceInfo &dominance);

/// mlir::verify(op, /*verifyRecursively=*/false), except for a module or a
/// function, whose region invariants walk everything it holds (its
/// isolation; a symbol table's symbol uses): of those, only a symbol
/// table's unique names are checked, plus, with `symbolUses`, its symbol uses
/// (a walk). The callers check isolation (verifyUse) and symbol uses
/// (verifySymbolUsesIn) on the ops they verify.
LogicalResult verifyOpShallowly(Operation *op, bool symbolUses = false);

/// Verifies the symbol uses of `op` (and, with `nested`, of the ops it
/// holds) that implement SymbolUserOpInterface.
LogicalResult verifySymbolUsesIn(Operation *op, bool nested,
                                 SymbolTableCollection &symbolTables);

/// Checks that the blocks of `op`'s regions end in a terminator where one is
/// required.
LogicalResult verifyTerminators(Operation *op);

/// The ops a pass created, modified, or erased ops from, as reported by the
/// rewriter it was given to as listener. With it, PassResultVerifier checks
/// only what changed instead of the whole payload: on a step with m explicit
/// micro-batch regions, a pass that rewires a few ops per region would
/// otherwise pay for verifying every op of every region (five seconds at 400
/// layers and m = 256, more than the pass itself).
///
/// What is checked (see verify): every created op with all it contains; every
/// modified op without its regions (one whose operands were only replaced by
/// values of the same types, see ChangeTrackingRewriter, not even that); the
/// operands of all of these are visible to them (verifyUse) and their symbol
/// uses valid; the users of their results (a result type may have changed)
/// and their ancestors up to the root, each without its regions
/// (verifyOpShallowly; a symbol table whose direct children changed with its
/// symbol uses); the blocks ops were erased from still end in a terminator.
/// That is what the full verifier would check of these ops, as long as an op's
/// validity depends only on itself, its regions, its operands' and results'
/// types and its ancestors, which is the contract of MLIR op verifiers.
///
/// Every change must go through the rewriter: an op erased behind its back
/// would leave a dangling entry.
class ChangedOps : public RewriterBase::Listener {
public:
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint previous) override;
  void notifyOperationModified(Operation *op) override;
  void notifyOperationErased(Operation *op) override;

  /// Verifies the changed ops (as described above) inside `root`, reporting
  /// the verifier's diagnostics.
  LogicalResult verify(Operation *root) const;

private:
  /// Ordered by strength: a created op is verified with its regions, a
  /// modified one without them, one that ops were erased from only for its
  /// terminators and region invariants. Erased ops stay as tombstones (their
  /// address may be reused by a later op, which then takes the entry).
  enum class Change { Erased, ErasedFrom, Rewired, Modified, Created };
  void record(Operation *op, Change change);
  llvm::MapVector<Operation *, Change> changes;
  /// Set by ChangeTrackingRewriter around a modification that only replaced
  /// operands by values of the same types.
  bool nextIsRewire = false;
  friend class ChangeTrackingRewriter;
};

/// An IRRewriter that reports its changes to a ChangedOps, telling apart
/// modifications that only replace operands by values of the same types
/// (the op's name, operand, result and block argument types, attributes and
/// properties unchanged). Such an op is checked for dominance and isolation
/// only: MLIR op verifiers check types, attributes and structure, not which
/// op defines an operand (affine ops, whose verifiers do look at where a
/// dimension comes from, are not rewritten by gacc's passes). Rewiring the
/// accumulator chains of m regions touches one op per gradient and region.
class ChangeTrackingRewriter : public IRRewriter {
public:
  explicit ChangeTrackingRewriter(MLIRContext *context, ChangedOps &changes)
      : IRRewriter(context, &changes), changes(changes) {}
  void startOpModification(Operation *op) override;
  void finalizeOpModification(Operation *op) override;
  void cancelOpModification(Operation *op) override;

private:
  struct Signature {
    OperationName name;
    SmallVector<Type> types; // operands, results, block arguments
    DictionaryAttr attributes;
    llvm::hash_code properties;
    bool operator==(const Signature &other) const {
      return name == other.name && types == other.types &&
             attributes == other.attributes && properties == other.properties;
    }
  };
  static Signature getSignature(Operation *op);
  ChangedOps &changes;
  DenseMap<Operation *, Signature> pending;
};

/// Declared first in a gacc pass's runOnOperation: when the pass returns
/// without having reported an error, verifies the IR it produced and turns a
/// verifier failure into "internal error: pass 'gacc-x' produced invalid IR;
/// please report it ..." at the failing op's location, with the verifier's
/// message as a note, and fails the pass through `signalFailure`. So a gacc
/// bug never reaches the user as a raw upstream verifier message (the pass
/// manager's own verifier then sees valid IR or a failed pass).
///
/// `markVerified`, when given, runs once the IR verified. Passes give
///   [this] {
///     getAnalysisManager().invalidate({});
///     markAllAnalysesPreserved();
///   }
/// which drops every cached analysis itself (the pass changed the IR) and
/// tells the pass manager that nothing changed, so that its verifier does
/// not check the same IR a second time: verifying a step with m explicit
/// regions costs more than most passes that run on it.
class PassResultVerifier {
public:
  PassResultVerifier(
      Operation *op, StringRef passArgument,
      std::function<void()> signalFailure,
      std::function<void()> markVerified = nullptr,
      std::function<LogicalResult(Operation *)> verifier = nullptr);
  ~PassResultVerifier();
  PassResultVerifier(const PassResultVerifier &) = delete;
  PassResultVerifier &operator=(const PassResultVerifier &) = delete;

private:
  Operation *op;
  std::string passArgument;
  std::function<void()> signalFailure;
  std::function<void()> markVerified;
  /// Verifies the result in place of mlir::verify when set.
  std::function<LogicalResult(Operation *)> verifier;
  uint64_t thread;
  bool sawError = false;
  std::optional<ScopedDiagnosticHandler> errorWatch;
};

/// In a gacc pass's runOnOperation: verifies the pass's result once with a
/// PassResultVerifier, with `verifyFn` (LogicalResult(Operation *), or
/// nullptr for mlir::verify); when it verifies, the pass drops its cached
/// analyses and marks all preserved, so the pass manager does not verify the
/// same IR a second time (upstream's verifier was two thirds of the compile
/// time of deep graphs).
#define GACC_VERIFY_PASS_RESULT_WITH(verifyFn)                                 \
  ::mlir::gacc::PassResultVerifier gaccPassResultVerifier(                     \
      getOperation(), getArgument(), [this] { signalPassFailure(); },          \
      [this] {                                                                 \
        getAnalysisManager().invalidate({});                                   \
        markAllAnalysesPreserved();                                            \
      },                                                                       \
      verifyFn)

/// GACC_VERIFY_PASS_RESULT_WITH the whole verifier.
#define GACC_VERIFY_PASS_RESULT() GACC_VERIFY_PASS_RESULT_WITH(nullptr)

/// GACC_VERIFY_PASS_RESULT_WITH for a pass that makes all its changes
/// through rewriters listening to `changedOps` (a ChangedOps declared before
/// it): verifies only those changes.
#define GACC_VERIFY_PASS_CHANGES(changedOps)                                   \
  GACC_VERIFY_PASS_RESULT_WITH(                                                \
      [&changes = (changedOps)](::mlir::Operation *root) {                     \
        return changes.verify(root);                                           \
      })

} // namespace mlir::gacc

#endif // GACC_SUPPORT_VERIFYPASSRESULT_H

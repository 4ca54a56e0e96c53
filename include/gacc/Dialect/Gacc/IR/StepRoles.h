//===- StepRoles.h - the roles of a training step ---------------*- C++ -*-===//
//
// The one decoder of the role attributes of DESIGN.md §1: which argument is a
// parameter, a batch (and its sample dimension), state; which result is the
// loss, a gradient or updated parameter (and the argument it belongs to), a
// metric. The dialect verifier, the batch analysis and the runner all read
// roles through these functions, and the training step of a module is found
// the same way everywhere. Also the marker attributes of the dialect that
// the passes leave on ops. (The signature of a compiled step, the struct
// StepSignature with these roles, element types and shapes, is in
// gacc/Runner/StepIO.h.)
//
//===----------------------------------------------------------------------===//

#ifndef GACC_DIALECT_GACC_IR_STEPROLES_H
#define GACC_DIALECT_GACC_IR_STEPROLES_H

#include "gacc/Dialect/Gacc/IR/Roles.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

#include <cstdint>

namespace mlir::gacc {

/// Marks the reductions inside micro-batch regions that produce a partial
/// (the links of an accumulator chain). The other markers the passes leave
/// on ops are GaccDialect::kCombineAttrName (`gacc.combine`) and
/// GaccDialect::kBucketAttrName (`gacc.bucket`).
constexpr StringLiteral kPartialAttrName = "gacc.partial";

/// On a `shard.all_reduce` split out of a bucket (gacc-split-buckets) and on
/// its runtime call: the element offset of the reduced tensor in its bucket.
constexpr StringLiteral kBucketOffsetAttrName = "gacc.bucket_offset";

/// On a `gacc.state` argument and its `gacc.state_out` result
/// (gacc-shard-optimizer-state): the value is the rank's shard of a tensor
/// of this shape, flattened, padded with zeros to a multiple of the rank
/// count N and split evenly (rank r holds elements [r s, r s + s)).
constexpr StringLiteral kShardOfAttrName = "gacc.shard_of";

/// On a training step whose sample dimension was dynamic (`tensor<?x...>`)
/// before gacc-prepare-step specialized it: its sample counts are the
/// `tensor.dim`s it reads, so gacc-runtime-batch-size takes its float
/// constants as written rather than recognizing B or 1/B by value.
constexpr StringLiteral kDynamicBatchAttrName = "gacc.dynamic_batch";

/// On the module (gacc-guard-gathers and gacc-guard-divisions with
/// `report`): the sites of the runtime checks, by the site number that
/// gaccrt_index_error reports: guarded gathers (a location and the arguments
/// involved), scatter-adds (kScatterSitePrefix) and integer divisions
/// (kDivisionSitePrefix).
constexpr StringLiteral kGatherSitesAttrName = "gacc.gather_sites";

/// On a `gacc.scatter_add` (gacc-guard-gathers with `report`): its site
/// number in `gacc.gather_sites`, whose description starts with
/// kScatterSitePrefix.
constexpr StringLiteral kIndexSiteAttrName = "gacc.index_site";
constexpr StringLiteral kScatterSitePrefix = "scatter_add at ";

/// The start of a division's site in `gacc.gather_sites`
/// (gacc-guard-divisions), followed by "OP at FILE:LINE:COL"; its
/// gaccrt_index_error call passes the divisor and the dividend.
constexpr StringLiteral kDivisionSitePrefix = "division: ";

/// Returns the attribute that marks `role` ("gacc.param", ...); empty for
/// Role::None.
StringRef getRoleAttrName(Role role);

/// Returns the role that the attribute `attrName` marks on an argument (or on
/// a result when `onResult`); Role::None when it is no such role attribute.
Role symbolizeRole(StringRef attrName, bool onResult);

/// Returns true when the role attribute of `role` carries an i64 index: the
/// sample dimension of a batch argument, or the argument that a grad,
/// param_out or state_out result belongs to.
bool hasIndex(Role role);

/// Returns the role that the argument named by a grad / param_out (Param) or
/// state_out (State) result must carry; Role::None for other roles.
Role getRequiredArgumentRole(Role resultRole);

/// The decoded role of one argument or result.
struct RoleInfo {
  Role role = Role::None;
  /// Batch arguments: the sample dimension. Grad/ParamOut/StateOut results:
  /// the argument they refer to. -1 otherwise.
  int64_t index = -1;
  /// More than one role attribute is present (`role` is the first of them);
  /// the batch analysis rejects such steps.
  bool multiple = false;
};

/// Decodes the role of argument `i` of `func` (which the dialect verified).
RoleInfo getArgumentRole(FunctionOpInterface func, unsigned i);

/// Decodes the role of result `i` of `func` (which the dialect verified).
RoleInfo getResultRole(FunctionOpInterface func, unsigned i);

/// Returns true when `func` carries any gacc role attribute.
bool hasGaccRoles(FunctionOpInterface func);

/// Returns the training-step function of `module`: the function named
/// `entry` when it is not empty, else the only function carrying gacc role
/// attributes. Emits an error and returns null when there is none or more
/// than one.
func::FuncOp findTrainingStep(ModuleOp module, StringRef entry);

} // namespace mlir::gacc

#endif // GACC_DIALECT_GACC_IR_STEPROLES_H

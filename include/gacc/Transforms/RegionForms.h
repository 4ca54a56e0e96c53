//===- RegionForms.h - micro-batch regions of one form ----------*- C++ -*-===//
//
// The m regions of a micro-batched step are m copies of one body that differ
// only in the region's sample offset. A RegionForm groups the regions whose
// bodies are equal op by op up to integer constants and static slice offsets
// (an anti-unification against the form's first region, its template).
// gacc-outline-micro-batches lowers each form to one body; gacc-micro-batch
// verifies its result per form instead of region by region.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TRANSFORMS_REGIONFORMS_H
#define GACC_TRANSFORMS_REGIONFORMS_H

#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>

namespace mlir::gacc {

/// A place in a region body where regions of one form may differ: an integer
/// constant (position -1) or a static offset of a slice op.
struct RegionSite {
  Operation *op;
  int64_t position;
};

/// What one region supplies to its form.
struct RegionInstance {
  gacc::MicroBatchOp region;
  /// The values used from outside, in the order of the form's captures (each
  /// of the same type as the template's).
  SmallVector<Value> captures;
  /// The value at each site of the form, and the op of this region there.
  SmallVector<int64_t> siteValues;
  SmallVector<Operation *> siteOps;
};

/// A region body shared by several regions.
struct RegionForm {
  gacc::MicroBatchOp templateRegion;
  SmallVector<Value> captures;
  DenseMap<Value, unsigned> captureIndex;
  SmallVector<RegionSite> sites;
  /// The template's instance first.
  SmallVector<RegionInstance> instances;
  /// The template's ops in pre-order, and the position in it of each one's
  /// parent (-1 for the template region).
  SmallVector<Operation *> templateOps;
  SmallVector<int64_t> parentPositions;
};

/// Compares the body of `region` with the form's template op by op: the same
/// size, result types, ops, types, attributes (except at the sites), nesting,
/// and uses (inner values at the same places, outer values as captures). On
/// a match, fills `instance` (and, for the template itself, the form's
/// captures and sites) and returns true.
bool matchForm(RegionForm &form, gacc::MicroBatchOp region,
               RegionInstance &instance);

/// Groups `regions` into forms, each region into the first form it matches
/// (or a new one). Regions that match no form, not even their own (a body
/// with successors), are left out.
SmallVector<std::unique_ptr<RegionForm>>
groupRegionsByForm(ArrayRef<gacc::MicroBatchOp> regions);

/// Returns true when `a` and `b` are the same constant.
bool isSameConstant(Value a, Value b);

/// Verifies `root` as mlir::verify does, except that of the micro-batch
/// regions matching the form of an earlier region only the sites (the ops
/// that differ from the template, whose attributes are checked again) and
/// the captures (whose dominance is checked) are verified: the rest of such
/// a body is the template's, op for op, with the same types and attributes,
/// and verifies as the template did. With m regions of one size this
/// verifies one region body instead of m.
LogicalResult verifyByRegionForm(Operation *root);

} // namespace mlir::gacc

#endif // GACC_TRANSFORMS_REGIONFORMS_H

//===- LowerScatterAdd.cpp - gacc.scatter_add on buffers to loops -*- C++ -*-=//
//
// The gacc-lower-scatter-add pass: right after bufferization, each
// `gacc.scatter_add` on buffers becomes loops that add rows of updates into
// the rows of its accumulator in place. Positions that name the same row
// must not race: on the CPU the positions are a serial loop nest around the
// contiguous row; on the GPU (`atomic`) positions and row elements are one
// parallel loop whose adds are atomic. An index outside the rows skips its
// row, and reports it through gaccrt_index_error where gacc-guard-gathers
// gave the op a site.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Dialect/Gacc/IR/StepSignature.h"
#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#define DEBUG_TYPE "gacc-lower-scatter-add"

namespace mlir::gacc {
#define GEN_PASS_DEF_LOWERSCATTERADDPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// The extent of dimension `d` of the buffer `value`.
static Value getExtent(OpBuilder &b, Location loc, Value value, int64_t d) {
  auto type = cast<MemRefType>(value.getType());
  if (!type.isDynamicDim(d))
    return arith::ConstantIndexOp::create(b, loc, type.getDimSize(d));
  return memref::DimOp::create(b, loc, value, d);
}

/// The index `value` (i64, i32 or index) as an index, sign-extended.
static Value toIndex(OpBuilder &b, Location loc, Value value) {
  if (value.getType().isIndex())
    return value;
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), value);
}

/// Whether `index` names a row of `rows`.
static Value isInRange(OpBuilder &b, Location loc, Value index, Value rows) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value nonNegative =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, index, zero);
  Value below =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, rows);
  return arith::AndIOp::create(b, loc, nonNegative, below);
}

/// The multi-index of the linear position `linear` in the row-major extents
/// `extents`.
static SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                                      ArrayRef<Value> extents) {
  SmallVector<Value> indices(extents.size());
  for (int64_t d = static_cast<int64_t>(extents.size()) - 1; d >= 0; --d) {
    if (d == 0) {
      indices[d] = linear;
      break;
    }
    indices[d] = arith::RemUIOp::create(b, loc, linear, extents[d]);
    linear = arith::DivUIOp::create(b, loc, linear, extents[d]);
  }
  return indices;
}

/// Calls gaccrt_index_error(index, rows, site).
static void reportOutOfRange(OpBuilder &b, Location loc, Value index,
                             Value rows, int64_t site) {
  Type i64 = b.getI64Type();
  createRuntimeCall(
      b, loc, "gaccrt_index_error",
      ValueRange{arith::IndexCastOp::create(b, loc, i64, index),
                 arith::IndexCastOp::create(b, loc, i64, rows),
                 arith::ConstantIntOp::create(b, loc, i64, site)});
}

/// Serial positions, each adding its row (a loop nest over the row's
/// dimensions, the contiguous one innermost).
static void lowerSerial(OpBuilder &b, ScatterAddOp op,
                        std::optional<int64_t> site) {
  Location loc = op.getLoc();
  Value updates = op.getUpdates(), indices = op.getIndices(),
        init = op.getInit();
  int64_t k = op.getNumPositionDims();
  int64_t rowRank = cast<MemRefType>(init.getType()).getRank() - 1;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value rows = getExtent(b, loc, init, 0);
  SmallVector<Value> positions;
  OpBuilder::InsertionGuard guard(b);
  for (int64_t d = 0; d < k; ++d) {
    auto loop =
        scf::ForOp::create(b, loc, zero, getExtent(b, loc, indices, d), one);
    positions.push_back(loop.getInductionVar());
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }
  Value index =
      toIndex(b, loc, memref::LoadOp::create(b, loc, indices, positions));
  Value inRange = isInRange(b, loc, index, rows);
  auto ifOp = scf::IfOp::create(b, loc, inRange,
                                /*withElseRegion=*/site.has_value());
  if (site) {
    OpBuilder otherwise = ifOp.getElseBodyBuilder();
    reportOutOfRange(otherwise, loc, index, rows, *site);
  }
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  SmallVector<Value> source(positions), target{index};
  for (int64_t d = 0; d < rowRank; ++d) {
    auto loop =
        scf::ForOp::create(b, loc, zero, getExtent(b, loc, init, d + 1), one);
    source.push_back(loop.getInductionVar());
    target.push_back(loop.getInductionVar());
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }
  Value update = memref::LoadOp::create(b, loc, updates, source);
  Value old = memref::LoadOp::create(b, loc, init, target);
  Value sum = arith::AddFOp::create(b, loc, old, update);
  memref::StoreOp::create(b, loc, sum, init, target);
}

/// One parallel loop over (row element, position), the row element first
/// (threadIdx.x, contiguous), with atomic adds. Kernels cannot call the
/// host runtime: an out-of-range row is skipped without a report.
static void lowerAtomic(OpBuilder &b, ScatterAddOp op) {
  Location loc = op.getLoc();
  Value updates = op.getUpdates(), indices = op.getIndices(),
        init = op.getInit();
  int64_t k = op.getNumPositionDims();
  int64_t rowRank = cast<MemRefType>(init.getType()).getRank() - 1;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value rows = getExtent(b, loc, init, 0);
  SmallVector<Value> positionExtents, rowExtents;
  Value numPositions = one, rowSize = one;
  for (int64_t d = 0; d < k; ++d) {
    positionExtents.push_back(getExtent(b, loc, indices, d));
    numPositions =
        arith::MulIOp::create(b, loc, numPositions, positionExtents.back());
  }
  for (int64_t d = 0; d < rowRank; ++d) {
    rowExtents.push_back(getExtent(b, loc, init, d + 1));
    rowSize = arith::MulIOp::create(b, loc, rowSize, rowExtents.back());
  }
  scf::ParallelOp::create(
      b, loc, ValueRange{zero, zero}, ValueRange{rowSize, numPositions},
      ValueRange{one, one}, [&](OpBuilder &nb, Location l, ValueRange ivs) {
        SmallVector<Value> position =
            delinearize(nb, l, ivs[1], positionExtents);
        SmallVector<Value> element = delinearize(nb, l, ivs[0], rowExtents);
        Value index =
            toIndex(nb, l, memref::LoadOp::create(nb, l, indices, position));
        Value inRange = isInRange(nb, l, index, rows);
        auto ifOp = scf::IfOp::create(nb, l, inRange, /*withElseRegion=*/false);
        OpBuilder then = ifOp.getThenBodyBuilder();
        SmallVector<Value> source(position), target{index};
        llvm::append_range(source, element);
        llvm::append_range(target, element);
        Value update = memref::LoadOp::create(then, l, updates, source);
        memref::AtomicRMWOp::create(then, l, arith::AtomicRMWKind::addf, update,
                                    init, target);
      });
}

namespace {
struct LowerScatterAddPass
    : public gacc::impl::LowerScatterAddPassBase<LowerScatterAddPass> {
  using Base::Base;

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<ScatterAddOp> ops;
    getOperation().walk([&](ScatterAddOp op) { ops.push_back(op); });
    for (ScatterAddOp op : ops) {
      if (op.getNumResults() != 0) {
        op.emitOpError("expected a scatter-add on buffers (run after "
                       "bufferization)");
        return signalPassFailure();
      }
      std::optional<int64_t> site;
      if (auto attr = op->getAttrOfType<IntegerAttr>(kIndexSiteAttrName))
        site = attr.getInt();
      OpBuilder b(op);
      if (atomic)
        lowerAtomic(b, op);
      else
        lowerSerial(b, op, site);
      op.erase();
    }
  }
};
} // namespace

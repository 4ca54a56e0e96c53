//===- GuardDivisions.cpp - zero and overflow checks on divisions -*- C++ -*-=//
//
// The gacc-guard-divisions pass: an integer division or remainder by zero,
// or a signed one of the minimum value by -1, is undefined behaviour, and
// x86's division instruction traps on both (SIGFPE kills the process). Each
// such op whose divisor is not a constant that rules both out divides by
// `select(bad, 1, divisor)` instead, so the trapping instruction never runs;
// with `report` (the CPU path), a bad division also calls the runtime's
// `gaccrt_index_error(divisor, dividend, site)`, which records the first
// error (of a gather or a division) for the tools to report after the step.
// The sites are appended to the module attribute `gacc.gather_sites` that
// gacc-guard-gathers starts, as "division: OP at FILE:LINE:COL"
// (kDivisionSitePrefix).
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Dialect/Gacc/IR/StepRoles.h"
#include "gacc/Lowering/Common/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "gacc-guard-divisions"

namespace mlir::gacc {
#define GEN_PASS_DEF_GUARDDIVISIONSPASS
#include "gacc/Lowering/Common/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Whether `op` is an integer division or remainder that can trap.
static bool isDivision(Operation *op) {
  return isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp,
             arith::CeilDivSIOp, arith::CeilDivUIOp, arith::FloorDivSIOp>(op);
}

/// Whether `op` (a division) interprets its operands as signed numbers, so
/// that the minimum value divided by -1 overflows.
static bool isSignedDivision(Operation *op) {
  return isa<arith::DivSIOp, arith::RemSIOp, arith::CeilDivSIOp,
             arith::FloorDivSIOp>(op);
}

/// The width of an integer or index type (index as on the host: 64 bits).
static unsigned getWidth(Type type) {
  return isa<IndexType>(type) ? IndexType::kInternalStorageBitWidth
                              : type.getIntOrFloatBitWidth();
}

/// The constant `value` of integer or index type `type`.
static Value createConstant(OpBuilder &b, Location loc, Type type,
                            const APInt &value) {
  return arith::ConstantOp::create(b, loc, b.getIntegerAttr(type, value));
}

/// `value` (integer or index) as an i64 for the runtime call: sign- or
/// zero-extended as `isSigned` says, truncated when wider.
static Value toI64(OpBuilder &b, Location loc, Value value, bool isSigned) {
  Type i64 = b.getI64Type();
  Type type = value.getType();
  if (isa<IndexType>(type))
    return isSigned ? Value(arith::IndexCastOp::create(b, loc, i64, value))
                    : Value(arith::IndexCastUIOp::create(b, loc, i64, value));
  unsigned width = type.getIntOrFloatBitWidth();
  if (width == 64)
    return value;
  if (width > 64)
    return arith::TruncIOp::create(b, loc, i64, value);
  return isSigned ? Value(arith::ExtSIOp::create(b, loc, i64, value))
                  : Value(arith::ExtUIOp::create(b, loc, i64, value));
}

namespace {
struct GuardDivisionsPass
    : public gacc::impl::GuardDivisionsPassBase<GuardDivisionsPass> {
  using Base::Base;

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    SmallVector<Operation *> divisions;
    module.walk([&](Operation *op) {
      if (isDivision(op) &&
          isa<IntegerType, IndexType>(op->getOperand(1).getType()))
        divisions.push_back(op);
    });
    SmallVector<Attribute> sites;
    if (auto existing = module->getAttrOfType<ArrayAttr>(kGatherSitesAttrName))
      llvm::append_range(sites, existing.getValue());
    size_t firstSite = sites.size();
    errorFunction = nullptr;
    for (Operation *op : divisions)
      guard(op, sites);
    if (report && sites.size() > firstSite)
      module->setAttr(kGatherSitesAttrName,
                      ArrayAttr::get(module.getContext(), sites));
  }

  /// Makes the divisor of `op` 1 where it would trap; with `report`, also
  /// calls gaccrt_index_error there (declared at the first such call) and
  /// adds the site to `sites`.
  void guard(Operation *op, SmallVector<Attribute> &sites) {
    Value dividend = op->getOperand(0), divisor = op->getOperand(1);
    Type type = divisor.getType();
    unsigned width = getWidth(type);
    bool isSigned = isSignedDivision(op);
    APInt constant;
    bool constantDivisor = matchPattern(divisor, m_ConstantInt(&constant));
    bool mayBeZero = !constantDivisor || constant.isZero();
    bool mayOverflow = isSigned && (!constantDivisor || constant.isAllOnes());
    if (mayOverflow && matchPattern(dividend, m_ConstantInt(&constant)) &&
        !constant.isMinSignedValue())
      mayOverflow = false;
    if (!mayBeZero && !mayOverflow)
      return;

    OpBuilder b(op);
    Location loc = op->getLoc();
    Value bad;
    if (mayBeZero)
      bad =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, divisor,
                                createConstant(b, loc, type, APInt(width, 0)));
    if (mayOverflow) {
      Value minusOne = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq, divisor,
          createConstant(b, loc, type, APInt::getAllOnes(width)));
      Value minimum = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq, dividend,
          createConstant(b, loc, type, APInt::getSignedMinValue(width)));
      Value overflow = arith::AndIOp::create(b, loc, minusOne, minimum);
      bad = bad ? Value(arith::OrIOp::create(b, loc, bad, overflow)) : overflow;
    }
    if (report) {
      if (!errorFunction)
        errorFunction = getOrDeclareIndexError(op);
      int64_t site = sites.size();
      std::string text;
      llvm::raw_string_ostream os(text);
      os << kDivisionSitePrefix << op->getName().getStringRef() << " at "
         << formatSiteLocation(loc);
      sites.push_back(b.getStringAttr(text));
      auto ifOp = scf::IfOp::create(b, loc, bad, /*withElseRegion=*/false);
      OpBuilder then = ifOp.getThenBodyBuilder();
      Value site64 =
          arith::ConstantIntOp::create(then, loc, then.getI64Type(), site);
      func::CallOp::create(then, loc, errorFunction,
                           ValueRange{toI64(then, loc, divisor, isSigned),
                                      toI64(then, loc, dividend, isSigned),
                                      site64});
    }
    Value one = createConstant(b, loc, type, APInt(width, 1));
    op->setOperand(1, arith::SelectOp::create(b, loc, bad, one, divisor));
  }

  /// The declaration of gaccrt_index_error, once a division needs it.
  func::FuncOp errorFunction;
};
} // namespace

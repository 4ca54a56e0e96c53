//===- GaccDialect.cpp - gacc dialect ---------------------------*- C++ -*-===//
//
// Registers the gacc dialect, verifies the role attributes of DESIGN.md §1 on
// function arguments and results, and verifies the micro-batch region op.
//
//===----------------------------------------------------------------------===//

#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Dialect/Gacc/IR/StepSignature.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::gacc;

#include "gacc/Dialect/Gacc/IR/GaccOpsDialect.cpp.inc"

void GaccDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "gacc/Dialect/Gacc/IR/GaccOps.cpp.inc"
      >();
}

/// Checks that `attr` is a unit attribute; role attributes without a value.
static LogicalResult verifyUnitRole(Operation *op, NamedAttribute attr,
                                    StringRef where) {
  if (isa<UnitAttr>(attr.getValue()))
    return success();
  return op->emitOpError() << "expected '" << attr.getName().getValue()
                           << "' on " << where << " to be a unit attribute";
}

/// Checks an index-valued role attribute and returns the index.
static FailureOr<int64_t> getIndexRole(Operation *op, NamedAttribute attr,
                                       StringRef where) {
  auto intAttr = dyn_cast<IntegerAttr>(attr.getValue());
  if (!intAttr || !intAttr.getType().isInteger(64)) {
    op->emitOpError() << "expected '" << attr.getName().getValue() << "' on "
                      << where << " to be an i64 integer attribute";
    return failure();
  }
  return intAttr.getInt();
}

LogicalResult GaccDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func || regionIndex != 0)
    return op->emitOpError() << "'" << attr.getName().getValue()
                             << "' is only valid on function arguments";
  std::string where = ("argument #" + Twine(argIndex)).str();
  StringRef name = attr.getName().getValue();
  Role role = symbolizeRole(name, /*onResult=*/false);
  if (role == Role::None)
    return op->emitOpError()
           << "unknown gacc role '" << name << "' on " << where;
  if (role == Role::SampleCount) {
    // Bufferized steps keep their roles: a memref is fine too.
    auto type = dyn_cast<ShapedType>(func.getArgumentTypes()[argIndex]);
    if (!type || !type.hasRank() || type.getRank() != 0 ||
        !type.getElementType().isInteger(64) || isa<VectorType>(type))
      return op->emitOpError() << "expected the sample count " << where
                               << " to be a rank-0 tensor of i64, got "
                               << func.getArgumentTypes()[argIndex];
  }
  if (!hasIndex(role))
    return verifyUnitRole(op, attr, where);
  FailureOr<int64_t> dim = getIndexRole(op, attr, where);
  if (failed(dim))
    return failure();
  // Bufferized steps keep their roles: a memref is fine too.
  auto type = dyn_cast<ShapedType>(func.getArgumentTypes()[argIndex]);
  if (!type || !type.hasRank() || isa<VectorType>(type))
    return op->emitOpError()
           << "expected batch " << where << " to be a ranked tensor, got "
           << func.getArgumentTypes()[argIndex];
  if (*dim < 0 || *dim >= type.getRank())
    return op->emitOpError() << "batch dimension " << *dim << " of " << where
                             << " is out of range for " << type;
  // A dynamic sample dimension is a valid role; gacc-prepare-step
  // specializes it (batch-size) before the analysis runs.
  return success();
}

LogicalResult GaccDialect::verifyRegionResultAttribute(Operation *op,
                                                       unsigned regionIndex,
                                                       unsigned resultIndex,
                                                       NamedAttribute attr) {
  auto func = dyn_cast<FunctionOpInterface>(op);
  if (!func || regionIndex != 0)
    return op->emitOpError() << "'" << attr.getName().getValue()
                             << "' is only valid on function results";
  std::string where = ("result #" + Twine(resultIndex)).str();
  StringRef name = attr.getName().getValue();
  Role role = symbolizeRole(name, /*onResult=*/true);
  if (role == Role::None)
    return op->emitOpError()
           << "unknown gacc role '" << name << "' on " << where;
  if (!hasIndex(role))
    return verifyUnitRole(op, attr, where);
  StringRef required = getRoleAttrName(getRequiredArgumentRole(role));

  FailureOr<int64_t> index = getIndexRole(op, attr, where);
  if (failed(index))
    return failure();
  unsigned numArgs = func.getNumArguments();
  if (*index < 0 || *index >= static_cast<int64_t>(numArgs))
    return op->emitOpError()
           << "'" << name << " = " << *index << "' on " << where
           << " names no argument (the function has " << numArgs << ")";
  if (!func.getArgAttr(*index, required))
    return op->emitOpError() << "'" << name << " = " << *index << "' on "
                             << where << " expects argument #" << *index
                             << " to carry '" << required << "'";
  Type argType = func.getArgumentTypes()[*index];
  Type resultType = func.getResultTypes()[resultIndex];
  if (argType != resultType)
    return op->emitOpError()
           << where << " ('" << name << " = " << *index << "') has type "
           << resultType << " but argument #" << *index << " has type "
           << argType;
  return success();
}

LogicalResult MicroBatchOp::verify() {
  // The attributes are i64; read them signed.
  int64_t size = getSizeAttr().getInt(), offset = getOffsetAttr().getInt();
  if (size < 1)
    return emitOpError("expected a positive micro-batch size, got ") << size;
  if (offset < 0)
    return emitOpError("expected a non-negative offset, got ") << offset;
  Block &block = getBody().front();
  auto yield = block.empty() ? YieldOp() : dyn_cast<YieldOp>(&block.back());
  if (!yield)
    return emitOpError("expected the body to end in 'gacc.yield'");
  if (yield.getOperandTypes() != getResultTypes())
    return emitOpError("expected 'gacc.yield' operand types to match the "
                       "region result types");
  return success();
}

#define GET_OP_CLASSES
#include "gacc/Dialect/Gacc/IR/GaccOps.cpp.inc"

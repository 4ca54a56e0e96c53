//===- GaccDialect.cpp - gacc dialect ---------------------------*- C++ -*-===//
//
// Registers the gacc dialect, verifies the role attributes of DESIGN.md §1 on
// function arguments and results, verifies the micro-batch region op, and
// implements gacc.scatter_add (verifier, memory effects, bufferization).
//
//===----------------------------------------------------------------------===//

#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Dialect/Gacc/IR/StepRoles.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
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

/// Checks `gacc.shard_of` (gacc-shard-optimizer-state): the full shape of
/// which the 1-D `type` is the rank's shard.
static LogicalResult verifyShardOf(Operation *op, NamedAttribute attr,
                                   Type type, StringRef where) {
  auto shape = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shape || !shaped || !shaped.hasRank() || shaped.getRank() != 1 ||
      isa<VectorType>(type))
    return op->emitOpError()
           << "expected '" << attr.getName().getValue() << "' on " << where
           << " to be an array<i64> on a 1-D tensor or memref";
  return success();
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
  if (name == kShardOfAttrName)
    return verifyShardOf(op, attr, func.getArgumentTypes()[argIndex], where);
  Role role = symbolizeRole(name, /*onResult=*/false);
  if (role == Role::None)
    return op->emitOpError()
           << "unknown gacc role '" << name << "' on " << where;
  if (role == Role::SampleCount) {
    // Bufferized steps keep their roles: a memref is fine too. A scalar
    // (as a hand-written step passes it) becomes a rank-0 tensor in
    // gacc-prepare-step.
    Type argType = func.getArgumentTypes()[argIndex];
    auto type = dyn_cast<ShapedType>(argType);
    bool scalar = argType.isInteger(64) || argType.isIndex();
    if (!scalar &&
        (!type || !type.hasRank() || type.getRank() != 0 ||
         !type.getElementType().isInteger(64) || isa<VectorType>(type)))
      return op->emitOpError()
             << "expected the sample count " << where
             << " to be an i64, an index or a rank-0 tensor of i64, got "
             << argType;
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
  if (name == kShardOfAttrName)
    return verifyShardOf(op, attr, func.getResultTypes()[resultIndex], where);
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
  // A scalar is as good as a rank-0 tensor of it (an index as an i64):
  // gacc-prepare-step makes both the same tensor type.
  auto boxed = [](Type type) -> Type {
    if (isa<IndexType>(type))
      return RankedTensorType::get({}, IntegerType::get(type.getContext(), 64));
    if (type.isIntOrFloat())
      return RankedTensorType::get({}, type);
    return type;
  };
  if (boxed(argType) != boxed(resultType))
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

//===----------------------------------------------------------------------===//
// ScatterAddOp
//===----------------------------------------------------------------------===//

/// Whether `type` is a floating-point type that gacc steps compute in.
static bool isAccumulatorElementType(Type type) {
  return type.isF32() || type.isF64() || type.isBF16() || type.isF16();
}

LogicalResult ScatterAddOp::verify() {
  auto updatesType = cast<ShapedType>(getUpdates().getType());
  auto indicesType = cast<ShapedType>(getIndices().getType());
  auto initType = cast<ShapedType>(getInit().getType());
  bool onTensors = isa<RankedTensorType>(initType);
  if (isa<RankedTensorType>(updatesType) != onTensors ||
      isa<RankedTensorType>(indicesType) != onTensors)
    return emitOpError("expected updates, indices and init to be all tensors "
                       "or all buffers");
  if (onTensors) {
    if (getNumResults() != 1 || getResult()[0].getType() != initType)
      return emitOpError() << "expected one result of the init type "
                           << initType;
  } else if (getNumResults() != 0) {
    return emitOpError("expected no result on buffers (init is updated in "
                       "place)");
  }
  Type indexElement = indicesType.getElementType();
  if (!indexElement.isInteger(64) && !indexElement.isInteger(32) &&
      !indexElement.isIndex())
    return emitOpError() << "expected indices of i64, i32 or index, got "
                         << indexElement;
  int64_t k = indicesType.getRank();
  if (k < 1)
    return emitOpError("expected indices of rank 1 or more (one position "
                       "per element), got rank 0");
  if (initType.getRank() < 1)
    return emitOpError("expected an init of rank 1 or more (rows indexed by "
                       "indices), got rank 0");
  Type element = initType.getElementType();
  if (!isAccumulatorElementType(element))
    return emitOpError() << "expected an init of f32, f64, bf16 or f16, got "
                         << element;
  if (updatesType.getElementType() != element)
    return emitOpError() << "expected updates of the init's element type "
                         << element << ", got " << updatesType.getElementType();
  // updates.shape == indices.shape ++ init.shape[1:].
  SmallVector<int64_t> expected(indicesType.getShape());
  llvm::append_range(expected, initType.getShape().drop_front());
  bool shapeOk = updatesType.getRank() == static_cast<int64_t>(expected.size());
  for (auto [have, want] : llvm::zip(updatesType.getShape(), expected))
    shapeOk = shapeOk && (ShapedType::isDynamic(have) ||
                          ShapedType::isDynamic(want) || have == want);
  if (!shapeOk) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvm::interleave(
        expected, os,
        [&](int64_t d) {
          if (ShapedType::isDynamic(d))
            os << "?";
          else
            os << d;
        },
        "x");
    return emitOpError() << "expected updates of shape " << text
                         << " (the indices' shape, then the init's row), got "
                         << updatesType;
  }
  return success();
}

void ScatterAddOp::getEffects(
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>>
        &effects) {
  // On tensors the op is pure; on buffers it reads its inputs and reads and
  // writes its accumulator.
  if (getNumResults() != 0)
    return;
  effects.emplace_back(MemoryEffects::Read::get(), &getUpdatesMutable(),
                       SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Read::get(), &getIndicesMutable(),
                       SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Read::get(), &getInitMutable(),
                       SideEffects::DefaultResource::get());
  effects.emplace_back(MemoryEffects::Write::get(), &getInitMutable(),
                       SideEffects::DefaultResource::get());
}

bool ScatterAddOp::bufferizesToMemoryRead(
    OpOperand &, const bufferization::AnalysisState &) {
  // The accumulator is read too (result = init + ...).
  return true;
}

bool ScatterAddOp::bufferizesToMemoryWrite(
    OpOperand &operand, const bufferization::AnalysisState &) {
  return isDpsInit(&operand);
}

bufferization::AliasingValueList
ScatterAddOp::getAliasingValues(OpOperand &operand,
                                const bufferization::AnalysisState &) {
  if (isDpsInit(&operand))
    return {
        {getTiedOpResult(&operand), bufferization::BufferRelation::Equivalent}};
  return {};
}

LogicalResult
ScatterAddOp::bufferize(RewriterBase &rewriter,
                        const bufferization::BufferizationOptions &options,
                        bufferization::BufferizationState &state) {
  SmallVector<Value> buffers;
  for (Value operand : {getUpdates(), getIndices(), getInit()}) {
    FailureOr<Value> buffer =
        bufferization::getBuffer(rewriter, operand, options, state);
    if (failed(buffer))
      return failure();
    buffers.push_back(*buffer);
  }
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(*this);
  auto onBuffers = ScatterAddOp::create(rewriter, getLoc(), TypeRange{},
                                        buffers[0], buffers[1], buffers[2]);
  onBuffers->setDiscardableAttrs(
      getOperation()->getDiscardableAttrDictionary());
  bufferization::replaceOpWithBufferizedValues(rewriter, *this, buffers[2]);
  return success();
}

#define GET_OP_CLASSES
#include "gacc/Dialect/Gacc/IR/GaccOps.cpp.inc"

//===- Utils.cpp - helpers shared by the gacc passes ------------*- C++ -*-===//
//
// Implements the helpers of Utils.h.
//
//===----------------------------------------------------------------------===//

#include "gacc/Transforms/Utils.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"

using namespace mlir;
using namespace mlir::gacc;

Value mlir::gacc::createCombine(OpBuilder &builder, Location loc,
                                Combiner combiner, Value lhs, Value rhs) {
  Operation *op = nullptr;
  switch (combiner) {
  case Combiner::AddF:
    op = arith::AddFOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::AddI:
    op = arith::AddIOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::MaxF:
    op = arith::MaximumFOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::MinF:
    op = arith::MinimumFOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::MaxNumF:
    op = arith::MaxNumFOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::MinNumF:
    op = arith::MinNumFOp::create(builder, loc, lhs, rhs);
    break;
  case Combiner::None:
    llvm_unreachable("no combiner");
  }
  op->setAttr(GaccDialect::kCombineAttrName, builder.getUnitAttr());
  return op->getResult(0);
}

std::optional<SampleCountForm>
mlir::gacc::matchSampleCount(arith::ConstantOp cst, int64_t batchSize) {
  std::optional<double> value;
  Attribute attr = cst.getValue();
  if (auto f = dyn_cast<FloatAttr>(attr))
    value = f.getValueAsDouble();
  else if (auto splat = dyn_cast<SplatElementsAttr>(attr);
           splat && isa<FloatType>(splat.getElementType()))
    value = splat.getSplatValue<APFloat>().convertToDouble();
  if (!value)
    return std::nullopt;
  auto near = [](double a, double b) {
    return std::abs(a - b) <= 1e-6 * std::abs(b);
  };
  std::optional<SampleCountForm> form;
  if (near(*value, static_cast<double>(batchSize)))
    form = SampleCountForm::Count;
  else if (near(*value, 1.0 / static_cast<double>(batchSize)))
    form = SampleCountForm::Reciprocal;
  if (!form)
    return std::nullopt;
  for (Operation *user : cst->getUsers())
    if (isa<arith::CmpFOp, arith::MinimumFOp, arith::MaximumFOp,
            arith::MinNumFOp, arith::MaxNumFOp>(user))
      return std::nullopt;
  return form;
}

bool mlir::gacc::hasDynamicSampleDimension(func::FuncOp func) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    RoleInfo role = getArgumentRole(func, i);
    auto type = dyn_cast<RankedTensorType>(func.getArgumentTypes()[i]);
    if (role.role == Role::Batch && type && role.index >= 0 &&
        role.index < type.getRank() && type.isDynamicDim(role.index))
      return true;
  }
  return false;
}

BlockArgument mlir::gacc::getOrAddSampleCountArgument(func::FuncOp func) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (getArgumentRole(func, i).role == Role::SampleCount)
      return func.getArgument(i);
  Builder builder(func.getContext());
  unsigned index = func.getNumArguments();
  auto attrs = builder.getDictionaryAttr(builder.getNamedAttr(
      GaccDialect::kSampleCountAttrName, builder.getUnitAttr()));
  (void)func.insertArgument(index,
                            RankedTensorType::get({}, builder.getI64Type()),
                            attrs, func.getLoc());
  return func.getArgument(index);
}

Value mlir::gacc::flattenTensor(OpBuilder &builder, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() == 1)
    return value;
  auto flatType =
      RankedTensorType::get({type.getNumElements()}, type.getElementType());
  if (type.getRank() == 0)
    return tensor::ExpandShapeOp::create(builder, loc, flatType, value,
                                         ArrayRef<ReassociationIndices>{});
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return tensor::CollapseShapeOp::create(builder, loc, flatType, value,
                                         ArrayRef<ReassociationIndices>{all});
}

Value mlir::gacc::unflattenTensor(OpBuilder &builder, Location loc, Value flat,
                                  RankedTensorType type) {
  if (type.getRank() == 1)
    return flat;
  if (type.getRank() == 0)
    return tensor::CollapseShapeOp::create(builder, loc, type, flat,
                                           ArrayRef<ReassociationIndices>{});
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  return tensor::ExpandShapeOp::create(builder, loc, type, flat,
                                       ArrayRef<ReassociationIndices>{all});
}

Value mlir::gacc::extractFlatSlice(OpBuilder &builder, Location loc,
                                   Value source, int64_t offset, int64_t size) {
  return tensor::ExtractSliceOp::create(
      builder, loc, source,
      ArrayRef<OpFoldResult>{builder.getIndexAttr(offset)},
      ArrayRef<OpFoldResult>{builder.getIndexAttr(size)},
      ArrayRef<OpFoldResult>{builder.getIndexAttr(1)});
}

Value mlir::gacc::insertFlatSlice(OpBuilder &builder, Location loc,
                                  Value source, Value dest, int64_t offset) {
  int64_t size = cast<RankedTensorType>(source.getType()).getDimSize(0);
  return tensor::InsertSliceOp::create(
      builder, loc, source, dest,
      ArrayRef<OpFoldResult>{builder.getIndexAttr(offset)},
      ArrayRef<OpFoldResult>{builder.getIndexAttr(size)},
      ArrayRef<OpFoldResult>{builder.getIndexAttr(1)});
}

LogicalResult mlir::gacc::verifyNotMicroBatched(func::FuncOp func) {
  MicroBatchOp region;
  func.walk([&](MicroBatchOp op) {
    region = op;
    return WalkResult::interrupt();
  });
  if (!region)
    return success();
  region.emitOpError("step '")
      << func.getSymName()
      << "' is already micro-batched; run gacc-pipeline (or "
         "gacc-micro-batch) once, on the original step";
  return failure();
}

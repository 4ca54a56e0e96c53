//===- RuntimeCalls.cpp - declarations of gaccrt functions ------*- C++ -*-===//
//
// Implements RuntimeCalls.h.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"

#include "gaccrt/gaccrt.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace mlir::gacc;

func::FuncOp mlir::gacc::getOrDeclareRuntimeFunction(Operation *from,
                                                     StringRef name,
                                                     FunctionType type) {
  auto module = from->getParentOfType<ModuleOp>();
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
  auto decl = func::FuncOp::create(builder, from->getLoc(), name, type);
  decl.setPrivate();
  return decl;
}

func::CallOp mlir::gacc::createRuntimeCall(OpBuilder &builder, Location loc,
                                           StringRef name,
                                           ValueRange operands) {
  func::FuncOp callee = getOrDeclareRuntimeFunction(
      builder.getInsertionBlock()->getParentOp(), name,
      builder.getFunctionType(operands.getTypes(), {}));
  return func::CallOp::create(builder, loc, callee, operands);
}

func::FuncOp mlir::gacc::getOrDeclareIndexError(Operation *from) {
  Type i64 = IntegerType::get(from->getContext(), 64);
  return getOrDeclareRuntimeFunction(
      from, "gaccrt_index_error",
      FunctionType::get(from->getContext(), {i64, i64, i64}, {}));
}

std::string mlir::gacc::formatSiteLocation(Location loc) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto file = loc->findInstanceOf<FileLineColLoc>())
    os << file.getFilename().getValue() << ":" << file.getLine() << ":"
       << file.getColumn();
  else
    loc.print(os);
  return text;
}

std::optional<int32_t> mlir::gacc::getRuntimeDType(Type type) {
  if (type.isF32())
    return GACCRT_F32;
  if (type.isF64())
    return GACCRT_F64;
  if (type.isBF16())
    return GACCRT_BF16;
  if (type.isF16())
    return GACCRT_F16;
  if (type.isInteger(32))
    return GACCRT_I32;
  if (type.isInteger(64))
    return GACCRT_I64;
  return std::nullopt;
}

std::optional<int32_t>
mlir::gacc::getRuntimeReductionKind(shard::ReductionKind kind) {
  switch (kind) {
  case shard::ReductionKind::Sum:
    return GACCRT_SUM;
  case shard::ReductionKind::Average:
    return GACCRT_AVERAGE;
  case shard::ReductionKind::Max:
    return GACCRT_MAX;
  case shard::ReductionKind::Min:
    return GACCRT_MIN;
  case shard::ReductionKind::Product:
    return GACCRT_PRODUCT;
  default:
    return std::nullopt;
  }
}

func::CallOp mlir::gacc::getSgemmCall(Operation *op) {
  auto call = dyn_cast_or_null<func::CallOp>(op);
  return call && call.getCallee() == "gaccrt_sgemm" &&
                 call.getNumOperands() == 7
             ? call
             : nullptr;
}

std::optional<SmallVector<unsigned, 2>>
mlir::gacc::getGemmWrittenOperands(Operation *op) {
  auto call = dyn_cast_or_null<func::CallOp>(op);
  if (!call)
    return std::nullopt;
  StringRef callee = call.getCallee();
  unsigned count = call.getNumOperands();
  if ((callee == "gaccrt_sgemm" && count == 7) ||
      (callee == "gaccrt_sgemm_pair" && count == 9) ||
      (callee == "gaccrt_sgemm_quad" && count == 13))
    return SmallVector<unsigned, 2>{count - 1};
  if (callee == "gaccrt_sgemm_rows_pair" && count == 9)
    return SmallVector<unsigned, 2>{6, 8};
  return std::nullopt;
}

func::FuncOp mlir::gacc::createInternalFunction(func::FuncOp func,
                                                StringRef suffix,
                                                FunctionType type,
                                                SymbolTable &symbols) {
  OpBuilder builder(func);
  builder.setInsertionPointAfter(func);
  auto created = func::FuncOp::create(builder, func.getLoc(),
                                      (func.getSymName() + suffix).str(), type);
  created.setPrivate();
  created->setAttr(
      "llvm.linkage",
      LLVM::LinkageAttr::get(func.getContext(), LLVM::Linkage::Internal));
  symbols.insert(created);
  created.addEntryBlock();
  return created;
}

//===- RuntimeCalls.cpp - declarations of gaccrt functions ------*- C++ -*-===//
//
// Implements RuntimeCalls.h.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"

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

std::optional<RuntimeDType> mlir::gacc::getRuntimeDType(Type type) {
  if (type.isF32())
    return RuntimeDType::F32;
  if (type.isF64())
    return RuntimeDType::F64;
  if (type.isBF16())
    return RuntimeDType::BF16;
  if (type.isF16())
    return RuntimeDType::F16;
  if (type.isInteger(32))
    return RuntimeDType::I32;
  if (type.isInteger(64))
    return RuntimeDType::I64;
  return std::nullopt;
}

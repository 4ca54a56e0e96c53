//===- StepRoles.cpp - the roles of a training step -------------*- C++ -*-===//
//
// Decoding of the role attributes (see StepRoles.h).
//
//===----------------------------------------------------------------------===//

#include "gacc/Dialect/Gacc/IR/StepRoles.h"

#include "gacc/Dialect/Gacc/IR/GaccDialect.h"

using namespace mlir;
using namespace mlir::gacc;

StringRef mlir::gacc::getRoleAttrName(Role role) {
  switch (role) {
  case Role::None:
    return "";
  case Role::Param:
    return GaccDialect::kParamAttrName;
  case Role::Batch:
    return GaccDialect::kBatchAttrName;
  case Role::State:
    return GaccDialect::kStateAttrName;
  case Role::Loss:
    return GaccDialect::kLossAttrName;
  case Role::Grad:
    return GaccDialect::kGradAttrName;
  case Role::ParamOut:
    return GaccDialect::kParamOutAttrName;
  case Role::StateOut:
    return GaccDialect::kStateOutAttrName;
  case Role::Metric:
    return GaccDialect::kMetricAttrName;
  case Role::SampleCount:
    return GaccDialect::kSampleCountAttrName;
  }
  llvm_unreachable("unknown role");
}

Role mlir::gacc::symbolizeRole(StringRef attrName, bool onResult) {
  static constexpr Role kArgRoles[] = {Role::Param, Role::Batch, Role::State,
                                       Role::SampleCount};
  static constexpr Role kResultRoles[] = {
      Role::Loss, Role::Grad, Role::ParamOut, Role::StateOut, Role::Metric};
  ArrayRef<Role> roles =
      onResult ? ArrayRef<Role>(kResultRoles) : ArrayRef<Role>(kArgRoles);
  for (Role role : roles)
    if (attrName == getRoleAttrName(role))
      return role;
  return Role::None;
}

bool mlir::gacc::hasIndex(Role role) {
  return role == Role::Batch || role == Role::Grad || role == Role::ParamOut ||
         role == Role::StateOut;
}

Role mlir::gacc::getRequiredArgumentRole(Role resultRole) {
  if (resultRole == Role::Grad || resultRole == Role::ParamOut)
    return Role::Param;
  if (resultRole == Role::StateOut)
    return Role::State;
  return Role::None;
}

/// Decodes the role attributes among `attrs`.
static RoleInfo decodeRole(ArrayRef<NamedAttribute> attrs, bool onResult) {
  RoleInfo info;
  for (NamedAttribute attr : attrs) {
    Role role = symbolizeRole(attr.getName().getValue(), onResult);
    if (role == Role::None)
      continue;
    if (info.role != Role::None) {
      info.multiple = true;
      continue;
    }
    info.role = role;
    if (hasIndex(role))
      if (auto index = dyn_cast<IntegerAttr>(attr.getValue()))
        info.index = index.getInt();
  }
  return info;
}

RoleInfo mlir::gacc::getArgumentRole(FunctionOpInterface func, unsigned i) {
  return decodeRole(func.getArgAttrs(i), /*onResult=*/false);
}

RoleInfo mlir::gacc::getResultRole(FunctionOpInterface func, unsigned i) {
  return decodeRole(func.getResultAttrs(i), /*onResult=*/true);
}

bool mlir::gacc::hasGaccRoles(FunctionOpInterface func) {
  auto hasRole = [](ArrayRef<NamedAttribute> attrs) {
    return llvm::any_of(attrs, [](NamedAttribute attr) {
      return attr.getName().getValue().starts_with("gacc.");
    });
  };
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
    if (hasRole(func.getArgAttrs(i)))
      return true;
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    if (hasRole(func.getResultAttrs(i)))
      return true;
  return false;
}

func::FuncOp mlir::gacc::findTrainingStep(ModuleOp module, StringRef entry) {
  if (!entry.empty()) {
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func)
      module.emitError() << "no function named '" << entry
                         << "' (the entry option names the training step)";
    return func;
  }
  SmallVector<func::FuncOp> candidates;
  for (auto func : module.getOps<func::FuncOp>())
    if (hasGaccRoles(func))
      candidates.push_back(func);
  if (candidates.size() == 1)
    return candidates.front();
  if (candidates.empty()) {
    module.emitError("no function carries gacc role attributes; mark the "
                     "training step's arguments and results (gacc.param, "
                     "gacc.batch, gacc.loss, ...)");
    return {};
  }
  InFlightDiagnostic diag =
      module.emitError("several functions carry gacc role attributes; select "
                       "the training step with the entry option");
  for (auto func : candidates)
    diag.attachNote(func.getLoc()) << "candidate '" << func.getSymName() << "'";
  return {};
}

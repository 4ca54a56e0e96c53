//===- Roles.h - the roles of a training step's values ----------*- C++ -*-===//
//
// The role of a step argument or result (DESIGN.md §1) and its name, defined
// once for the dialect (StepRoles.h decodes roles from the IR) and for
// the LLVM-free runner half (StepIO.h: the signature text embedded in a
// compiled step, the tools' reports). Plain C++17, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_DIALECT_GACC_IR_ROLES_H
#define GACC_DIALECT_GACC_IR_ROLES_H

#include <string_view>

namespace mlir::gacc {

/// The role of a step argument or result (DESIGN.md §1).
enum class Role {
  None,
  Param,
  Batch,
  State,
  Loss,
  Grad,
  ParamOut,
  StateOut,
  Metric,
  SampleCount
};

/// Every role, in declaration order.
inline constexpr Role kAllRoles[] = {
    Role::None,   Role::Param,      Role::Batch,    Role::State,
    Role::Loss,   Role::Grad,       Role::ParamOut, Role::StateOut,
    Role::Metric, Role::SampleCount};

/// Returns "param", "batch", "loss", "param_out", ... ("-" for Role::None),
/// as the signature text and the tools' reports print roles.
inline const char *roleName(Role role) {
  switch (role) {
  case Role::None:
    return "-";
  case Role::Param:
    return "param";
  case Role::Batch:
    return "batch";
  case Role::State:
    return "state";
  case Role::Loss:
    return "loss";
  case Role::Grad:
    return "grad";
  case Role::ParamOut:
    return "param_out";
  case Role::StateOut:
    return "state_out";
  case Role::Metric:
    return "metric";
  case Role::SampleCount:
    return "sample_count";
  }
  return "?";
}

/// Sets `role` to the role that roleName names `name`; returns false (and
/// leaves `role`) when no role has that name.
inline bool parseRoleName(std::string_view name, Role &role) {
  for (Role candidate : kAllRoles)
    if (name == roleName(candidate)) {
      role = candidate;
      return true;
    }
  return false;
}

} // namespace mlir::gacc

#endif // GACC_DIALECT_GACC_IR_ROLES_H

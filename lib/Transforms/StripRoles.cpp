//===- StripRoles.cpp - drop the role attributes ----------------*- C++ -*-===//
//
// The gacc-strip-roles pass: drops the gacc role attributes from functions
// before bufferization, which moves results to arguments where result roles
// would not verify.
//
//===----------------------------------------------------------------------===//

#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/Passes.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#define DEBUG_TYPE "gacc-strip-roles"

namespace mlir::gacc {
#define GEN_PASS_DEF_STRIPROLESPASS
#include "gacc/Transforms/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
struct StripRolesPass : public gacc::impl::StripRolesPassBase<StripRolesPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    auto isRole = [](NamedAttribute attr) {
      return attr.getName().getValue().starts_with("gacc.");
    };
    getOperation().walk([&](FunctionOpInterface func) {
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
        for (NamedAttribute attr : func.getArgAttrs(i))
          if (isRole(attr))
            func.removeArgAttr(i, attr.getName());
      for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
        for (NamedAttribute attr : func.getResultAttrs(i))
          if (isRole(attr))
            func.removeResultAttr(i, attr.getName());
    });
  }
};
} // namespace

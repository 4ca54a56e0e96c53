//===- StridedCopiesToLinalg.cpp - strided copies as linalg.copy -*- C++ -*-=//
//
// The gacc-strided-copies-to-linalg pass: a `memref.copy` from or into a
// strided view (a bufferized insert_slice, concat or pad) becomes a
// `linalg.copy`, which lowers to loops on the host and to a kernel on the
// device, instead of a call of the runner utilities' `memrefCopy`.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#define DEBUG_TYPE "gacc-strided-copies-to-linalg"

namespace mlir::gacc {
#define GEN_PASS_DEF_STRIDEDCOPIESTOLINALGPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Whether the memref type lowers with a contiguous, identity layout.
static bool hasIdentityLayout(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && memref.getLayout().isIdentity();
}

namespace {
struct StridedCopiesToLinalgPass
    : public gacc::impl::StridedCopiesToLinalgPassBase<
          StridedCopiesToLinalgPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      if (!hasIdentityLayout(copy.getSource().getType()) ||
          !hasIdentityLayout(copy.getTarget().getType()))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder builder(copy);
      linalg::CopyOp::create(builder, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    }
  }
};
} // namespace

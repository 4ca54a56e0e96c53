//===- MatmulToBlas.cpp - linalg.matmul to gaccrt_sgemm ---------*- C++ -*-===//
//
// The gacc-matmul-to-blas pass: after bufferization, f32 linalg.matmul ops
// become calls of the runtime's gaccrt_sgemm (OpenBLAS). An accumulating
// matmul (the outs buffer holds the running accumulator) is beta = 1; a
// matmul right after a zero fill of its output is beta = 0 and the fill goes
// away, which is how the first micro-batch initializes an accumulator. An
// operand copied by a private 2-D linalg.transpose is read transposed in
// place.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Conversion/Passes.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "gacc-matmul-to-blas"

namespace mlir::gacc {
#define GEN_PASS_DEF_MATMULTOBLASPASS
#include "gacc/Conversion/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Returns the fully dynamic 2-D f32 memref type the runtime takes.
static MemRefType getDynamicMatrixType(MLIRContext *ctx) {
  int64_t dyn = ShapedType::kDynamic;
  auto layout = StridedLayoutAttr::get(ctx, dyn, {dyn, dyn});
  return MemRefType::get({dyn, dyn}, Float32Type::get(ctx), layout);
}

/// Returns the zero fill of `output` right before `op`, if any.
static linalg::FillOp getZeroFillBefore(Operation *op, Value output) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (!fill || fill.getOutputs()[0] != output)
    return {};
  FloatAttr value;
  if (!matchPattern(fill.getInputs()[0], m_Constant(&value)) ||
      !value.getValue().isZero())
    return {};
  return fill;
}

/// When `operand` is a buffer written only by a 2-D linalg.transpose of
/// `source` and read only by `user`, returns that transpose.
static linalg::TransposeOp getPrivateTranspose(Value operand, Operation *user) {
  auto alloc = operand.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return {};
  linalg::TransposeOp transpose;
  for (Operation *other : alloc->getUsers()) {
    if (other == user || isa<memref::DeallocOp>(other))
      continue;
    auto t = dyn_cast<linalg::TransposeOp>(other);
    if (!t || t.getInit() != operand || transpose)
      return {};
    transpose = t;
  }
  if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0} ||
      !transpose->isBeforeInBlock(user))
    return {};
  return transpose;
}

namespace {
struct MatmulToBlasPass
    : public gacc::impl::MatmulToBlasPassBase<MatmulToBlasPass> {
  using MatmulToBlasPassBase::MatmulToBlasPassBase;

  void runOnOperation() override {
    mlir::gacc::PassResultVerifier verifyResult(
        getOperation(), getArgument(), [this] { signalPassFailure(); });
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) {
      if (!op.hasPureBufferSemantics() || op.hasUserDefinedMaps())
        return;
      for (Value v : op->getOperands())
        if (!cast<MemRefType>(v.getType()).getElementType().isF32())
          return;
      matmuls.push_back(op);
    });
    MLIRContext *ctx = &getContext();
    MemRefType matrixType = getDynamicMatrixType(ctx);
    Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
    for (linalg::MatmulOp op : matmuls) {
      OpBuilder builder(op);
      Location loc = op.getLoc();
      Value a = op.getInputs()[0], b = op.getInputs()[1];
      Value c = op.getOutputs()[0];
      int32_t transA = 0, transB = 0;
      SmallVector<Operation *> dead;
      if (auto t = getPrivateTranspose(a, op)) {
        a = t.getInput();
        transA = 1;
        dead.push_back(t);
      }
      if (auto t = getPrivateTranspose(b, op)) {
        b = t.getInput();
        transB = 1;
        dead.push_back(t);
      }
      float beta = 1.0f;
      if (linalg::FillOp fill = getZeroFillBefore(op, c)) {
        beta = 0.0f;
        dead.push_back(fill);
      }
      func::FuncOp function = getOrDeclareRuntimeFunction(
          op, callee,
          FunctionType::get(
              ctx, {i32, i32, f32, f32, matrixType, matrixType, matrixType},
              {}));
      auto toMatrix = [&](Value v) {
        return memref::CastOp::create(builder, loc, matrixType, v).getResult();
      };
      // Operands first, then the flags, so that beta sits right before the
      // call in the IR.
      Value matA = toMatrix(a), matB = toMatrix(b), matC = toMatrix(c);
      SmallVector<Value> args{
          arith::ConstantIntOp::create(builder, loc, i32, transA),
          arith::ConstantIntOp::create(builder, loc, i32, transB),
          arith::ConstantFloatOp::create(builder, loc, Float32Type::get(ctx),
                                         APFloat(1.0f)),
          arith::ConstantFloatOp::create(builder, loc, Float32Type::get(ctx),
                                         APFloat(beta)),
          matA,
          matB,
          matC};
      func::CallOp::create(builder, loc, function, args);
      op.erase();
      for (Operation *d : dead) {
        Value alloc = isa<linalg::TransposeOp>(d)
                          ? cast<linalg::TransposeOp>(d).getInit()
                          : Value();
        d->erase();
        // A transpose buffer nobody reads any more goes away with its
        // deallocation.
        if (alloc && llvm::all_of(alloc.getUsers(), [](Operation *u) {
              return isa<memref::DeallocOp>(u);
            })) {
          for (Operation *u : llvm::make_early_inc_range(alloc.getUsers()))
            u->erase();
          alloc.getDefiningOp()->erase();
        }
      }
    }
  }
};
} // namespace

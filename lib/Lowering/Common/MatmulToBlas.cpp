//===- MatmulToBlas.cpp - linalg.matmul to gaccrt_sgemm ---------*- C++ -*-===//
//
// The gacc-matmul-to-blas pass: after bufferization, f32 linalg.matmul ops
// become calls of the runtime's gaccrt_sgemm (OpenBLAS). An accumulating
// matmul (the outs buffer holds the running accumulator) is beta = 1; a
// matmul right after a zero fill of its output is beta = 0 and the fill goes
// away, which is how the first micro-batch initializes an accumulator; in a
// loop over equal micro-batches, a zero fill before the loop becomes
// beta = 0 in the first iteration. An operand copied by a private 2-D
// linalg.transpose is read transposed in place.
//
//===----------------------------------------------------------------------===//

#include "BufferAccess.h"
#include "RuntimeCalls.h"
#include "gacc/Lowering/Passes.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "gacc-matmul-to-blas"

namespace mlir::gacc {
#define GEN_PASS_DEF_MATMULTOBLASPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Returns the fully dynamic 2-D f32 memref type the runtime takes.
static MemRefType getDynamicMatrixType(MLIRContext *ctx) {
  int64_t dyn = ShapedType::kDynamic;
  auto layout = StridedLayoutAttr::get(ctx, dyn, {dyn, dyn});
  return MemRefType::get({dyn, dyn}, Float32Type::get(ctx), layout);
}

/// Whether `op` is a linalg.fill of zeros into all of `buffer`.
static bool isZeroFillOf(Operation *op, Value buffer) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op);
  if (!fill || fill.getOutputs()[0] != buffer)
    return false;
  FloatAttr value;
  return matchPattern(fill.getInputs()[0], m_Constant(&value)) &&
         value.getValue().isPosZero();
}

/// Whether the memref.copy `copy` copies zeros: the last op of its block
/// before it that writes the source's buffer is a zero fill of the whole
/// source; in between, only copies out of that buffer touch it.
static bool copiesZeros(memref::CopyOp copy, BufferTouchers &touchers) {
  Value source = copy.getSource();
  Value root = getViewRoot(source);
  if (getViewRoot(copy.getTarget()) == root)
    return false;
  std::optional<ArrayRef<Operation *>> before =
      getTouchersBefore(copy, source, touchers);
  if (!before)
    return false;
  for (Operation *toucher : llvm::reverse(*before)) {
    auto reader = dyn_cast<memref::CopyOp>(toucher);
    if (reader && getViewRoot(reader.getSource()) == root &&
        getViewRoot(reader.getTarget()) != root)
      continue;
    return isZeroFillOf(toucher, source);
  }
  return false;
}

/// Whether an input of `op` is a view of `output`'s buffer.
static bool readsOutputBuffer(linalg::MatmulOp op, Value output) {
  Value root = getViewRoot(output);
  return llvm::any_of(op.getInputs(),
                      [&](Value in) { return getViewRoot(in) == root; });
}

/// Returns the op that makes `output` zero right before `op`, if any: the
/// last op of `op`'s block before `op` touching (a view of) `output`'s
/// buffer is a zero fill of `output`, or a copy of zeros into `output` (a
/// zero-filled tensor shared by several matmuls bufferizes to one fill and
/// a copy per matmul). No op in between reads or writes the buffer, so the
/// matmul may overwrite the output (beta = 0) and the op goes away. This is
/// how the first micro-batch initializes an accumulator and how a reused
/// buffer is cleared. A user outside the block (e.g. before an enclosing
/// loop) cannot run between that op and the matmul when it is in the block.
/// The ops in `erasedCopies` are taken as gone.
static Operation *getZeroInitBefore(linalg::MatmulOp op, Value output,
                                    BufferTouchers &touchers,
                                    const DenseSet<Operation *> &erasedCopies) {
  if (readsOutputBuffer(op, output))
    return nullptr;
  std::optional<ArrayRef<Operation *>> before =
      getTouchersBefore(op, output, touchers);
  if (!before)
    return nullptr;
  // Copies that go away (each another matmul's zero init) are not there.
  ArrayRef<Operation *> remaining = *before;
  while (!remaining.empty() && erasedCopies.contains(remaining.back()))
    remaining = remaining.drop_back();
  if (remaining.empty())
    return nullptr;
  Operation *candidate = remaining.back();
  if (isZeroFillOf(candidate, output))
    return candidate;
  auto copy = dyn_cast<memref::CopyOp>(candidate);
  if (copy && copy.getTarget() == output && copiesZeros(copy, touchers))
    return copy;
  return nullptr;
}

/// Returns the zero fill that `op`, inside an scf.for with constant bounds
/// and at least one iteration, may replace in the loop's first iteration
/// (beta = 0 there, 1 in the others): the last op before the loop touching
/// `output`'s bytes is a zero fill of `output`, and no op of the loop body
/// before `op` touches them. This is how one compiled body per micro-batch
/// size (a loop over the equal micro-batches) initializes the accumulators
/// in its first iteration instead of after a zero fill of every bucket in
/// every step.
static linalg::FillOp getZeroFillBeforeLoop(linalg::MatmulOp op, Value output,
                                            BufferTouchers &touchers) {
  auto loop = dyn_cast<scf::ForOp>(op->getParentOp());
  if (!loop || op->getBlock() != loop.getBody())
    return {};
  std::optional<APInt> trips = loop.getStaticTripCount();
  if (!trips || trips->isZero())
    return {};
  if (readsOutputBuffer(op, output))
    return {};
  // Inside the body, before the matmul: only other members' ops.
  std::optional<ByteRange> range = getByteRange(output);
  std::optional<ArrayRef<Operation *>> inBody =
      getTouchersBefore(op, output, touchers);
  if (!inBody || !llvm::all_of(*inBody, [&](Operation *toucher) {
        return touchesOnlyElsewhere(toucher, output, range);
      }))
    return {};
  // Before the loop: other members' ops, then the zero fill of the output.
  std::optional<ArrayRef<Operation *>> before =
      getTouchersBefore(loop, output, touchers);
  if (!before)
    return {};
  for (Operation *toucher : llvm::reverse(*before)) {
    if (isZeroFillOf(toucher, output))
      return cast<linalg::FillOp>(toucher);
    if (!touchesOnlyElsewhere(toucher, output, range))
      return {};
  }
  return {};
}

/// Erases the buffer `buffer` (defined by its allocation) with all its users
/// when each of them is a deallocation or an op `isWriter` accepts: nothing
/// reads what those ops write.
static void eraseIfOnlyWritten(Value buffer,
                               function_ref<bool(Operation *)> isWriter) {
  if (!llvm::all_of(buffer.getUsers(), [&](Operation *u) {
        return isWriter(u) || isa<memref::DeallocOp>(u);
      }))
    return;
  for (Operation *u : llvm::make_early_inc_range(buffer.getUsers()))
    u->erase();
  buffer.getDefiningOp()->erase();
}

/// When `operand` is a buffer that only a 2-D linalg.transpose of `source`
/// writes and that only matmuls after it read (as an input), returns that
/// transpose: each of those matmuls may read `source` transposed instead.
/// `source` must not be written or freed after the transpose (every writer
/// of its buffer runs before the transpose in the transpose's block), so
/// that it still holds the transposed values when the matmuls run.
static linalg::TransposeOp getFoldableTranspose(Value operand,
                                                DominanceInfo &dominance) {
  auto alloc = operand.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return {};
  linalg::TransposeOp transpose;
  SmallVector<Operation *> readers;
  for (OpOperand &use : alloc->getUses()) {
    Operation *user = use.getOwner();
    if (isa<memref::DeallocOp>(user))
      continue;
    if (auto matmul = dyn_cast<linalg::MatmulOp>(user)) {
      if (!matmul.isDpsInput(&use))
        return {};
      readers.push_back(user);
      continue;
    }
    auto t = dyn_cast<linalg::TransposeOp>(user);
    if (!t || t.getInit() != operand || transpose)
      return {};
    transpose = t;
  }
  if (!transpose || transpose.getPermutation() != ArrayRef<int64_t>{1, 0})
    return {};
  for (Operation *reader : readers)
    if (!dominance.properlyDominates(transpose.getOperation(), reader))
      return {};
  SmallVector<Value> aliases;
  SmallVector<Operation *> escapes;
  if (!collectAliases(getViewRoot(transpose.getInput()), aliases, escapes))
    return {};
  Block *block = transpose->getBlock();
  auto writesBefore = [&](Operation *user) {
    Operation *ancestor = block->findAncestorOpInBlock(*user);
    return ancestor && ancestor->isBeforeInBlock(transpose);
  };
  for (Value alias : aliases)
    for (Operation *user : alias.getUsers())
      if (user != transpose && mayWriteOrFree(user, alias) &&
          !writesBefore(user))
        return {};
  // The address taken (a pointer that a later op may write through):
  // anywhere, the source may change after the transpose.
  if (!escapes.empty())
    return {};
  return transpose;
}

/// An f32 `linalg.batch_matmul` on static buffers as a loop over the
/// batches of `linalg.matmul`s on rank-reduced subviews.
static void splitIntoMatmuls(linalg::BatchMatmulOp op) {
  OpBuilder builder(op);
  Location loc = op.getLoc();
  Value c = op.getOutputs()[0];
  int64_t batches = cast<MemRefType>(c.getType()).getDimSize(0);
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value count = arith::ConstantIndexOp::create(builder, loc, batches);
  auto loop = scf::ForOp::create(builder, loc, zero, count, one);
  builder.setInsertionPointToStart(loop.getBody());
  Value batch = loop.getInductionVar();
  auto matrixOf = [&](Value buffer) -> Value {
    auto type = cast<MemRefType>(buffer.getType());
    SmallVector<OpFoldResult> offsets{batch, builder.getIndexAttr(0),
                                      builder.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{builder.getIndexAttr(1),
                                    builder.getIndexAttr(type.getDimSize(1)),
                                    builder.getIndexAttr(type.getDimSize(2))};
    SmallVector<OpFoldResult> strides(3, builder.getIndexAttr(1));
    auto matrixType = memref::SubViewOp::inferRankReducedResultType(
        {type.getDimSize(1), type.getDimSize(2)}, type, offsets, sizes,
        strides);
    return memref::SubViewOp::create(builder, loc, matrixType, buffer, offsets,
                                     sizes, strides);
  };
  auto matmul = linalg::MatmulOp::create(
      builder, loc,
      ValueRange{matrixOf(op.getInputs()[0]), matrixOf(op.getInputs()[1])},
      ValueRange{matrixOf(c)});
  matmul->setDiscardableAttrs(op->getDiscardableAttrDictionary());
  op.erase();
}

namespace {
struct MatmulToBlasPass
    : public gacc::impl::MatmulToBlasPassBase<MatmulToBlasPass> {
  using MatmulToBlasPassBase::MatmulToBlasPassBase;

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    if (splitBatches) {
      SmallVector<linalg::BatchMatmulOp> batched;
      getOperation().walk([&](linalg::BatchMatmulOp op) {
        if (op.hasPureBufferSemantics() && !op.hasUserDefinedMaps() &&
            llvm::all_of(op->getOperandTypes(), [](Type type) {
              auto memref = cast<MemRefType>(type);
              return memref.hasStaticShape() && memref.getElementType().isF32();
            }))
          batched.push_back(op);
      });
      for (linalg::BatchMatmulOp op : batched)
        splitIntoMatmuls(op);
    }
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
    // The transposes every reader of which is a matmul that can read the
    // source transposed, decided before any matmul is rewritten.
    DominanceInfo &dominance = getAnalysis<DominanceInfo>();
    llvm::SmallDenseMap<Value, linalg::TransposeOp> transposes;
    for (linalg::MatmulOp op : matmuls)
      for (Value in : op.getInputs())
        if (!transposes.count(in))
          if (auto t = getFoldableTranspose(in, dominance))
            transposes[in] = t;
    // The zero fills each matmul overwrites (beta = 0), decided before any
    // matmul is rewritten: a rewritten matmul is a call at the same place
    // that touches the same buffers, so no later decision would differ.
    // Second round: a fill whose zeros only such copies read before the
    // matmul (the shared zero tensor's last user, written in place).
    DenseMap<Operation *, Operation *> zeroInits;
    {
      BufferTouchers touchers;
      DenseSet<Operation *> erasedCopies;
      for (linalg::MatmulOp op : matmuls)
        if (Operation *init = getZeroInitBefore(op, op.getOutputs()[0],
                                                touchers, erasedCopies))
          zeroInits[op] = init;
      for (auto &[op, init] : zeroInits)
        if (isa<memref::CopyOp>(init))
          erasedCopies.insert(init);
      if (!erasedCopies.empty())
        for (linalg::MatmulOp op : matmuls)
          if (!zeroInits.count(op))
            if (Operation *init = getZeroInitBefore(op, op.getOutputs()[0],
                                                    touchers, erasedCopies))
              zeroInits[op] = init;
    }
    // The zero fills before a loop that a matmul in its body replaces in
    // the first iteration.
    DenseMap<Operation *, linalg::FillOp> loopZeroFills;
    {
      BufferTouchers touchers;
      DenseSet<Operation *> claimed;
      for (linalg::MatmulOp op : matmuls)
        if (!zeroInits.count(op))
          if (linalg::FillOp fill =
                  getZeroFillBeforeLoop(op, op.getOutputs()[0], touchers))
            if (claimed.insert(fill).second)
              loopZeroFills[op] = fill;
    }
    // The sources of the copies of zeros that go away.
    llvm::SetVector<Value> zeroSources;
    for (linalg::MatmulOp op : matmuls) {
      OpBuilder builder(op);
      Location loc = op.getLoc();
      Value a = op.getInputs()[0], b = op.getInputs()[1];
      Value c = op.getOutputs()[0];
      int32_t transA = 0, transB = 0;
      SmallVector<Operation *> dead;
      if (auto t = transposes.lookup(a)) {
        a = t.getInput();
        transA = 1;
      }
      if (auto t = transposes.lookup(b)) {
        b = t.getInput();
        transB = 1;
      }
      float beta = 1.0f;
      if (Operation *init = zeroInits.lookup(op)) {
        beta = 0.0f;
        dead.push_back(init);
        if (auto copy = dyn_cast<memref::CopyOp>(init))
          zeroSources.insert(getViewRoot(copy.getSource()));
      }
      // beta = 0 in the loop's first iteration, 1 in the others.
      Value loopBeta;
      if (linalg::FillOp fill = loopZeroFills.lookup(op)) {
        auto loop = cast<scf::ForOp>(op->getParentOp());
        Value first =
            arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                  loop.getInductionVar(), loop.getLowerBound());
        loopBeta = arith::SelectOp::create(
            builder, loc, first,
            arith::ConstantFloatOp::create(builder, loc, Float32Type::get(ctx),
                                           APFloat(0.0f)),
            arith::ConstantFloatOp::create(builder, loc, Float32Type::get(ctx),
                                           APFloat(1.0f)));
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
          loopBeta ? loopBeta
                   : arith::ConstantFloatOp::create(
                         builder, loc, Float32Type::get(ctx), APFloat(beta))
                         .getResult(),
          matA,
          matB,
          matC};
      func::CallOp::create(builder, loc, function, args);
      op.erase();
      for (Operation *d : dead)
        d->erase();
    }
    // A zero-filled buffer nobody copies from any more goes away with its
    // fills and its deallocation.
    for (Value buffer : zeroSources)
      if (buffer.getDefiningOp<memref::AllocOp>())
        eraseIfOnlyWritten(
            buffer, [&](Operation *u) { return isZeroFillOf(u, buffer); });
    // A transpose buffer nobody reads any more goes away with the transpose
    // and its deallocation.
    for (auto &[buffer, transpose] : transposes)
      eraseIfOnlyWritten(buffer, [&](Operation *u) { return u == transpose; });
  }
};
} // namespace

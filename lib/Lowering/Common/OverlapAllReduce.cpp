//===- OverlapAllReduce.cpp - start bucket all-reduces early ----*- C++ -*-===//
//
// The gacc-overlap-all-reduce pass (after bufferization and
// gacc-place-buckets). gacc-sink-all-reduce issues each bucket's all-reduce
// after the final region, so the collective waits for the whole final
// backward, and the epilogue waits for every bucket. For a bucket marked
// `gacc.overlap`, this pass splits the blocking runtime call into
// `gaccrt_all_reduce_start` right after the last op that touches the
// bucket's memory (the final region's last write into the bucket) and
// `gaccrt_all_reduce_wait` right before the next op that touches it, so the
// reduction runs while the rest of the backward computes, and the epilogue
// waits only for the buckets it reads, where it reads them.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Lowering/Passes.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/SetVector.h"

#define DEBUG_TYPE "gacc-overlap-all-reduce"

namespace mlir::gacc {
#define GEN_PASS_DEF_OVERLAPALLREDUCEPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Collects the ops of `block` that access the memory of `root`: every op
/// (or its ancestor in `block`) that uses `root` or a value aliasing it,
/// except views, whose own users are followed instead. Results of memref
/// type of an accessing op are taken to alias `root` too.
static void collectAccesses(Value root, Block *block,
                            SmallPtrSetImpl<Operation *> &accesses) {
  SmallVector<Value> worklist = {root};
  DenseSet<Value> seen = {root};
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    bool memref = isa<BaseMemRefType>(value.getType());
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      bool isView = view && view.getViewSource() == value;
      if (!isView)
        if (Operation *inBlock = block->findAncestorOpInBlock(*user))
          accesses.insert(inBlock);
      // The address (and what is computed from it: an integer, a pointer)
      // reaches the buffer too.
      bool address = !memref || isa<memref::ExtractAlignedPointerAsIndexOp,
                                    memref::ExtractStridedMetadataOp>(user);
      for (Value result : user->getResults())
        if ((address || isa<BaseMemRefType>(result.getType())) &&
            seen.insert(result).second)
          worklist.push_back(result);
    }
  }
}

/// collectAccesses for every buffer that `buffer` may be: its root and, for
/// the result of a loop that carries a memref, the loop's init (an in-place
/// loop's result is its init's buffer). False when the root is something
/// else that other values may alias (a call's result, a global).
static bool collectBufferAccesses(Value buffer, Block *block,
                                  SmallPtrSetImpl<Operation *> &accesses) {
  SmallVector<Value> roots = {getViewRoot(buffer)};
  for (size_t i = 0; i < roots.size(); ++i) {
    Value root = roots[i];
    if (auto arg = dyn_cast<BlockArgument>(root)) {
      if (!isa<func::FuncOp>(arg.getOwner()->getParentOp()))
        return false;
      continue;
    }
    Operation *def = root.getDefiningOp();
    if (auto loop = dyn_cast<scf::ForOp>(def)) {
      if (roots.size() > 16)
        return false;
      roots.push_back(getViewRoot(
          loop.getInitArgs()[cast<OpResult>(root).getResultNumber()]));
      continue;
    }
    if (!isa<memref::AllocOp, memref::AllocaOp>(def))
      return false;
  }
  for (Value root : roots)
    collectAccesses(root, block, accesses);
  return true;
}

/// Returns the buffer whose address is operand 0 of the runtime all-reduce
/// `call` (`index_cast(extract_aligned_pointer_as_index(buffer))`), with the
/// two address ops.
static Value getReducedBuffer(func::CallOp call, arith::IndexCastOp &cast,
                              memref::ExtractAlignedPointerAsIndexOp &address) {
  cast = call.getOperand(0).getDefiningOp<arith::IndexCastOp>();
  address =
      cast
          ? cast.getIn().getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>()
          : memref::ExtractAlignedPointerAsIndexOp();
  return address ? address.getSource() : Value();
}

/// Returns true when `value` is available right before `point` in its block,
/// cloning a constant defined later to there.
static bool makeAvailable(Value &value, Operation *point) {
  Operation *def = value.getDefiningOp();
  Block *block = point->getBlock();
  if (!def) {
    auto arg = cast<BlockArgument>(value);
    return arg.getOwner() == block ||
           arg.getOwner()->getParentOp()->isAncestor(point);
  }
  if (def->getBlock() != block)
    return def->getBlock()->findAncestorOpInBlock(*point) != nullptr;
  if (def->isBeforeInBlock(point))
    return true;
  if (!matchPattern(value, m_Constant()))
    return false;
  OpBuilder builder(point);
  value = builder.clone(*def)->getResult(0);
  return true;
}

/// When `loop` (the last op before the all-reduce that accesses `buffer`)
/// runs at least once (constant bounds) and carries no memref, returns the op
/// of its body before which the collective may start in the last iteration: the
/// one after the body's last access of `buffer`. Null otherwise.
static Operation *getStartPointInLastIteration(scf::ForOp loop, Value buffer) {
  if (!loop)
    return nullptr;
  std::optional<APInt> trips = loop.getStaticTripCount();
  if (!trips || trips->isZero())
    return nullptr;
  // A memref carried through the loop reaches the body as a block argument,
  // which the access collection does not follow: stay after the loop.
  if (llvm::any_of(loop.getInitArgs(), [](Value init) {
        return isa<BaseMemRefType>(init.getType());
      }))
    return nullptr;
  Block *body = loop.getBody();
  SmallPtrSet<Operation *, 16> accesses;
  if (!collectBufferAccesses(buffer, body, accesses))
    return nullptr;
  for (Operation *op = body->getTerminator()->getPrevNode(); op;
       op = op->getPrevNode())
    if (accesses.contains(op))
      return op->getNextNode();
  return nullptr;
}

/// Splits the runtime all-reduce `call` into a start after the last access
/// of its buffer before it and a wait before the next access after it.
/// Leaves a call of any other form alone.
static void overlap(func::CallOp call) {
  arith::IndexCastOp cast;
  memref::ExtractAlignedPointerAsIndexOp address;
  Value buffer = getReducedBuffer(call, cast, address);
  if (!buffer)
    return;
  Block *block = call->getBlock();
  SmallPtrSet<Operation *, 16> accesses;
  if (!collectBufferAccesses(buffer, block, accesses))
    return;
  // The call's own address computation is not an access.
  accesses.erase(call);
  if (cast->hasOneUse())
    accesses.erase(cast);
  if (address->hasOneUse())
    accesses.erase(address);

  // The first access after the call (or the terminator), then the last one
  // before it.
  Operation *waitPoint = block->getTerminator();
  for (Operation *op = call->getNextNode(); op; op = op->getNextNode())
    if (accesses.contains(op)) {
      waitPoint = op;
      break;
    }
  Operation *startPoint = &block->front();
  Operation *lastAccess = nullptr;
  for (Operation *op = call->getPrevNode(); op; op = op->getPrevNode())
    if (accesses.contains(op) || op == buffer.getDefiningOp()) {
      startPoint = op->getNextNode();
      if (accesses.contains(op))
        lastAccess = op;
      break;
    }
  // Never start before the buffer exists.
  if (Operation *def = buffer.getDefiningOp();
      def && def->getBlock() == block && startPoint->isBeforeInBlock(def))
    startPoint = def->getNextNode();

  // The loop of the final region's size: start in its last iteration when
  // everything the start needs is available before the loop.
  auto loop = dyn_cast_or_null<scf::ForOp>(lastAccess);
  Operation *inner = getStartPointInLastIteration(loop, buffer);
  SmallVector<Value> operands(call.getOperands().drop_front());
  auto available = [&](Operation *point) {
    return llvm::all_of(operands,
                        [&](Value &v) { return makeAvailable(v, point); }) &&
           makeAvailable(buffer, point);
  };
  if (inner && !available(loop))
    inner = nullptr;
  if (!inner && !available(startPoint))
    return;

  Location loc = call.getLoc();
  OpBuilder builder(startPoint);
  Type i64 = builder.getI64Type(), i32 = builder.getI32Type();
  auto addressOf = [&](OpBuilder &b) {
    Value pointer =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
    return arith::IndexCastOp::create(b, loc, i64, pointer).getResult();
  };
  func::FuncOp startFn = getOrDeclareRuntimeFunction(
      call, "gaccrt_all_reduce_start",
      builder.getFunctionType({i64, i64, i32, i32, i64}, {i64}));
  func::FuncOp waitFn = getOrDeclareRuntimeFunction(
      call, "gaccrt_all_reduce_wait", builder.getFunctionType({i64, i64}, {}));
  auto createStart = [&](OpBuilder &b) {
    SmallVector<Value> startOperands = {addressOf(b)};
    startOperands.append(operands);
    return func::CallOp::create(b, loc, startFn, startOperands).getResult(0);
  };
  Value handle;
  if (inner) {
    // The last write is the loop of the regions of one size (the final
    // region among them): start in its last iteration, right after the
    // body's last access, and pass the handle out through a stack slot at
    // the function's entry (one slot, also when the loop is nested).
    if (auto function = loop->getParentOfType<FunctionOpInterface>())
      builder.setInsertionPointToStart(&function.getFunctionBody().front());
    else
      builder.setInsertionPoint(loop);
    auto slot =
        memref::AllocaOp::create(builder, loc, MemRefType::get({}, i64));
    builder.setInsertionPoint(inner);
    Value next = arith::AddIOp::create(builder, loc, loop.getInductionVar(),
                                       loop.getStep());
    Value isLast = arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::sge, next, loop.getUpperBound());
    auto ifLast = scf::IfOp::create(builder, loc, isLast);
    builder.setInsertionPointToStart(ifLast.thenBlock());
    memref::StoreOp::create(builder, loc, createStart(builder), slot,
                            ValueRange{});
    builder.setInsertionPoint(waitPoint);
    handle = memref::LoadOp::create(builder, loc, slot, ValueRange{});
  } else {
    handle = createStart(builder);
    builder.setInsertionPoint(waitPoint);
  }
  func::CallOp::create(builder, loc, waitFn,
                       ValueRange{handle, addressOf(builder)});

  llvm::SetVector<Operation *> constants;
  for (Value value : call.getOperands().drop_front())
    if (matchPattern(value, m_Constant()))
      constants.insert(value.getDefiningOp());
  call.erase();
  // Constants that only the old call used.
  for (Operation *constant : constants)
    if (constant->use_empty())
      constant->erase();
  if (cast->use_empty())
    cast.erase();
  if (address->use_empty())
    address.erase();
}

namespace {
struct OverlapAllReducePass
    : public gacc::impl::OverlapAllReducePassBase<OverlapAllReducePass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    SmallVector<func::CallOp> calls;
    getOperation().walk([&](func::CallOp call) {
      if (call.getCallee() == "gaccrt_all_reduce" &&
          call.getNumOperands() == 5 &&
          call->hasAttr(GaccDialect::kOverlapAttrName))
        calls.push_back(call);
    });
    for (func::CallOp call : calls)
      overlap(call);
  }
};
} // namespace

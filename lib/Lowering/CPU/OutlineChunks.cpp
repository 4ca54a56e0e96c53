//===- OutlineChunks.cpp - bounded functions for LLVM -----------*- C++ -*-===//
//
// The gacc-outline-chunks pass: a block with more than `max-loops` loops (the
// body of a deep step, or of the loop over its micro-batch regions) is cut
// into chunks of consecutive operations with at most `max-loops` loops each,
// and each chunk becomes a private function called in its place. LLVM's
// loop passes (LICM above all) cost time proportional to the size of the
// function around each loop, so a step of L layers in one function compiles
// in time quadratic in L; in functions of bounded size it is linear.
//
// Cheap pure operations (constants, views and casts of buffers, pointer
// offsets, scalar arithmetic) and invariant loads stay where they are and
// are cloned into every chunk that uses them, so that a chunk sees the same
// base pointers and constant offsets as before (alias analysis keeps its
// precision); the other values a chunk uses are arguments, and the values
// it defines that are used after it are results. Stack allocations stay in
// the parent (a chunk may not return one). Chunk functions are `noinline`
// (a `passthrough` attribute): LLVM's inliner would otherwise put the
// functions called once back into their caller.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::gacc {
#define GEN_PASS_DEF_OUTLINECHUNKSPASS
#include "gacc/Lowering/CPU/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// The size of an operation for LLVM: its loops and its operations (itself
/// and the nested ones included).
struct Weight {
  int64_t loops = 0;
  int64_t ops = 0;

  Weight &operator+=(const Weight &other) {
    loops += other.loops;
    ops += other.ops;
    return *this;
  }
};
} // namespace

static Weight getWeight(Operation *op) {
  Weight weight;
  op->walk([&](Operation *nested) {
    ++weight.ops;
    if (isa<LoopLikeOpInterface>(nested))
      ++weight.loops;
  });
  return weight;
}

/// Whether `op` is cloned into the chunks that use it instead of being
/// outlined: a pure operation without regions whose results describe
/// buffers or indices (constants, views, casts, index arithmetic), or a
/// scalar of arith (the `beta` of an accumulating GEMM, a select on the
/// region's index: passed from chunk to chunk instead, a hundred of them
/// made every call and the step's own function slow to compile).
static bool isCheap(Operation *op) {
  // A load of memory that does not change while the function runs (a
  // field of a parallel loop's context, gacc-parallel-loops-to-runtime):
  // loaded again where used, not passed from chunk to chunk (a long loop
  // body's chunks returned hundreds of buffer descriptors).
  if (auto load = dyn_cast<LLVM::LoadOp>(op))
    return load.getInvariant() && !load.getVolatile_() &&
           load.getOrdering() == LLVM::AtomicOrdering::not_atomic;
  if (op->getNumRegions() != 0 || !isPure(op))
    return false;
  if (op->hasTrait<OpTrait::ConstantLike>() || isa<ViewLikeOpInterface>(op) ||
      isa<memref::CastOp, memref::ReinterpretCastOp, memref::GetGlobalOp,
          memref::ExtractAlignedPointerAsIndexOp,
          memref::ExtractStridedMetadataOp, UnrealizedConversionCastOp,
          LLVM::ConstantOp, LLVM::AddressOfOp, LLVM::ZeroOp, LLVM::GEPOp>(op))
    return true;
  // Scalar arithmetic (offsets, sizes, trip counts, GEMM coefficients).
  return op->getDialect() == op->getContext()->getLoadedDialect("arith") &&
         llvm::all_of(op->getResultTypes(),
                      [](Type t) { return t.isIntOrIndexOrFloat(); });
}

/// Whether `op` stays in the parent block, passed to chunks as an argument.
static bool isStackAllocation(Operation *op) {
  return isa<memref::AllocaOp, LLVM::AllocaOp>(op);
}

namespace {
struct OutlineChunksPass
    : public mlir::gacc::impl::OutlineChunksPassBase<OutlineChunksPass> {
  using OutlineChunksPassBase::OutlineChunksPassBase;
  void runOnOperation() override;

private:
  void processBlock(Block &block, func::FuncOp parent);
  /// Outlines the operations `ops` (in order, of one block) into a new
  /// function; leaves them in place when one of them defines a stack
  /// allocation used after them.
  void outline(ArrayRef<Operation *> ops, func::FuncOp parent);

  SymbolTable *symbols = nullptr;
  SmallVector<func::FuncOp> worklist;
};
} // namespace

void OutlineChunksPass::processBlock(Block &block, func::FuncOp parent) {
  SmallVector<std::pair<Operation *, Weight>> weights;
  Weight total;
  int64_t outlinable = 0;
  for (Operation &op : block.without_terminator()) {
    weights.push_back({&op, getWeight(&op)});
    // The operations that stay count for nothing.
    if (isCheap(&op) || isStackAllocation(&op))
      continue;
    total += weights.back().second;
    ++outlinable;
  }
  auto fits = [&](const Weight &weight) {
    return weight.loops <= maxLoops && weight.ops <= maxOps;
  };
  if (fits(total))
    return;
  SmallVector<Operation *> chunk;
  llvm::SmallPtrSet<Operation *, 32> inChunk;
  Weight chunkWeight;
  auto flush = [&] {
    // Nothing gained by a chunk of a few operations without loops (an
    // allocation and its views), or of the whole block.
    if ((chunkWeight.loops > 0 || chunkWeight.ops > maxOps / 4) &&
        llvm::count_if(chunk, [](Operation *op) {
          return !isCheap(op) && !isStackAllocation(op);
        }) < outlinable)
      outline(chunk, parent);
    chunk.clear();
    inChunk.clear();
    chunkWeight = Weight();
  };
  for (auto [op, weight] : weights) {
    if (!fits(weight) && op->getNumRegions() != 0) {
      // Too large for one chunk: its own blocks are cut instead.
      flush();
      for (Region &region : op->getRegions())
        for (Block &nested : region)
          processBlock(nested, parent);
      continue;
    }
    Weight grown = chunkWeight;
    grown += weight;
    if (!fits(grown))
      flush();
    // A cheap operation or stack allocation stays in the parent unless it
    // is computed from the chunk.
    if ((isCheap(op) || isStackAllocation(op)) &&
        llvm::none_of(op->getOperands(), [&](Value operand) {
          return inChunk.contains(operand.getDefiningOp());
        }))
      continue;
    chunk.push_back(op);
    inChunk.insert(op);
    chunkWeight += weight;
  }
  flush();
  // The cheap operations whose uses all moved into chunks (as clones).
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block)))
    if (isCheap(&op) && op.use_empty())
      op.erase();
}

void OutlineChunksPass::outline(ArrayRef<Operation *> ops,
                                func::FuncOp parent) {
  llvm::SmallPtrSet<Operation *, 32> inChunk(ops.begin(), ops.end());
  auto isInside = [&](Operation *op) {
    for (Operation *o = op; o; o = o->getParentOp())
      if (inChunk.contains(o))
        return true;
    return false;
  };
  // Values used inside that are defined outside: cheap ones (and the
  // cheap ones they are computed from) are cloned, the others passed.
  llvm::SetVector<Operation *> clones;
  llvm::SetVector<Value> arguments;
  std::function<void(Value)> use = [&](Value value) {
    Operation *def = value.getDefiningOp();
    if (def && isInside(def))
      return;
    if (def && isCheap(def)) {
      if (clones.contains(def))
        return;
      for (Value operand : def->getOperands())
        use(operand);
      clones.insert(def);
      return;
    }
    // A block argument of a region inside the chunk is inside.
    if (auto arg = dyn_cast<BlockArgument>(value))
      if (isInside(arg.getOwner()->getParentOp()))
        return;
    arguments.insert(value);
  };
  for (Operation *op : ops)
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        use(operand);
    });
  // Values defined inside that are used after the chunk.
  SmallVector<Value> results;
  for (Operation *op : ops)
    for (Value result : op->getResults())
      if (llvm::any_of(result.getUsers(),
                       [&](Operation *user) { return !isInside(user); })) {
        if (isStackAllocation(op))
          return;
        results.push_back(result);
      }

  Operation *last = ops.back();
  OpBuilder builder(parent);
  builder.setInsertionPointAfter(parent);
  SmallVector<Type> argTypes, resultTypes;
  for (Value value : arguments)
    argTypes.push_back(value.getType());
  for (Value value : results)
    resultTypes.push_back(value.getType());
  auto func = func::FuncOp::create(
      builder, last->getLoc(), (parent.getSymName() + "_chunk").str(),
      builder.getFunctionType(argTypes, resultTypes));
  func.setPrivate();
  func->setAttr("llvm.linkage",
                LLVM::LinkageAttr::get(builder.getContext(),
                                       LLVM::linkage::Linkage::Internal));
  // Carried to the llvm.func by the conversion, to LLVM IR as `noinline`.
  func->setAttr("passthrough",
                builder.getArrayAttr({builder.getStringAttr("noinline")}));
  symbols->insert(func);
  Block *body = func.addEntryBlock();
  IRMapping mapping;
  for (auto [value, arg] : llvm::zip(arguments, body->getArguments()))
    mapping.map(value, arg);
  builder.setInsertionPointToStart(body);
  for (Operation *clone : clones)
    builder.clone(*clone, mapping);

  // The call after the last operation of the chunk: the cheap operations
  // and stack allocations between its operations that stay in the parent
  // define nothing the chunk's own operations feed.
  builder.setInsertionPointAfter(last);
  auto call = func::CallOp::create(builder, last->getLoc(), func,
                                   arguments.getArrayRef());
  for (auto [result, replacement] : llvm::zip(results, call.getResults()))
    result.replaceUsesWithIf(replacement, [&](OpOperand &operand) {
      return !isInside(operand.getOwner());
    });
  for (Operation *op : ops) {
    op->moveBefore(body, body->end());
    op->walk([&](Operation *nested) {
      for (OpOperand &operand : nested->getOpOperands())
        if (Value mapped = mapping.lookupOrNull(operand.get()))
          operand.set(mapped);
    });
  }
  builder.setInsertionPointToEnd(body);
  func::ReturnOp::create(builder, last->getLoc(), results);
  worklist.push_back(func);
}

void OutlineChunksPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable table(module);
  symbols = &table;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      worklist.push_back(func);
  while (!worklist.empty()) {
    func::FuncOp func = worklist.pop_back_val();
    if (func.getBody().hasOneBlock())
      processBlock(func.getBody().front(), func);
  }
}

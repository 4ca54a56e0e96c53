//===- GpuSerialKernels.cpp - host code on device memory as kernels -------===//
//
// The gacc-gpu-serial-kernels pass of the CUDA lowering: after linalg is
// lowered to loops, runs of host code that read or write memory (serial
// reduction loops, rank-0 updates) would touch device memory from the host;
// each run moves into a one-iteration scf.parallel, which becomes a
// one-thread GPU kernel.
//
//===----------------------------------------------------------------------===//

#include "GpuHostCode.h"

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define DEBUG_TYPE "gacc-gpu-serial-kernels"

namespace mlir::gacc {
#define GEN_PASS_DEF_GPUSERIALKERNELSPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// Returns true when `op` reads or writes device memory through
/// memref.load/store (itself or nested).
static bool touchesMemory(Operation *op) {
  WalkResult result = op->walk([](Operation *nested) {
    return isa<memref::LoadOp, memref::StoreOp>(nested) &&
                   !accessesHostSlot(nested)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// Returns true when `op` may join a run of serial device code.
static bool isComputeOp(Operation *op) {
  if (isa<scf::ParallelOp, gpu::LaunchOp>(op) ||
      op->hasTrait<OpTrait::IsTerminator>() ||
      op->hasTrait<OpTrait::ConstantLike>() || holdsHostWork(op))
    return false;
  if (touchesMemory(op))
    return true;
  Dialect *dialect = op->getDialect();
  if (dialect &&
      (dialect->getNamespace() == "arith" ||
       dialect->getNamespace() == "math" || dialect->getNamespace() == "index"))
    return true;
  if (isa<affine::AffineApplyOp, affine::AffineMinOp, affine::AffineMaxOp>(op))
    return true;
  // A branch or loop of scalar code (a schedule on the step counter): a
  // compute op when everything in it is one (it holds no host work, which
  // the first test excludes).
  if (!isa<scf::IfOp, scf::ForOp, scf::WhileOp, scf::IndexSwitchOp,
           scf::ExecuteRegionOp>(op))
    return false;
  WalkResult nested = op->walk([&](Operation *inner) {
    if (inner == op || inner->hasTrait<OpTrait::IsTerminator>() ||
        inner->hasTrait<OpTrait::ConstantLike>() ||
        isa<scf::IfOp, scf::ForOp, scf::WhileOp, scf::IndexSwitchOp,
            scf::ExecuteRegionOp>(inner))
      return WalkResult::advance();
    return isComputeOp(inner) ? WalkResult::advance() : WalkResult::interrupt();
  });
  return !nested.wasInterrupted();
}

/// The store of a loop nest's innermost body that accumulates into a
/// location fixed for the whole nest: `store(add(load(M[I]), x), M[I])`
/// with I defined outside the nest, the only store of the body and the
/// only access to M; every other op of the body only loads or is pure.
/// Returns the store and sets `addend` (x) and `kind`.
static memref::StoreOp matchNestAccumulation(Block &body, Operation *nest,
                                             Value &addend,
                                             arith::AtomicRMWKind &kind) {
  memref::StoreOp store;
  for (Operation &op : body.without_terminator()) {
    if (auto candidate = dyn_cast<memref::StoreOp>(op)) {
      if (store)
        return {};
      store = candidate;
      continue;
    }
    if (!isa<memref::LoadOp>(op) && !isMemoryEffectFree(&op))
      return {};
    if (op.getNumRegions())
      return {};
  }
  if (!store)
    return {};
  Operation *add = store.getValue().getDefiningOp();
  if (!add || !add->hasOneUse() || !isa<arith::AddFOp, arith::AddIOp>(add))
    return {};
  kind = isa<arith::AddFOp>(add) ? arith::AtomicRMWKind::addf
                                 : arith::AtomicRMWKind::addi;
  for (unsigned i = 0; i < 2; ++i) {
    // The running value read in the body itself (a load before the loop
    // reads the value the loop started from: each iteration overwrites it).
    auto load = add->getOperand(i).getDefiningOp<memref::LoadOp>();
    if (!load || load->getBlock() != &body ||
        load.getMemRef() != store.getMemRef() ||
        load.getIndices() != store.getIndices() || !load->hasOneUse())
      continue;
    addend = add->getOperand(1 - i);
    if (addend == load.getResult())
      return {};
    // Element types whose atomics the NVPTX back end emits, as
    // gacc-gpu-split-reductions requires (a bf16 sum stays serial).
    Type type = addend.getType();
    if (!type.isF32() && !type.isF64() && !type.isInteger(32) &&
        !type.isInteger(64))
      return {};
    // The location is fixed for the nest; no other access to the memref.
    for (Value index : store.getIndices())
      if (nest->isAncestor(index.getParentRegion()->getParentOp()))
        return {};
    // Through any view of the same buffer too (an expand_shape of it).
    Value root = getViewRoot(store.getMemRef());
    for (Operation &op : body.without_terminator())
      if (&op != load && &op != store.getOperation())
        if (auto other = dyn_cast<memref::LoadOp>(op);
            other && getViewRoot(other.getMemRef()) == root)
          return {};
    return store;
  }
  return {};
}

/// A serial loop nest that only adds into one location (a full reduction:
/// the loss, a count) becomes a parallel loop whose iterations add
/// atomically, instead of a one-thread kernel.
static void parallelizeAccumulations(Block &block) {
  SmallVector<scf::ForOp> nests;
  for (Operation &op : block)
    if (auto loop = dyn_cast<scf::ForOp>(op))
      nests.push_back(loop);
  for (scf::ForOp outer : nests) {
    SmallVector<scf::ForOp> loops = {outer};
    while (true) {
      Block *body = loops.back().getBody();
      if (!loops.back().getInitArgs().empty())
        break;
      auto inner = dyn_cast<scf::ForOp>(body->front());
      if (!inner || (std::next(body->begin(), 1) != body->end() &&
                     &*std::next(body->begin(), 1) != body->getTerminator()))
        break;
      loops.push_back(inner);
    }
    if (llvm::any_of(
            loops, [](scf::ForOp loop) { return !loop.getInitArgs().empty(); }))
      continue;
    Block *body = loops.back().getBody();
    Value addend;
    arith::AtomicRMWKind kind;
    memref::StoreOp store = matchNestAccumulation(*body, outer, addend, kind);
    if (!store)
      continue;
    // Bounds must be defined outside the nest.
    SmallVector<Value> lbs, ubs, steps;
    bool invariant = true;
    for (scf::ForOp loop : loops)
      for (Value bound :
           {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()}) {
        if (outer->isAncestor(bound.getParentRegion()->getParentOp()))
          invariant = false;
      }
    if (!invariant)
      continue;
    for (scf::ForOp loop : loops) {
      lbs.push_back(loop.getLowerBound());
      ubs.push_back(loop.getUpperBound());
      steps.push_back(loop.getStep());
    }
    OpBuilder builder(outer);
    Location loc = outer.getLoc();
    auto parallel = scf::ParallelOp::create(builder, loc, lbs, ubs, steps);
    IRMapping mapping;
    for (auto [loop, iv] : llvm::zip(loops, parallel.getInductionVars()))
      mapping.map(loop.getInductionVar(), iv);
    builder.setInsertionPoint(parallel.getBody()->getTerminator());
    Operation *add = store.getValue().getDefiningOp();
    for (Operation &op : body->without_terminator()) {
      if (&op == store.getOperation() || &op == add ||
          (op.getNumResults() == 1 && op.getResult(0) != addend &&
           llvm::is_contained(add->getOperands(), op.getResult(0))))
        continue;
      builder.clone(op, mapping);
    }
    memref::AtomicRMWOp::create(
        builder, store.getLoc(), kind, mapping.lookupOrDefault(addend),
        store.getMemRef(),
        llvm::to_vector(llvm::map_range(store.getIndices(), [&](Value index) {
          return mapping.lookupOrDefault(index);
        })));
    outer.erase();
  }
}

/// Maximal runs of compute ops in `block` that contain a memory access.
static SmallVector<SmallVector<Operation *>> collectRuns(Block &block) {
  SmallVector<SmallVector<Operation *>> runs;
  SmallVector<Operation *> current;
  auto flush = [&] {
    // Runs of pure ops alone stay on the host.
    if (llvm::any_of(current, touchesMemory))
      runs.push_back(current);
    current.clear();
  };
  for (Operation &op : block) {
    if (isComputeOp(&op))
      current.push_back(&op);
    else
      flush();
  }
  flush();
  return runs;
}

/// The uses of `value` outside `inRun` (by the ancestor in `block`).
static SmallVector<OpOperand *> getOutsideUses(Value value, Block &block,
                                               DenseSet<Operation *> &inRun) {
  SmallVector<OpOperand *> uses;
  for (OpOperand &use : value.getUses())
    if (!inRun.contains(block.findAncestorOpInBlock(*use.getOwner())))
      uses.push_back(&use);
  return uses;
}

/// True when every use can read the value from device memory instead: it is
/// inside a parallel loop (a future kernel), a compute op of the block
/// (which joins a serial kernel once it loads its operand), nested in
/// a compute op of the block (a future serial kernel), or a
/// compute op of a host block nested in this one (in the loop over the
/// micro-batches of one size; nested blocks are processed after this one,
/// and the load of the value put before the op joins the op's serial
/// kernel there).
static bool canReadOnDevice(ArrayRef<OpOperand *> uses, Block &block) {
  return llvm::all_of(uses, [&](OpOperand *use) {
    Operation *user = use->getOwner();
    Operation *ancestor = block.findAncestorOpInBlock(*user);
    if (!ancestor)
      return false;
    if (ancestor == user)
      return isComputeOp(user);
    for (Operation *op = user; op != ancestor; op = op->getParentOp()) {
      if (isa<scf::ParallelOp>(op->getParentOp()))
        return true;
      if (isInHostBlock(op))
        return isComputeOp(op);
    }
    // Inside a compute op of the block (a serial loop reading the sample
    // count): the op becomes a serial kernel, which loads the value where
    // it is used.
    return isComputeOp(ancestor);
  });
}

/// A scalar computed in a serial kernel and used after it: stored to a
/// device scalar by the kernel and loaded where it is used.
static void spillToDevice(Value value, ArrayRef<OpOperand *> uses,
                          Operation *runStart, Block &block) {
  Location loc = value.getLoc();
  OpBuilder builder(runStart);
  auto type = MemRefType::get({}, value.getType());
  Value buffer = gpu::AllocOp::create(builder, loc, type, /*asyncToken=*/Type(),
                                      ValueRange{}, ValueRange{}, ValueRange{},
                                      /*hostShared=*/false)
                     .getMemref();
  builder.setInsertionPointAfterValue(value);
  memref::StoreOp::create(builder, loc, value, buffer, ValueRange{});
  for (OpOperand *use : uses) {
    builder.setInsertionPoint(use->getOwner());
    use->set(memref::LoadOp::create(builder, loc, buffer, ValueRange{}));
  }
  builder.setInsertionPoint(block.getTerminator());
  gpu::DeallocOp::create(builder, loc, /*asyncToken=*/Type(), ValueRange{},
                         buffer);
}

struct GpuSerialKernelsPass
    : public gacc::impl::GpuSerialKernelsPassBase<GpuSerialKernelsPass> {
  /// Spills the values that escape a run until none does; false (after a
  /// diagnostic) when one is used where the host needs it.
  bool spillEscapingValues(Block &block) {
    // Each spill moves the escape later in the block: bounded by its size.
    for (size_t round = 0, rounds = block.getOperations().size() + 1;
         round < rounds; ++round) {
      bool spilled = false;
      for (SmallVector<Operation *> &run : collectRuns(block)) {
        DenseSet<Operation *> inRun(run.begin(), run.end());
        for (Operation *op : run)
          for (Value result : op->getResults()) {
            SmallVector<OpOperand *> uses =
                getOutsideUses(result, block, inRun);
            if (uses.empty())
              continue;
            if (!result.getType().isIntOrIndexOrFloat() ||
                !canReadOnDevice(uses, block)) {
              op->emitOpError("computes a value used outside its serial "
                              "kernel; cannot move it to the GPU")
                      .attachNote(uses.front()->getOwner()->getLoc())
                  << "used here";
              return false;
            }
            spillToDevice(result, uses, run.front(), block);
            spilled = true;
          }
        if (spilled)
          break; // the runs changed
      }
      if (!spilled)
        return true;
    }
    return true;
  }

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    WalkResult result = getOperation().walk([&](func::FuncOp func) {
      // Each block before the host blocks nested in it (the loop over
      // micro-batches): a value it spills into a nested compute op is
      // loaded right before that op, and the load joins the op's serial
      // kernel when the nested block is processed.
      for (Block *block : getHostBlocks(func)) {
        parallelizeAccumulations(*block);
        if (!block->mightHaveTerminator() || !spillEscapingValues(*block))
          return WalkResult::interrupt();
        for (SmallVector<Operation *> &run : collectRuns(*block)) {
          OpBuilder builder(run.front());
          Location loc = run.front()->getLoc();
          Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
          Value one = arith::ConstantIndexOp::create(builder, loc, 1);
          auto loop = scf::ParallelOp::create(builder, loc, ValueRange{zero},
                                              ValueRange{one}, ValueRange{one});
          for (Operation *op : run)
            op->moveBefore(loop.getBody()->getTerminator());
        }
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace

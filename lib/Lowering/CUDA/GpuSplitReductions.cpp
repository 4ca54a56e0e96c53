//===- GpuSplitReductions.cpp - reductions split over GPU threads ---------===//
//
// The gacc-gpu-split-reductions pass of the CUDA lowering, after linalg is
// lowered to loops and before serial code becomes kernels: a reduction loop
// that would run serially in too few threads (a full reduction: one thread;
// a bias gradient over few columns: one thread per column, each looping
// over the batch) is split into chunks. Each chunk is a parallel iteration
// that reduces a strided slice of the reduced dimension serially into a
// register and combines its partial result into the output with the
// memref.atomic_rmw of its combiner: exact for max, min and bitwise
// combiners (associative and commutative, also for NaN and signed zeros
// with maximumf/minimumf), a different rounding order for sums. Each chunk
// starts from its first element, so no identity value is needed and the
// output's initial value is combined once, as in the serial loop.
//
//===----------------------------------------------------------------------===//

#include "GpuHostCode.h"

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#define DEBUG_TYPE "gacc-gpu-split-reductions"

namespace mlir::gacc {
#define GEN_PASS_DEF_GPUSPLITREDUCTIONSPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// Threads a split aims for in all (parallel iterations times chunks).
constexpr int64_t kTargetThreads = 8192;
/// Elements a chunk reduces at least, unless that leaves a full reduction
/// to one thread.
constexpr int64_t kMinChunkElements = 8;

/// The atomic read-modify-write of a combiner whose result does not depend
/// on the order of combination (addf up to rounding, as the atomic sums of
/// gacc-gpu-serial-kernels); none for other ops. Each becomes one LLVM
/// atomicrmw (maximumf: fmaximum, NaN-propagating as arith.maximumf;
/// maxnumf: fmax), which the NVPTX back end emits as an atom instruction or
/// a compare-and-swap loop.
static std::optional<arith::AtomicRMWKind> getAtomicKind(Operation *op) {
  using Kind = arith::AtomicRMWKind;
  return llvm::TypeSwitch<Operation *, std::optional<Kind>>(op)
      .Case([](arith::AddFOp) { return Kind::addf; })
      .Case([](arith::AddIOp) { return Kind::addi; })
      .Case([](arith::MaximumFOp) { return Kind::maximumf; })
      .Case([](arith::MinimumFOp) { return Kind::minimumf; })
      .Case([](arith::MaxNumFOp) { return Kind::maxnumf; })
      .Case([](arith::MinNumFOp) { return Kind::minnumf; })
      .Case([](arith::MaxSIOp) { return Kind::maxs; })
      .Case([](arith::MinSIOp) { return Kind::mins; })
      .Case([](arith::MaxUIOp) { return Kind::maxu; })
      .Case([](arith::MinUIOp) { return Kind::minu; })
      .Case([](arith::AndIOp) { return Kind::andi; })
      .Case([](arith::OrIOp) { return Kind::ori; })
      .Case([](arith::XOrIOp) { return Kind::xori; })
      .Default([](Operation *) { return std::nullopt; });
}

/// `store(combine(load(A[I]), x), A[I])` in a reduction loop's body.
struct Accumulation {
  memref::StoreOp store;
  memref::LoadOp load;
  Operation *combine = nullptr;
  Value addend;
};

/// Matches the innermost body of a reduction nest: one store, of a
/// splittable combiner of a load of the same location and a value x, at
/// indices defined outside `reductionRoot` (the outermost reduction loop);
/// no other access to that memref; every other op loads or is pure and has
/// no region.
static std::optional<Accumulation> matchAccumulation(Block &body,
                                                     Operation *reductionRoot) {
  Accumulation acc;
  for (Operation &op : body.without_terminator()) {
    if (op.getNumRegions())
      return std::nullopt;
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (acc.store)
        return std::nullopt;
      acc.store = store;
      continue;
    }
    if (!isa<memref::LoadOp>(op) && !isMemoryEffectFree(&op))
      return std::nullopt;
  }
  if (!acc.store)
    return std::nullopt;
  acc.combine = acc.store.getValue().getDefiningOp();
  if (!acc.combine || acc.combine->getBlock() != &body ||
      !acc.combine->hasOneUse() || !getAtomicKind(acc.combine))
    return std::nullopt;
  for (unsigned i = 0; i < 2; ++i) {
    auto load = acc.combine->getOperand(i).getDefiningOp<memref::LoadOp>();
    if (!load || load->getBlock() != &body ||
        load.getMemRef() != acc.store.getMemRef() ||
        load.getIndices() != acc.store.getIndices() || !load->hasOneUse())
      continue;
    acc.load = load;
    acc.addend = acc.combine->getOperand(1 - i);
    break;
  }
  if (!acc.load || acc.addend == acc.load.getResult())
    return std::nullopt;
  // Element types whose atomics the NVPTX back end emits (as atom or a
  // compare-and-swap loop).
  Type type = acc.addend.getType();
  if (!type.isF32() && !type.isF64() && !type.isInteger(32) &&
      !type.isInteger(64))
    return std::nullopt;
  for (Value index : acc.store.getIndices())
    if (reductionRoot->isAncestor(index.getParentRegion()->getParentOp()))
      return std::nullopt;
  // No other read of the accumulator, through any view of its buffer.
  Value root = getViewRoot(acc.store.getMemRef());
  for (Operation &op : body.without_terminator())
    if (auto other = dyn_cast<memref::LoadOp>(op);
        other && other != acc.load && getViewRoot(other.getMemRef()) == root)
      return std::nullopt;
  return acc;
}

/// The constant trip count of a loop dimension, if any (positive steps).
static std::optional<int64_t> getTripCount(Value lb, Value ub, Value step) {
  std::optional<int64_t> l = getConstantIntValue(lb);
  std::optional<int64_t> u = getConstantIntValue(ub);
  std::optional<int64_t> s = getConstantIntValue(step);
  if (!l || !u || !s || *s <= 0)
    return std::nullopt;
  return *u <= *l ? 0 : (*u - *l + *s - 1) / *s;
}

/// A reduction nest: an optional scf.parallel whose body is only the nest,
/// then perfectly nested scf.for loops (no iteration arguments) whose
/// bounds are defined outside it.
struct ReductionNest {
  Operation *root;          ///< the scf.parallel, else the outermost loop
  scf::ParallelOp parallel; ///< null for a full reduction
  SmallVector<scf::ForOp> loops;
};

static std::optional<ReductionNest> matchNest(Operation &op) {
  ReductionNest nest;
  nest.root = &op;
  scf::ForOp outer;
  if (auto parallel = dyn_cast<scf::ParallelOp>(op)) {
    if (parallel.getNumResults() || !parallel.getInitVals().empty())
      return std::nullopt;
    Block *body = parallel.getBody();
    if (body->getOperations().size() != 2)
      return std::nullopt;
    outer = dyn_cast<scf::ForOp>(body->front());
    nest.parallel = parallel;
  } else {
    outer = dyn_cast<scf::ForOp>(op);
  }
  if (!outer)
    return std::nullopt;
  nest.loops.push_back(outer);
  while (true) {
    Block *body = nest.loops.back().getBody();
    if (body->getOperations().size() != 2)
      break;
    auto inner = dyn_cast<scf::ForOp>(body->front());
    if (!inner)
      break;
    nest.loops.push_back(inner);
  }
  for (scf::ForOp loop : nest.loops) {
    if (!loop.getInitArgs().empty())
      return std::nullopt;
    for (Value bound :
         {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
      if (op.isAncestor(bound.getParentRegion()->getParentOp()))
        return std::nullopt;
  }
  return nest;
}

/// Clones the body ops that compute the addend (all but the accumulation)
/// at the insertion point of `builder`.
static void cloneAddend(OpBuilder &builder, Block &body, Accumulation &acc,
                        IRMapping &mapping) {
  for (Operation &op : body.without_terminator())
    if (&op != acc.store.getOperation() && &op != acc.combine &&
        &op != acc.load.getOperation())
      builder.clone(op, mapping);
}

/// Splits one reduction nest; false when it is left as is.
static bool splitReduction(ReductionNest nest) {
  scf::ForOp inner = nest.loops.back();
  std::optional<Accumulation> acc =
      matchAccumulation(*inner.getBody(), nest.loops.front());
  if (!acc)
    return false;
  // Parallel iterations: the scf.parallel's and the outer reduction loops'
  // (whose iterations combine atomically too).
  int64_t parallelTrips = 1;
  if (nest.parallel)
    for (auto [lb, ub, step] :
         llvm::zip(nest.parallel.getLowerBound(), nest.parallel.getUpperBound(),
                   nest.parallel.getStep())) {
      std::optional<int64_t> trips = getTripCount(lb, ub, step);
      if (!trips)
        return false;
      parallelTrips *= *trips;
    }
  for (scf::ForOp loop : ArrayRef(nest.loops).drop_back()) {
    std::optional<int64_t> trips = getTripCount(
        loop.getLowerBound(), loop.getUpperBound(), loop.getStep());
    if (!trips)
      return false;
    parallelTrips *= *trips;
  }
  std::optional<int64_t> reduced = getTripCount(
      inner.getLowerBound(), inner.getUpperBound(), inner.getStep());
  if (!reduced || *reduced == 0 || parallelTrips == 0 ||
      parallelTrips >= kTargetThreads)
    return false;
  int64_t chunks =
      std::min((kTargetThreads + parallelTrips - 1) / parallelTrips,
               *reduced / kMinChunkElements);
  // A reduction never stays in one thread: a full reduction's outer loops
  // become parallel, and a single loop (or one in a one-iteration
  // scf.parallel, a micro-batch of one sample) gets at least two chunks.
  if (!nest.parallel)
    chunks = std::max<int64_t>(chunks, 1);
  if (parallelTrips == 1)
    chunks = std::max<int64_t>(chunks, std::min<int64_t>(*reduced, 2));
  if (chunks * parallelTrips < 2 || (nest.parallel && chunks < 2))
    return false;

  // Consecutive chunks read consecutive elements when the reduced loop
  // indexes the contiguous dimension: then the chunk is the first parallel
  // dimension (threadIdx.x), else the last.
  bool chunkFirst = false;
  inner.getBody()->walk([&](memref::LoadOp load) {
    if (load != acc->load && !load.getIndices().empty() &&
        load.getIndices().back() == inner.getInductionVar())
      chunkFirst = true;
  });

  Location loc = nest.root->getLoc();
  OpBuilder builder(nest.root);
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value numChunks = arith::ConstantIndexOp::create(builder, loc, chunks);
  SmallVector<Value> lbs, ubs, steps;
  auto addChunk = [&] {
    lbs.push_back(zero);
    ubs.push_back(numChunks);
    steps.push_back(one);
  };
  if (chunkFirst)
    addChunk();
  if (nest.parallel) {
    llvm::append_range(lbs, nest.parallel.getLowerBound());
    llvm::append_range(ubs, nest.parallel.getUpperBound());
    llvm::append_range(steps, nest.parallel.getStep());
  }
  for (scf::ForOp loop : ArrayRef(nest.loops).drop_back()) {
    lbs.push_back(loop.getLowerBound());
    ubs.push_back(loop.getUpperBound());
    steps.push_back(loop.getStep());
  }
  if (!chunkFirst)
    addChunk();
  auto parallel = scf::ParallelOp::create(builder, loc, lbs, ubs, steps);
  SmallVector<Value> ivs = parallel.getInductionVars();
  Value chunk = chunkFirst ? ivs.front() : ivs.back();
  IRMapping mapping;
  unsigned position = chunkFirst ? 1 : 0;
  if (nest.parallel)
    for (Value iv : nest.parallel.getInductionVars())
      mapping.map(iv, ivs[position++]);
  for (scf::ForOp loop : ArrayRef(nest.loops).drop_back())
    mapping.map(loop.getInductionVar(), ivs[position++]);

  // The chunk's first element, then every chunks-th one after it.
  builder.setInsertionPoint(parallel.getBody()->getTerminator());
  Value step = inner.getStep();
  Value first =
      arith::AddIOp::create(builder, loc, inner.getLowerBound(),
                            arith::MulIOp::create(builder, loc, chunk, step));
  Value stride = arith::MulIOp::create(builder, loc, numChunks, step);
  Value second = arith::AddIOp::create(builder, loc, first, stride);
  mapping.map(inner.getInductionVar(), first);
  cloneAddend(builder, *inner.getBody(), *acc, mapping);
  Value initial = mapping.lookupOrDefault(acc->addend);
  auto loop = scf::ForOp::create(
      builder, loc, second, inner.getUpperBound(), stride, ValueRange{initial},
      [&](OpBuilder &nested, Location nestedLoc, Value iv, ValueRange args) {
        IRMapping inLoop = mapping;
        inLoop.map(inner.getInductionVar(), iv);
        cloneAddend(nested, *inner.getBody(), *acc, inLoop);
        inLoop.map(acc->load.getResult(), args.front());
        Operation *combined = nested.clone(*acc->combine, inLoop);
        scf::YieldOp::create(nested, nestedLoc, combined->getResults());
      });
  Value partial = loop.getResult(0);

  SmallVector<Value> indices = llvm::to_vector(
      llvm::map_range(acc->store.getIndices(), [&](Value index) {
        return mapping.lookupOrDefault(index);
      }));
  Value output = acc->store.getMemRef();
  memref::AtomicRMWOp::create(builder, acc->store.getLoc(),
                              *getAtomicKind(acc->combine), partial, output,
                              indices);
  nest.root->erase();
  return true;
}

struct GpuSplitReductionsPass
    : public gacc::impl::GpuSplitReductionsPassBase<GpuSplitReductionsPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    getOperation().walk([&](func::FuncOp func) {
      // Also the reductions in the loop over the micro-batches of one size.
      for (Block *block : getHostBlocks(func)) {
        SmallVector<ReductionNest> nests;
        for (Operation &op : *block)
          if (std::optional<ReductionNest> nest = matchNest(op))
            nests.push_back(*nest);
        for (ReductionNest &nest : nests)
          (void)splitReduction(nest);
      }
    });
  }
};
} // namespace

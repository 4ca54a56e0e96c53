//===- ParallelLoopsToRuntime.cpp - loops on the runtime's threads -*- C++ -*-//
//
// The gacc-parallel-loops-to-runtime pass: the outermost scf.parallel loops
// of the host code (elementwise work, the parallel dimensions of
// reductions) become calls of gaccrt_parallel_for, which runs slices of the
// loop's first dimension on the GEMM threads. Without it every loop of a
// step runs on the calling thread while the other cores wait for the next
// GEMM, and reads the halves of the GEMM results that they wrote.
//
// The loop body is outlined to `func.func private @<f>_parallel(%ctx:
// !llvm.ptr, %lo: i64, %hi: i64)`. The values the body uses from above are
// stored in a struct on the caller's stack (one slot per function, in its
// entry block, sized for the largest struct): memrefs as their LLVM descriptors
// through unrealized casts, which the conversion to the LLVM dialect
// reconciles; index values as i64. Constants are cloned into the body instead.
//
//===----------------------------------------------------------------------===//

#include "Common/RuntimeCalls.h"
#include "ConcurrentCopies.h"

#include "gacc/Lowering/CPU/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Conversion/LLVMCommon/LoweringOptions.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

#define DEBUG_TYPE "gacc-parallel-loops-to-runtime"

namespace mlir::gacc {
#define GEN_PASS_DEF_PARALLELLOOPSTORUNTIMEPASS
#include "gacc/Lowering/CPU/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// The trip count assumed for a loop with dynamic bounds.
static constexpr int64_t kDynamicTrips = 64;

static int64_t saturatingMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0)
    return 0;
  if (a > std::numeric_limits<int64_t>::max() / b)
    return std::numeric_limits<int64_t>::max();
  return a * b;
}

static int64_t saturatingAdd(int64_t a, int64_t b) {
  if (a > std::numeric_limits<int64_t>::max() - b)
    return std::numeric_limits<int64_t>::max();
  return a + b;
}

/// The trip count of one loop dimension, if its bounds and step are
/// constant (and the step positive).
static std::optional<int64_t> getConstantTripCount(Value lower, Value upper,
                                                   Value step) {
  std::optional<int64_t> lb = getConstantIntValue(lower);
  std::optional<int64_t> ub = getConstantIntValue(upper);
  std::optional<int64_t> st = getConstantIntValue(step);
  if (!lb || !ub || !st || *st <= 0)
    return std::nullopt;
  if (*ub <= *lb)
    return 0;
  return llvm::divideCeil(*ub - *lb, *st);
}

/// The trip count of one loop dimension, kDynamicTrips if not constant.
static int64_t getTripCount(Value lower, Value upper, Value step) {
  return getConstantTripCount(lower, upper, step).value_or(kDynamicTrips);
}

/// The product of the trip counts of `loop`'s dimensions from `first` on.
static int64_t getTripCount(scf::ParallelOp loop, unsigned first) {
  int64_t trips = 1;
  for (unsigned dim = first, e = loop.getNumLoops(); dim < e; ++dim)
    trips = saturatingMul(trips, getTripCount(loop.getLowerBound()[dim],
                                              loop.getUpperBound()[dim],
                                              loop.getStep()[dim]));
  return trips;
}

/// The scalar operations one execution of `block` runs, loops counted with
/// their trip counts.
static int64_t estimateWork(Block &block) {
  int64_t work = 0;
  for (Operation &op : block) {
    int64_t opWork = 1;
    if (auto loop = dyn_cast<scf::ForOp>(op))
      opWork = saturatingMul(getTripCount(loop.getLowerBound(),
                                          loop.getUpperBound(), loop.getStep()),
                             estimateWork(*loop.getBody()));
    else if (auto loop = dyn_cast<scf::ParallelOp>(op))
      opWork =
          saturatingMul(getTripCount(loop, 0), estimateWork(*loop.getBody()));
    else
      for (Region &region : op.getRegions())
        for (Block &nested : region)
          opWork = saturatingAdd(opWork, estimateWork(nested));
    work = saturatingAdd(work, opWork);
  }
  return work;
}

/// Whether `op` may run on another thread, in any order with the other
/// iterations: pure computation, memref loads, stores and views, nothing
/// that calls, allocates or copies.
static bool isComputeOnly(Operation *op) {
  if (isa<arith::ArithDialect, math::MathDialect, index::IndexDialect,
          ub::UBDialect>(op->getDialect()))
    return true;
  if (isa<affine::AffineApplyOp, affine::AffineMinOp, affine::AffineMaxOp>(op))
    return true;
  if (isa<scf::SCFDialect>(op->getDialect()))
    return !isa<scf::ExecuteRegionOp>(op);
  return isa<memref::LoadOp, memref::StoreOp, memref::DimOp,
             memref::ExtractStridedMetadataOp>(op) ||
         (isa<memref::MemRefDialect>(op->getDialect()) &&
          isa<ViewLikeOpInterface>(op) && !isa<memref::AllocaOp>(op));
}

namespace {
/// One value the outlined body uses from above, stored in the context
/// struct.
struct Capture {
  Value value;
  /// Its type in the struct.
  Type fieldType;
};

class LoopOutliner {
public:
  LoopOutliner(ModuleOp module, int64_t minWork)
      : module(module), minWork(minWork), dataLayout(module),
        converter(module.getContext(),
                  LowerToLLVMOptions(module.getContext(), dataLayout)),
        symbols(module) {}

  /// Outlines `loop` if it qualifies.
  void outline(scf::ParallelOp loop);
  /// Lowers `unit` (gacc-fuse-gemm-epilogues) to gaccrt_sgemm_epilogue, or
  /// to its call and loop in turn (the loop outlined as any other) when it
  /// is not a gaccrt_sgemm call and one 2-D loop from zero by ones.
  void outlineEpilogue(scf::ExecuteRegionOp unit);
  /// Sizes each function's context slot for the largest of its structs.
  void finish();

private:
  /// The context struct's field type of `value`, if it can travel there.
  Type getFieldType(Value value);
  /// Collects into `captures` the values that `loop` uses from above (its
  /// bounds included) except constants, which go into `constants`; false
  /// when one cannot travel in the context struct.
  bool collectCaptures(scf::ParallelOp loop, SmallVectorImpl<Capture> &captures,
                       SmallVectorImpl<Operation *> &constants);
  /// Creates the function of `type` (a context pointer first) that runs
  /// `loop`'s body, after `loop`'s function, with the constants cloned and
  /// the captures loaded from the struct into `mapping`; `builder` is left
  /// at the end of its entry block.
  func::FuncOp createBody(scf::ParallelOp loop, FunctionType type,
                          ArrayRef<Capture> captures,
                          ArrayRef<Operation *> constants, IRMapping &mapping,
                          OpBuilder &builder);
  /// Stores the captures into the context struct of `loop`'s function at
  /// `builder`'s insertion point and returns the context pointer.
  Value storeContext(OpBuilder &builder, scf::ParallelOp loop,
                     ArrayRef<Capture> captures);

  ModuleOp module;
  int64_t minWork;
  DataLayout dataLayout;
  LLVMTypeConverter converter;
  SymbolTable symbols;
  /// The stack slot of each function's context structs (in its entry block)
  /// and the bytes of the largest.
  llvm::MapVector<func::FuncOp, std::pair<LLVM::AllocaOp, uint64_t>>
      contextSlots;
};

void LoopOutliner::finish() {
  for (auto &[func, slot] : contextSlots)
    slot.first.setElemType(LLVM::LLVMArrayType::get(
        IntegerType::get(module.getContext(), 8), slot.second));
}
} // namespace

Type LoopOutliner::getFieldType(Value value) {
  Type type = value.getType();
  if (isa<IndexType>(type))
    return IntegerType::get(type.getContext(), 64);
  if (isa<IntegerType, FloatType>(type))
    return LLVM::isCompatibleType(type) ? type : Type();
  if (isa<MemRefType>(type))
    return converter.convertType(type);
  return {};
}

bool LoopOutliner::collectCaptures(scf::ParallelOp loop,
                                   SmallVectorImpl<Capture> &captures,
                                   SmallVectorImpl<Operation *> &constants) {
  // The values from above: the loop's bounds and what its body uses.
  llvm::SetVector<Value> used(loop->getOperands().begin(),
                              loop->getOperands().end());
  getUsedValuesDefinedAbove(loop.getRegion(), used);
  for (Value value : used) {
    Operation *def = value.getDefiningOp();
    if (def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
        def->hasTrait<OpTrait::ConstantLike>()) {
      if (!llvm::is_contained(constants, def))
        constants.push_back(def);
      continue;
    }
    Type fieldType = getFieldType(value);
    if (!fieldType)
      return false;
    captures.push_back({value, fieldType});
  }
  return true;
}

/// The context struct of `captures`.
static LLVM::LLVMStructType getStructType(MLIRContext *ctx,
                                          ArrayRef<Capture> captures) {
  SmallVector<Type> fieldTypes = llvm::map_to_vector(
      captures, [](const Capture &c) { return c.fieldType; });
  return LLVM::LLVMStructType::getLiteral(ctx, fieldTypes);
}

func::FuncOp LoopOutliner::createBody(scf::ParallelOp loop, FunctionType type,
                                      ArrayRef<Capture> captures,
                                      ArrayRef<Operation *> constants,
                                      IRMapping &mapping, OpBuilder &builder) {
  Location loc = loop.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(loop.getContext());
  auto structType = getStructType(loop.getContext(), captures);
  // The outlined body, after the function that runs it.
  auto func = loop->getParentOfType<func::FuncOp>();
  func::FuncOp body = createInternalFunction(func, "_parallel", type, symbols);
  Block *entry = &body.front();
  builder.setInsertionPointToStart(entry);
  for (Operation *constant : constants)
    builder.clone(*constant, mapping);
  for (auto [index, capture] : llvm::enumerate(captures)) {
    Value field = LLVM::GEPOp::create(
        builder, loc, ptrType, structType, entry->getArgument(0),
        ArrayRef<LLVM::GEPArg>{0, int32_t(index)});
    // Invariant: the caller fills the context before the loop and reads it
    // back only after, so gacc-outline-chunks may load a field again in each
    // chunk of a long body instead of passing it on.
    Value value = LLVM::LoadOp::create(builder, loc, capture.fieldType, field,
                                       /*alignment=*/0, /*isVolatile=*/false,
                                       /*isNonTemporal=*/false,
                                       /*isInvariant=*/true);
    Type valueType = capture.value.getType();
    if (isa<IndexType>(valueType))
      value = arith::IndexCastOp::create(builder, loc, valueType, value);
    else if (isa<MemRefType>(valueType))
      value = UnrealizedConversionCastOp::create(builder, loc, valueType, value)
                  .getResult(0);
    mapping.map(capture.value, value);
  }
  return body;
}

Value LoopOutliner::storeContext(OpBuilder &builder, scf::ParallelOp loop,
                                 ArrayRef<Capture> captures) {
  Location loc = loop.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(loop.getContext());
  auto i64Type = IntegerType::get(loop.getContext(), 64);
  if (captures.empty())
    return LLVM::ZeroOp::create(builder, loc, ptrType);
  auto structType = getStructType(loop.getContext(), captures);
  auto func = loop->getParentOfType<func::FuncOp>();
  // One slot per function, sized for its largest struct (finish()).
  auto &[slot, bytes] = contextSlots[func];
  if (!slot) {
    auto allocaBuilder = OpBuilder::atBlockBegin(&func.getBody().front());
    Value one = LLVM::ConstantOp::create(allocaBuilder, loc, i64Type,
                                         allocaBuilder.getI64IntegerAttr(1));
    slot = LLVM::AllocaOp::create(allocaBuilder, loc, ptrType, structType, one,
                                  /*alignment=*/16);
  }
  bytes = std::max<uint64_t>(bytes, dataLayout.getTypeSize(structType));
  for (auto [index, capture] : llvm::enumerate(captures)) {
    Value value = capture.value;
    if (isa<IndexType>(value.getType()))
      value = arith::IndexCastOp::create(builder, loc, i64Type, value);
    else if (isa<MemRefType>(value.getType()))
      value = UnrealizedConversionCastOp::create(builder, loc,
                                                 capture.fieldType, value)
                  .getResult(0);
    Value field =
        LLVM::GEPOp::create(builder, loc, ptrType, structType, slot,
                            ArrayRef<LLVM::GEPArg>{0, int32_t(index)});
    LLVM::StoreOp::create(builder, loc, value, field);
  }
  return slot;
}

void LoopOutliner::outline(scf::ParallelOp loop) {
  if (!loop.getInitVals().empty())
    return;
  // Concurrent copies (gacc-pair-accumulating-gemms) are independent by
  // construction and run whatever their work.
  bool copies = loop->hasAttr(kConcurrentCopiesAttr) && loop.getNumLoops() == 1;
  int64_t iterationWork = 0;
  if (!copies) {
    // Only computation, and every store indexed by the first dimension's
    // induction variable itself: the slices write disjoint elements (as
    // they do for a linalg op's parallel dimension; a store elsewhere would
    // race).
    Value firstIndex = loop.getInductionVars()[0];
    WalkResult computeOnly = loop.getBody()->walk([&](Operation *op) {
      auto store = dyn_cast<memref::StoreOp>(op);
      if (!isComputeOnly(op) ||
          (store && !llvm::is_contained(store.getIndices(), firstIndex)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    });
    if (computeOnly.wasInterrupted())
      return;
    int64_t bodyWork = estimateWork(*loop.getBody());
    iterationWork = saturatingMul(getTripCount(loop, 1), bodyWork);
    if (saturatingMul(getTripCount(loop, 0), bodyWork) < minWork)
      return;
  }

  SmallVector<Capture> captures;
  SmallVector<Operation *> constants;
  if (!collectCaptures(loop, captures, constants))
    return;

  MLIRContext *ctx = loop.getContext();
  Location loc = loop.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto i64Type = IntegerType::get(ctx, 64);
  auto indexType = IndexType::get(ctx);
  auto bodyType = FunctionType::get(ctx, {ptrType, i64Type, i64Type}, {});
  OpBuilder builder(ctx);
  IRMapping mapping;
  func::FuncOp body =
      createBody(loop, bodyType, captures, constants, mapping, builder);
  Block *entry = &body.front();
  // Iterations [lo, hi) of the first dimension: lb + lo * step up to
  // min(lb + hi * step, ub).
  Value lower = mapping.lookup(loop.getLowerBound()[0]);
  Value upper = mapping.lookup(loop.getUpperBound()[0]);
  Value step = mapping.lookup(loop.getStep()[0]);
  auto toIndex = [&](Value value) -> Value {
    return arith::IndexCastOp::create(builder, loc, indexType, value);
  };
  Value sliceLower = arith::AddIOp::create(
      builder, loc, lower,
      arith::MulIOp::create(builder, loc, toIndex(entry->getArgument(1)),
                            step));
  Value sliceUpper = arith::MinSIOp::create(
      builder, loc, upper,
      arith::AddIOp::create(
          builder, loc, lower,
          arith::MulIOp::create(builder, loc, toIndex(entry->getArgument(2)),
                                step)));
  if (copies) {
    // The copies in turn: an scf.for, so that the parallel loops inside
    // them are outermost in the outlined function and run on its threads
    // (each call of it has its own context slots).
    auto slice = scf::ForOp::create(builder, loc, sliceLower, sliceUpper, step);
    mapping.map(loop.getInductionVars()[0], slice.getInductionVar());
    OpBuilder sliceBuilder(slice.getBody()->getTerminator());
    for (Operation &op : loop.getBody()->without_terminator())
      sliceBuilder.clone(op, mapping);
  } else {
    auto slice = cast<scf::ParallelOp>(builder.clone(*loop, mapping));
    slice.getLowerBoundMutable()[0].assign(sliceLower);
    slice.getUpperBoundMutable()[0].assign(sliceUpper);
  }
  func::ReturnOp::create(builder, loc);

  // The caller: the captures stored in the struct, then the call.
  builder.setInsertionPoint(loop);
  Value context = storeContext(builder, loop, captures);
  // The first dimension's trip count, ceil((ub - lb) / step); the runtime
  // runs nothing when it is not positive.
  Value count;
  if (std::optional<int64_t> trips = getConstantTripCount(
          loop.getLowerBound()[0], loop.getUpperBound()[0], loop.getStep()[0]))
    count = arith::ConstantIndexOp::create(builder, loc, *trips);
  else
    count = arith::DivSIOp::create(
        builder, loc,
        arith::SubIOp::create(
            builder, loc,
            arith::AddIOp::create(
                builder, loc,
                arith::SubIOp::create(builder, loc, loop.getUpperBound()[0],
                                      loop.getLowerBound()[0]),
                loop.getStep()[0]),
            arith::ConstantIndexOp::create(builder, loc, 1)),
        loop.getStep()[0]);
  // gaccrt_parallel_copies(body, context, count) or
  // gaccrt_parallel_for(body, context, count, work).
  SmallVector<Type> parameters = {bodyType, ptrType, i64Type};
  Value work;
  if (!copies) {
    parameters.push_back(i64Type);
    work = arith::ConstantIntOp::create(builder, loc, i64Type, iterationWork);
  }
  func::FuncOp runtime = getOrDeclareRuntimeFunction(
      loop, copies ? "gaccrt_parallel_copies" : "gaccrt_parallel_for",
      FunctionType::get(ctx, parameters, {}));
  Value bodyRef = func::ConstantOp::create(builder, loc, bodyType,
                                           SymbolRefAttr::get(body));
  SmallVector<Value> arguments = {
      bodyRef, context,
      arith::IndexCastOp::create(builder, loc, i64Type, count)};
  if (work)
    arguments.push_back(work);
  func::CallOp::create(builder, loc, runtime, arguments);
  loop.erase();
}

/// Moves the ops of `unit`'s block (but its yield) before it and erases it.
static void unwrap(scf::ExecuteRegionOp unit) {
  Block &body = unit.getRegion().front();
  body.getTerminator()->erase();
  unit->getBlock()->getOperations().splice(Block::iterator(unit),
                                           body.getOperations());
  unit.erase();
}

void LoopOutliner::outlineEpilogue(scf::ExecuteRegionOp unit) {
  Block &block = unit.getRegion().front();
  func::CallOp call;
  scf::ParallelOp loop;
  bool other = false;
  for (Operation &op : block.without_terminator()) {
    if (func::CallOp sgemm = getSgemmCall(&op); sgemm && !call && !loop)
      call = sgemm;
    else if (auto parallel = dyn_cast<scf::ParallelOp>(op); parallel && !loop)
      loop = parallel;
    else if (op.getNumRegions() != 0 || !isMemoryEffectFree(&op))
      other = true;
  }
  auto isIndex = [](Value value, int64_t expected) {
    std::optional<int64_t> constant = getConstantIntValue(value);
    return constant && *constant == expected;
  };
  SmallVector<Capture> captures;
  SmallVector<Operation *> constants;
  if (other || !call || !loop || loop.getNumLoops() != 2 ||
      !loop.getInitVals().empty() ||
      !llvm::all_of(loop.getLowerBound(),
                    [&](Value v) { return isIndex(v, 0); }) ||
      !llvm::all_of(loop.getStep(), [&](Value v) { return isIndex(v, 1); }) ||
      !collectCaptures(loop, captures, constants)) {
    unwrap(unit);
    if (loop)
      outline(loop);
    return;
  }

  // epilogue(context, i0, i1, j0, j1): the loop over [i0, i1) x [j0, j1).
  MLIRContext *ctx = loop.getContext();
  Location loc = loop.getLoc();
  auto ptrType = LLVM::LLVMPointerType::get(ctx);
  auto i64Type = IntegerType::get(ctx, 64);
  auto indexType = IndexType::get(ctx);
  auto bodyType =
      FunctionType::get(ctx, {ptrType, i64Type, i64Type, i64Type, i64Type}, {});
  OpBuilder builder(ctx);
  IRMapping mapping;
  func::FuncOp body =
      createBody(loop, bodyType, captures, constants, mapping, builder);
  Block *entry = &body.front();
  SmallVector<Value> bounds = llvm::map_to_vector(
      entry->getArguments().drop_front(), [&](BlockArgument argument) -> Value {
        return arith::IndexCastOp::create(builder, loc, indexType, argument);
      });
  auto slice = cast<scf::ParallelOp>(builder.clone(*loop, mapping));
  for (unsigned dim = 0; dim < 2; ++dim) {
    slice.getLowerBoundMutable()[dim].assign(bounds[2 * dim]);
    slice.getUpperBoundMutable()[dim].assign(bounds[2 * dim + 1]);
  }
  func::ReturnOp::create(builder, loc);

  // gaccrt_sgemm_epilogue(the call's operands, body, context) where the
  // loop was (what it uses from the block is defined by then).
  builder.setInsertionPoint(loop);
  Value context = storeContext(builder, loop, captures);
  SmallVector<Value> arguments(call.getOperands());
  arguments.push_back(func::ConstantOp::create(builder, loc, bodyType,
                                               SymbolRefAttr::get(body)));
  arguments.push_back(context);
  createRuntimeCall(builder, call.getLoc(), "gaccrt_sgemm_epilogue", arguments);
  loop.erase();
  call.erase();
  unwrap(unit);
}

namespace {
struct ParallelLoopsToRuntimePass
    : public gacc::impl::ParallelLoopsToRuntimePassBase<
          ParallelLoopsToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    LoopOutliner outliner(module, minWork);
    // Concurrent copies first: the loops inside them then become outermost
    // in the outlined copies.
    for (int copies = 1; copies >= 0; --copies) {
      SmallVector<scf::ParallelOp> loops;
      // Loops whose parents up to their function are scf loops and branches
      // (not another scf.parallel, nor a region that runs elsewhere, like a
      // gpu.launch).
      module.walk([&](scf::ParallelOp loop) {
        if (loop->hasAttr(kConcurrentCopiesAttr) != bool(copies))
          return;
        // A GEMM's epilogue: lowered with its GEMM below.
        if (auto unit = dyn_cast<scf::ExecuteRegionOp>(loop->getParentOp());
            unit && unit->hasAttr(kGemmEpilogueAttr))
          return;
        Operation *parent = loop->getParentOp();
        while (parent && isa<scf::ForOp, scf::IfOp, scf::WhileOp,
                             scf::IndexSwitchOp, scf::ExecuteRegionOp>(parent))
          parent = parent->getParentOp();
        if (isa_and_nonnull<func::FuncOp>(parent))
          loops.push_back(loop);
      });
      for (scf::ParallelOp loop : loops)
        outliner.outline(loop);
    }
    // After the concurrent copies, whose outlined bodies hold their
    // epilogues' units then.
    SmallVector<scf::ExecuteRegionOp> units;
    module.walk([&](scf::ExecuteRegionOp unit) {
      if (unit->hasAttr(kGemmEpilogueAttr))
        units.push_back(unit);
    });
    for (scf::ExecuteRegionOp unit : units)
      outliner.outlineEpilogue(unit);
    outliner.finish();
  }
};
} // namespace

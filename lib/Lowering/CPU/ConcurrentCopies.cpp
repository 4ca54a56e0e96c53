//===- ConcurrentCopies.cpp - two micro-batches on two threads ------------===//
//
// On two cores, a small micro-batch's GEMMs and loops split between the
// cores hand each other half of every activation through the caches after
// each op (a 32 x 512 bias add and ReLU takes 8 us on two threads against
// 2 us on one). Two micro-batches side by side, one per core, keep each
// micro-batch's activations in one core's caches; only their accumulations
// into shared gradients, which both copies write, wait for both.
//
//===----------------------------------------------------------------------===//

#include "ConcurrentCopies.h"
#include "Common/RuntimeCalls.h"

#include "gacc/Support/IRUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::gacc;

namespace {

/// The buffers ops read and write, each named by its root (bufferKey).
struct Accesses {
  llvm::DenseSet<const void *> reads, writes;
  /// Set when an op may touch memory it does not name.
  bool unknown = false;

  bool touchesMemory() const {
    return unknown || !reads.empty() || !writes.empty();
  }
  void merge(const Accesses &other) {
    reads.insert(other.reads.begin(), other.reads.end());
    writes.insert(other.writes.begin(), other.writes.end());
    unknown |= other.unknown;
  }
  /// Whether running `other` in any order with these accesses may change
  /// what either reads or leaves written.
  bool conflictsWith(const Accesses &other) const {
    if (unknown && other.touchesMemory())
      return true;
    if (other.unknown && touchesMemory())
      return true;
    auto meets = [](const llvm::DenseSet<const void *> &a,
                    const llvm::DenseSet<const void *> &b) {
      return llvm::any_of(a, [&](const void *key) { return b.contains(key); });
    };
    return meets(writes, other.writes) || meets(writes, other.reads) ||
           meets(reads, other.writes);
  }
};

/// The buffer that `value` views: its root allocation, an argument of a
/// public function (which the runner allocates separately), or a global
/// (by name: each memref.get_global is another value of the same memory).
/// Null when the buffer may be reached another way.
const void *getBufferKey(Value value) {
  Value root = getViewRoot(value);
  if (auto global = root.getDefiningOp<memref::GetGlobalOp>())
    return global.getNameAttr().getAsOpaquePointer();
  if (root.getDefiningOp<memref::AllocOp>() ||
      root.getDefiningOp<memref::AllocaOp>())
    return root.getAsOpaquePointer();
  if (auto arg = dyn_cast<BlockArgument>(root)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (func && func.isPublic() && arg.getOwner()->isEntryBlock())
      return root.getAsOpaquePointer();
  }
  return nullptr;
}

/// Adds what `op` and the ops nested in it read and write to `accesses`.
void collectAccesses(Operation *op, Accesses &accesses) {
  auto note = [&](Value value, bool write) {
    // An effect on a pointer or another handle (an llvm.load or store):
    // memory this does not name.
    if (!isa<BaseMemRefType>(value.getType())) {
      accesses.unknown = true;
      return;
    }
    const void *key = getBufferKey(value);
    if (!key) {
      accesses.unknown = true;
      return;
    }
    (write ? accesses.writes : accesses.reads).insert(key);
  };
  if (auto call = dyn_cast<func::CallOp>(op)) {
    StringRef callee = call.getCallee();
    // Tracing keeps per-thread state and touches no buffer of the step.
    if (callee == "gaccrt_trace_region_begin" ||
        callee == "gaccrt_trace_region_end")
      return;
    // The GEMMs: their memref operands read (C too, for beta), their Cs
    // written.
    if (std::optional<SmallVector<unsigned, 2>> written =
            getGemmWrittenOperands(call)) {
      for (unsigned i = 4, e = call.getNumOperands(); i < e; ++i)
        note(call.getOperand(i), false);
      for (unsigned i : *written)
        note(call.getOperand(i), true);
      return;
    }
    accesses.unknown = true;
    return;
  }
  // A fresh buffer: nothing else sees it before its own ops do.
  if (isa<memref::AllocOp, memref::AllocaOp>(op))
    return;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (effects) {
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (MemoryEffects::EffectInstance &instance : instances) {
      if (isa<MemoryEffects::Allocate>(instance.getEffect()))
        continue;
      Value value = instance.getValue();
      if (!value) {
        accesses.unknown = true;
        continue;
      }
      note(value, !isa<MemoryEffects::Read>(instance.getEffect()));
    }
  } else if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>()) {
    accesses.unknown = true;
  }
  // The nested ops too, also under an interface that names only the op's
  // operands: a gather's memref.load in a linalg.generic body reads a
  // buffer the generic does not list.
  for (Region &region : op->getRegions())
    for (Block &block : region)
      for (Operation &nested : block)
        collectAccesses(&nested, accesses);
}

/// The bytes of `value`'s static memref type, looking through casts; 0 when
/// unknown.
int64_t getStaticBytes(Value value) {
  while (auto cast = value.getDefiningOp<memref::CastOp>())
    value = cast.getSource();
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || !type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return 0;
  return type.getNumElements() *
         llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

/// The most bytes that the static allocations among `ops` (in order) hold at
/// once, each from its op to its last use among them, or to their end when
/// an op after them uses it.
int64_t getPeakBytes(ArrayRef<Operation *> ops, Block *body) {
  DenseMap<Operation *, int64_t> position;
  for (auto [index, op] : llvm::enumerate(ops))
    position[op] = index;
  SmallVector<int64_t> delta(ops.size() + 1, 0);
  for (auto [index, op] : llvm::enumerate(ops)) {
    auto alloc = dyn_cast<memref::AllocOp>(op);
    if (!alloc)
      continue;
    int64_t end = index;
    for (Operation *user : alloc->getUsers()) {
      Operation *ancestor = body->findAncestorOpInBlock(*user);
      auto it = ancestor ? position.find(ancestor) : position.end();
      end = std::max<int64_t>(
          end, it == position.end() ? int64_t(ops.size()) - 1 : it->second);
    }
    int64_t bytes = getStaticBytes(alloc.getResult());
    delta[index] += bytes;
    delta[end + 1] -= bytes;
  }
  int64_t live = 0, peak = 0;
  for (int64_t change : delta)
    peak = std::max(peak, live += change);
  return peak;
}

bool isGemmCall(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  return call && call.getCallee() == "gaccrt_sgemm";
}

bool isRegionEnd(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  return call && call.getCallee() == "gaccrt_trace_region_end" &&
         call.getNumOperands() == 1;
}

/// Whether `a` and `b` are the same value or equal constants.
bool isSameValue(Value a, Value b) {
  if (a == b)
    return true;
  Attribute x, y;
  return matchPattern(a, m_Constant(&x)) && matchPattern(b, m_Constant(&y)) &&
         x == y;
}

/// The buffer a gaccrt_sgemm operand (a memref.cast) was cast from.
Value getCastFrom(Value operand) {
  auto cast = operand.getDefiningOp<memref::CastOp>();
  return cast ? cast.getSource() : operand;
}

/// Whether `first` and `second` are gaccrt_sgemm calls of the two copies
/// that read the same op(B) (a layer's weight) with the same flags and
/// scalars, their other operands of the same types (mapped through
/// `mapping` when `first` is not cloned yet).
bool canFuseRows(Operation *firstOp, Operation *secondOp,
                 const IRMapping &mapping) {
  func::CallOp first = getSgemmCall(firstOp), second = getSgemmCall(secondOp);
  if (!first || !second)
    return false;
  auto lookup = [&](Value value) { return mapping.lookupOrDefault(value); };
  for (unsigned i = 0; i < 4; ++i)
    if (!isSameValue(lookup(first.getOperand(i)), lookup(second.getOperand(i))))
      return false;
  return lookup(getCastFrom(first.getOperand(5))) ==
             lookup(getCastFrom(second.getOperand(5))) &&
         getCastFrom(first.getOperand(4)).getType() ==
             getCastFrom(second.getOperand(4)).getType() &&
         getCastFrom(first.getOperand(6)).getType() ==
             getCastFrom(second.getOperand(6)).getType();
}

/// The least bytes of a weight worth reading once for both copies: a
/// quarter of a 1 MiB L2, so that a smaller one is still in the core's
/// caches when the second copy's GEMM reads it after the first's (width 64:
/// 16 KiB; 3x512: 1 MiB, where one pass for both made the one-thread m = 8
/// step 2 % faster).
constexpr int64_t kLockstepWeightBytes = 256 * 1024;

/// Pairs up the copies' segments (each up to and including a GEMM): a
/// segment of each copy whose GEMMs read the same weight (canFuseRows) go
/// together; a GEMM of the first copy without a partner (its
/// accumulations, which stay out of the second case) goes alone. Calls
/// `emit(segment index, copy, partnered)` in order, a partnered first-copy
/// segment right before its partner; returns the partnered GEMMs' largest
/// weight in bytes.
template <typename Emit>
int64_t alignSegments(ArrayRef<SmallVector<Operation *>> first,
                      ArrayRef<SmallVector<Operation *>> second,
                      const IRMapping &mapping, Emit emit) {
  int64_t largest = 0;
  size_t i = 0, j = 0;
  while (i < first.size() || j < second.size()) {
    if (i < first.size() && j < second.size() &&
        canFuseRows(first[i].back(), second[j].back(), mapping)) {
      Value weight = getCastFrom(getSgemmCall(first[i].back()).getOperand(5));
      largest = std::max(largest, getStaticBytes(weight));
      emit(i++, 0, true);
      emit(j++, 1, true);
    } else if (i < first.size()) {
      emit(i++, 0, false);
    } else {
      emit(j++, 1, false);
    }
  }
  return largest;
}

/// Replaces `first` and `second` (canFuseRows) by one
/// gaccrt_sgemm_rows_pair at `second` (only ops of the second copy,
/// independent of the first's, lie in between).
void fuseRows(func::CallOp first, func::CallOp second) {
  OpBuilder builder(second);
  SmallVector<Value> operands(first.getOperands());
  operands.push_back(second.getOperand(4));
  operands.push_back(second.getOperand(6));
  createRuntimeCall(builder, second.getLoc(), "gaccrt_sgemm_rows_pair",
                    operands);
  second.erase();
  first.erase();
}

/// For when the copies run in turn (one GEMM thread, or libraries with
/// threads of their own: gaccrt_copies_concurrent), a second form of them
/// in lockstep: `copies` goes into the then-branch of an scf.if on
/// gaccrt_copies_concurrent(2), and the else-branch holds the two cases'
/// ops interleaved, up to and including each GEMM, the first copy's then
/// the second's (any interleaving keeps the cases' meaning: every op of the
/// second case is independent of every op of the first). Each pair of
/// GEMMs that then read one weight becomes one gaccrt_sgemm_rows_pair: one
/// pass over the weight for both micro-batches (the arena holds both
/// copies' buffers anyway). The first copy's trace region ends after the
/// second's, so that the regions nest.
void buildLockstep(scf::ParallelOp copies, Block *caseBlocks[2], bool anySize) {
  auto segments = [](Block *block) {
    SmallVector<SmallVector<Operation *>> result(1);
    for (Operation &op : block->without_terminator()) {
      result.back().push_back(&op);
      if (isGemmCall(&op))
        result.emplace_back();
    }
    // (A case that ends with its GEMM has no ops after it.)
    if (result.back().empty())
      result.pop_back();
    return result;
  };
  SmallVector<SmallVector<Operation *>> first = segments(caseBlocks[0]);
  SmallVector<SmallVector<Operation *>> second = segments(caseBlocks[1]);
  // Only where a weight is large enough to be worth one pass for both: the
  // second form doubles the code of the loop body.
  IRMapping mapping;
  if (alignSegments(first, second, mapping, [](size_t, int, bool) {}) <
      (anySize ? 1 : kLockstepWeightBytes))
    return;

  Location loc = copies.getLoc();
  OpBuilder builder(copies);
  scf::IfOp branch = createIfCopiesConcurrent(builder, loc);
  copies->moveBefore(branch.thenBlock()->getTerminator());
  builder.setInsertionPoint(branch.elseBlock()->getTerminator());

  SmallVector<Operation *> firstEnds;
  SmallVector<std::pair<func::CallOp, func::CallOp>> gemms;
  auto emit = [&](ArrayRef<Operation *> segment, bool fromFirst) {
    Operation *last = nullptr;
    for (Operation *op : segment) {
      if (fromFirst && isRegionEnd(op)) {
        firstEnds.push_back(op);
        continue;
      }
      last = builder.clone(*op, mapping);
    }
    return getSgemmCall(last);
  };
  func::CallOp partner;
  alignSegments(first, second, mapping,
                [&](size_t index, int copy, bool partnered) {
                  func::CallOp gemm =
                      emit(copy ? second[index] : first[index], copy == 0);
                  if (partnered && copy == 0)
                    partner = gemm;
                  else if (partnered)
                    gemms.push_back({partner, gemm});
                });
  for (Operation *end : firstEnds)
    builder.clone(*end, mapping);
  for (auto [a, b] : gemms)
    fuseRows(a, b);
}

} // namespace

scf::IfOp mlir::gacc::createIfCopiesConcurrent(OpBuilder &builder,
                                               Location loc) {
  MLIRContext *ctx = builder.getContext();
  Type i32 = builder.getI32Type(), i64 = builder.getI64Type();
  func::FuncOp query = getOrDeclareRuntimeFunction(
      builder.getInsertionBlock()->getParentOp(), "gaccrt_copies_concurrent",
      FunctionType::get(ctx, {i64}, {i32}));
  Value count = arith::ConstantIntOp::create(builder, loc, i64, 2);
  Value answer =
      func::CallOp::create(builder, loc, query, ValueRange{count}).getResult(0);
  Value zero = arith::ConstantIntOp::create(builder, loc, i32, 0);
  Value concurrent = arith::CmpIOp::create(
      builder, loc, arith::CmpIPredicate::ne, answer, zero);
  return scf::IfOp::create(builder, loc, TypeRange{}, concurrent,
                           /*withElseRegion=*/true);
}

bool mlir::gacc::runCopiesConcurrently(scf::ForOp loop, Operation *secondStart,
                                       bool anySize, bool lockstep) {
  Block *body = loop.getBody();
  SmallVector<Operation *> first, second;
  bool inSecond = false;
  for (Operation &op : body->without_terminator()) {
    inSecond |= &op == secondStart;
    (inSecond ? second : first).push_back(&op);
  }
  if (first.empty() || second.empty())
    return false;
  Accesses firstAccesses;
  for (Operation *op : first)
    collectAccesses(op, firstAccesses);
  if (firstAccesses.unknown)
    return false;

  // The second copy's ops that stay after both copies: those that touch
  // the first copy's buffers in a conflicting way (the accumulations into
  // the gradients both copies write), that have effects this cannot name,
  // or that conflict with or use an earlier op that stays.
  llvm::DenseSet<Operation *> stays;
  Accesses stayAccesses;
  for (Operation *op : second) {
    Accesses accesses;
    collectAccesses(op, accesses);
    bool usesStaying = false;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (Operation *ancestor = body->findAncestorOpInBlock(*def))
            usesStaying |= stays.contains(ancestor);
    });
    // The end of the second copy's trace region stays last: its
    // accumulations (and the overlapped all-reduce's start) stay inside it.
    if (isRegionEnd(op) || accesses.unknown || usesStaying ||
        accesses.conflictsWith(firstAccesses) ||
        accesses.conflictsWith(stayAccesses)) {
      stays.insert(op);
      stayAccesses.merge(accesses);
    }
  }
  // Worth a fork and join only when both copies have GEMMs of their own
  // to run side by side.
  SmallVector<Operation *> moving = llvm::filter_to_vector(
      second, [&](Operation *op) { return !stays.contains(op); });
  auto hasGemm = [](ArrayRef<Operation *> ops) {
    return llvm::any_of(ops, [](Operation *op) {
      return getGemmWrittenOperands(op).has_value();
    });
  };
  if (!hasGemm(first) || !hasGemm(moving))
    return false;
  // The memory it costs, the second copy's buffers while both copies run
  // (without it they would reuse the first copy's), at most half the paired
  // accumulators' bytes, which the step holds anyway: a small micro-batch
  // against wide layers. On the 3x512 bench MLP (B = 256) that is m = 4 and
  // 8 (b = 64: 1.0 MiB against 3 MiB; on two threads m = 4 ran 8 % faster
  // side by side than in turn, for 1.1 MiB more of the arena).
  // (Each accumulator once: both halves of paired copies pair into it.)
  int64_t accumulatorBytes = 0;
  llvm::DenseSet<Value> accumulators;
  for (Operation &op : *body)
    if (auto call = dyn_cast<func::CallOp>(op);
        call &&
        (call.getCallee() == "gaccrt_sgemm_pair" ||
         call.getCallee() == "gaccrt_sgemm_quad") &&
        getGemmWrittenOperands(call) &&
        accumulators.insert(getCastFrom(call.getOperands().back())).second)
      accumulatorBytes += getStaticBytes(call.getOperands().back());
  if (!anySize && 2 * getPeakBytes(moving, body) > accumulatorBytes)
    return false;

  // Which side each op goes to: 0 and 1 the cases, -1 after them.
  DenseMap<Operation *, int> sideOf;
  for (Operation *op : first)
    sideOf[op] = 0;
  for (Operation *op : second)
    sideOf[op] = stays.contains(op) ? -1 : 1;
  auto getSide = [&](Operation *op) {
    auto it = sideOf.find(op);
    return it == sideOf.end() ? -1 : it->second;
  };
  // Values a case defines and something outside it uses: their ops (and
  // the case's ops they use) move before the cases. Allocations and
  // effect-free ops only.
  llvm::SetVector<Operation *> hoisted;
  SmallVector<Operation *> worklist;
  for (Operation *op : llvm::concat<Operation *>(first, second)) {
    int side = getSide(op);
    if (side < 0)
      continue;
    for (Operation *user : op->getUsers()) {
      Operation *ancestor = body->findAncestorOpInBlock(*user);
      if (!ancestor || getSide(ancestor) != side) {
        worklist.push_back(op);
        break;
      }
    }
  }
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!hoisted.insert(op))
      continue;
    if (!isa<memref::AllocOp>(op) &&
        (op->getNumRegions() != 0 || !isMemoryEffectFree(op)))
      return false;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (def->getBlock() == body && getSide(def) >= 0)
          worklist.push_back(def);
  }

  Location loc = loop.getLoc();
  OpBuilder builder(first.front());
  Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
  Value one = arith::ConstantIndexOp::create(builder, loc, 1);
  Value two = arith::ConstantIndexOp::create(builder, loc, 2);
  auto copies = scf::ParallelOp::create(builder, loc, ValueRange{zero},
                                        ValueRange{two}, ValueRange{one});
  copies->setAttr(kConcurrentCopiesAttr, builder.getUnitAttr());
  builder.setInsertionPoint(copies.getBody()->getTerminator());
  auto cases = scf::IndexSwitchOp::create(builder, loc, TypeRange{},
                                          copies.getInductionVars()[0],
                                          ArrayRef<int64_t>{0, 1}, 2);
  cases->setAttr(kConcurrentCopiesAttr, builder.getUnitAttr());
  auto addBlock = [&](Region &region) {
    Block *block = builder.createBlock(&region);
    scf::YieldOp::create(builder, loc);
    return block;
  };
  addBlock(cases.getDefaultRegion());
  Block *caseBlocks[2] = {addBlock(cases.getCaseRegions()[0]),
                          addBlock(cases.getCaseRegions()[1])};
  for (Operation *op : llvm::concat<Operation *>(first, second)) {
    int side = getSide(op);
    if (hoisted.contains(op))
      op->moveBefore(copies);
    else if (side >= 0)
      op->moveBefore(caseBlocks[side]->getTerminator());
  }
  // A trace region that began in case 1 ends there too (a thread's regions
  // nest on its own stack), and one of the same index runs around the
  // second copy's part after the cases.
  for (Operation *op : second) {
    auto end = dyn_cast<func::CallOp>(op);
    if (!end || !isRegionEnd(end))
      continue;
    auto begin = llvm::find_if(*caseBlocks[1], [&](Operation &candidate) {
      auto call = dyn_cast<func::CallOp>(candidate);
      return call && call.getCallee() == "gaccrt_trace_region_begin" &&
             call.getOperands() == end.getOperands();
    });
    if (begin == caseBlocks[1]->end())
      continue;
    OpBuilder(caseBlocks[1]->getTerminator()).clone(*end);
    OpBuilder(copies->getBlock(), std::next(copies->getIterator()))
        .clone(*begin);
  }
  if (lockstep)
    buildLockstep(copies, caseBlocks, anySize);
  return true;
}

//===- OutlineCopies.cpp - one function for the copies' like forms --------===//
//
// The gacc-outline-copies pass. gacc-pair-accumulating-gemms leaves the
// micro-batches of a loop body unrolled by two in several forms: the two
// cases of concurrent copies (the first with its accumulations, the second
// without: they run after both), their lockstep form for when the copies
// run in turn, and with paired copies the same again for two micro-batches
// a copy. They are one body at different buffers, offsets and trace ids,
// some of them without a few of the others' ops; on a wide deep model each
// form is tens of thousands of LLVM instructions that LLVM optimizes and
// compiles again (101 layers of 512, m = 8: 79 s of gacc-compile; 31 s
// with this pass).
//
// This pass makes the blocks of one kind calls of one private function: a
// block (the base, the one with the most ops that have effects) and the
// blocks whose effectful ops are the base's in order, with some of them left
// out (each pair of ops equal up to the values from outside the blocks and
// the values of constants, through the effect-free ops that compute their
// operands). The function is the base's body; each value from outside and
// each constant that differs between the blocks is an argument (an integer
// constant as the base's value plus the difference, which the offsets of a
// case's buffers share), and each effectful op that some block lacks runs
// under an i1 argument that says whether the caller has it. Few arguments
// matter: calls with thousands of scalar arguments (a first version passed
// every buffer) made LLVM's code generation superlinear.
//
//===----------------------------------------------------------------------===//

#include "Common/RuntimeCalls.h"
#include "ConcurrentCopies.h"

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/BitVector.h"

#define DEBUG_TYPE "gacc-outline-copies"

namespace mlir::gacc {
#define GEN_PASS_DEF_OUTLINECOPIESPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {

/// Whether `op` is matched through the values it computes rather than in
/// order: no effects, no regions, and speculatable (the function computes
/// the base's value ops for every caller, on stand-in values where the
/// caller lacks the ops that use them: a division by such a zero would be
/// undefined, so divisions stay in order).
bool isValueOp(Operation *op) {
  return op->getNumRegions() == 0 && !op->hasTrait<OpTrait::IsTerminator>() &&
         isPure(op);
}

/// The ops of `block` matched in order: the others but the terminator.
SmallVector<Operation *> getOrderedOps(Block *block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block->without_terminator())
    if (!isValueOp(&op))
      ops.push_back(&op);
  return ops;
}

/// Whether `value` is computed in `block` by value ops from values defined
/// outside it (or constants): a chain that can be cloned elsewhere.
bool isChain(Value value, Block *block) {
  auto result = dyn_cast<OpResult>(value);
  if (!result || result.getOwner()->getBlock() != block ||
      !isValueOp(result.getOwner()))
    return false;
  return llvm::all_of(result.getOwner()->getOperands(), [&](Value operand) {
    return !block->getParent()->isAncestor(operand.getParentRegion()) ||
           isChain(operand, block);
  });
}

/// `value`, or where it is computed in `block`, a clone of its chain at
/// `builder`'s insertion point.
Value materialize(Value value, Block *block, OpBuilder &builder,
                  IRMapping &mapping) {
  if (!block->getParent()->isAncestor(value.getParentRegion()))
    return value;
  if (Value clone = mapping.lookupOrNull(value))
    return clone;
  Operation *def = value.getDefiningOp();
  for (Value operand : def->getOperands())
    materialize(operand, block, builder, mapping);
  builder.clone(*def, mapping);
  return mapping.lookup(value);
}

/// How a block (a member) matches the base: what each of the base's values
/// is there.
class Match {
public:
  Match(Block *base, Block *member) : base(base), member(member) {}

  /// Matches the member's ordered ops to a subsequence of the base's.
  bool align(ArrayRef<Operation *> baseOps, ArrayRef<Operation *> memberOps) {
    unsigned next = 0;
    for (Operation *op : memberOps) {
      while (next < baseOps.size() && !tryOps(baseOps[next], op))
        ++next;
      if (next == baseOps.size())
        return false;
      present.insert(baseOps[next++]);
    }
    return true;
  }

  Block *base, *member;
  /// The base's values defined in it and the member's at their place.
  DenseMap<Value, Value> values;
  /// The base's values from outside it, and the base's values that chains
  /// compute in it where the member's are from outside, and the member's
  /// at their place (from outside it, or computed there by a chain).
  DenseMap<Value, Value> externals;
  /// The base's constants and the member's constants at their place.
  DenseMap<Value, Attribute> constants;
  /// The base's ordered ops the member has.
  DenseSet<Operation *> present;

private:
  bool inBase(Value value) {
    return base->getParent()->isAncestor(value.getParentRegion());
  }
  bool inMember(Value value) {
    return member->getParent()->isAncestor(value.getParentRegion());
  }

  /// Whether `a` (the base's) and `b` are the same value in their blocks;
  /// records what makes them so.
  bool matchValues(Value a, Value b) {
    if (a.getType() != b.getType())
      return false;
    Attribute attrA, attrB;
    bool constantA = matchPattern(a, m_Constant(&attrA));
    if (constantA && matchPattern(b, m_Constant(&attrB))) {
      auto [it, inserted] = constants.try_emplace(a, attrB);
      if (inserted)
        journal.push_back({&constants, a});
      return it->second == attrB;
    }
    // The function has the base's constants as constants (or as an
    // argument for the constants that differ): a block that has some other
    // value there would get the base's constant.
    if (constantA)
      return false;
    // Results of value ops (in the blocks or outside them, like the views
    // of the arena that the cases share with what follows them): the same
    // op of matching operands, which the function computes itself.
    Operation *defA = a.getDefiningOp(), *defB = b.getDefiningOp();
    if (defA && defB && isValueOp(defA) && isValueOp(defB) &&
        !externals.contains(a)) {
      if (auto it = values.find(a); it != values.end()) {
        if (it->second == b)
          return true;
      } else {
        size_t mark = journal.size();
        if (cast<OpResult>(a).getResultNumber() ==
                cast<OpResult>(b).getResultNumber() &&
            matchOps(defA, defB))
          return true;
        rollback(mark);
      }
    }
    // Else, from outside a block, or computed in it by a chain (an index
    // cast that one case keeps and the other's hoisted): an argument.
    if (!inBase(a) || !inMember(b)) {
      if ((inBase(a) && !isChain(a, base)) ||
          (inMember(b) && !isChain(b, member)) || values.contains(a))
        return false;
      auto [it, inserted] = externals.try_emplace(a, b);
      if (inserted)
        journal.push_back({&externals, a});
      return it->second == b;
    }
    // Results of ordered ops and arguments of their blocks.
    if (externals.contains(a))
      return false;
    auto it = values.find(a);
    return it != values.end() && it->second == b;
  }

  void mapValue(Value a, Value b) {
    if (values.try_emplace(a, b).second)
      journal.push_back({&values, a});
  }

  /// Whether ops `a` and `b` are the same up to their values' places.
  bool matchOps(Operation *a, Operation *b) {
    if (a->getName() != b->getName() ||
        a->getNumOperands() != b->getNumOperands() ||
        a->getNumResults() != b->getNumResults() ||
        a->getNumRegions() != b->getNumRegions() ||
        a->getNumSuccessors() != 0 || b->getNumSuccessors() != 0 ||
        a->getResultTypes() != b->getResultTypes() ||
        a->getDiscardableAttrDictionary() !=
            b->getDiscardableAttrDictionary() ||
        !a->getName().compareOpProperties(a->getPropertiesStorage(),
                                          b->getPropertiesStorage()))
      return false;
    for (auto [operandA, operandB] :
         llvm::zip_equal(a->getOperands(), b->getOperands()))
      if (!matchValues(operandA, operandB))
        return false;
    for (auto [regionA, regionB] :
         llvm::zip_equal(a->getRegions(), b->getRegions())) {
      if (regionA.getBlocks().size() != regionB.getBlocks().size())
        return false;
      for (auto [blockA, blockB] : llvm::zip_equal(regionA, regionB)) {
        if (blockA.getArgumentTypes() != blockB.getArgumentTypes() ||
            blockA.getOperations().size() != blockB.getOperations().size())
          return false;
        for (auto [argA, argB] :
             llvm::zip_equal(blockA.getArguments(), blockB.getArguments()))
          mapValue(argA, argB);
        for (auto [opA, opB] : llvm::zip_equal(blockA, blockB))
          if (!matchOps(&opA, &opB))
            return false;
      }
    }
    for (auto [resultA, resultB] :
         llvm::zip_equal(a->getResults(), b->getResults()))
      mapValue(resultA, resultB);
    return true;
  }

  /// matchOps, forgetting what it recorded when they differ.
  bool tryOps(Operation *a, Operation *b) {
    size_t mark = journal.size();
    if (matchOps(a, b))
      return true;
    rollback(mark);
    return false;
  }

  /// Forgets what was recorded after `mark`.
  void rollback(size_t mark) {
    for (auto &[map, key] : llvm::drop_begin(journal, mark)) {
      if (map == &constants)
        constants.erase(key);
      else
        static_cast<DenseMap<Value, Value> *>(map)->erase(key);
    }
    journal.resize(mark);
  }

  /// What matchValues and mapValue recorded, in order.
  SmallVector<std::pair<void *, Value>> journal;
};

/// Whether any value `block` defines is used outside it.
bool definesValuesUsedOutside(Block *block) {
  Region *region = block->getParent();
  WalkResult result = block->walk([&](Operation *op) {
    for (Value value : op->getResults())
      for (Operation *user : value.getUsers())
        if (!region->isAncestor(user->getParentRegion()))
          return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return result.wasInterrupted();
}

/// One argument of the outlined function: its value in each block of the
/// group (the base's first), null where the block does not need it.
struct Argument {
  Type type;
  SmallVector<Value> values;
  /// For a constant that differs: its value in each block.
  SmallVector<Attribute> attrs;
  /// For an op some block lacks: whether each block has it.
  SmallVector<bool> flags;
};

class Outliner {
public:
  Outliner(func::FuncOp func, SymbolTable &symbols)
      : func(func), symbols(symbols), dominance(func) {}

  /// Outlines the groups of like blocks among `candidates`.
  void run(SmallVector<Block *> candidates);

private:
  bool outline(Block *base, ArrayRef<Operation *> baseOps,
               ArrayRef<Match *> matches);

  func::FuncOp func;
  SymbolTable &symbols;
  DominanceInfo dominance;
};

} // namespace

void Outliner::run(SmallVector<Block *> candidates) {
  // Blocks that yield values or take arguments (a call cannot stand for
  // them), and blocks that hold another candidate, stay as they are.
  candidates = llvm::filter_to_vector(
      SmallVector<Block *>(candidates), [&](Block *block) {
        return block->getNumArguments() == 0 &&
               block->getTerminator()->getNumOperands() == 0 &&
               !definesValuesUsedOutside(block) &&
               llvm::none_of(candidates, [&](Block *other) {
                 return other != block &&
                        block->getParent()->isAncestor(other->getParent());
               });
      });
  // Most ordered ops first: a base before the blocks that lack some of its.
  DenseMap<Block *, SmallVector<Operation *>> orderedOps;
  for (Block *block : candidates)
    orderedOps[block] = getOrderedOps(block);
  llvm::stable_sort(candidates, [&](Block *a, Block *b) {
    return orderedOps[a].size() > orderedOps[b].size();
  });
  DenseSet<Block *> done;
  for (Block *base : candidates) {
    ArrayRef<Operation *> baseOps = orderedOps[base];
    if (done.contains(base) || baseOps.empty())
      continue;
    SmallVector<std::unique_ptr<Match>> matches;
    for (Block *member : candidates) {
      if (member == base || done.contains(member))
        continue;
      auto match = std::make_unique<Match>(base, member);
      if (match->align(baseOps, orderedOps[member]))
        matches.push_back(std::move(match));
    }
    if (matches.empty())
      continue;
    SmallVector<Match *> group = llvm::map_to_vector(
        matches, [](const std::unique_ptr<Match> &m) { return m.get(); });
    if (!outline(base, baseOps, group))
      continue;
    done.insert(base);
    for (Match *match : group)
      done.insert(match->member);
  }
}

bool Outliner::outline(Block *base, ArrayRef<Operation *> baseOps,
                       ArrayRef<Match *> matches) {
  size_t count = 1 + matches.size();
  Region *baseRegion = base->getParent();

  // The arguments, in the order of first use in the base, one per distinct
  // tuple of values, of constants, or of flags.
  SmallVector<Argument> arguments;
  DenseMap<llvm::hash_code, SmallVector<unsigned>> argumentsByHash;
  DenseMap<Value, unsigned> argumentOf, deltaOf;
  DenseMap<Operation *, unsigned> flagOf;
  auto addArgument = [&](Argument argument) {
    llvm::hash_code hash =
        llvm::hash_combine(argument.type.getAsOpaquePointer(),
                           llvm::hash_combine_range(argument.values),
                           llvm::hash_combine_range(argument.attrs),
                           llvm::hash_combine_range(argument.flags));
    SmallVector<unsigned> &bucket = argumentsByHash[hash];
    for (unsigned index : bucket) {
      const Argument &other = arguments[index];
      if (other.type == argument.type && other.values == argument.values &&
          other.attrs == argument.attrs && other.flags == argument.flags)
        return index;
    }
    arguments.push_back(std::move(argument));
    bucket.push_back(arguments.size() - 1);
    return unsigned(arguments.size() - 1);
  };
  // The values the function needs from its callers, in the order of first
  // use: what the blocks have from outside (the results of value ops
  // outside, which the function computes itself, through their operands),
  // and the constants whose values differ: integers as the base's value
  // plus an argument, the difference (one argument for the arena offsets
  // of a case's buffers, which all differ by the same bytes), the others
  // as arguments.
  DenseSet<Value> seen;
  std::function<void(Value)> visit = [&](Value value) {
    if (!seen.insert(value).second)
      return;
    Attribute attr;
    if (matchPattern(value, m_Constant(&attr))) {
      SmallVector<Attribute> attrs = {attr};
      for (Match *match : matches) {
        Attribute other = match->constants.lookup(value);
        attrs.push_back(other ? other : attr);
      }
      if (llvm::all_equal(attrs))
        return;
      Argument argument{value.getType(), {}, {}, {}};
      if (llvm::all_of(attrs, [&](Attribute each) {
            auto integer = dyn_cast<IntegerAttr>(each);
            return integer && integer.getType() == value.getType();
          })) {
        APInt first = cast<IntegerAttr>(attr).getValue();
        for (Attribute each : attrs)
          argument.attrs.push_back(IntegerAttr::get(
              value.getType(), cast<IntegerAttr>(each).getValue() - first));
        deltaOf[value] = addArgument(std::move(argument));
      } else {
        argument.attrs = std::move(attrs);
        argumentOf[value] = addArgument(std::move(argument));
      }
      return;
    }
    // A value that some block has from outside (or computes there by a
    // chain): an argument; else one the base computes, or that the
    // function computes from the operands of its value op outside.
    bool opaque = llvm::any_of(matches, [&](Match *match) {
      return match->externals.contains(value);
    });
    if (!opaque) {
      if (baseRegion->isAncestor(value.getParentRegion()))
        return;
      if (Operation *def = value.getDefiningOp(); def && isValueOp(def)) {
        for (Value operand : def->getOperands())
          visit(operand);
        return;
      }
    }
    Argument argument{value.getType(), {value}, {}, {}};
    for (Match *match : matches) {
      Value other = match->externals.lookup(value);
      argument.values.push_back(other ? other : match->values.lookup(value));
    }
    argumentOf[value] = addArgument(std::move(argument));
  };
  base->walk([&](Operation *op) {
    for (Value value : op->getOperands())
      visit(value);
  });
  for (Operation *op : baseOps) {
    Argument argument{IntegerType::get(func.getContext(), 1), {}, {}, {true}};
    for (Match *match : matches)
      argument.flags.push_back(match->present.contains(op));
    if (llvm::all_of(argument.flags, [](bool flag) { return flag; }))
      continue;
    // An op that some block lacks runs under a flag: it can define nothing.
    if (op->getNumResults() != 0)
      return false;
    flagOf[op] = addArgument(std::move(argument));
  }

  // Each block's operands of the call, before anything changes: a value
  // that a block does not need is any of the others' that it sees, or a
  // zero or poison.
  SmallVector<Block *> blocks = {base};
  for (Match *match : matches)
    blocks.push_back(match->member);
  using MakeOperand = std::function<Value(OpBuilder &, IRMapping &)>;
  SmallVector<SmallVector<MakeOperand>> operands(count);
  for (const Argument &argument : arguments) {
    for (size_t index = 0; index < count; ++index) {
      Block *block = blocks[index];
      Location loc = func.getLoc();
      if (!argument.flags.empty()) {
        bool flag = argument.flags[index];
        operands[index].push_back(
            [=](OpBuilder &builder, IRMapping &) -> Value {
              return arith::ConstantIntOp::create(builder, loc,
                                                  builder.getI1Type(), flag);
            });
        continue;
      }
      if (!argument.attrs.empty()) {
        auto attr = dyn_cast<TypedAttr>(argument.attrs[index]);
        Type type = argument.type;
        if (!attr || attr.getType() != type)
          return false;
        operands[index].push_back(
            [=](OpBuilder &builder, IRMapping &) -> Value {
              return arith::ConstantOp::create(builder, loc, type, attr);
            });
        continue;
      }
      Value value = argument.values[index];
      if (!value) {
        for (Value other : argument.values)
          if (other &&
              dominance.properlyDominates(other, block->getTerminator())) {
            value = other;
            break;
          }
      }
      if (!value) {
        Type type = argument.type;
        // A buffer (or anything else) that only ops the block lacks use:
        // poison, which nothing reads.
        operands[index].push_back(
            [=](OpBuilder &builder, IRMapping &) -> Value {
              if (isa<IndexType, IntegerType, FloatType>(type))
                return arith::ConstantOp::create(builder, loc, type,
                                                 builder.getZeroAttr(type));
              return ub::PoisonOp::create(builder, loc, type);
            });
        continue;
      }
      // The block's own value: its chain cloned before the call.
      if (block->getParent()->isAncestor(value.getParentRegion()) &&
          !isChain(value, block))
        return false;
      operands[index].push_back(
          [=](OpBuilder &builder, IRMapping &mapping) -> Value {
            return materialize(value, block, builder, mapping);
          });
    }
  }

  // The function: the base's body, its outside values and differing
  // constants the arguments, the ops some block lacks under their flags.
  MLIRContext *ctx = func.getContext();
  Location loc = func.getLoc();
  SmallVector<Type> types =
      llvm::map_to_vector(arguments, [](const Argument &a) { return a.type; });
  func::FuncOp outlined = createInternalFunction(
      func, "_copy", FunctionType::get(ctx, types, {}), symbols);
  Block *entry = &outlined.front();
  auto builder = OpBuilder::atBlockEnd(entry);
  IRMapping mapping;
  for (auto [value, index] : argumentOf)
    if (!baseRegion->isAncestor(value.getParentRegion()))
      mapping.map(value, entry->getArgument(index));
  // What the base uses from outside and no argument gives: constants, and
  // the value ops that compute the rest, cloned.
  std::function<void(Value)> provide = [&](Value value) {
    if (mapping.contains(value) ||
        baseRegion->isAncestor(value.getParentRegion()))
      return;
    Operation *def = value.getDefiningOp();
    for (Value operand : def->getOperands())
      provide(operand);
    builder.clone(*def, mapping);
  };
  base->walk([&](Operation *op) {
    for (Value value : op->getOperands())
      provide(value);
  });
  // The clones of the value ops, which the function runs for every block
  // (also where a block lacks the ops that use them).
  DenseSet<Operation *> valueOps;
  for (Operation &op : *entry)
    valueOps.insert(&op);
  for (Operation &op : base->without_terminator()) {
    auto flag = flagOf.find(&op);
    if (flag == flagOf.end()) {
      Operation *clone = builder.clone(op, mapping);
      if (isValueOp(&op))
        valueOps.insert(clone);
      continue;
    }
    auto guard = scf::IfOp::create(builder, op.getLoc(), TypeRange{},
                                   entry->getArgument(flag->second),
                                   /*withElseRegion=*/false);
    OpBuilder::atBlockBegin(guard.thenBlock()).clone(op, mapping);
  }
  // The base's constants that differ between the blocks: the arguments,
  // or the base's value plus the argument.
  for (auto [value, index] : argumentOf) {
    if (!baseRegion->isAncestor(value.getParentRegion()))
      continue;
    Value clone = mapping.lookup(value);
    clone.replaceAllUsesWith(entry->getArgument(index));
  }
  for (auto [value, index] : deltaOf) {
    Value clone = mapping.lookup(value);
    OpBuilder sumBuilder(ctx);
    sumBuilder.setInsertionPointAfterValue(clone);
    Value sum = arith::AddIOp::create(sumBuilder, loc, clone,
                                      entry->getArgument(index));
    clone.replaceAllUsesExcept(sum, sum.getDefiningOp());
  }
  func::ReturnOp::create(builder, loc);
  // What the arguments made dead (the chains they replace), and the
  // arguments that only those used.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
    if (isOpTriviallyDead(&op)) {
      valueOps.erase(&op);
      op.erase();
    }
  // A value op that was speculatable for its constant operand (a division
  // by a non-zero constant) and now takes an argument or a sum there: a
  // block whose constant differs (or that lacks the op, on stand-ins)
  // could divide by zero where it never divided. The blocks stay.
  if (llvm::any_of(valueOps, [](Operation *op) { return !isPure(op); })) {
    symbols.erase(outlined);
    return false;
  }
  llvm::BitVector unused(arguments.size());
  for (BlockArgument argument : entry->getArguments())
    if (argument.use_empty())
      unused.set(argument.getArgNumber());
  if (failed(outlined.eraseArguments(unused)))
    return false;

  // Each block: the call, instead of its ops.
  for (auto [block, blockOperands] : llvm::zip_equal(blocks, operands)) {
    SmallVector<Operation *> old = llvm::map_to_vector(
        block->without_terminator(), [](Operation &op) { return &op; });
    OpBuilder callBuilder(block->getTerminator());
    IRMapping chains;
    SmallVector<Value> callOperands;
    for (auto [index, make] : llvm::enumerate(blockOperands))
      if (!unused.test(index))
        callOperands.push_back(make(callBuilder, chains));
    func::CallOp::create(callBuilder, loc, outlined, callOperands);
    for (Operation *op : llvm::reverse(old))
      op->erase();
  }
  return true;
}

namespace {
struct OutlineCopiesPass
    : public gacc::impl::OutlineCopiesPassBase<OutlineCopiesPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal())
        continue;
      // The cases of concurrent copies and their lockstep forms (the
      // else-branch of the scf.if whose then-branch runs them side by side).
      SmallVector<Block *> candidates;
      func.walk([&](Operation *op) {
        if (auto cases = dyn_cast<scf::IndexSwitchOp>(op);
            cases && cases->hasAttr(kConcurrentCopiesAttr)) {
          for (Region &region : cases.getCaseRegions())
            candidates.push_back(&region.front());
        } else if (auto branch = dyn_cast<scf::IfOp>(op);
                   branch && branch.elseBlock() &&
                   llvm::any_of(*branch.thenBlock(), [](Operation &nested) {
                     return nested.hasAttr(kConcurrentCopiesAttr);
                   })) {
          candidates.push_back(branch.elseBlock());
        }
      });
      Outliner(func, symbols).run(std::move(candidates));
    }
  }
};
} // namespace

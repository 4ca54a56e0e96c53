//===- OutlineMicroBatches.cpp - one body per micro-batch size --*- C++ -*-===//
//
// The gacc-outline-micro-batches pass, a lowering decision: the m regions of
// a step are m copies of one body that differ only in the region's sample
// offset, so lowering each copy makes compile time and code size grow with
// m. Regions of the same size are compared op by op with the first region of
// their form (an anti-unification): they may differ only in integer
// constants and static slice offsets. Where these differ, the value is
// affine in the region's offset (rebuilt in the body from an `index`
// argument) or else passed as an argument of its own. Values the body uses
// from outside (invariants, the previous region's accumulators) are
// arguments too. Each region of a shared form keeps its `gacc.micro_batch`
// op, whose body becomes one call.
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Dialect/Gacc/IR/StepSignature.h"
#include "gacc/Lowering/Passes.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"
#include "gacc/Transforms/RegionForms.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define DEBUG_TYPE "gacc-outline-micro-batches"

namespace mlir::gacc {
#define GEN_PASS_DEF_OUTLINEMICROBATCHESPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {

/// How the body computes the value of one site.
struct SiteValue {
  /// value = base + factor * offset, when affine in the offset.
  bool affine = true;
  int64_t base = 0, factor = 0;
  /// Same in every region: the site stays as it is.
  bool constant = true;
};

/// Decides how each site of `form` is computed.
static SmallVector<SiteValue> analyzeSites(RegionForm &form) {
  SmallVector<SiteValue> result(form.sites.size());
  RegionInstance &first = form.instances.front();
  RegionInstance &second = form.instances[1];
  int64_t o0 = first.region.getOffset(), o1 = second.region.getOffset();
  for (auto [s, site] : llvm::enumerate(result)) {
    int64_t v0 = first.siteValues[s];
    site.constant = llvm::all_of(form.instances, [&](RegionInstance &i) {
      return i.siteValues[s] == v0;
    });
    if (site.constant)
      continue;
    int64_t dv = second.siteValues[s] - v0, doff = o1 - o0;
    site.affine = doff != 0 && dv % doff == 0;
    if (site.affine) {
      site.factor = dv / doff;
      site.base = v0 - site.factor * o0;
      site.affine = llvm::all_of(form.instances, [&](RegionInstance &i) {
        return i.siteValues[s] ==
               site.base +
                   site.factor * static_cast<int64_t>(i.region.getOffset());
      });
    }
  }
  return result;
}

/// Builds base + factor * offset for an affine site.
static Value buildAffineSite(OpBuilder &builder, Location loc,
                             const SiteValue &site, Value offset) {
  Value v = offset;
  if (site.factor != 1)
    v = arith::MulIOp::create(
        builder, loc, v,
        arith::ConstantIndexOp::create(builder, loc, site.factor));
  if (site.base != 0)
    v = arith::AddIOp::create(
        builder, loc, v,
        arith::ConstantIndexOp::create(builder, loc, site.base));
  return v;
}

/// Makes the clone (through `mapping`) of each varying site of `form` take
/// its value from `siteValues`: constants are replaced, slice offsets become
/// dynamic.
static void rewriteSites(RegionForm &form, ArrayRef<Value> siteValues,
                         IRMapping &mapping) {
  // Varying constants and slice offsets take their values from the sites.
  DenseMap<Operation *, SmallVector<std::pair<int64_t, Value>>> offsets;
  for (auto [s, site] : llvm::enumerate(form.sites)) {
    if (!siteValues[s])
      continue;
    Operation *op = mapping.lookup(site.op);
    if (site.position >= 0) {
      offsets[op].push_back({site.position, siteValues[s]});
      continue;
    }
    auto cst = cast<arith::ConstantOp>(op);
    OpBuilder at(cst);
    Value v = siteValues[s];
    if (!cst.getType().isIndex())
      v = arith::IndexCastOp::create(at, cst.getLoc(), cst.getType(), v);
    cst.getResult().replaceAllUsesWith(v);
    cst.erase();
  }
  for (auto &[op, positions] : offsets) {
    OpBuilder at(op);
    auto mixed = [&](SmallVector<OpFoldResult> values) {
      for (auto [position, v] : positions)
        values[position] = v;
      return values;
    };
    Operation *replacement;
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
      replacement = tensor::ExtractSliceOp::create(
          at, slice.getLoc(), slice.getType(), slice.getSource(),
          mixed(slice.getMixedOffsets()), slice.getMixedSizes(),
          slice.getMixedStrides());
    else {
      auto insert = cast<tensor::InsertSliceOp>(op);
      replacement = tensor::InsertSliceOp::create(
          at, insert.getLoc(), insert.getSource(), insert.getDest(),
          mixed(insert.getMixedOffsets()), insert.getMixedSizes(),
          insert.getMixedStrides());
    }
    replacement->setDiscardableAttrs(op->getDiscardableAttrDictionary());
    op->replaceAllUsesWith(replacement);
    op->erase();
  }
}

/// Builds the shared function of `form` and makes each region call it.
static void outline(RegionForm &form, ModuleOp module, SymbolTable &symbols,
                    func::FuncOp parent) {
  gacc::MicroBatchOp tmpl = form.templateRegion;
  MLIRContext *ctx = module.getContext();
  Location loc = tmpl.getLoc();
  SmallVector<SiteValue> sites = analyzeSites(form);

  // Captures that are the same constant in every region are cloned into the
  // body instead of passed.
  SmallVector<bool> cloned(form.captures.size());
  for (auto [c, capture] : llvm::enumerate(form.captures))
    cloned[c] = capture.getDefiningOp() &&
                capture.getDefiningOp()->hasTrait<OpTrait::ConstantLike>() &&
                llvm::all_of(form.instances, [&](RegionInstance &i) {
                  return isSameConstant(i.captures[c], capture);
                });
  SmallVector<Type> argTypes{IndexType::get(ctx)};
  for (auto [c, capture] : llvm::enumerate(form.captures))
    if (!cloned[c])
      argTypes.push_back(capture.getType());
  for (const SiteValue &site : sites)
    if (!site.constant && !site.affine)
      argTypes.push_back(IndexType::get(ctx));

  OpBuilder builder(ctx);
  builder.setInsertionPointAfter(parent);
  std::string name =
      (parent.getSymName() + "_micro_batch_" + Twine(tmpl.getSize())).str();
  auto func = func::FuncOp::create(
      builder, loc, name,
      FunctionType::get(ctx, argTypes, tmpl.getResultTypes()));
  func.setPrivate();
  symbols.insert(func);
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);

  IRMapping mapping;
  unsigned arg = 1;
  for (auto [c, capture] : llvm::enumerate(form.captures)) {
    if (cloned[c])
      mapping.map(capture,
                  builder.clone(*capture.getDefiningOp())->getResult(0));
    else
      mapping.map(capture, entry->getArgument(arg++));
  }
  // The value of each varying site, computed at the entry.
  Value offset = entry->getArgument(0);
  SmallVector<Value> siteValues(sites.size());
  for (auto [s, site] : llvm::enumerate(sites)) {
    if (site.constant)
      continue;
    if (!site.affine) {
      siteValues[s] = entry->getArgument(arg++);
      continue;
    }
    siteValues[s] = buildAffineSite(builder, loc, site, offset);
  }
  for (Operation &op : tmpl.getBody().front().without_terminator())
    builder.clone(op, mapping);
  auto yield = cast<gacc::YieldOp>(tmpl.getBody().front().getTerminator());
  SmallVector<Value> returned;
  for (Value v : yield.getOperands())
    returned.push_back(mapping.lookupOrDefault(v));
  func::ReturnOp::create(builder, loc, returned);

  rewriteSites(form, siteValues, mapping);

  // Each region's body becomes one call.
  for (RegionInstance &instance : form.instances) {
    Block &body = instance.region.getBody().front();
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body))) {
      op.dropAllUses();
      op.erase();
    }
    OpBuilder at = OpBuilder::atBlockEnd(&body);
    Location regionLoc = instance.region.getLoc();
    SmallVector<Value> operands{arith::ConstantIndexOp::create(
        at, regionLoc, instance.region.getOffset())};
    for (auto [c, capture] : llvm::enumerate(instance.captures))
      if (!cloned[c])
        operands.push_back(capture);
    for (auto [s, site] : llvm::enumerate(sites))
      if (!site.constant && !site.affine)
        operands.push_back(arith::ConstantIndexOp::create(
            at, regionLoc, instance.siteValues[s]));
    auto call = func::CallOp::create(at, regionLoc, func, operands);
    gacc::YieldOp::create(at, regionLoc, call.getResults());
  }
}

/// Lowers the regions of `form` to one `scf.for` whose body is the template
/// region with the offset computed from the induction variable, when the
/// regions follow each other (offsets one size apart, in order), every site
/// is affine in the offset, and each region uses from the regions of the
/// form only the previous one's results (its accumulators, which become
/// iteration arguments). Returns false, changing nothing, otherwise.
/// Records in `replaced` each result of the last region that the loop's
/// result replaces.
static bool buildLoop(RegionForm &form, ModuleOp module, bool traceRegions,
                      DenseMap<Value, Value> &replaced) {
  gacc::MicroBatchOp tmpl = form.templateRegion;
  MutableArrayRef<RegionInstance> instances = form.instances;
  int64_t size = tmpl.getSize(), n = instances.size();
  for (auto [k, instance] : llvm::enumerate(instances))
    if (instance.region.getOffset() !=
            tmpl.getOffset() + static_cast<int64_t>(k) * size ||
        instance.region.getIndex() !=
            tmpl.getIndex() + static_cast<int64_t>(k) ||
        (k > 0 && !instances[k - 1].region->isBeforeInBlock(instance.region)))
      return false;
  SmallVector<SiteValue> sites = analyzeSites(form);
  if (llvm::any_of(sites, [](const SiteValue &site) {
        return !site.constant && !site.affine;
      }))
    return false;

  // Each capture is the same value in every region (defined before the
  // first one) or the previous region's result `chain[c]`.
  unsigned numResults = tmpl.getNumResults();
  SmallVector<int64_t> chain(form.captures.size(), -1);
  SmallVector<Value> iterInit(numResults);
  for (auto [c, capture] : llvm::enumerate(form.captures)) {
    bool same = llvm::all_of(
        instances, [&](RegionInstance &i) { return i.captures[c] == capture; });
    if (same) {
      if (Operation *def = capture.getDefiningOp())
        if (def->getBlock() == tmpl->getBlock() && !def->isBeforeInBlock(tmpl))
          return false;
      continue;
    }
    auto first = dyn_cast<OpResult>(instances[1].captures[c]);
    if (!first || first.getOwner() != instances[0].region.getOperation())
      return false;
    unsigned j = first.getResultNumber();
    for (int64_t k = 1; k < n; ++k)
      if (instances[k].captures[c] != instances[k - 1].region->getResult(j))
        return false;
    if (iterInit[j] && iterInit[j] != capture)
      return false;
    if (Operation *def = capture.getDefiningOp())
      if (def->getBlock() == tmpl->getBlock() && !def->isBeforeInBlock(tmpl))
        return false;
    chain[c] = j;
    iterInit[j] = capture;
  }
  // Results of all regions but the last feed only the next region; the last
  // region's results are used only where they are iteration arguments.
  for (int64_t k = 0; k < n; ++k)
    for (OpResult result : instances[k].region->getResults()) {
      bool carried = !!iterInit[result.getResultNumber()];
      for (Operation *user : result.getUsers())
        if (!carried ||
            (k + 1 < n && !instances[k + 1].region->isAncestor(user)))
          return false;
    }

  gacc::MicroBatchOp last = instances.back().region;
  OpBuilder builder(last);
  Location loc = tmpl.getLoc();
  SmallVector<unsigned> carried;
  SmallVector<Value> inits;
  for (unsigned j = 0; j < numResults; ++j)
    if (iterInit[j]) {
      carried.push_back(j);
      inits.push_back(iterInit[j]);
    }
  Value lb = arith::ConstantIndexOp::create(builder, loc, 0);
  Value ub = arith::ConstantIndexOp::create(builder, loc, n);
  Value step = arith::ConstantIndexOp::create(builder, loc, 1);
  auto loop = scf::ForOp::create(builder, loc, lb, ub, step, inits);
  Block *body = loop.getBody();
  builder.setInsertionPointToStart(body);
  Value iv = loop.getInductionVar();
  DenseMap<unsigned, Value> iterArgOf;
  for (auto [i, j] : llvm::enumerate(carried))
    iterArgOf[j] = loop.getRegionIterArgs()[i];

  IRMapping mapping;
  for (auto [c, capture] : llvm::enumerate(form.captures))
    if (chain[c] >= 0)
      mapping.map(capture, iterArgOf.lookup(chain[c]));
  // offset = first offset + iv * size.
  Value offset = arith::AddIOp::create(
      builder, loc,
      arith::MulIOp::create(builder, loc, iv,
                            arith::ConstantIndexOp::create(builder, loc, size)),
      arith::ConstantIndexOp::create(builder, loc, tmpl.getOffset()));
  SmallVector<Value> siteValues(sites.size());
  for (auto [s, site] : llvm::enumerate(sites)) {
    if (site.constant)
      continue;
    siteValues[s] = buildAffineSite(builder, loc, site, offset);
  }
  Value regionIndex;
  if (traceRegions) {
    Type i64 = builder.getI64Type();
    regionIndex = arith::AddIOp::create(
        builder, loc, arith::IndexCastOp::create(builder, loc, i64, iv),
        arith::ConstantIntOp::create(builder, loc, i64, tmpl.getIndex()));
    func::CallOp::create(
        builder, loc,
        getOrDeclareRuntimeFunction(tmpl, "gaccrt_trace_region_begin",
                                    builder.getFunctionType({i64}, {})),
        regionIndex);
  }
  for (Operation &op : tmpl.getBody().front().without_terminator())
    builder.clone(op, mapping);
  auto yield = cast<gacc::YieldOp>(tmpl.getBody().front().getTerminator());
  if (traceRegions)
    func::CallOp::create(
        builder, loc,
        getOrDeclareRuntimeFunction(
            tmpl, "gaccrt_trace_region_end",
            builder.getFunctionType({builder.getI64Type()}, {})),
        regionIndex);
  SmallVector<Value> yielded;
  for (unsigned j : carried)
    yielded.push_back(mapping.lookupOrDefault(yield.getOperand(j)));
  scf::YieldOp::create(builder, loc, yielded);
  rewriteSites(form, siteValues, mapping);

  for (auto [i, j] : llvm::enumerate(carried)) {
    last->getResult(j).replaceAllUsesWith(loop.getResult(i));
    replaced[last->getResult(j)] = loop.getResult(i);
  }
  for (RegionInstance &instance : llvm::reverse(instances)) {
    instance.region->dropAllUses();
    instance.region->erase();
  }
  return true;
}

/// Brings the captures `form` recorded up to date with the loops built since:
/// a region of one form may use the results of another form's region that a
/// loop has replaced (sizes 2, 1, 1, 2: the second size-2 region uses the
/// last size-1 region's accumulators).
static void remapCaptures(RegionForm &form,
                          const DenseMap<Value, Value> &replaced) {
  auto remap = [&](Value &value) {
    for (auto it = replaced.find(value); it != replaced.end();
         it = replaced.find(value))
      value = it->second;
  };
  for (Value &capture : form.captures)
    remap(capture);
  for (RegionInstance &instance : form.instances)
    for (Value &capture : instance.captures)
      remap(capture);
}

/// Returns `value` as computed before `region`: itself when defined outside,
/// else a clone there of the pure ops (and fills) of the region's block that
/// compute it from outside values, or null.
static Value hoistOutOf(gacc::MicroBatchOp region, Value value,
                        OpBuilder &builder, IRMapping &hoisted,
                        unsigned depth = 0) {
  Block &body = region.getBody().front();
  if (!region.getBody().isAncestor(value.getParentRegion()))
    return value;
  if (Value done = hoisted.lookupOrNull(value))
    return done;
  Operation *def = value.getDefiningOp();
  if (!def || def->getBlock() != &body || depth > 4 ||
      !isMemoryEffectFree(def) ||
      (def->getNumRegions() != 0 && !isa<linalg::FillOp>(def)))
    return {};
  for (Value operand : def->getOperands())
    if (!hoistOutOf(region, operand, builder, hoisted, depth + 1))
      return {};
  Operation *clone = builder.clone(*def, hoisted);
  return clone->getResult(cast<OpResult>(value).getResultNumber());
}

/// The first region starts each accumulator from an identity fill, where the
/// regions after it continue the previous region's accumulator. Moving those
/// fills before the region gives it the form of the later regions, so that
/// it joins their loop: one body for all regions of its size.
static void hoistAccumulatorStarts(gacc::MicroBatchOp region) {
  Block &body = region.getBody().front();
  auto yield = cast<gacc::YieldOp>(body.getTerminator());
  OpBuilder builder(region);
  IRMapping hoisted;
  bool changed = false;
  for (Value yielded : yield.getOperands()) {
    auto result = dyn_cast<OpResult>(yielded);
    auto op = result ? dyn_cast<DestinationStyleOpInterface>(result.getOwner())
                     : DestinationStyleOpInterface();
    if (!op || op->getBlock() != &body || !op->hasAttr(kPartialAttrName))
      continue;
    OpOperand *init = op.getDpsInitOperand(result.getResultNumber());
    auto fill = init->get().getDefiningOp<linalg::FillOp>();
    if (!fill || fill->getBlock() != &body || !fill->hasOneUse())
      continue;
    if (Value start = hoistOutOf(region, fill.getResult(0), builder, hoisted)) {
      init->set(start);
      changed = true;
    }
  }
  if (changed)
    eraseDeadOps(body);
}

struct OutlineMicroBatchesPass
    : public gacc::impl::OutlineMicroBatchesPassBase<OutlineMicroBatchesPass> {
  using OutlineMicroBatchesPassBase::OutlineMicroBatchesPassBase;

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> funcs(module.getOps<func::FuncOp>());
    for (func::FuncOp func : funcs) {
      // The regions (never nested: the walk does not enter them), and
      // whether a bucket all-reduce overlaps with the final region. The
      // final region joins its size's loop too: gacc-overlap-all-reduce
      // starts the bucket in the loop's last iteration. It stays inline
      // rather than become a call of a shared function, after which the
      // all-reduce could only start.
      SmallVector<gacc::MicroBatchOp> regions;
      bool overlapped = false;
      func.walk<WalkOrder::PreOrder>([&](Operation *op) {
        if (auto region = dyn_cast<gacc::MicroBatchOp>(op)) {
          regions.push_back(region);
          return WalkResult::skip();
        }
        if (isa<shard::AllReduceOp>(op))
          overlapped |= op->hasAttr(GaccDialect::kOverlapAttrName);
        return WalkResult::advance();
      });
      // The first region joins the loop of the regions of its size.
      if (!regions.empty() &&
          llvm::count_if(regions, [&](gacc::MicroBatchOp region) {
            return region.getSize() == regions.front().getSize();
          }) >= std::max<int64_t>(minRegions, 2))
        hoistAccumulatorStarts(regions.front());
      SmallVector<std::unique_ptr<RegionForm>> forms =
          groupRegionsByForm(regions);
      // Last form first: a loop replaces its regions, and mostly only later
      // forms refer to the results of earlier ones. Where forms interleave,
      // an earlier form's region uses a later form's results, which the
      // captures are remapped for.
      auto enough = [&](const RegionForm &form) {
        return static_cast<int64_t>(form.instances.size()) >=
               std::max<int64_t>(minRegions, 2);
      };
      DenseMap<Value, Value> replaced;
      for (auto &form : llvm::reverse(forms)) {
        remapCaptures(*form, replaced);
        if (!enough(*form) ||
            form->instances.front().region.getBody().front().empty() ||
            buildLoop(*form, module, traceRegions, replaced))
          continue;
        if (overlapped && form->instances.back().region == regions.back()) {
          form->instances.pop_back();
          if (!enough(*form))
            continue;
        }
        if (functions)
          outline(*form, module, symbols, func);
      }
    }
  }
};
} // namespace

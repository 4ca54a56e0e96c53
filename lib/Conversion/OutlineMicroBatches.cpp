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
// op, whose body becomes one call. The final region stays as it is when a
// bucket all-reduce overlaps with it (`gacc.overlap`).
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Conversion/Passes.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Transforms/Utils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"

#define DEBUG_TYPE "gacc-outline-micro-batches"

namespace mlir::gacc {
#define GEN_PASS_DEF_OUTLINEMICROBATCHESPASS
#include "gacc/Conversion/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// A place in a region body where regions of one form may differ: an integer
/// constant (position -1) or a static offset of a slice op.
struct Site {
  Operation *op;
  int64_t position;
};

/// What one region supplies to the shared form.
struct Instance {
  gacc::MicroBatchOp region;
  /// The values used from outside, in the order of the form's captures.
  SmallVector<Value> captures;
  /// The value at each site of the form.
  SmallVector<int64_t> siteValues;
};

/// A region body shared by several regions.
struct Form {
  gacc::MicroBatchOp templateRegion;
  SmallVector<Value> captures;
  DenseMap<Value, unsigned> captureIndex;
  SmallVector<Site> sites;
  SmallVector<Instance> instances;
};

/// Returns the integer value of an integer or index constant.
static std::optional<int64_t> getIntConstant(Operation *op) {
  auto cst = dyn_cast<arith::ConstantOp>(op);
  if (!cst)
    return std::nullopt;
  auto attr = dyn_cast<IntegerAttr>(cst.getValue());
  // Index constants have no bit width of their own; they fit in 64 bits.
  if (!attr || (!attr.getType().isIndex() &&
                attr.getType().getIntOrFloatBitWidth() > 64))
    return std::nullopt;
  return attr.getValue().getSExtValue();
}

/// Returns the static offsets of a tensor slice op, or an empty array.
static ArrayRef<int64_t> getSliceOffsets(Operation *op) {
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op))
    return slice.getStaticOffsets();
  if (auto slice = dyn_cast<tensor::InsertSliceOp>(op))
    return slice.getStaticOffsets();
  return {};
}

/// Returns true when `a` and `b` are the same constant.
static bool isSameConstant(Value a, Value b) {
  Attribute x, y;
  return a.getType() == b.getType() && matchPattern(a, m_Constant(&x)) &&
         matchPattern(b, m_Constant(&y)) && x == y;
}

/// Compares the body of `region` with the form's template op by op. On a
/// match, fills `instance` (and, for the template itself, the form's
/// captures and sites) and returns true.
static bool matchForm(Form &form, gacc::MicroBatchOp region,
                      Instance &instance) {
  gacc::MicroBatchOp tmpl = form.templateRegion;
  bool isTemplate = region == tmpl;
  if (region.getSize() != tmpl.getSize() ||
      region.getResultTypes() != tmpl.getResultTypes())
    return false;
  SmallVector<Operation *> tmplOps, ops;
  tmpl.getBody().walk<WalkOrder::PreOrder>(
      [&](Operation *op) { tmplOps.push_back(op); });
  region.getBody().walk<WalkOrder::PreOrder>(
      [&](Operation *op) { ops.push_back(op); });
  if (tmplOps.size() != ops.size())
    return false;

  IRMapping inner;
  Region &tmplBody = tmpl.getBody(), &body = region.getBody();
  auto mapBlocks = [&](Region &a, Region &b) {
    if (a.getBlocks().size() != b.getBlocks().size())
      return false;
    for (auto [x, y] : llvm::zip(a, b)) {
      if (x.getArgumentTypes() != y.getArgumentTypes())
        return false;
      for (auto [u, v] : llvm::zip(x.getArguments(), y.getArguments()))
        inner.map(u, v);
    }
    return true;
  };
  if (!mapBlocks(tmplBody, body))
    return false;
  instance.region = region;
  instance.captures.assign(form.captures.size(), Value());
  instance.siteValues.clear();

  DenseMap<Operation *, Operation *> paired{{tmpl, region}};
  for (auto [a, b] : llvm::zip(tmplOps, ops)) {
    paired[a] = b;
    if (paired.lookup(a->getParentOp()) != b->getParentOp() ||
        a->getParentRegion()->getRegionNumber() !=
            b->getParentRegion()->getRegionNumber() ||
        a->getName() != b->getName() ||
        a->getNumOperands() != b->getNumOperands() ||
        a->getResultTypes() != b->getResultTypes() ||
        a->getNumRegions() != b->getNumRegions() ||
        a->getNumSuccessors() != 0 || b->getNumSuccessors() != 0)
      return false;
    // Attributes: equal, except at the sites.
    std::optional<int64_t> ca = getIntConstant(a), cb = getIntConstant(b);
    ArrayRef<int64_t> oa = getSliceOffsets(a), ob = getSliceOffsets(b);
    if (ca && cb) {
      if (cast<arith::ConstantOp>(a).getType() !=
          cast<arith::ConstantOp>(b).getType())
        return false;
      if (isTemplate)
        form.sites.push_back({a, -1});
      instance.siteValues.push_back(*cb);
    } else if (!oa.empty() || !ob.empty()) {
      if (oa.size() != ob.size())
        return false;
      NamedAttrList la(a->getAttrDictionary()), lb(b->getAttrDictionary());
      la.erase("static_offsets");
      lb.erase("static_offsets");
      if (la.getDictionary(a->getContext()) !=
          lb.getDictionary(b->getContext()))
        return false;
      for (auto [i, pair] : llvm::enumerate(llvm::zip(oa, ob))) {
        auto [x, y] = pair;
        if ((x == ShapedType::kDynamic) != (y == ShapedType::kDynamic))
          return false;
        if (x == ShapedType::kDynamic)
          continue;
        if (isTemplate)
          form.sites.push_back({a, static_cast<int64_t>(i)});
        instance.siteValues.push_back(y);
      }
    } else if (a->getAttrDictionary() != b->getAttrDictionary()) {
      return false;
    }
    // Operands: the same inner value, or the same capture.
    for (auto [x, y] : llvm::zip(a->getOperands(), b->getOperands())) {
      if (tmplBody.isAncestor(x.getParentRegion())) {
        if (inner.lookupOrNull(x) != y)
          return false;
        continue;
      }
      if (body.isAncestor(y.getParentRegion()))
        return false;
      auto it = form.captureIndex.find(x);
      if (it == form.captureIndex.end()) {
        if (!isTemplate)
          return false;
        it = form.captureIndex.try_emplace(x, form.captures.size()).first;
        form.captures.push_back(x);
        instance.captures.push_back(x);
        continue;
      }
      Value &seen = instance.captures[it->second];
      if (!seen)
        seen = y;
      else if (seen != y && !isSameConstant(seen, y))
        return false;
    }
    for (auto [x, y] : llvm::zip(a->getResults(), b->getResults()))
      inner.map(x, y);
    for (auto [ra, rb] : llvm::zip(a->getRegions(), b->getRegions()))
      if (!mapBlocks(ra, rb))
        return false;
  }
  return llvm::all_of(instance.captures, [](Value v) { return !!v; }) &&
         instance.siteValues.size() == form.sites.size();
}

/// How the body computes the value of one site.
struct SiteValue {
  /// value = base + factor * offset, when affine in the offset.
  bool affine = true;
  int64_t base = 0, factor = 0;
  /// Same in every region: the site stays as it is.
  bool constant = true;
};

/// Decides how each site of `form` is computed.
static SmallVector<SiteValue> analyzeSites(Form &form) {
  SmallVector<SiteValue> result(form.sites.size());
  Instance &first = form.instances.front();
  Instance &second = form.instances[1];
  int64_t o0 = first.region.getOffset(), o1 = second.region.getOffset();
  for (auto [s, site] : llvm::enumerate(result)) {
    int64_t v0 = first.siteValues[s];
    site.constant = llvm::all_of(
        form.instances, [&](Instance &i) { return i.siteValues[s] == v0; });
    if (site.constant)
      continue;
    int64_t dv = second.siteValues[s] - v0, doff = o1 - o0;
    site.affine = doff != 0 && dv % doff == 0;
    if (site.affine) {
      site.factor = dv / doff;
      site.base = v0 - site.factor * o0;
      site.affine = llvm::all_of(form.instances, [&](Instance &i) {
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
static void rewriteSites(Form &form, ArrayRef<Value> siteValues,
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
static void outline(Form &form, ModuleOp module, SymbolTable &symbols,
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
                llvm::all_of(form.instances, [&](Instance &i) {
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
  for (Instance &instance : form.instances) {
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
static bool buildLoop(Form &form, ModuleOp module, bool traceRegions) {
  gacc::MicroBatchOp tmpl = form.templateRegion;
  MutableArrayRef<Instance> instances = form.instances;
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
        instances, [&](Instance &i) { return i.captures[c] == capture; });
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

  for (auto [i, j] : llvm::enumerate(carried))
    last->getResult(j).replaceAllUsesWith(loop.getResult(i));
  for (Instance &instance : llvm::reverse(instances)) {
    instance.region->dropAllUses();
    instance.region->erase();
  }
  return true;
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
      SmallVector<gacc::MicroBatchOp> regions;
      func.walk([&](gacc::MicroBatchOp region) { regions.push_back(region); });
      // A bucket all-reduce that overlaps with the final region starts in
      // the middle of it (gacc-overlap-all-reduce): that region stays
      // inline.
      bool overlapped = false;
      func.walk([&](shard::AllReduceOp op) {
        overlapped |= op->hasAttr(GaccDialect::kOverlapAttrName);
      });
      if (overlapped && !regions.empty())
        regions.pop_back();
      SmallVector<std::unique_ptr<Form>> forms;
      for (gacc::MicroBatchOp region : regions) {
        bool matched = false;
        for (auto &form : forms) {
          Instance instance;
          if (matchForm(*form, region, instance)) {
            form->instances.push_back(std::move(instance));
            matched = true;
            break;
          }
        }
        if (matched)
          continue;
        auto form = std::make_unique<Form>();
        form->templateRegion = region;
        Instance instance;
        if (!matchForm(*form, region, instance))
          continue;
        form->instances.push_back(std::move(instance));
        forms.push_back(std::move(form));
      }
      // Last form first: a loop replaces its regions, and only later forms
      // refer to the results of earlier ones.
      for (auto &form : llvm::reverse(forms))
        if (static_cast<int64_t>(form->instances.size()) >=
                std::max<int64_t>(minRegions, 2) &&
            !form->instances.front().region.getBody().front().empty())
          if (!buildLoop(*form, module, traceRegions))
            outline(*form, module, symbols, func);
    }
  }
};
} // namespace

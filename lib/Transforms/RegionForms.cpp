//===- RegionForms.cpp - micro-batch regions of one form --------*- C++ -*-===//
//
// Implements RegionForms.h.
//
//===----------------------------------------------------------------------===//

#include "gacc/Transforms/RegionForms.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::gacc;

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
bool mlir::gacc::isSameConstant(Value a, Value b) {
  Attribute x, y;
  return a.getType() == b.getType() && matchPattern(a, m_Constant(&x)) &&
         matchPattern(b, m_Constant(&y)) && x == y;
}

/// Compares the body of `region` with the form's template op by op. On a
/// match, fills `instance` (and, for the template itself, the form's
/// captures and sites) and returns true.
bool mlir::gacc::matchForm(RegionForm &form, gacc::MicroBatchOp region,
                           RegionInstance &instance) {
  gacc::MicroBatchOp tmpl = form.templateRegion;
  bool isTemplate = region == tmpl;
  if (region.getSize() != tmpl.getSize() ||
      region.getResultTypes() != tmpl.getResultTypes())
    return false;
  // The template's ops in pre-order and the position of each one's parent
  // (-1: the template region itself), computed once per form.
  if (isTemplate || form.templateOps.empty()) {
    form.templateOps.clear();
    form.parentPositions.clear();
    DenseMap<Operation *, int64_t> position;
    tmpl.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
      auto it = position.find(op->getParentOp());
      form.parentPositions.push_back(it == position.end() ? -1 : it->second);
      position[op] = static_cast<int64_t>(form.templateOps.size());
      form.templateOps.push_back(op);
    });
  }
  ArrayRef<Operation *> tmplOps = form.templateOps;
  SmallVector<Operation *> ops;
  ops.reserve(tmplOps.size());
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
  instance.siteOps.clear();

  for (auto [i, pair] : llvm::enumerate(llvm::zip(tmplOps, ops))) {
    auto [a, b] = pair;
    int64_t parent = form.parentPositions[i];
    Operation *expectedParent =
        parent < 0 ? region.getOperation() : ops[parent];
    if (expectedParent != b->getParentOp() ||
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
      instance.siteOps.push_back(b);
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
        instance.siteOps.push_back(b);
      }
    } else if (a->getDiscardableAttrDictionary() !=
                   b->getDiscardableAttrDictionary() ||
               !a->getName().compareOpProperties(a->getPropertiesStorage(),
                                                 b->getPropertiesStorage())) {
      // (Not getAttrDictionary: for ops with properties it builds a new
      // dictionary each call.)
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
      if (x.getType() != y.getType())
        return false;
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

SmallVector<std::unique_ptr<RegionForm>>
mlir::gacc::groupRegionsByForm(ArrayRef<gacc::MicroBatchOp> regions) {
  SmallVector<std::unique_ptr<RegionForm>> forms;
  for (gacc::MicroBatchOp region : regions) {
    bool matched = false;
    for (auto &form : forms) {
      RegionInstance instance;
      if (matchForm(*form, region, instance)) {
        form->instances.push_back(std::move(instance));
        matched = true;
        break;
      }
    }
    if (matched)
      continue;
    auto form = std::make_unique<RegionForm>();
    form->templateRegion = region;
    RegionInstance instance;
    if (!matchForm(*form, region, instance))
      continue;
    form->instances.push_back(std::move(instance));
    forms.push_back(std::move(form));
  }
  return forms;
}

LogicalResult mlir::gacc::verifyByRegionForm(Operation *root) {
  // The regions verified through their form's template, per function body.
  DenseMap<Operation *, const RegionInstance *> byForm;
  SmallVector<std::unique_ptr<RegionForm>> allForms;
  llvm::SetVector<Block *> blocks;
  root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (!isa<gacc::MicroBatchOp>(op))
      return WalkResult::advance();
    blocks.insert(op->getBlock());
    return WalkResult::skip();
  });
  for (Block *block : blocks) {
    SmallVector<gacc::MicroBatchOp> regions(
        block->getOps<gacc::MicroBatchOp>());
    if (regions.size() < 2)
      continue;
    for (auto &form : groupRegionsByForm(regions)) {
      for (const RegionInstance &instance : llvm::drop_begin(form->instances))
        byForm[instance.region] = &instance;
      allForms.push_back(std::move(form));
    }
  }
  if (byForm.empty())
    return mlir::verify(root);

  // Everything else as the verifier would: each op without its regions (of
  // the module and the functions without the walks of all they hold, whose
  // checks follow op by op), its symbol uses, the uses of its operands and
  // its blocks' ends.
  DominanceInfo dominance;
  SymbolTableCollection symbolTables;
  WalkResult result = root->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (failed(verifyOpShallowly(op)) ||
        failed(verifySymbolUsesIn(op, /*nested=*/false, symbolTables)) ||
        failed(verifyOperandUses(op, dominance)) ||
        failed(verifyTerminators(op)))
      return WalkResult::interrupt();
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Operation &inner : block)
          if (inner.getNumSuccessors() != 0 && &inner != &block.back()) {
            inner.emitError("operation with block successors must terminate "
                            "its parent block");
            return WalkResult::interrupt();
          }
    auto it = byForm.find(op);
    if (it == byForm.end())
      return WalkResult::advance();
    // A region of a form: its sites and captures; the rest is the template.
    const RegionInstance &instance = *it->second;
    for (Operation *site : instance.siteOps)
      if (failed(mlir::verify(site, /*verifyRecursively=*/false)))
        return WalkResult::interrupt();
    for (Value capture : instance.captures)
      if (failed(verifyUse(op, capture, dominance, [&] {
            return op->emitError("a value this region uses ");
          })))
        return WalkResult::interrupt();
    return WalkResult::skip();
  });
  return failure(result.wasInterrupted());
}

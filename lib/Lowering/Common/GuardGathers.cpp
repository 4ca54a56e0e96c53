//===- GuardGathers.cpp - bounds checks on data-dependent gathers -*- C++ -*-=//
//
// The gacc-guard-gathers pass: a `tensor.extract` inside a linalg body whose
// index comes from data (an embedding id or a class label read from a batch
// input) would read out of bounds for an id outside the table. Each such
// index is checked against its dimension and clamped into it, so no invalid
// read happens; with `report` (the CPU path), an out-of-range index also
// calls the runtime's `gaccrt_index_error(index, bound, site)`, which
// records the first error for the tools to report after the step. The sites
// (a location and the arguments involved) are listed, by site number, in
// the module attribute `gacc.gather_sites` (kGatherSitesAttrName). A
// `gacc.scatter_add` gets a site too (its rows are bounds-checked when it is
// lowered, by gacc-lower-scatter-add).
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Dialect/Gacc/IR/StepRoles.h"
#include "gacc/Lowering/Common/Passes.h"
#include "gacc/Support/IRUtils.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

#define DEBUG_TYPE "gacc-guard-gathers"

namespace mlir::gacc {
#define GEN_PASS_DEF_GUARDGATHERSPASS
#include "gacc/Lowering/Common/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

/// Returns true when `value`, used inside `body`, depends on tensor data: a
/// block argument of the linalg body (an element of an input) or the result
/// of a tensor.extract. Loop indices and constants are not data.
static bool isDataDependent(Value value, Block *body,
                            DenseMap<Value, bool> &memo) {
  auto it = memo.find(value);
  if (it != memo.end())
    return it->second;
  memo[value] = false; // cycles (none in SSA bodies) end here
  bool result = false;
  if (auto arg = dyn_cast<BlockArgument>(value)) {
    result = arg.getOwner() == body;
  } else if (Operation *def = value.getDefiningOp()) {
    if (isa<tensor::ExtractOp>(def))
      result = true;
    else if (!isa<linalg::IndexOp>(def))
      result = llvm::any_of(def->getOperands(), [&](Value operand) {
        return isDataDependent(operand, body, memo);
      });
  }
  memo[value] = result;
  return result;
}

/// The function argument a tensor is (a view of), or -1.
static int64_t argumentNumber(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<tensor::ExtractSliceOp, tensor::CastOp, tensor::CollapseShapeOp,
             tensor::ExpandShapeOp>(def))
      return -1;
    value = def->getOperand(0);
  }
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || !isa<func::FuncOp>(arg.getOwner()->getParentOp()))
    return -1;
  return arg.getArgNumber();
}

/// Describes a gather site for the error message.
static std::string describeSite(tensor::ExtractOp extract,
                                linalg::LinalgOp generic, Block *body) {
  std::string text = formatSiteLocation(extract.getLoc());
  int64_t table = argumentNumber(extract.getTensor());
  if (table >= 0)
    text += " (table: argument #" + std::to_string(table);
  // The inputs whose elements the indices come from.
  SmallVector<int64_t> sources;
  for (Value index : extract.getIndices()) {
    SmallVector<Value> work{index};
    DenseSet<Value> seen;
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!seen.insert(v).second)
        continue;
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (arg.getOwner() != body ||
            arg.getArgNumber() >= generic.getNumDpsInputs())
          continue;
        int64_t n = argumentNumber(generic.getDpsInputs()[arg.getArgNumber()]);
        if (n >= 0 && !llvm::is_contained(sources, n))
          sources.push_back(n);
      } else if (Operation *def = v.getDefiningOp()) {
        if (def->getBlock() == body || body->getParentOp()->isAncestor(def))
          llvm::append_range(work, def->getOperands());
      }
    }
  }
  if (!sources.empty()) {
    text += table >= 0 ? ", " : " (";
    text += "indices from argument";
    for (auto [k, n] : llvm::enumerate(sources))
      text += (k ? ", #" : " #") + std::to_string(n);
  }
  if (table >= 0 || !sources.empty())
    text += ")";
  return text;
}

/// Looks through integer casts to the value they convert.
static Value stripIntegerCasts(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
             arith::ExtUIOp, arith::TruncIOp>(def))
      break;
    value = def->getOperand(0);
  }
  return value;
}

/// Whether `value` is computed (inside `body`) from `extract`'s result.
static bool dependsOn(Value value, tensor::ExtractOp extract, Block *body) {
  return isComputedFrom(value, body->getParentOp(),
                        [&](Value v) { return v == extract.getResult(); });
}

/// Whether every use of `extract`'s value inside `body` reaches the body's
/// results only through `select`'s operand `discarded` (nothing else reads
/// the gathered value).
static bool onlyThrough(tensor::ExtractOp extract, arith::SelectOp select,
                        Value discarded, Block *body) {
  SmallVector<Value> work{extract.getResult()};
  DenseSet<Value> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (user == select.getOperation()) {
        if (use.get() != discarded || use.getOperandNumber() == 0)
          return false;
        continue;
      }
      if (user->getNumResults() == 0 || user->getNumRegions() != 0 ||
          !isPure(user))
        return false; // the terminator, a store, a nested region
      llvm::append_range(work, user->getResults());
    }
  }
  return true;
}

/// The constants `index` is compared with for (in)equality inside `body`
/// whose gathered value is discarded when the index equals them: sentinels
/// like nll_loss's ignore_index (-100). torch-mlir's lowering reads
/// `logp[i, target]` for every target and discards the value with a select
/// on `target == ignore_index` (or `!=`), so an index equal to a sentinel is
/// clamped but not reported. A constant the body compares with for another
/// purpose (a weight picked by the index) is no sentinel.
static SmallVector<int64_t> findSentinels(tensor::ExtractOp extract,
                                          Value index, Block *body) {
  SmallVector<int64_t> sentinels;
  Value source = stripIntegerCasts(index);
  body->getParentOp()->walk([&](arith::CmpIOp cmp) {
    bool eq = cmp.getPredicate() == arith::CmpIPredicate::eq;
    if (!eq && cmp.getPredicate() != arith::CmpIPredicate::ne)
      return;
    for (int side = 0; side < 2; ++side) {
      if (stripIntegerCasts(cmp->getOperand(side)) != source)
        continue;
      APInt value;
      if (!matchPattern(cmp->getOperand(1 - side), m_ConstantInt(&value)) ||
          llvm::is_contained(sentinels, value.getSExtValue()))
        continue;
      // A select on the compare that takes a value without the gather when
      // the index is the constant, and the gather only otherwise.
      bool discards = llvm::any_of(cmp->getUsers(), [&](Operation *user) {
        auto select = dyn_cast<arith::SelectOp>(user);
        if (!select || select.getCondition() != cmp.getResult())
          return false;
        Value chosen = eq ? select.getTrueValue() : select.getFalseValue();
        Value other = eq ? select.getFalseValue() : select.getTrueValue();
        return !dependsOn(chosen, extract, body) &&
               onlyThrough(extract, select, other, body);
      });
      if (discards)
        sentinels.push_back(value.getSExtValue());
    }
  });
  return sentinels;
}

namespace {
struct GuardGathersPass
    : public gacc::impl::GuardGathersPassBase<GuardGathersPass> {
  using Base::Base;

  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    SmallVector<Attribute> sites;
    func::FuncOp errorFunction;
    // Every structured op with a body: linalg.generic, and linalg.map or
    // linalg.reduce, whose bodies gather the same way.
    module.walk([&](linalg::LinalgOp generic) {
      Block *body = generic.getBlock();
      DenseMap<Value, bool> memo;
      SmallVector<tensor::ExtractOp> extracts;
      body->walk([&](tensor::ExtractOp op) { extracts.push_back(op); });
      for (tensor::ExtractOp extract : extracts) {
        if (!llvm::any_of(extract.getIndices(), [&](Value index) {
              return isDataDependent(index, body, memo);
            }))
          continue;
        if (report && !errorFunction)
          errorFunction = getOrDeclareIndexError(generic);
        guard(extract, generic, body, memo, errorFunction, sites);
      }
    });
    // Scatter-adds check their indices when they are lowered to loops; with
    // `report` they name their site for the error.
    if (report)
      module.walk([&](gacc::ScatterAddOp scatter) {
        if (!errorFunction)
          errorFunction = getOrDeclareIndexError(scatter);
        std::string text =
            (kScatterSitePrefix + formatSiteLocation(scatter.getLoc())).str();
        int64_t indices = argumentNumber(scatter.getIndices());
        if (indices >= 0)
          text += " (indices from argument #" + std::to_string(indices) + ")";
        scatter->setAttr(
            kIndexSiteAttrName,
            IntegerAttr::get(IntegerType::get(module.getContext(), 64),
                             sites.size()));
        sites.push_back(StringAttr::get(module.getContext(), text));
      });
    if (report && !sites.empty())
      module->setAttr(kGatherSitesAttrName,
                      ArrayAttr::get(module.getContext(), sites));
  }

  void guard(tensor::ExtractOp extract, linalg::LinalgOp generic, Block *body,
             DenseMap<Value, bool> &memo, func::FuncOp errorFunction,
             SmallVector<Attribute> &sites) {
    OpBuilder b(extract);
    Location loc = extract.getLoc();
    int64_t site = sites.size();
    sites.push_back(b.getStringAttr(describeSite(extract, generic, body)));
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    SmallVector<Value> indices;
    for (auto [dim, index] : llvm::enumerate(extract.getIndices())) {
      if (!isDataDependent(index, body, memo)) {
        indices.push_back(index);
        continue;
      }
      Value bound = tensor::DimOp::create(b, loc, extract.getTensor(), dim);
      Value nonNegative =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, index, zero);
      Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt,
                                          index, bound);
      Value inRange = arith::AndIOp::create(b, loc, nonNegative, below);
      if (errorFunction) {
        Value outOfRange = arith::XOrIOp::create(
            b, loc, inRange, arith::ConstantIntOp::create(b, loc, 1, 1));
        for (int64_t sentinel : findSentinels(extract, index, body)) {
          Value isSentinel = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::eq, index,
              arith::ConstantIndexOp::create(b, loc, sentinel));
          outOfRange = arith::AndIOp::create(
              b, loc, outOfRange,
              arith::XOrIOp::create(
                  b, loc, isSentinel,
                  arith::ConstantIntOp::create(b, loc, 1, 1)));
        }
        auto ifOp = scf::IfOp::create(b, loc, outOfRange,
                                      /*withElseRegion=*/false);
        OpBuilder then = ifOp.getThenBodyBuilder();
        Type i64 = b.getI64Type();
        Value index64 = arith::IndexCastOp::create(then, loc, i64, index);
        Value bound64 = arith::IndexCastOp::create(then, loc, i64, bound);
        Value site64 = arith::ConstantIntOp::create(then, loc, i64, site);
        func::CallOp::create(then, loc, errorFunction,
                             ValueRange{index64, bound64, site64});
      }
      // Clamped into [0, bound - 1]: the read stays inside the tensor.
      Value last = arith::SubIOp::create(b, loc, bound, one);
      Value clamped = arith::MaxSIOp::create(
          b, loc, arith::MinSIOp::create(b, loc, index, last), zero);
      indices.push_back(
          arith::SelectOp::create(b, loc, inRange, index, clamped));
    }
    extract.getIndicesMutable().assign(indices);
  }
};
} // namespace

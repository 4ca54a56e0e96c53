//===- EvalTensor.cpp - tensor ops with LibTorch --------------------------===//
//
// The LibTorch evaluator (TorchEvaluator.cpp) on tensor ops (slices, reshapes,
// extract and insert, concat, pad and generate, whose regions are evaluated on
// every index at once), ml_program global loads and gacc.scatter_add. A
// tensor.extract inside a payload that reads out of bounds is poison (see
// Payload); outside payloads it is an error.
//
//===----------------------------------------------------------------------===//

#include "EvaluatorImpl.h"

#include "mlir/Dialect/MLProgram/IR/MLProgram.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"

#include <ATen/ATen.h>

#include <optional>
#include <vector>

using namespace mlir;
using namespace mlir::gacc::torch_eval;

void Evaluator::evalTensorOp(Operation *op, Payload *payload) {
  if (auto extract = dyn_cast<tensor::ExtractOp>(op)) {
    Tensor source = get(extract.getTensor());
    c10::List<c10::optional<Tensor>> indices;
    Tensor outOfBounds;
    for (auto [d, v] : llvm::enumerate(extract.getIndices())) {
      Tensor index = get(v);
      Tensor bad = at::logical_or(index < 0, index >= source.size(d));
      if (at::any(bad).item<bool>()) {
        // Outside payloads this is an error; inside, the lanes that read out
        // of bounds are poison (read at a clamped index, then tracked).
        if (!payload || source.size(d) == 0)
          unsupported("index out of bounds in dimension " + Twine(d));
        index = index.clamp(0, source.size(d) - 1);
        outOfBounds =
            outOfBounds.defined() ? at::logical_or(outOfBounds, bad) : bad;
      }
      indices.push_back(c10::optional<Tensor>(index));
    }
    if (outOfBounds.defined())
      payload->poison[extract.getResult()] = outOfBounds;
    set(extract.getResult(),
        indices.empty() ? source : at::index(source, indices));
    return;
  }
  if (auto dim = dyn_cast<tensor::DimOp>(op)) {
    Tensor source = get(dim.getSource());
    int64_t d = get(dim.getIndex()).item<int64_t>();
    if (d < 0 || d >= source.dim())
      unsupported("dimension out of range");
    set(dim.getResult(),
        at::scalar_tensor(source.size(d), at::TensorOptions(at::kLong)));
    return;
  }
  if (payload)
    unsupported("operation inside a linalg payload");

  if (auto empty = dyn_cast<tensor::EmptyOp>(op)) {
    set(empty.getResult(),
        at::zeros(toAt(resolve(empty.getMixedSizes())),
                  at::TensorOptions(dtypeOf(empty.getType()))));
    return;
  }
  if (auto castOp = dyn_cast<tensor::CastOp>(op)) {
    Tensor source = get(castOp.getSource());
    if (!gacc::matchesType(source, castOp.getType(), computeType))
      unsupported("the operand of shape " + toString(source.sizes()) +
                  " does not have type " + toString(castOp.getType()));
    set(castOp.getResult(), source);
    return;
  }
  // Slices: offsets, sizes and strides per dimension.
  auto slice = [](Tensor t, ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                  ArrayRef<int64_t> strides) {
    for (auto [d, offset] : llvm::enumerate(offsets)) {
      int64_t size = sizes[d], stride = strides[d];
      if (offset < 0 || size < 0 || stride < 1 ||
          (size > 0 && offset + (size - 1) * stride >= t.size(d)))
        unsupported("slice out of bounds in dimension " + Twine(d));
      int64_t end = size ? offset + (size - 1) * stride + 1 : offset;
      t = t.slice(d, offset, end, stride);
    }
    return t;
  };
  if (auto extract = dyn_cast<tensor::ExtractSliceOp>(op)) {
    Tensor t = slice(
        get(extract.getSource()), resolve(extract.getMixedOffsets()),
        resolve(extract.getMixedSizes()), resolve(extract.getMixedStrides()));
    llvm::SmallBitVector dropped = extract.getDroppedDims();
    for (int64_t d = static_cast<int64_t>(dropped.size()) - 1; d >= 0; --d)
      if (dropped.test(d))
        t = t.squeeze(d);
    set(extract.getResult(), t);
    return;
  }
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op)) {
    Tensor dest = get(insert.getDest()).clone();
    Tensor source = get(insert.getSource());
    SmallVector<int64_t> sizes = resolve(insert.getMixedSizes());
    Tensor view = slice(dest, resolve(insert.getMixedOffsets()), sizes,
                        resolve(insert.getMixedStrides()));
    if (source.dim() < static_cast<int64_t>(sizes.size())) {
      SmallVector<int64_t> sourceShape(source.sizes().begin(),
                                       source.sizes().end());
      std::optional<llvm::SmallDenseSet<unsigned>> mask =
          computeRankReductionMask(sizes, sourceShape);
      if (!mask)
        unsupported("cannot match the rank-reduced source to the slice");
      SmallVector<unsigned> droppedDims(mask->begin(), mask->end());
      llvm::sort(droppedDims);
      for (unsigned d : droppedDims)
        source = source.unsqueeze(d);
    }
    if (!view.sizes().equals(source.sizes()))
      unsupported("the source of shape " + toString(source.sizes()) +
                  " does not fit the slice of shape " + toString(view.sizes()));
    view.copy_(source.to(dest.scalar_type()));
    set(insert.getResult(), dest);
    return;
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
    Tensor source = get(collapse.getSrc());
    SmallVector<int64_t> shape;
    for (const ReassociationIndices &group :
         collapse.getReassociationIndices()) {
      int64_t size = 1;
      for (int64_t d : group)
        size *= source.size(d);
      shape.push_back(size);
    }
    set(collapse.getResult(), source.reshape(toAt(shape)));
    return;
  }
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
    Tensor source = get(expand.getSrc());
    SmallVector<int64_t> shape = resolve(expand.getMixedOutputShape());
    int64_t numel = 1;
    for (int64_t size : shape)
      numel *= size;
    if (numel != source.numel())
      unsupported("the output shape does not have the operand's size");
    set(expand.getResult(), source.reshape(toAt(shape)));
    return;
  }
  if (auto fromElements = dyn_cast<tensor::FromElementsOp>(op)) {
    std::vector<Tensor> elements;
    for (Value v : fromElements.getElements()) {
      elements.push_back(get(v));
      if (elements.back().dim() != 0)
        unsupported("an element is not a scalar");
    }
    SmallVector<int64_t> shape(fromElements.getType().getShape());
    set(fromElements.getResult(), at::stack(elements).reshape(toAt(shape)));
    return;
  }
  if (auto splat = dyn_cast<tensor::SplatOp>(op)) {
    SmallVector<int64_t> shape =
        shapeOf(splat.getType(), splat.getDynamicSizes());
    set(splat.getResult(),
        get(splat.getInput()).expand(toAt(shape)).contiguous());
    return;
  }
  if (auto concat = dyn_cast<tensor::ConcatOp>(op)) {
    std::vector<Tensor> inputs;
    for (Value v : concat.getInputs())
      inputs.push_back(get(v));
    set(concat.getResult(),
        at::cat(inputs, static_cast<int64_t>(concat.getDim())));
    return;
  }
  if (auto insert = dyn_cast<tensor::InsertOp>(op)) {
    Tensor dest = get(insert.getDest()).clone();
    Tensor view = dest;
    for (Value v : insert.getIndices()) {
      int64_t index = get(v).item<int64_t>();
      if (index < 0 || index >= view.size(0))
        unsupported("index out of bounds");
      view = view.select(0, index);
    }
    view.copy_(get(insert.getScalar()));
    set(insert.getResult(), dest);
    return;
  }
  if (auto cast = dyn_cast<tensor::BitcastOp>(op)) {
    set(cast.getResult(),
        bitcast(get(cast.getSource()), cast.getSource().getType(),
                cast.getType(), dtypeOf(cast.getType())));
    return;
  }
  if (auto rank = dyn_cast<tensor::RankOp>(op)) {
    set(rank.getResult(), at::scalar_tensor(get(rank.getTensor()).dim(),
                                            at::TensorOptions(at::kLong)));
    return;
  }
  if (auto reshape = dyn_cast<tensor::ReshapeOp>(op)) {
    Tensor shapeTensor = get(reshape.getShape()).to(at::kLong).contiguous();
    std::vector<int64_t> shape(shapeTensor.data_ptr<int64_t>(),
                               shapeTensor.data_ptr<int64_t>() +
                                   shapeTensor.numel());
    Tensor source = get(reshape.getSource());
    int64_t numel = 1;
    for (int64_t size : shape)
      numel *= size;
    if (numel != source.numel())
      unsupported("the shape does not have the operand's size");
    set(reshape.getResult(), source.reshape(shape));
    return;
  }
  unsupported("unsupported operation");
}

LogicalResult Evaluator::evalRegionTensorOp(Operation *op) {
  if (auto generate = dyn_cast<tensor::GenerateOp>(op)) {
    SmallVector<int64_t> shape =
        shapeOf(generate.getType(), generate.getDynamicExtents());
    FailureOr<Tensor> t = evalIndexRegion(generate.getBody().front(), shape);
    if (failed(t))
      return failure();
    set(generate.getResult(), t->to(dtypeOf(generate.getType())));
    return success();
  }
  auto pad = cast<tensor::PadOp>(op);
  Tensor source = get(pad.getSource());
  SmallVector<int64_t> low = resolve(pad.getMixedLowPad());
  SmallVector<int64_t> high = resolve(pad.getMixedHighPad());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < source.dim(); ++d) {
    if (low[d] < 0 || high[d] < 0)
      unsupported("negative padding is not supported");
    shape.push_back(low[d] + source.size(d) + high[d]);
  }
  // The padding: a value from outside the region, or the region evaluated
  // on every index (also where the source goes; overwritten below).
  Tensor result;
  Value padValue = pad.getConstantPaddingValue();
  if (padValue && padValue.getParentRegion() != &pad.getRegion()) {
    result = get(padValue).expand(toAt(shape));
  } else {
    FailureOr<Tensor> t = evalIndexRegion(pad.getRegion().front(), shape);
    if (failed(t))
      return failure();
    result = *t;
  }
  // A fresh tensor (never a view of an input) that the source is copied into.
  result = result.to(source.scalar_type()).clone(at::MemoryFormat::Contiguous);
  Tensor view = result;
  for (int64_t d = 0; d < source.dim(); ++d)
    view = view.narrow(d, low[d], source.size(d));
  view.copy_(source);
  set(pad.getResult(), result);
  return success();
}

void Evaluator::evalGlobalLoad(Operation *op) {
  SymbolRefAttr symbol;
  if (auto load = dyn_cast<ml_program::GlobalLoadConstOp>(op))
    symbol = load.getGlobal();
  else if (auto load = dyn_cast<ml_program::GlobalLoadOp>(op))
    symbol = load.getGlobal();
  else
    unsupported("unsupported operation");
  auto global =
      SymbolTable::lookupNearestSymbolFrom<ml_program::GlobalOp>(op, symbol);
  if (!global)
    unsupported("cannot find the global " + toString(symbol));
  if (global.getIsMutable()) {
    // A mutable global reads its initial value only if nothing stores to it.
    Operation *top = SymbolTable::getNearestSymbolTable(global);
    bool stored = false;
    top->walk([&](ml_program::GlobalStoreOp store) {
      stored |= SymbolTable::lookupNearestSymbolFrom(
                    store, store.getGlobal()) == global.getOperation();
    });
    if (stored)
      unsupported("the global " + toString(symbol) +
                  " is stored to (only globals that are never stored are "
                  "supported)");
  }
  std::optional<Attribute> value = global.getValue();
  auto elements = value ? dyn_cast<ElementsAttr>(*value) : ElementsAttr();
  if (!elements)
    unsupported("the global " + toString(symbol) +
                " has no dense initial value");
  Type type = op->getResult(0).getType();
  Tensor t = elementsToTensor(elements, dtypeOf(type));
  if (!gacc::matchesType(t, type, computeType))
    unsupported("the value of the global " + toString(symbol) +
                " does not have type " + toString(type));
  set(op->getResult(0), t);
}

void Evaluator::evalScatterAdd(gacc::ScatterAddOp op) {
  Tensor updates = get(op.getUpdates());
  Tensor indices = get(op.getIndices()).to(at::kLong).reshape({-1});
  Tensor init = get(op.getInit());
  int64_t rows = init.size(0);
  Tensor outside = at::logical_or(at::lt(indices, 0), at::ge(indices, rows));
  if (outside.any().item<bool>())
    unsupported(
        "index " + Twine(indices.masked_select(outside)[0].item<int64_t>()) +
        " out of range [0, " + Twine(rows) + ") in scatter_add (" +
        Twine(outside.sum().item<int64_t>()) + " out-of-range positions)");
  // One row of updates per position: [positions, init.shape[1:]...].
  std::vector<int64_t> shape{indices.size(0)};
  for (int64_t d = 1; d < init.dim(); ++d)
    shape.push_back(init.size(d));
  Tensor source = updates.reshape(shape).to(init.scalar_type());
  set(op.getResult()[0], init.index_add(0, indices, source));
}

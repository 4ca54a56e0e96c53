//===- GaccOps.td - gacc dialect and operations -----------*- tablegen -*-===//
//
// The gacc dialect: the role attributes of a training-step graph (verified on
// function arguments and results), the explicit micro-batch region op that
// the gacc-micro-batch pass produces, and the scatter-add of an embedding's
// gradient.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_DIALECT_GACC_IR_GACCOPS_TD
#define GACC_DIALECT_GACC_IR_GACCOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.td"

def Gacc_Dialect : Dialect {
  let name = "gacc";
  let cppNamespace = "::mlir::gacc";
  let summary = "Gradient accumulation for training-step graphs";
  let description = [{
    The gacc dialect marks the roles of a training step's arguments and
    results with discardable attributes (`gacc.param`, `gacc.batch = D`,
    `gacc.state`, `gacc.loss`, `gacc.grad = I`, `gacc.param_out = I`,
    `gacc.state_out = I`, `gacc.metric`) and makes micro-batch regions explicit
    with `gacc.micro_batch`. `gacc.scatter_add` is the gradient of an
    embedding lookup (index_add with accumulation).
  }];
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    static constexpr ::llvm::StringLiteral kParamAttrName = "gacc.param";
    static constexpr ::llvm::StringLiteral kBatchAttrName = "gacc.batch";
    static constexpr ::llvm::StringLiteral kStateAttrName = "gacc.state";
    static constexpr ::llvm::StringLiteral kLossAttrName = "gacc.loss";
    static constexpr ::llvm::StringLiteral kGradAttrName = "gacc.grad";
    static constexpr ::llvm::StringLiteral kParamOutAttrName = "gacc.param_out";
    static constexpr ::llvm::StringLiteral kStateOutAttrName = "gacc.state_out";
    static constexpr ::llvm::StringLiteral kMetricAttrName = "gacc.metric";
    /// The number of real samples of a step compiled with
    /// runtime-batch-size (a `tensor<i64>` argument).
    static constexpr ::llvm::StringLiteral kSampleCountAttrName =
        "gacc.sample_count";
    /// Marks the ops that combine the partials of consecutive micro-batches.
    static constexpr ::llvm::StringLiteral kCombineAttrName = "gacc.combine";
    /// Marks the values that hold a gradient accumulator bucket.
    static constexpr ::llvm::StringLiteral kBucketAttrName = "gacc.bucket";
    /// Marks a bucket collective that the lowering starts as soon as the
    /// final region has written its bucket and waits for only where the
    /// bucket is read (gacc-sink-all-reduce's `overlap`).
    static constexpr ::llvm::StringLiteral kOverlapAttrName = "gacc.overlap";
  }];
}

class Gacc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Gacc_Dialect, mnemonic, traits>;

def Gacc_MicroBatchOp : Gacc_Op<"micro_batch", [
    SingleBlock, RecursiveMemoryEffects]> {
  let summary = "one micro-batch region of a gradient-accumulated step";
  let description = [{
    The work of micro-batch `index` on samples `[offset, offset + size)` of the
    rank's batch. The body computes the per-sample work on sliced batch inputs
    and yields the region's partials (or running accumulators after
    `gacc-fuse-accumulation`). The region is not isolated: invariants computed
    before the regions and the results of earlier regions are used directly.

    ```mlir
    %p = gacc.micro_batch 1 offset 2 size 2 -> (tensor<f32>) {
      ...
      gacc.yield %sum : tensor<f32>
    }
    ```
  }];
  let arguments = (ins I64Attr:$index, I64Attr:$offset, I64Attr:$size);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $index `offset` $offset `size` $size (`->` `(` type($results)^ `)`)?
    $body attr-dict
  }];
  let hasVerifier = 1;
}

def Gacc_YieldOp : Gacc_Op<"yield", [
    Pure, Terminator, ReturnLike, HasParent<"MicroBatchOp">]> {
  let summary = "yields the results of a micro-batch region";
  let arguments = (ins Variadic<AnyType>:$operands);
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
}

def Gacc_ScatterAddOp : Gacc_Op<"scatter_add", [
    DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
    DestinationStyleOpInterface,
    DeclareOpInterfaceMethods<BufferizableOpInterface,
        ["bufferizesToMemoryRead", "bufferizesToMemoryWrite",
         "getAliasingValues", "bufferize"]>]> {
  let summary = "adds rows of updates into the rows of init named by indices";
  let description = [{
    The gradient of an embedding lookup (PyTorch's `embedding_dense_backward`,
    `index_add` / `index_put` with `accumulate=True`): for every position `p`
    of `indices` (shape S, rank k >= 1, elements i64, i32 or index),

    ```
    result = init
    result[indices[p], j...] += updates[p, j...]
    ```

    so `updates` has the shape S ++ init.shape[1:]. The work is
    O(positions x row), not the O(positions x rows of init) of a one-hot
    product. Rows that several positions name accumulate all of their
    updates (the order of the additions is unspecified).

    The op is in destination-passing style, like a linalg reduction: `init`
    is the accumulator and the result has its type. On tensors the op has
    one result; on buffers (after bufferization) none, and `init` is
    updated in place.

    An index outside `[0, init.shape[0])` never reads or writes out of
    bounds: its row is skipped, and on the CPU it is reported as a runtime
    error like an out-of-range gather (gacc-guard-gathers).

    In a training step the op is a partial (a sum over the samples) when
    `indices` and `updates` carry the sample dimension at the same position
    d < k and `init` does not depend on the batch, so gradient accumulation
    splits it exactly: each micro-batch adds its rows into the running
    accumulator.

    ```mlir
    %r = gacc.scatter_add ins(%updates, %indices : tensor<4x8x16xf32>, tensor<4x8xi64>)
                          outs(%init : tensor<100x16xf32>) -> tensor<100x16xf32>
    ```
  }];
  let arguments = (ins
    AnyTypeOf<[AnyRankedTensor, AnyMemRef]>:$updates,
    AnyTypeOf<[AnyRankedTensor, AnyMemRef]>:$indices,
    AnyTypeOf<[AnyRankedTensor, AnyMemRef]>:$init);
  let results = (outs Variadic<AnyRankedTensor>:$result);
  let assemblyFormat = [{
    `ins` `(` $updates `,` $indices `:` type($updates) `,` type($indices) `)`
    `outs` `(` $init `:` type($init) `)` (`->` type($result)^)? attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitMutable();
    }
    /// The rank of `indices` (k): the position dimensions of `updates`.
    int64_t getNumPositionDims() {
      return ::llvm::cast<::mlir::ShapedType>(getIndices().getType())
          .getRank();
    }
  }];
}

#endif // GACC_DIALECT_GACC_IR_GACCOPS_TD

//===- GaccOps.td - gacc dialect and operations -----------*- tablegen -*-===//
//
// The gacc dialect: the role attributes of a training-step graph (verified on
// function arguments and results) and the explicit micro-batch region op that
// the gacc-micro-batch pass produces.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_DIALECT_GACC_IR_GACCOPS_TD
#define GACC_DIALECT_GACC_IR_GACCOPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

def Gacc_Dialect : Dialect {
  let name = "gacc";
  let cppNamespace = "::mlir::gacc";
  let summary = "Gradient accumulation for training-step graphs";
  let description = [{
    The gacc dialect marks the roles of a training step's arguments and
    results with discardable attributes (`gacc.param`, `gacc.batch = D`,
    `gacc.state`, `gacc.loss`, `gacc.grad = I`, `gacc.param_out = I`,
    `gacc.state_out = I`, `gacc.metric`) and makes micro-batch regions explicit
    with `gacc.micro_batch`.
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

#endif // GACC_DIALECT_GACC_IR_GACCOPS_TD

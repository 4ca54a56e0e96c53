//===- Passes.td - gacc pass definitions ------------------*- tablegen -*-===//
//
// The gacc passes: verify a training step, split it into micro-batch regions,
// fuse accumulation into the gradient-producing reductions, and sink and
// bucket the data-parallel all-reduce. Option defaults that are not empty
// or false name the constants of gacc/Transforms/PassDefaults.h.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_TRANSFORMS_PASSES_TD
#define GACC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

// The option of every pass that finds the training step: the function's
// name, or (empty) the only function carrying gacc roles.
def GaccEntryOption : Option<"entry", "entry", "std::string",
                             /*default=*/"\"\"",
                             "Name of the training-step function">;

def VerifyStepPass : Pass<"gacc-verify-step", "ModuleOp"> {
  let summary = "Check the training-step contract and run the batch analysis";
  let description = [{
    Selects the entry function (`entry`, default: the only function carrying
    gacc attributes), checks the role attributes against each other (a loss
    result, batch arguments with one sample count) and runs the batch dataflow
    analysis, which rejects reads of a `tensor.empty`'s contents (as a
    linalg init or input the body uses, `tensor.extract`, a returned value,
    ...), unsupported ops on the per-sample path, non-linear collectives on
    partials and batch statistics that depend on parameters.
  }];
  let options = [
    GaccEntryOption,
    Option<"allowMicroBatchStatistics", "allow-micro-batch-statistics", "bool",
           /*default=*/"false",
           "Accept parameter-dependent batch statistics with a warning and "
           "per-micro-batch semantics">,
  ];
}

def PrepareStepPass : Pass<"gacc-prepare-step", "ModuleOp"> {
  let summary = "Inline calls, box scalars, specialize a dynamic batch size, "
                "raise loop nests and canonicalize the step";
  let description = [{
    Brings frontend output and hand-written steps into the form the batch
    analysis reads. First, every function the step calls (at any depth) is
    inlined, so later passes see one function; inlined ops keep a call-site
    location, private helpers left without uses are erased, and a call of
    an external declaration, a recursive call, a multi-block callee or an
    indirect call is an error at the call. Then scalar arguments and
    results (`f32`, `i64`, `index`, ...) become rank-0 tensors (an `index`
    a `tensor<i64>`): arguments are read with `tensor.extract`, results
    returned through `tensor.from_elements`. Then batch
    arguments whose sample dimension is dynamic (`tensor<?x...>`, as
    torch.export emits) are specialized to `batch-size` samples (an error
    without it). Then every perfect `scf.for` nest that reads a value
    computed from a batch argument (a sum over the samples in an `f32`
    iter_arg, a running max over classes carrying one element per sample
    with `tensor.extract`/`tensor.insert`) is raised into the
    `linalg.generic` it writes out, loops in the same order, `parallel`
    where every output is indexed by the loop, `reduction` otherwise, so
    that the batch analysis splits or refuses it as a linalg op (the rules:
    docs/Contract.md, "Loops"). Then a read of a `tensor.empty`'s contents
    is refused at the reading op (as the batch analysis does, but before
    canonicalization folds a generic that yields its empty init into the
    empty), then the training-step function is canonicalized and CSE'd
    (dead ops dropped, `tensor.empty` of `?` sizes and `tensor.cast`
    folded, `tensor.dim` of static sizes folded; loop nests whose bounds
    became constants are raised then), and results whose type became
    static are returned with that type. With `runtime-batch-size`, a
    `tensor.dim` of a sample dimension (of a batch argument, or any dynamic
    dimension) that reaches `arith.sitofp`/`uitofp` through integer
    arithmetic is, on that path, scaled to the run-time sample count of the
    `gacc.sample_count` argument (added if missing); shape uses keep B.
  }];
  let options = [
    GaccEntryOption,
    Option<"batchSize", "batch-size", "int64_t",
           /*default=*/"::mlir::gacc::kDefaultBatchSize",
           "Number of samples of a batch argument whose sample dimension is "
           "dynamic (0: none may be)">,
    Option<"canonicalize", "canonicalize", "bool", /*default=*/"true",
           "Canonicalize and CSE the step after specializing it">,
    Option<"runtimeBatchSize", "runtime-batch-size", "bool",
           /*default=*/"false",
           "Sample counts read from shapes as values (tensor.dim of a "
           "sample dimension converted to a float) become the "
           "gacc.sample_count argument, before the sizes are folded">,
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def RuntimeBatchSizePass : Pass<"gacc-runtime-batch-size", "ModuleOp"> {
  let summary = "Let a training step run any batch size up to its own";
  let description = [{
    Rewrites a training step written for B samples so that it runs any
    B' <= B samples at run time (the incomplete last step of an epoch). The
    step gains a last argument `tensor<i64> {gacc.sample_count}` holding B';
    the batch arguments keep B samples, of which the first B' are real and
    the rest padding. Every reduction over the sample dimension skips the
    padding: a `linalg.generic` (or a generalized named op) adds the
    combiner's identity instead of a padded sample's contribution, and a
    named contraction whose inputs all carry the sample dimension (a weight
    gradient) reads them with padded samples zeroed. Sample counts used as
    values (a float constant equal to B or 1/B that is not compared, and
    `sitofp` of the integer B) become B' and 1/B'. Per-sample results keep
    B rows; rows past B' are padding. Run before gacc-micro-batch; regions
    keep their compile-time sizes, and a tail's samples fill them in order.
  }];
  let options = [
    GaccEntryOption,
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def MicroBatchPass : Pass<"gacc-micro-batch", "ModuleOp"> {
  let summary = "Split a training step into micro-batch regions";
  let description = [{
    Unrolls the step into `micro-batches` explicit `gacc.micro_batch` regions
    (sizes from `micro-batch-sizes`, or sizes that differ by at most one).
    Invariants are computed once before the regions, prologue statistics over
    the whole batch before them, each region computes the per-sample work on
    its slice and yields its partials, the partials are combined after the
    regions (`gacc.combine`), and the epilogue runs once on the combined
    values. Sample counts used as values keep the global batch size.
  }];
  let options = [
    GaccEntryOption,
    Option<"microBatches", "micro-batches", "int64_t",
           /*default=*/"::mlir::gacc::kDefaultMicroBatches",
           "Number of micro-batches m">,
    ListOption<"microBatchSizes", "micro-batch-sizes", "int64_t",
               "Explicit micro-batch sizes (must sum to the batch size)">,
    Option<"allowMicroBatchStatistics", "allow-micro-batch-statistics", "bool",
           /*default=*/"false",
           "Accept parameter-dependent batch statistics with a warning and "
           "per-micro-batch semantics">,
    Option<"testSkipGlobalNormalizer", "test-skip-global-normalizer", "bool",
           /*default=*/"false",
           "Test only: rescale sample-count constants to the micro-batch "
           "(a deliberately wrong result for checker tests)">,
  ];
  let dependentDialects = ["::mlir::gacc::GaccDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def FuseAccumulationPass : Pass<"gacc-fuse-accumulation", "ModuleOp"> {
  let summary = "Make the reductions of each region write into accumulators";
  let description = [{
    Removes the combination of per-region partials: the reduction that
    produces the partial of region k > 1 takes the running accumulator (the
    previous region's result) as its `outs` operand instead of an identity
    fill, so after bufferization it accumulates in place. The first region
    initializes the accumulator. With `accumulate-type=f32`, accumulators of
    narrower float types are kept in f32 and truncated once after the final
    region.
  }];
  let options = [
    Option<"accumulateType", "accumulate-type", "std::string",
           /*default=*/"\"\"",
           "Element type of accumulators for narrower float partials "
           "(empty or f32)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def SinkAllReducePass : Pass<"gacc-sink-all-reduce", "ModuleOp"> {
  let summary = "Run linear collectives once per accumulator bucket";
  let description = [{
    Groups the sum/average `shard.all_reduce` ops applied to accumulated
    partials into contiguous buckets of at most `bucket-bytes` bytes (a
    larger accumulator gets its own bucket), makes each accumulator a view of
    its bucket from the first region on, and issues one all-reduce per bucket
    after the final region.

    With `overlap` (the default) the accumulators are bucketed in the order
    the final region finishes them (the backward produces the last layer's
    gradients first), and each bucket all-reduce is marked `gacc.overlap`:
    the lowering starts it as soon as the final region has written its
    bucket and waits for it only before the first op that reads the bucket.
    Without it, buckets follow the order of the collectives in the graph and
    run after the final region.
  }];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t",
           /*default=*/"::mlir::gacc::kDefaultBucketBytes",
           "Maximum size of a bucket in bytes">,
    Option<"overlap", "overlap", "bool",
           /*default=*/"::mlir::gacc::kDefaultOverlapAllReduce",
           "Bucket in the order the final region finishes the accumulators "
           "and mark the buckets' all-reduces to overlap with it">,
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::shard::ShardDialect"];
}

def ShardOptimizerStatePass : Pass<"gacc-shard-optimizer-state", "ModuleOp"> {
  let summary = "Reduce-scatter the buckets, update each rank's shard, "
                "all-gather the parameters (ZeRO-1/2)";
  let description = [{
    Runs after gacc-sink-all-reduce. Each bucket's sum/average all-reduce
    becomes a `shard.reduce_scatter` over the data-parallel grid axis, and
    the epilogue that reads the reduced gradients (clipping, the optimizer
    update) runs on the rank's shard of every gradient: a tensor of n
    elements is flattened, padded to a multiple of the rank count N with
    zeros, and rank r holds elements [r s, r s + s), s = ceil(n / N). The
    bucket is laid out rank-major (rank r's chunk holds the r-th shard of
    each member, one after the other), so that the reduce-scatter hands each
    rank exactly its shards; padding is reduced but never read as data.

    Elementwise ops (arith, math, all-parallel linalg ops whose sharded
    operands have identity maps) run on the shards; parameters and other
    full-size operands are sliced; a rank-0 operand stays a scalar. A
    reduction over all elements of a sharded tensor (the global norm of
    gradient clipping, LAMB's per-tensor norm, a found-inf flag) becomes
    the rank's reduction of its shard (padding masked) and a
    `shard.all_reduce` of the one scalar. Any other use of a sharded value
    (a transpose, a partial reduction, a slice, a collective) is an error at
    the op.

    A `gacc.state` argument read only elementwise whose `gacc.state_out`
    result is sharded stays sharded between steps: the argument and the
    result become the rank's shard (`tensor<s>`), marked
    `gacc.shard_of = array<i64: dims>` with the full shape. Every other
    sharded result (`param_out`, `grad`) is all-gathered: one
    `shard.all_gather` per bucket and element type.

    The grid axis needs a static size: a grid of dynamic shape takes
    `data-parallel-size` (the tools set it to the number of ranks).
  }];
  let options = [
    Option<"dataParallelSize", "data-parallel-size", "int64_t",
           /*default=*/"0",
           "Number of data-parallel ranks for a grid of dynamic shape "
           "(0: the grid's own size)">,
  ];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::shard::ShardDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::arith::ArithDialect"];
}

def LossScalePass : Pass<"gacc-loss-scale", "ModuleOp"> {
  let summary = "Scale the loss seed, unscale once, skip the step on overflow";
  let description = [{
    Mixed-precision loss scaling as PyTorch's GradScaler does it, on a step
    that gacc-micro-batch (and gacc-fuse-accumulation) already transformed,
    before gacc-sink-all-reduce buckets its collectives. Every region's
    gradient contributions (and the first region's non-zero accumulator
    init) are scaled by S before they enter their accumulator (the backward
    is linear in the loss seed); a sum or average all-reduce of an
    accumulator reduces it scaled and is unscaled once after it, every other
    use of the accumulator reads it unscaled; one found-inf flag over all unscaled gradients
    is reduced across ranks with max, every `gacc.param_out` and
    `gacc.state_out` result keeps its old value when the flag is set, and
    (`dynamic`) the scale and its growth tracker are updated. `dynamic` adds
    two step-state arguments (scale: tensor<f32>, growth tracker:
    tensor<i64>, `gacc.state`) and their `gacc.state_out` results at the end
    of the signature.
  }];
  let options = [
    GaccEntryOption,
    Option<"lossScale", "loss-scale", "std::string",
           /*default=*/"::mlir::gacc::kDefaultLossScale",
           "none, static (loss-scale-init), static=S, or dynamic">,
    Option<"lossScaleInit", "loss-scale-init", "double",
           /*default=*/"::mlir::gacc::kDefaultLossScaleInit",
           "Static scale, or the initial value of the dynamic scale (the "
           "value tools feed the scale argument with)">,
    Option<"growthFactor", "loss-scale-growth-factor", "double",
           /*default=*/"::mlir::gacc::kDefaultLossScaleGrowthFactor",
           "Dynamic: factor after growth-interval clean steps">,
    Option<"backoffFactor", "loss-scale-backoff-factor", "double",
           /*default=*/"::mlir::gacc::kDefaultLossScaleBackoffFactor",
           "Dynamic: factor after an overflow">,
    Option<"growthInterval", "loss-scale-growth-interval", "int64_t",
           /*default=*/"::mlir::gacc::kDefaultLossScaleGrowthInterval",
           "Dynamic: clean steps before the scale grows">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::shard::ShardDialect"];
}

def StripRolesPass : Pass<"gacc-strip-roles", "ModuleOp"> {
  let summary = "Remove the gacc role attributes from functions";
  let description = [{
    Lowering no longer needs the roles (tools record them before lowering),
    and bufferization moves results to arguments, where result roles would
    not verify.
  }];
}

def TestPrintBatchAnalysisPass
    : Pass<"gacc-test-print-batch-analysis", "ModuleOp"> {
  let summary = "Test only: print the batch-analysis class of each op";
  let options = [
    GaccEntryOption,
    Option<"allowMicroBatchStatistics", "allow-micro-batch-statistics", "bool",
           /*default=*/"false", "As gacc-verify-step">,
  ];
}

def TestBuildStepForBatchSizePass
    : Pass<"gacc-test-build-step-for-batch-size", "ModuleOp"> {
  let summary = "Test only: add the step rebuilt for another number of "
                "samples (gacc-check's tail and eager references)";
  let description = [{
    Adds `<entry>_<size>`, the training step rebuilt for `size` samples by
    the same code that gacc-check uses for a tail step's reference and for
    the eager recipe: per-sample values retyped, sample counts rescaled.
  }];
  let options = [
    GaccEntryOption,
    Option<"size", "size", "int64_t", /*default=*/"1",
           "Number of samples of the rebuilt step">,
  ];
}

def TestBreakIRPass : Pass<"gacc-test-break-ir", "ModuleOp"> {
  let summary = "Test only: leave IR the verifier rejects, to test the "
                "internal-error diagnostic and the local verifications";
  let description = [{
    `mode=plain` (the default) drops the operands of every func.return and
    is checked by the full verifier. `mode=changed-return` does the same
    through a rewriter, `mode=changed-dominance` makes the first op of a
    function use a later value of the same type and `mode=changed-symbol`
    calls a function that does not exist, all checked by ChangedOps
    (the verification of gacc-fuse-accumulation and gacc-sink-all-reduce).
    `mode=region-site` moves a static slice offset of the third
    `gacc.micro_batch` region out of bounds and `mode=region-body` changes
    the type of an op inside it, both checked per region form (the
    verification of gacc-micro-batch).
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"plain\"",
           "plain, changed-return, changed-dominance, changed-symbol, "
           "region-site or "
           "region-body">,
  ];
}

#endif // GACC_TRANSFORMS_PASSES_TD

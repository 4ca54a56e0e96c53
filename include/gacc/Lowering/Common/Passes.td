//===- Passes.td - lowering passes of both targets ---------*- tablegen -*-===//
//
// The lowering passes that both pipelines run, gacc-lower-to-cpu and
// gacc-lower-to-cuda (buildBufferizedStepPipeline and the BLAS, deallocation
// and LLVM preparation steps after it), in the order the pipelines run them.
// Defined in lib/Lowering/Common (library GaccLoweringCommon), registered by
// registerGaccLoweringCommonPasses().
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LOWERING_COMMON_PASSES_TD
#define GACC_LOWERING_COMMON_PASSES_TD

include "mlir/Pass/PassBase.td"

def InlineMicroBatchesPass : Pass<"gacc-inline-micro-batches", "ModuleOp"> {
  let summary = "Inline the micro-batch regions into their function";
  let description = [{
    Moves the body of every `gacc.micro_batch` in front of it and replaces the
    region's results with the yielded values: the first step of lowering,
    after which the step is plain upstream IR. With `trace-regions`, each
    region's code is bracketed by calls of the runtime's
    `gaccrt_trace_region_begin/end(index)`.
  }];
  let options = [
    Option<"traceRegions", "trace-regions", "bool", /*default=*/"false",
           "Bracket each region with gaccrt_trace_region_begin/end calls">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect"];
}

def OutlineMicroBatchesPass : Pass<"gacc-outline-micro-batches", "ModuleOp"> {
  let summary = "Lower micro-batch regions of equal form to one body";
  let description = [{
    Runs before the regions are inlined. `gacc.micro_batch` regions of the
    same size whose bodies differ only in the region's sample offset (slice
    offsets, offset constants of `linalg.index`) share one body. When they
    follow each other and carry only accumulators from one to the next (the
    usual case), they become one `scf.for` over the regions: the body is the
    first region's, the offset is computed from the induction variable, the
    accumulators are iteration arguments (in place after bufferization).
    Otherwise they share one private function with the offset as an `index`
    argument: each such region's body becomes one call of it, with the
    values the region uses from outside as arguments; a value that differs
    between the regions but is not affine in the offset is an argument too.
    The first region starts the accumulators from identity fills where the
    later regions continue the previous region's: when at least
    `min-regions` regions share its size, those fills move before it, so
    that it has their form and joins their loop (its GEMMs then accumulate
    into the zero-filled buffers). A region without a twin (a tail of
    another size) stays as it is. The final region joins its size's loop
    too, also when a bucket all-reduce overlaps with it
    (gacc-overlap-all-reduce starts it in the loop's last iteration); with
    such an all-reduce it does not become a call of a shared function (the
    all-reduce could only start after the call), it stays inline.
    Compile time and code size of the lowering then no longer grow with the
    number of micro-batches.
  }];
  let options = [
    Option<"minRegions", "min-regions", "int64_t", /*default=*/"2",
           "Outline a form only when at least this many regions share it">,
    Option<"traceRegions", "trace-regions", "bool", /*default=*/"false",
           "Mark each iteration of a region loop with runtime trace calls">,
    Option<"functions", "functions", "bool", /*default=*/"true",
           "Regions of one form that do not follow each other share a "
           "private function (else they stay inline)">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
}

def SplitBucketsPass : Pass<"gacc-split-buckets", "ModuleOp"> {
  let summary = "One all-reduce per accumulator before bufferization";
  let description = [{
    Runs before bufferization. A bucket all-reduce (`gacc.bucket`) of a
    chain of `tensor.insert_slice`s into an empty bucket tensor becomes one
    `shard.all_reduce` per packed accumulator, marked with its bucket and its
    offset (`gacc.bucket_offset`); the first-region views of the bucket
    become empty tensors of their own. One-shot bufferization then sees one
    small alias set per accumulator instead of one for the whole bucket (its
    analysis is superlinear in the size of an alias set), and
    gacc-place-buckets puts the accumulators back into one bucket buffer and
    merges the collectives after bufferization.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::shard::ShardDialect"];
}

def ContractionToMatmulPass : Pass<"gacc-contraction-to-matmul", "ModuleOp"> {
  let summary = "Rewrite linalg.generic contractions as linalg.matmul";
  let description = [{
    A `linalg.generic` computing `C[m, n] += sum over K of A * B` with
    projected-permutation maps, where the reduction dims K appear as one
    contiguous block in the same order in A and B (a weight gradient written
    as a generic, e.g. over samples and tokens), becomes a `linalg.matmul`
    on operands whose K block is collapsed into one dimension (transposed
    when m or n comes after it). The GEMM then goes to BLAS or cuBLAS with
    the accumulation into C unchanged.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FuseElementwisePass : Pass<"gacc-fuse-elementwise", "ModuleOp"> {
  let summary = "Fuse elementwise linalg producers into their consumers";
  let description = [{
    Upstream's elementwise fusion without its reshape propagation, which
    would fold the reshapes around a GEMM into a generic contraction and so
    take it away from BLAS / cuBLAS. A producer with one use is fused by
    upstream's pattern. A producer with several uses is fused when the
    consumer reads it through one operand and every other use comes after
    the consumer in its block: the fused op also yields the producer's
    results and takes over those uses, so the producer is computed once.
    (Upstream's pattern would keep the producer for the other uses and so
    compute it twice.)

    Before the fusion, a ReLU mask of a hand-written backward pass that
    tests the pre-activation z (a generic whose only uses of z are
    `cmpf ogt z, 0` or `cmpf ule z, 0`, either operand order) reads the
    ReLU's result instead, when an elementwise generic before it in its
    block (identity maps, z's type, z its one input) yields a ReLU of z:
    `maximumf` or `maxnumf` with zero, or `select(cmpf P z, 0, z, 0)` with
    P one of ogt, ugt, oge, uge (torch-mlir's form). Such a ReLU is z where
    z > 0 and +-0 (or NaN, where z is NaN) elsewhere, so the two tests give
    the same bits for every z, -0 and NaN included. z is then dead after
    its ReLU: the bias add fused with the ReLU (usually a GEMM's epilogue)
    writes one tensor instead of two, and the pre-activation is not kept
    until the backward pass (a 4x256 MLP at B = 8192: peak 74 -> 49 MiB).
    PyTorch's autograd already writes its mask on the ReLU's result.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::affine::AffineDialect"];
}

def CopyRepeatedResultsPass
    : Pass<"gacc-copy-repeated-results", "ModuleOp"> {
  let summary = "Give every returned tensor its own buffer";
  let description = [{
    Runs before bufferization. A value returned more than once (the loss also
    returned as a `gacc.metric`; a generic that yields its own `outs` and
    folds to it) is returned as a `linalg.copy` of itself at every repeat, so
    that each result bufferizes to its own buffer and becomes its own
    out-parameter.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def GuardGathersPass : Pass<"gacc-guard-gathers", "ModuleOp"> {
  let summary = "Bounds-check and clamp data-dependent gather indices";
  let description = [{
    Runs before bufferization. A `tensor.extract` inside a linalg body whose
    index depends on tensor data (an embedding id, a class label) gets its
    index checked against the dimension and clamped into it, so no read is
    out of bounds. With `report` (the CPU path) an out-of-range index also
    calls `gaccrt_index_error(index, bound, site)`; the module attribute
    `gacc.gather_sites` describes each site (location, table and index
    arguments) for the tools' error message. Without `report` (the CUDA
    path) the index is only clamped. With `report`, each `gacc.scatter_add`
    gets a site too (`gacc.index_site`), which gacc-lower-scatter-add
    reports an out-of-range index to (the row is skipped).
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"true",
           "Call gaccrt_index_error for an out-of-range index">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def GuardDivisionsPass : Pass<"gacc-guard-divisions", "ModuleOp"> {
  let summary = "Check integer divisions for a zero divisor and overflow";
  let description = [{
    Runs before bufferization, after gacc-guard-gathers. An integer division
    or remainder (`arith.divsi`, `divui`, `remsi`, `remui`, `ceildivsi`,
    `ceildivui`, `floordivsi`) whose divisor is not a constant that makes it
    safe is undefined for a zero divisor and, for the signed ones, for the
    minimum value divided by -1; on x86 both trap (SIGFPE). The divisor
    becomes `select(bad, 1, divisor)`, so the trapping instruction never
    runs (the op yields its dividend, or 0 for a remainder). With `report`
    (the CPU path), a bad division also calls
    `gaccrt_index_error(divisor, dividend, site)` (both extended to i64; the
    runtime keeps the first error), and the site, `division: OP at
    FILE:LINE:COL`, is appended to the module attribute `gacc.gather_sites`
    that gacc-guard-gathers starts, for the tools' error message. Without
    `report` (the CUDA path) the divisor is only made safe.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"true",
           "Call gaccrt_index_error for a division by zero or an overflow">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect"];
}

def UnshareEmptyTensorsPass
    : Pass<"gacc-unshare-empty-tensors", "ModuleOp"> {
  let summary = "Give every use of a tensor.empty its own tensor.empty";
  let description = [{
    Runs right before one-shot bufferization. A `tensor.empty` with several
    uses is replaced by one clone per use, placed right before the user.
    Canonicalization and CSE merge identical empties, so that in a deep step
    one empty is the destination of hundreds of ops; bufferization's analysis
    would check every pair of those in-place writes for conflicts (quadratic
    in the depth). An empty has no contents: the IR means the same.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def LowerScatterAddPass : Pass<"gacc-lower-scatter-add", "ModuleOp"> {
  let summary = "Lower gacc.scatter_add on buffers to loops";
  let description = [{
    Runs right after bufferization. Each `gacc.scatter_add` on buffers
    becomes loops that add the rows of `updates` into the rows of the
    accumulator `init` in place. An index outside `[0, rows)` skips its row
    (nothing is read or written out of bounds); where gacc-guard-gathers
    gave the op a site (`gacc.index_site`, the CPU path), it also calls
    `gaccrt_index_error(index, rows, site)`.

    Without `atomic` (the CPU path): a serial loop nest over the positions
    with an inner loop over the contiguous row (positions that name one row
    must not race). With `atomic` (the CUDA path): one `scf.parallel` over
    the row elements and the positions (the row innermost, so it maps to
    threadIdx.x) whose adds are `memref.atomic_rmw addf`.
  }];
  let options = [
    Option<"atomic", "atomic", "bool", /*default=*/"false",
           "One parallel loop with atomic adds (for GPU kernels)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def MatmulToBlasPass : Pass<"gacc-matmul-to-blas", "ModuleOp"> {
  let summary = "Turn f32 linalg.matmul on buffers into gaccrt_sgemm calls";
  let description = [{
    Runs after bufferization. Each `linalg.matmul` on f32 memrefs becomes a
    call to the runtime's `gaccrt_sgemm` (which runs oneDNN's matmul or
    sgemm, gaccrt's AVX-512 kernels or OpenBLAS's `cblas_sgemm`, see
    `gaccrt_set_gemm_library`): with
    beta = 0 when the op directly follows a zero `linalg.fill` of its output
    (the first region initializing an accumulator; the fill is dropped) or a
    `memref.copy` of a zero-filled buffer into its output (a zero tensor
    shared by several matmuls; the copy is dropped, and the shared buffer's
    fill too once only dropped copies read it), with beta = 1 otherwise
    (accumulating in place). In an `scf.for` with constant bounds and at
    least one iteration (one compiled body for equal micro-batches), a
    matmul whose output was zero-filled before the loop, with no op touching
    its bytes in between or earlier in the body (other members of the same
    bucket, at disjoint constant byte offsets, may be touched), gets
    beta = 0 in the first iteration and 1 in the others, and the fill is
    dropped. An operand that is the
    private result of a 2-D `linalg.transpose` is read through the transpose
    flag instead of the copy. With `split-batches` (the CPU default), an f32
    `linalg.batch_matmul` on statically shaped buffers first becomes an
    `scf.for` over its batches of `linalg.matmul`s on rank-reduced subviews
    (attention's and token mixing's GEMMs), so they reach BLAS too.
  }];
  let options = [
    Option<"callee", "callee", "std::string", /*default=*/"\"gaccrt_sgemm\"",
           "Runtime function to call (gaccrt_cuda_sgemm for cuBLAS)">,
    Option<"splitBatches", "split-batches", "bool", /*default=*/"true",
           "Turn linalg.batch_matmul into a loop of GEMM calls">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def DeallocateBuffersPass : Pass<"gacc-deallocate-buffers", "ModuleOp"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    Runs after bufferization on the straight-line steps gacc produces. Each
    `memref.alloc` whose uses (through views, casts and its address) all lie
    in its own block and that does not escape (returned, yielded, stored,
    or given to an op that hands out a memref, like `arith.select` or a call
    that returns one) gets a `memref.dealloc`
    after the last op in the block that uses it. This frees a micro-batch's
    activations when its region ends, so peak memory follows b, not B (the
    upstream ownership-based deallocation frees at the end of the block). A
    buffer that escapes its block is an error, never a silent leak.

    First, a statically shaped memref result of an `scf.if` that a branch
    yields from a buffer allocated inside it gets a buffer allocated before
    the `scf.if` (each branch copies what it yields into it), and such an
    iter_arg of an `scf.for` (bufferized with allow-return-allocs-from-loops)
    one buffer before the loop, holding a copy of the init value, which the
    body reads for the iter_arg and overwrites with what it yields at its
    end; the loop then no longer carries it. The branches' and the body's
    own buffers are then freed inside them.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def PlaceBucketsPass : Pass<"gacc-place-buckets", "ModuleOp"> {
  let summary = "Allocate accumulators inside their bucket buffers";
  let description = [{
    Runs after bufferization. Where an accumulator buffer is copied into a
    slice of a 1-D bucket buffer (the packing before the bucket's
    all-reduce), the accumulator is allocated in the bucket instead, as a
    `memref.view` of the bucket's bytes with the accumulator's own identity
    type, and the copy goes away; copies of a slice onto itself are dropped.
    After this pass every gradient accumulator is one buffer for the whole
    step, inside its bucket.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def OverlapAllReducePass : Pass<"gacc-overlap-all-reduce", "ModuleOp"> {
  let summary = "Start bucket collectives early and wait only where read";
  let description = [{
    Runs after bufferization and gacc-place-buckets. Each runtime collective
    of a bucket marked `gacc.overlap` (`gaccrt_all_reduce` on the bucket's
    address; with shard-optimizer-state, `gaccrt_reduce_scatter` and
    `gaccrt_all_gather` from a send to a receive buffer) becomes a start
    (`gaccrt_all_reduce_start`, `gaccrt_reduce_scatter_start`,
    `gaccrt_all_gather_start`) placed right after the last op of its block
    before it that accesses the memory the collective reads (in a step, the
    final region's last write of an accumulator in the bucket) and a wait on
    the returned handle (`gaccrt_all_reduce_wait(handle, buffer)`,
    `gaccrt_reduce_scatter_wait` / `gaccrt_all_gather_wait(handle, send,
    recv)`) placed right before the first op after it that accesses a buffer
    the collective reads or writes (or the block's terminator).
    When that last accessing op is an `scf.for` with a constant, non-zero
    trip count and no memref iteration arguments (the loop of
    gacc-outline-micro-batches, the final region among its iterations), the
    start goes into the loop body instead, right after the body's last
    access, under `scf.if` on `iv + step >= ub`, and the handle reaches the
    wait through a `memref.alloca` slot.
    A reduce-scatter or all-gather reads and writes fresh buffers: buffers
    allocated in its block before it and written there only by copies and
    linalg ops that write nothing else (the rank-major layout of a sharded
    bucket, packed from the accumulators; the receive buffer). Those copies
    move with the start, the allocations before it (before the loop), and
    the start then follows the last write of what the copies read (of a
    reduce-scatter, the accumulators: the packing runs in the final
    region). A copy never moves past a write of what it reads; where one
    would, or where one also writes a buffer that stays, nothing moves and
    the collective starts after the copies.
    Any op that uses a buffer or a view of it, other than the views
    themselves, counts as an access, so a buffer is never touched while the
    runtime reduces it.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def StridedCopiesToLinalgPass
    : Pass<"gacc-strided-copies-to-linalg", "ModuleOp"> {
  let summary = "Turn memref.copy between strided views into linalg.copy";
  let description = [{
    Bufferized `tensor.insert_slice`, `tensor.concat` and `tensor.pad` copy
    into strided subviews. `memref.copy` with a non-identity layout lowers to
    a call of `memrefCopy` from MLIR's C runner utilities, which neither the
    JIT nor a compiled step links, and on the GPU it has no `gpu.memcpy`
    lowering. As `linalg.copy` such a copy becomes loops on the host and a
    kernel on the device. Copies between identity layouts stay (they lower
    to memcpy).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def EraseGridsPass : Pass<"gacc-erase-grids", "ModuleOp"> {
  let summary = "Erase shard.grid symbols no collective refers to any more";
  let description = [{
    After bufferization the collectives are runtime calls; the device grids
    they named have no lowering and go away (a grid still referenced is an
    error). First, `shard.process_linear_index` of a one-axis grid (the
    shard offsets of gacc-shard-optimizer-state) becomes a call of
    `gaccrt_rank()`.
  }];
}

def ExpandMathOpsPass : Pass<"gacc-expand-math-ops"> {
  let summary = "Expand the arith and math ops that the LLVM lowering lacks "
                "(ceil/floor divisions, clampf, isinf, isnormal), keeping IEEE "
                "maximum/minimum";
  let description = [{
    Both lowerings' `arith-expand-ops` without its expansion of
    `arith.maximumf`/`minimumf` into a compare and a select, which returns
    either zero for `maximumf(+0, -0)` (IEEE maximum is +0): `ceildivsi`,
    `ceildivui` and `floordivsi` become arithmetic, and the float
    maximum/minimum ops lower to LLVM's `llvm.maximum`/`minimum` (and
    `maxnum`/`minnum`), which keep signed zeros and NaNs. The math ops that
    no upstream conversion lowers to LLVM become arith: `math.clampf`
    (`minimumf(maximumf(x, min), max)`, torch's clamp; upstream's expansion
    in LLVM 22 returns `max` for every x below it), `math.isinf`
    (`|x| == inf`) and `math.isnormal` (`smallest normal <= |x| < inf`).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // GACC_LOWERING_COMMON_PASSES_TD
